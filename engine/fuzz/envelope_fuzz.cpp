// Fuzz target: the request envelope, as the daemon and the Python binding hand it to the engine
// (engine/service Engine::call and Engine::call_inline): size bound, strict parse, envelope shape,
// op lookup and every op's argument checks, on a real Engine with no display (so nothing is
// started: an op that would start a process, display.create, is parsed but not dispatched).
// Invariants: every answer is a response object ({"ok":true,...} or {"ok":false,"error":{code,
// message,retryable}}) that dumps to strict, valid UTF-8 JSON; a refusal's code is declared and
// its message has no echo of the request; call_inline, when it answers, answers the same, and
// call_inline_value (the object path) with the parsed value runs inline exactly when it does
// and answers byte for byte the same; the engine owns no display, app or browser afterwards and still answers ping.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "evident/service/engine.h"
#include "fuzz_check.h"
#include "fuzz_files.h"

using namespace evident;

namespace {
std::string g_dir;
std::unique_ptr<Engine> g_engine;

void stop_engine() {
  if (g_engine) g_engine->shutdown();
  g_engine.reset();
}

void require_response(const Json& r, std::string_view input) {
  fuzz::require(r.is_object() && r.contains("ok") && r["ok"].is_boolean(), "answer is not a response object");
  fuzz::require_round_trip(r, kMaxResponseJsonDepth);
  if (r["ok"].get<bool>()) {
    fuzz::trace("accepted");
    return;
  }
  const Json& e = r["error"];
  fuzz::require(e.is_object() && e.size() == 3 && e["code"].is_string() && e["message"].is_string() &&
                    e["retryable"].is_boolean(),
                "error is not {code,message,retryable}");
  fuzz::require_good_error(make_error(e["code"].get<std::string>(), e["message"].get<std::string>()), input);
}

// An op that would start a process (Xvfb): its arguments are checked by validate_display_options,
// which the display and engine unit tests cover; the fuzzer must not start servers.
bool starts_a_process(const Json& envelope) {
  if (!envelope.is_object()) return false;
  auto op = envelope.find("op");
  return op != envelope.end() && op->is_string() && op->get_ref<const std::string&>() == "display.create";
}
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  g_dir = fuzz::scratch_dir("envelope", stop_engine);
  EngineOptions o;
  o.state_dir = g_dir + "/state";
  o.runtime_dir = g_dir + "/run";
  g_engine = std::make_unique<Engine>(o);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const Actor actor{Actor::Kind::kLocalUser, static_cast<unsigned>(::getuid()), 0};
  auto parsed = parse_json_strict(input, Engine::kMaxEnvelopeBytes, "request-json");
  if (parsed.ok() && starts_a_process(*parsed)) {
    fuzz::trace("not dispatched", "display.create");
    return 0;
  }
  const Json r = g_engine->call(actor, input);
  require_response(r, input);
  if (!parsed.ok()) {
    fuzz::require(!r["ok"].get<bool>(), "text that is not strict JSON was accepted");
  }
  auto inline_r = g_engine->call_inline(actor, input);
  if (inline_r) {
    require_response(*inline_r, input);
    fuzz::require((*inline_r)["ok"] == r["ok"], "call_inline and call disagree");
    if (!r["ok"].get<bool>()) {
      fuzz::require((*inline_r)["error"]["code"] == r["error"]["code"], "call_inline and call disagree on the code");
    }
  }
  // The object path (the Python binding's) gets the value the strict parse built, within the
  // text bound: it runs inline exactly when the text does, and answers the same.
  if (parsed.ok() && input.size() <= Engine::kMaxRequestBytes) {
    auto value_r = g_engine->call_inline_value(actor, *parsed);
    fuzz::require(value_r.has_value() == inline_r.has_value(), "call_inline_value and call_inline disagree on running inline");
    if (value_r) fuzz::require(dump_json(*value_r) == dump_json(*inline_r), "call_inline_value and call_inline answer differently");
  }
  // Nothing was created, and the engine still serves.
  const Json displays = g_engine->call(actor, Json{{"op", "display.list"}});
  fuzz::require(displays.value("ok", false) && displays.contains("displays") && displays["displays"].empty(),
                "a display exists after a fuzzed request");
  const Json apps = g_engine->call(actor, Json{{"op", "app.list"}});
  fuzz::require(apps.value("ok", false) && apps.contains("apps") && apps["apps"].empty(),
                "an app exists after a fuzzed request");
  const Json ping = g_engine->call(actor, Json{{"op", "ping"}});
  fuzz::require(ping.value("ok", false), "the engine no longer answers ping");
  return 0;
}
