#include "evident/service/engine.h"
#include "evident/evidence/session_evidence.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include <atomic>
#include <climits>
#include <functional>
#include <map>
#include <mutex>

#include "evident/actions/batch.h"
#include "evident/browser/browser.h"
#include "evident/core/fs.h"
#include "evident/core/random.h"
#include "evident/display/display.h"
#include "evident/service/display_capture.h"
#include "evident/session/manager.h"
#include "evident/task/lane.h"
#include "ops_common.h"
#include "session_backend.h"

namespace evident {

Json Actor::to_json() const {
  if (kind == Kind::kInProcess) return Json{{"kind", "in_process"}, {"uid", uid}, {"pid", pid}};
  return Json{{"kind", "local_user"}, {"uid", uid}};
}

namespace {

// Scratch of engines whose process is gone (a SIGKILLed daemon cannot clean up after itself):
// only our own "engine-<pid>-<hex>" dirs, and only when that pid no longer exists (a reused pid
// just keeps the dir).
void remove_stale_engine_dirs(const std::string& runtime_dir) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(runtime_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("engine-", 0) != 0 || !entry.is_directory(ec) || entry.is_symlink(ec)) continue;
    const std::string rest = name.substr(7);
    const auto dash = rest.find('-');
    if (dash == std::string::npos || dash == 0 || dash > 9) continue;
    bool digits = true;
    for (std::size_t i = 0; i < dash; ++i) digits = digits && rest[i] >= '0' && rest[i] <= '9';
    if (!digits || !is_lower_hex(rest.substr(dash + 1), rest.size() - dash - 1)) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(rest.substr(0, dash)));
    if (pid > 0 && pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH) {
      (void)remove_tree(entry.path().string());
    }
  }
}

}  // namespace

struct Engine::Impl {
  EngineOptions options;
  std::unique_ptr<DisplayManager> displays;
  OpTable ops;
  std::unique_ptr<BrowserManager> browsers;  // browser.* ops (docs/browsers.md)
  std::atomic<bool> shut{false};
  std::mutex shutdown_mu;
  bool runtime_dir_owned = false;
  std::unique_ptr<DisplaySessionBackend> session_backend;  // session op (docs/sessions.md)
  std::unique_ptr<SessionManager> sessions;

  void register_ops();
  Json dispatch(const Actor& actor, const Json& request);
};

// The op table: each family registers its ops from its own file; a new op is one entry there
// (and one in protocol/evident.json; docs/architecture.md, "Where things go").
void Engine::Impl::register_ops() {
  ops["ping"] = [](const Actor&, const Json& args) -> Result<Json> {
    EVIDENT_TRY(JsonFields(args, kArgs, "args").only({}));
    return Json{{"version", EVIDENT_VERSION}, {"pid", static_cast<int>(::getpid())}};
  };

  // One file per op family (docs/architecture.md, "Where things go").
  register_display_ops(ops, *displays, *browsers);  // display.* (ops_display.cpp)
  register_app_ops(ops, *displays);                 // app.* (ops_apps.cpp)
  register_action_ops(ops, *displays, options.runtime_dir);  // cu.actions (ops_actions.cpp)
  register_session_ops(ops, *sessions);             // session (ops_session.cpp)
  register_task_ops(ops, *sessions);                // task (ops_task.cpp)
  register_browser_ops(ops, *browsers);             // browser.* (ops_browser.cpp)
  register_window_ops(ops, *displays);              // window.*, wait.* (ops_windows.cpp)
  register_accessibility_ops(ops, *displays);       // accessibility.* (ops_accessibility.cpp)
}

Json Engine::Impl::dispatch(const Actor& actor, const Json& request) {
  if (!request.is_object()) return error_response(make_error(kArgs, "the request must be a JSON object"));
  JsonFields env(request, kArgs, "request");
  if (auto st = env.only({"op", "args"}); !st.ok()) return error_response(st.error());
  auto op = env.string("op", 1, 64);
  if (!op.ok()) return error_response(op.error());
  static const Json kEmpty = Json::object();
  const Json* args = &kEmpty;
  if (env.has("args")) {
    auto a = env.object("args");
    if (!a.ok()) return error_response(a.error());
    args = *a;
  }
  auto it = ops.find(*op);
  if (it == ops.end()) {
    return error_response(make_error("request-unknown-op", "unknown op (see docs/cli.md for the list)"));
  }
  if (shut.load()) return error_response(make_error("engine-shutting-down", "the engine is shutting down"));
  Result<Json> r = make_error("internal", "no result");
  try {
    r = it->second(actor, *args);
  } catch (const std::exception& e) {
    // A broken invariant: report it rather than kill the daemon.
    r = make_error("internal", std::string("internal error: ") + e.what());
  }
  if (!r.ok()) return error_response(r.error());
  Json out = std::move(*r);
  out["ok"] = true;
  return out;
}

Result<WarmDisplaySize> parse_warm_size(std::string_view text) {
  auto bad = [&] {
    return make_error("display-args", "a warm size is WIDTHxHEIGHT in pixels, e.g. 1920x1080");
  };
  const auto x = text.find('x');
  if (x == std::string_view::npos || x == 0 || x + 1 == text.size() || x > 4 ||
      text.size() - x - 1 > 4) {
    return bad();
  }
  auto number = [](std::string_view digits, int* out) {
    int v = 0;
    for (char c : digits) {
      if (c < '0' || c > '9') return false;
      v = v * 10 + (c - '0');
    }
    *out = v;
    return true;
  };
  WarmDisplaySize size;
  if (!number(text.substr(0, x), &size.width) || !number(text.substr(x + 1), &size.height)) return bad();
  EVIDENT_TRY(validate_display_options(DisplayOptions::of(size.width, size.height, size.depth, size.dpi)));
  return size;
}

Engine::Engine(EngineOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  if (impl_->options.state_dir.empty()) impl_->options.state_dir = default_state_dir();
  if (impl_->options.runtime_dir.empty()) {
    impl_->options.runtime_dir = default_runtime_dir() + "/engine-" +
                                 std::to_string(::getpid()) + "-" + random_hex(4);
    impl_->runtime_dir_owned = true;
    // Create the per-user parent 0700 ourselves: created implicitly as a parent it would get
    // the umask's mode, and the daemon refuses a socket directory that is not 0700.
    (void)make_private_dir(default_runtime_dir());
    remove_stale_engine_dirs(default_runtime_dir());
  }
  if (!impl_->options.clock) impl_->options.clock = &SystemClock::instance();
  DisplayManagerOptions dm;
  dm.runtime_dir = impl_->options.runtime_dir;
  for (const auto& w : impl_->options.warm) dm.warm.push_back(DisplayOptions::of(w.width, w.height, w.depth, w.dpi));
  if (impl_->options.on_warm_ready) {
    dm.on_warm_ready = [cb = impl_->options.on_warm_ready](const std::string& name,
                                                          const DisplayOptions& o) {
      cb(name, WarmDisplaySize{o.width, o.height, o.depth, o.dpi});
    };
  }
  dm.readiness = capture_readiness();  // the service attaches capture to every display
  impl_->displays = std::make_unique<DisplayManager>(dm);
  impl_->browsers = std::make_unique<BrowserManager>(
      *impl_->displays, BrowserManagerOptions{impl_->options.runtime_dir});
  impl_->session_backend = std::make_unique<DisplaySessionBackend>(*impl_->displays, impl_->browsers.get());
  SessionOptions so;
  so.evidence_root = impl_->options.state_dir + "/evidence";
  so.scratch_root = impl_->options.runtime_dir + "/sessions";
  so.clock = impl_->options.clock;
  // The first start creates the signing key (docs/receipts.md §8); every close signs.
  so.evidence = std::make_shared<SessionEvidence>(impl_->options.state_dir);
  so.task_lane = task::make_task_lane();  // task.* ops (docs/agents.md "The lane")
  apply_session_timeout_env(&so);
  impl_->sessions = std::make_unique<SessionManager>(*impl_->session_backend, so);
  impl_->sessions->start_reaper();
  impl_->register_ops();
}

Engine::~Engine() { shutdown(); }

void Engine::shutdown() {
  std::lock_guard lock(impl_->shutdown_mu);
  if (impl_->shut.exchange(true)) return;
  impl_->sessions->abort_all();  // releases held input and display locks before displays go
  impl_->browsers->close_all();
  impl_->displays->destroy_all();
  if (impl_->runtime_dir_owned) (void)remove_tree(impl_->options.runtime_dir);
}

std::size_t Engine::max_request_bytes(std::string_view op) {
  // The one exception to the 256 KiB envelope: a task turn carries a provider response of up to
  // 1 MiB, embedded as a JSON string (docs/agents.md "The lane").
  return op == "task" ? kMaxEnvelopeBytes : kMaxRequestBytes;
}

Status Engine::check_request_size(const Json& envelope, std::size_t bytes) {
  std::string_view op;
  if (envelope.is_object()) {
    auto it = envelope.find("op");
    if (it != envelope.end() && it->is_string()) op = it->get_ref<const std::string&>();
  }
  const std::size_t limit = max_request_bytes(op);
  if (bytes > limit) {
    return make_error("request-too-large", "the request is larger than " + std::to_string(limit) + " bytes");
  }
  return ok_status();
}

Json Engine::call(const Actor& actor, std::string_view request_json) {
  if (request_json.size() > kMaxEnvelopeBytes) {
    return error_response(make_error("request-too-large", "the request is larger than " +
                                                              std::to_string(kMaxEnvelopeBytes) +
                                                              " bytes"));
  }
  auto parsed = parse_json_strict(request_json, kMaxEnvelopeBytes, "request-json");
  // Text that is not an envelope gets the bound of every op but `task`, as before.
  if (Status st = check_request_size(parsed.ok() ? *parsed : Json(), request_json.size()); !st) {
    return error_response(st.error());
  }
  if (!parsed.ok()) return error_response(parsed.error());
  return impl_->dispatch(actor, *parsed);
}

Json Engine::call(const Actor& actor, const Json& request) { return impl_->dispatch(actor, request); }

namespace {

bool runs_inline(const Json& envelope) {
  auto op = envelope.find("op");
  if (op == envelope.end() || !op->is_string()) return true;  // an envelope error, answered now
  const std::string& name = op->get_ref<const std::string&>();
  bool declared = false;
  for (std::string_view o : protocol::kInlineOps) declared = declared || o == name;
  if (!declared) return false;
  if (name != "cu.actions") return true;
  auto args = envelope.find("args");
  if (args == envelope.end() || !args->is_object()) return true;  // request-args, answered now
  auto request = args->find("request");
  return request != args->end() && batch_is_bounded(*request);
}

}  // namespace

std::optional<Json> Engine::call_inline(const Actor& actor, std::string_view request_json) {
  // Beyond every op's bound but `task`'s: refused at once when it is beyond task's too;
  // otherwise it can only be a task (long) or a refusal the worker gives as fast, so nothing runs
  // here and the request takes the worker (a task must stay interruptible).
  if (request_json.size() > kMaxEnvelopeBytes) return call(actor, request_json);  // refused now
  if (request_json.size() > kMaxRequestBytes) return std::nullopt;
  auto parsed = parse_json_strict(request_json, kMaxRequestBytes, "request-json");
  if (!parsed.ok()) return error_response(parsed.error());
  return call_inline_value(actor, *parsed);
}

std::optional<Json> Engine::call_inline_value(const Actor& actor, const Json& envelope) {
  // A request that is not an object is refused (request-args) at once, so it runs here too.
  if (!envelope.is_object() || runs_inline(envelope)) return impl_->dispatch(actor, envelope);
  return std::nullopt;
}

DisplayManager& Engine::displays() { return *impl_->displays; }
SessionManager& Engine::sessions() { return *impl_->sessions; }
const EngineOptions& Engine::options() const { return impl_->options; }

}  // namespace evident
