"""Provider transports: each one is a policy that keeps its provider's conversation and speaks
its HTTP API with the standard library (urllib). Request shapes follow the providers' own API
references (docs/agents.md, "Transports"); responses are returned exactly as received, for the
engine's adapter to parse."""
from __future__ import annotations

import base64
import json
import os
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Protocol, Tuple, Type

from ..errors import AgentError
from .policy import Observation

# The engine refuses a task.turn response over 1 MiB (docs/agents.md); reading stops there.
MAX_RESPONSE_BYTES = 1024 * 1024
DEFAULT_TIMEOUT_S = 120.0
# Header names that carry credentials: never recorded, logged or echoed.
SECRET_HEADERS = frozenset({"x-api-key", "authorization", "x-goog-api-key"})


@dataclass(frozen=True)
class HttpResponse:
    status: int
    body: bytes


class Http(Protocol):
    """What a transport POSTs with: :class:`UrllibHttp`, a cassette, or a test's fake."""

    def post(self, url: str, headers: Mapping[str, str], body: bytes) -> HttpResponse: ...


class UrllibHttp:
    """POSTs with urllib.request; the one place this package touches the network."""

    def __init__(self, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.timeout_s = timeout_s

    def post(self, url: str, headers: Mapping[str, str], body: bytes) -> HttpResponse:
        req = urllib.request.Request(url, data=body, headers=dict(headers), method="POST")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:  # noqa: S310 (https or loopback)
                return HttpResponse(resp.status, resp.read(MAX_RESPONSE_BYTES + 1))
        except urllib.error.HTTPError as e:
            return HttpResponse(e.code, e.read(MAX_RESPONSE_BYTES + 1))
        except (urllib.error.URLError, OSError, TimeoutError) as e:
            raise AgentError("agent-http-failed",
                             f"the request to the provider failed ({type(e).__name__})",
                             retryable=True) from None


def _b64(png: bytes) -> str:
    return base64.b64encode(png).decode("ascii")


class _Transport:
    """Shared request/response handling. Subclasses build the provider's request bodies."""

    provider = ""
    adapter = ""
    key_env = ""

    def __init__(self, task: str, model: str, api_key: str, *, base_url: str,
                 http: Optional[Http] = None) -> None:
        if not isinstance(task, str) or not task:
            raise AgentError("agent-transport-args", "task must be a non-empty string")
        if not isinstance(model, str) or not model:
            raise AgentError("agent-transport-args", "model must be a non-empty string")
        if not isinstance(api_key, str) or not api_key:
            raise AgentError("agent-api-key-missing", f"set {self.key_env} (or pass api_key)")
        self.task = task
        self.model = model
        self._api_key = api_key
        self.base_url = base_url.rstrip("/")
        self.http = http if http is not None else UrllibHttp()
        self.turns = 0

    @property
    def policy(self) -> Dict[str, str]:
        """The task's declared policy: ``{"adapter","provider","model"}`` (declared, not proven)."""
        return {"adapter": self.adapter, "provider": self.provider, "model": self.model}

    def _post(self, path: str, headers: Dict[str, str], body: Dict[str, Any]) -> Dict[str, Any]:
        data = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        resp = self.http.post(self.base_url + path, {"content-type": "application/json", **headers}, data)
        if not 200 <= resp.status < 300:
            raise AgentError("agent-http-status", f"{self.provider} answered HTTP {resp.status}",
                             retryable=resp.status in (408, 429, 500, 502, 503, 504, 529))
        if len(resp.body) > MAX_RESPONSE_BYTES:
            raise AgentError("agent-http-response", f"the {self.provider} response is over {MAX_RESPONSE_BYTES} bytes")
        try:
            parsed = json.loads(resp.body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise AgentError("agent-http-response", f"the {self.provider} response is not JSON") from None
        if not isinstance(parsed, dict):
            raise AgentError("agent-http-response", f"the {self.provider} response is not a JSON object")
        return parsed

    def _next_user_content(self, obs: Observation) -> Any:
        if obs.retry_prompt is not None:
            return obs.retry_prompt
        if obs.tool_results is None:
            raise AgentError("agent-observation", "a turn after the first needs the engine's tool_results or retry_prompt")
        return obs.tool_results

    def __call__(self, obs: Observation) -> Dict[str, Any]:
        response = self._call(obs)
        self.turns += 1
        return response

    def _call(self, obs: Observation) -> Dict[str, Any]:  # pragma: no cover (abstract)
        raise NotImplementedError


ANTHROPIC_TOOLS: Dict[str, Tuple[str, Optional[str], Dict[str, Any]]] = {
    # tool type -> (engine adapter, anthropic-beta header or None, extra tool fields)
    "computer_20250124": ("anthropic-computer-20250124", "computer-use-2025-01-24", {}),
    "computer_20251124": ("anthropic-computer-20251124", "computer-use-2025-11-24", {"enable_zoom": True}),
    # The toolset is typed in the GA Messages API (no beta header); its entry is only its type
    # (every member enabled, zoom included): no name, no display size.
    "computer_toolset_20260801": ("anthropic-toolset-20260801", None, {}),
}


class AnthropicTransport(_Transport):
    """Messages API (``POST /v1/messages``) with the computer tool. ``tool`` is
    ``computer_20250124``, ``computer_20251124`` (zoom enabled) or the toolset
    ``computer_toolset_20260801`` (declared as ``{"type": "computer_toolset_20260801"}`` alone, as
    Anthropic's SDK types give it: its member calls are ``tool_use`` blocks named by the member
    with ``toolset_name``, kept as they came in the conversation). ``display`` is the size the
    single tool declares (the images the model is shown); by default the first observation's image
    size, which is the engine's scaled size when the display is larger than the provider takes; the
    toolset declares no size."""

    provider = "anthropic"
    key_env = "ANTHROPIC_API_KEY"

    def __init__(self, task: str, model: str, api_key: str, *, display: Optional[Tuple[int, int]] = None,
                 tool: str = "computer_20250124", max_tokens: int = 4096,
                 base_url: str = "https://api.anthropic.com", http: Optional[Http] = None) -> None:
        super().__init__(task, model, api_key, base_url=base_url, http=http)
        if tool not in ANTHROPIC_TOOLS:
            raise AgentError("agent-transport-args",
                             "tool must be computer_20250124, computer_20251124 or computer_toolset_20260801")
        self.tool = tool
        self.adapter, self._beta, extra = ANTHROPIC_TOOLS[tool]
        self._display = display
        self._extra = extra
        self.max_tokens = int(max_tokens)
        self.messages: List[Dict[str, Any]] = []

    def _call(self, obs: Observation) -> Dict[str, Any]:
        if self._display is None:   # the size of the images the model is shown
            self._display = (obs.width, obs.height)
        tool: Dict[str, Any] = {"type": self.tool}
        if self._beta is not None:   # a single computer tool: its name and the image size
            tool.update({"name": "computer", "display_width_px": int(self._display[0]),
                         "display_height_px": int(self._display[1]), **self._extra})
        if not self.messages:
            self.messages.append({"role": "user", "content": [
                {"type": "text", "text": self.task},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": _b64(obs.png)}},
            ]})
        else:
            self.messages.append(self._next_user_content(obs))
        body = {"model": self.model, "max_tokens": self.max_tokens, "tools": [tool],
                "messages": self.messages}
        headers = {"x-api-key": self._api_key, "anthropic-version": "2023-06-01"}
        if self._beta is not None:
            headers["anthropic-beta"] = self._beta
        response = self._post("/v1/messages", headers, body)
        self.messages.append({"role": "assistant", "content": response.get("content", [])})
        return response


class OpenAITransport(_Transport):
    """Responses API (``POST /v1/responses``) with the ``computer`` tool (GA, batched actions) or
    ``computer_use_preview`` (``preview=True``; its ``display`` defaults to the first
    observation's image size); turns chain with ``previous_response_id``."""

    provider = "openai"
    key_env = "OPENAI_API_KEY"

    def __init__(self, task: str, model: str, api_key: str, *, display: Optional[Tuple[int, int]] = None,
                 preview: bool = False, environment: str = "linux",
                 base_url: str = "https://api.openai.com", http: Optional[Http] = None) -> None:
        super().__init__(task, model, api_key, base_url=base_url, http=http)
        self.preview = bool(preview)
        self.adapter = "openai-computer-use-preview" if self.preview else "openai-computer"
        self._display = display
        self._environment = environment
        self.previous_response_id: Optional[str] = None

    def _call(self, obs: Observation) -> Dict[str, Any]:
        if self._display is None:   # the size of the images the model is shown
            self._display = (obs.width, obs.height)
        tool: Dict[str, Any] = {"type": "computer"}
        if self.preview:
            tool = {"type": "computer_use_preview", "display_width": int(self._display[0]),
                    "display_height": int(self._display[1]), "environment": self._environment}
        body: Dict[str, Any] = {"model": self.model, "tools": [tool]}
        if self.preview:
            body["truncation"] = "auto"
        if self.previous_response_id is None:
            body["input"] = [{"role": "user", "content": [
                {"type": "input_text", "text": self.task},
                {"type": "input_image", "image_url": "data:image/png;base64," + _b64(obs.png)},
            ]}]
        else:
            body["previous_response_id"] = self.previous_response_id
            body["input"] = self._next_user_content(obs)
        response = self._post("/v1/responses", {"authorization": "Bearer " + self._api_key}, body)
        rid = response.get("id")
        self.previous_response_id = rid if isinstance(rid, str) and rid else None
        if self.previous_response_id is None:
            raise AgentError("agent-http-response", "the openai response has no id to continue from")
        return response


class GeminiTransport(_Transport):
    """Gemini API ``generateContent`` (``POST /v1beta/models/{model}:generateContent``) with the
    computer-use tool. ``function_set`` ``"2.5"`` or ``"3.5"`` picks the engine adapter that
    matches the model (Google's reference implementation lists which models use which set)."""

    provider = "google"
    key_env = "GEMINI_API_KEY"

    def __init__(self, task: str, model: str, api_key: str, *, function_set: str = "2.5",
                 environment: str = "ENVIRONMENT_BROWSER",
                 base_url: str = "https://generativelanguage.googleapis.com", http: Optional[Http] = None) -> None:
        super().__init__(task, model, api_key, base_url=base_url, http=http)
        if function_set not in ("2.5", "3.5"):
            raise AgentError("agent-transport-args", "function_set must be 2.5 or 3.5")
        self.adapter = "gemini-computer-use" if function_set == "2.5" else "gemini-computer-use-3.5"
        self._tools = [{"computerUse": {"environment": environment}}]
        self.contents: List[Dict[str, Any]] = []

    def _call(self, obs: Observation) -> Dict[str, Any]:
        if not self.contents:
            self.contents.append({"role": "user", "parts": [
                {"text": self.task},
                {"inlineData": {"mimeType": "image/png", "data": _b64(obs.png)}},
            ]})
        else:
            self.contents.append(self._next_user_content(obs))
        body = {"contents": self.contents, "tools": self._tools}
        response = self._post(f"/v1beta/models/{self.model}:generateContent", {"x-goog-api-key": self._api_key}, body)
        candidates = response.get("candidates")
        if isinstance(candidates, list) and candidates and isinstance(candidates[0], dict) \
                and isinstance(candidates[0].get("content"), dict):
            self.contents.append(candidates[0]["content"])
        return response


_PROVIDERS: Dict[str, Type[_Transport]] = {
    "anthropic": AnthropicTransport,
    "openai": OpenAITransport,
    "google": GeminiTransport,
}


def transport_from_env(provider: str, task: str, model: str, *,
                       environ: Optional[Mapping[str, str]] = None, **kwargs: Any) -> _Transport:
    """The transport for ``provider`` (``anthropic`` | ``openai`` | ``google``) with its API key
    from the environment (ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY).
    ``agent-api-key-missing`` when it is not set."""
    env = os.environ if environ is None else environ
    cls = _PROVIDERS.get(provider)
    if cls is None:
        raise AgentError("agent-transport-args", "provider must be anthropic, openai or google")
    key = env.get(cls.key_env, "")
    if not key:
        raise AgentError("agent-api-key-missing", f"set {cls.key_env} to use the {provider} transport")
    return cls(task, model, key, **kwargs)


__all__ = ["AgentError", "AnthropicTransport", "GeminiTransport", "HttpResponse", "OpenAITransport",
           "SECRET_HEADERS", "UrllibHttp", "transport_from_env"]
