"""The Python agent API's transports against a real HTTP server on loopback that speaks each
provider's endpoint shape: the requests it receives are asserted field by field (path,
credentials header, tool declaration, the image is the frame given, the previous turn's calls all
answered in the next request), responses come back exactly as sent, failures get their codes,
and a cassette recorded through the server replays offline and refuses a different request.
Provider response bodies are written from the providers' SDK types (docs/agents.md)."""
from __future__ import annotations

import base64
import json
import os
import socket
import stat
from typing import Any, Dict

import pytest

from provider_server import ProviderServer

from evident.agent import (AgentError, AnthropicTransport, CassetteHttp, GeminiTransport,
                           Observation, OpenAITransport, Policy, ScriptedPolicy, UrllibHttp,
                           transport_from_env)

PNG0 = b"\x89PNG\r\n\x1a\n" + b"frame-zero" * 10
PNG1 = b"\x89PNG\r\n\x1a\n" + b"frame-one" * 10
KEY = "sk-test-0123456789-secret"


@pytest.fixture
def server():
    s = ProviderServer()
    yield s
    s.close()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def next_obs(png: bytes, tool_results: Any, turn: int = 1) -> Observation:
    import hashlib
    return Observation(png=png, sha256=hashlib.sha256(png).hexdigest(), width=1280, height=800, turn=turn,
                       turns_left=11, actions_left=62, deadline_ms_left=170_000, tool_results=tool_results)


ANTHROPIC_CALLS = {
    "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-test", "stop_reason": "tool_use",
    "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 5},
    "content": [
        {"type": "text", "text": "Clicking the name field."},
        {"type": "tool_use", "id": "toolu_01A", "name": "computer", "input": {"action": "left_click", "coordinate": [200, 150]}},
        {"type": "tool_use", "id": "toolu_01B", "name": "computer", "input": {"action": "type", "text": "Ada"}},
    ],
}
ANTHROPIC_FINAL = {"id": "msg_02", "type": "message", "role": "assistant", "model": "claude-test",
                   "stop_reason": "end_turn", "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1},
                   "content": [{"type": "text", "text": "{\"name\": \"Ada\"}"}]}


def anthropic_tool_results(response: Dict[str, Any], png: bytes) -> Dict[str, Any]:
    """What the engine's Anthropic adapter answers (docs/agents.md), written out here."""
    return {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": b["id"], "is_error": False,
         "content": [{"type": "text", "text": "ok"},
                     {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64(png)}}]}
        for b in response["content"] if b["type"] == "tool_use"]}


def test_anthropic_two_turns_over_loopback(server):
    server.reply(ANTHROPIC_CALLS)
    server.reply(ANTHROPIC_FINAL)
    t = AnthropicTransport("Fill in the name", "claude-test", KEY, display=(1280, 800), base_url=server.url)
    assert t.policy == {"adapter": "anthropic-computer-20250124", "provider": "anthropic", "model": "claude-test"}
    assert t(Observation.first(PNG0, 1280, 800)) == ANTHROPIC_CALLS
    answer = anthropic_tool_results(ANTHROPIC_CALLS, PNG1)
    assert t(next_obs(PNG1, answer)) == ANTHROPIC_FINAL

    first, second = server.requests
    assert first["path"] == "/v1/messages"
    assert first["headers"]["x-api-key"] == KEY
    assert first["headers"]["anthropic-version"] == "2023-06-01"
    assert first["headers"]["anthropic-beta"] == "computer-use-2025-01-24"
    assert first["headers"]["content-type"] == "application/json"
    body = first["body"]
    assert body["model"] == "claude-test" and body["max_tokens"] == 4096
    assert body["tools"] == [{"type": "computer_20250124", "name": "computer",
                              "display_width_px": 1280, "display_height_px": 800}]
    user0 = body["messages"][0]
    assert user0["content"][0] == {"type": "text", "text": "Fill in the name"}
    assert base64.b64decode(user0["content"][1]["source"]["data"]) == PNG0
    # The second request carries the whole conversation, and every call of turn 0 is answered.
    msgs = second["body"]["messages"]
    assert msgs[0] == user0
    assert msgs[1] == {"role": "assistant", "content": ANTHROPIC_CALLS["content"]}
    assert msgs[2] == answer
    called = [b["id"] for b in ANTHROPIC_CALLS["content"] if b["type"] == "tool_use"]
    assert [r["tool_use_id"] for r in msgs[2]["content"]] == called
    for r in msgs[2]["content"]:
        assert base64.b64decode(r["content"][1]["source"]["data"]) == PNG1


def test_anthropic_zoom_tool_version(server):
    server.reply(ANTHROPIC_FINAL)
    t = AnthropicTransport("t", "claude-test", KEY, display=(1461, 821), tool="computer_20251124", base_url=server.url)
    t(Observation.first(PNG0, 1461, 821))
    req = server.requests[0]
    assert req["headers"]["anthropic-beta"] == "computer-use-2025-11-24"
    assert req["body"]["tools"] == [{"type": "computer_20251124", "name": "computer", "display_width_px": 1461,
                                     "display_height_px": 821, "enable_zoom": True}]
    assert t.adapter == "anthropic-computer-20251124"
    with pytest.raises(AgentError) as e:
        AnthropicTransport("t", "m", KEY, display=(1, 1), tool="computer_toolset_20270101")
    assert e.value.code == "agent-transport-args"


ANTHROPIC_TOOLSET_CALLS = {
    "id": "msg_t1", "type": "message", "role": "assistant", "model": "claude-test", "stop_reason": "tool_use",
    "usage": {"input_tokens": 1, "output_tokens": 1},
    "content": [{"type": "tool_use", "id": "toolu_m1", "name": "left_click", "toolset_name": "computer",
                 "input": {"coordinate": [10, 20]}},
                {"type": "tool_use", "id": "toolu_m2", "name": "type", "toolset_name": "computer",
                 "input": {"text": "Ada"}}]}


def test_anthropic_toolset_declares_the_toolset_and_keeps_member_calls(server):
    """computer_toolset_20260801 as Anthropic's SDK types give it (anthropic-sdk-typescript
    bfa9197f): the tools entry is the type alone, no beta header; the member calls come back in
    the conversation as they came and the engine's tool_results (with toolset_name) follow."""
    server.reply(ANTHROPIC_TOOLSET_CALLS)
    server.reply(ANTHROPIC_FINAL)
    t = AnthropicTransport("t", "claude-test", KEY, tool="computer_toolset_20260801", base_url=server.url)
    assert t.adapter == "anthropic-toolset-20260801"
    assert t(Observation.first(PNG0, 640, 400)) == ANTHROPIC_TOOLSET_CALLS
    answer = {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": b["id"], "toolset_name": "computer", "is_error": False,
         "content": [{"type": "text", "text": "ok"}]} for b in ANTHROPIC_TOOLSET_CALLS["content"]]}
    t(next_obs(PNG1, answer))
    for req in server.requests:
        assert req["body"]["tools"] == [{"type": "computer_toolset_20260801"}]
        assert "anthropic-beta" not in {k.lower() for k in req["headers"]}
    msgs = server.requests[1]["body"]["messages"]
    assert msgs[1] == {"role": "assistant", "content": ANTHROPIC_TOOLSET_CALLS["content"]}
    assert msgs[2] == answer


OPENAI_CALL = {"id": "resp_1", "object": "response", "status": "completed", "model": "computer-use-test",
               "output": [{"type": "reasoning", "id": "rs_1", "summary": []},
                          {"type": "computer_call", "id": "cu_1", "call_id": "call_1", "status": "completed",
                           "pending_safety_checks": [],
                           "actions": [{"type": "click", "button": "left", "x": 10, "y": 20},
                                       {"type": "type", "text": "Ada"}]}]}
OPENAI_FINAL = {"id": "resp_2", "object": "response", "status": "completed", "model": "computer-use-test",
                "output": [{"type": "message", "id": "m", "role": "assistant", "status": "completed",
                            "content": [{"type": "output_text", "text": "{\"name\":\"Ada\"}", "annotations": []}]}]}


@pytest.mark.parametrize("preview", [False, True])
def test_openai_two_turns_over_loopback(server, preview):
    server.reply(OPENAI_CALL)
    server.reply(OPENAI_FINAL)
    t = OpenAITransport("Fill in the name", "computer-use-test", KEY, display=(1280, 800), preview=preview,
                        base_url=server.url)
    assert t.adapter == ("openai-computer-use-preview" if preview else "openai-computer")
    assert t(Observation.first(PNG0, 1280, 800)) == OPENAI_CALL
    answer = [{"type": "computer_call_output", "call_id": "call_1",
               "output": {"type": "computer_screenshot", "image_url": "data:image/png;base64," + b64(PNG1)}}]
    assert t(next_obs(PNG1, answer)) == OPENAI_FINAL
    first, second = server.requests
    assert first["path"] == second["path"] == "/v1/responses"
    assert first["headers"]["authorization"] == "Bearer " + KEY
    if preview:
        assert first["body"]["tools"] == [{"type": "computer_use_preview", "display_width": 1280,
                                           "display_height": 800, "environment": "linux"}]
        assert first["body"]["truncation"] == "auto"
    else:
        assert first["body"]["tools"] == [{"type": "computer"}]
        assert "truncation" not in first["body"]
    content = first["body"]["input"][0]["content"]
    assert content[0] == {"type": "input_text", "text": "Fill in the name"}
    assert content[1]["image_url"] == "data:image/png;base64," + b64(PNG0)
    assert "previous_response_id" not in first["body"]
    assert second["body"]["previous_response_id"] == "resp_1"
    assert second["body"]["input"] == answer
    calls = [o["call_id"] for o in OPENAI_CALL["output"] if o["type"] == "computer_call"]
    assert [i["call_id"] for i in second["body"]["input"]] == calls


GEMINI_CALL = {"candidates": [{"content": {"role": "model", "parts": [
    {"text": "I will click."},
    {"functionCall": {"name": "click_at", "args": {"x": 500, "y": 300}}},
    {"functionCall": {"name": "type_text_at", "args": {"x": 500, "y": 300, "text": "Ada"}}}]},
    "finishReason": "STOP"}], "modelVersion": "gemini-test"}
GEMINI_FINAL = {"candidates": [{"content": {"role": "model", "parts": [{"text": "{\"name\":\"Ada\"}"}]},
                                "finishReason": "STOP"}], "modelVersion": "gemini-test"}


def test_gemini_two_turns_over_loopback(server):
    server.reply(GEMINI_CALL)
    server.reply(GEMINI_FINAL)
    model = "gemini-2.5-computer-use-preview-10-2025"
    t = GeminiTransport("Fill in the name", model, KEY, base_url=server.url)
    assert t.adapter == "gemini-computer-use"
    assert t(Observation.first(PNG0, 1280, 800)) == GEMINI_CALL
    answer = {"role": "user", "parts": [
        {"functionResponse": {"name": p["functionCall"]["name"], "response": {"status": "ok", "detail": "ok"},
                              "parts": [{"inlineData": {"mimeType": "image/png", "data": b64(PNG1)}}]}}
        for p in GEMINI_CALL["candidates"][0]["content"]["parts"] if "functionCall" in p]}
    assert t(next_obs(PNG1, answer)) == GEMINI_FINAL
    first, second = server.requests
    assert first["path"] == f"/v1beta/models/{model}:generateContent"
    assert first["headers"]["x-goog-api-key"] == KEY
    assert first["body"]["tools"] == [{"computerUse": {"environment": "ENVIRONMENT_BROWSER"}}]
    parts = first["body"]["contents"][0]["parts"]
    assert parts[0] == {"text": "Fill in the name"}
    assert base64.b64decode(parts[1]["inlineData"]["data"]) == PNG0
    contents = second["body"]["contents"]
    assert contents[1] == GEMINI_CALL["candidates"][0]["content"]
    assert contents[2] == answer
    names = [p["functionCall"]["name"] for p in GEMINI_CALL["candidates"][0]["content"]["parts"] if "functionCall" in p]
    assert [p["functionResponse"]["name"] for p in contents[2]["parts"]] == names
    assert GeminiTransport("t", "gemini-3.5-flash", KEY, function_set="3.5").adapter == "gemini-computer-use-3.5"


def test_http_failures_have_codes_and_never_echo_the_body(server):
    t = AnthropicTransport("t", "m", KEY, display=(10, 10), base_url=server.url)
    server.reply(b'{"error":"private-body-text"}', status=529)
    with pytest.raises(AgentError) as e:
        t(Observation.first(PNG0, 10, 10))
    assert e.value.code == "agent-http-status" and e.value.retryable
    assert "private-body-text" not in str(e.value) and KEY not in str(e.value)
    for body, code in [(b"not json", "agent-http-response"), (b"[1,2]", "agent-http-response"),
                       (b"{" + b" " * (1024 * 1024) + b"}", "agent-http-response")]:
        server.reply(body)
        t2 = OpenAITransport("t", "m", KEY, display=(10, 10), base_url=server.url)
        with pytest.raises(AgentError) as e:
            t2(Observation.first(PNG0, 10, 10))
        assert e.value.code == code
    server.reply({"object": "response", "output": []})  # no id to chain the next turn from
    with pytest.raises(AgentError) as e:
        OpenAITransport("t", "m", KEY, display=(10, 10), base_url=server.url)(Observation.first(PNG0, 10, 10))
    assert e.value.code == "agent-http-response"
    # Nothing listens on a closed port.
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    dead = GeminiTransport("t", "m", KEY, base_url=f"http://127.0.0.1:{port}", http=UrllibHttp(timeout_s=5))
    with pytest.raises(AgentError) as e:
        dead(Observation.first(PNG0, 10, 10))
    assert e.value.code == "agent-http-failed" and e.value.retryable


def test_a_later_turn_needs_the_engines_answer(server):
    server.reply(ANTHROPIC_CALLS)
    t = AnthropicTransport("t", "m", KEY, display=(10, 10), base_url=server.url)
    t(Observation.first(PNG0, 10, 10))
    with pytest.raises(AgentError) as e:
        t(next_obs(PNG1, None))
    assert e.value.code == "agent-observation"
    assert len(server.requests) == 1


def test_cassette_records_through_the_server_and_replays_offline(server, tmp_path):
    path = str(tmp_path / "anthropic.cassette.json")
    server.reply(ANTHROPIC_CALLS)
    server.reply(ANTHROPIC_FINAL)
    rec = CassetteHttp(path, "record", inner=UrllibHttp())
    t = AnthropicTransport("Fill in the name", "claude-test", KEY, display=(1280, 800), base_url=server.url, http=rec)
    answer = anthropic_tool_results(ANTHROPIC_CALLS, PNG1)
    live = [t(Observation.first(PNG0, 1280, 800)), t(next_obs(PNG1, answer))]
    server.close()
    with open(path, encoding="utf-8") as f:
        text = f.read()
    assert KEY not in text
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    doc = json.loads(text)
    assert doc["schema"] == "evident.agent-cassette/v1" and len(doc["exchanges"]) == 2
    assert "x-api-key" not in doc["exchanges"][0]["request"]["headers"]

    play = CassetteHttp(path, "replay")
    t2 = AnthropicTransport("Fill in the name", "claude-test", "another-key", display=(1280, 800),
                            base_url="http://127.0.0.1:9", http=play)
    replayed = [t2(Observation.first(PNG0, 1280, 800)), t2(next_obs(PNG1, answer))]
    assert replayed == live and play.finished
    with pytest.raises(AgentError) as e:
        t2(next_obs(PNG1, anthropic_tool_results(ANTHROPIC_FINAL, PNG1)))
    assert e.value.code == "agent-cassette-exhausted"
    # A different request (another frame) is refused, not answered.
    t3 = AnthropicTransport("Fill in the name", "claude-test", KEY, display=(1280, 800),
                            base_url="http://127.0.0.1:9", http=CassetteHttp(path, "replay"))
    with pytest.raises(AgentError) as e:
        t3(Observation.first(PNG1, 1280, 800))
    assert e.value.code == "agent-cassette-mismatch"
    for bad in ["{}", "[]", "not json"]:
        (tmp_path / "bad.json").write_text(bad)
        with pytest.raises(AgentError) as e:
            CassetteHttp(str(tmp_path / "bad.json"), "replay")
        assert e.value.code == "agent-cassette"


def test_transport_from_env_needs_the_key():
    with pytest.raises(AgentError) as e:
        transport_from_env("anthropic", "t", "m", environ={}, display=(10, 10))
    assert e.value.code == "agent-api-key-missing" and "ANTHROPIC_API_KEY" in e.value.message
    t = transport_from_env("google", "t", "m", environ={"GEMINI_API_KEY": KEY})
    assert isinstance(t, GeminiTransport)
    assert KEY not in repr(vars(t).get("task")) and t.policy["provider"] == "google"
    with pytest.raises(AgentError) as e:
        transport_from_env("mistral", "t", "m", environ={})
    assert e.value.code == "agent-transport-args"


def test_scripted_policy_and_the_protocol():
    p = ScriptedPolicy([ANTHROPIC_CALLS, ANTHROPIC_FINAL])
    assert isinstance(p, Policy)
    obs = Observation.first(PNG0, 1280, 800)
    assert p(obs) == ANTHROPIC_CALLS and p(obs) == ANTHROPIC_FINAL and p.remaining == 0
    assert p.observations == [obs, obs]
    with pytest.raises(AgentError) as e:
        p(obs)
    assert e.value.code == "agent-script-exhausted"
    assert obs.sha256 == __import__("hashlib").sha256(PNG0).hexdigest()


def test_declared_display_defaults_to_the_size_of_the_image_shown(server):
    # A 1920x1080 display is shown to Anthropic models scaled to 1461x821 (docs/agents.md): the
    # tool must declare the image's size, which is what the first observation carries.
    server.reply(ANTHROPIC_FINAL)
    server.reply({"id": "resp_1", "object": "response", "output": []})
    AnthropicTransport("t", "claude-test", KEY, base_url=server.url)(Observation.first(PNG0, 1461, 821))
    OpenAITransport("t", "cua-test", KEY, preview=True, base_url=server.url)(Observation.first(PNG0, 1461, 821))
    anthropic, openai = server.requests
    assert anthropic["body"]["tools"][0]["display_width_px"] == 1461
    assert anthropic["body"]["tools"][0]["display_height_px"] == 821
    assert (openai["body"]["tools"][0]["display_width"], openai["body"]["tools"][0]["display_height"]) == (1461, 821)
