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
#include "evident/session/manager.h"
#include "display_input.h"
#include "ops_browser.h"
#include "ops_windows.h"
#include "session_backend.h"

namespace evident {

Json Actor::to_json() const {
  if (kind == Kind::kInProcess) return Json{{"kind", "in_process"}, {"uid", uid}, {"pid", pid}};
  return Json{{"kind", "local_user"}, {"uid", uid}};
}

Json error_response(const Error& error) {
  return Json{{"ok", false},
              {"error", {{"code", error.code}, {"message", error.message},
                         {"retryable", error.retryable}}}};
}

namespace {

// Handler: validated-args in, result body out (call() adds "ok":true).
using OpHandler = OpTable::mapped_type;

constexpr const char* kArgs = "request-args";

// The (display_id, generation) pair every display-scoped op names. Generations are checked by
// the manager (malformed → display-generation-mismatch); here only the JSON type and a bound.
struct DisplayRef {
  int id = 0;
  std::string generation;
};

Result<DisplayRef> display_ref_arg(const JsonFields& f) {
  auto id = f.integer("display_id", 0, protocol::kDisplayIdMax);
  if (!id.ok()) return id.error();
  auto gen = f.string("generation", 0, protocol::kGenerationMaxBytes);
  if (!gen.ok()) return gen.error();
  return DisplayRef{static_cast<int>(*id), std::move(*gen)};
}

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

// The op table: adding an op is one entry here (docs/cli.md lists them).
void Engine::Impl::register_ops() {
  ops["ping"] = [](const Actor&, const Json& args) -> Result<Json> {
    EVIDENT_TRY(JsonFields(args, kArgs, "args").only({}));
    return Json{{"version", EVIDENT_VERSION}, {"pid", static_cast<int>(::getpid())}};
  };

  ops["display.create"] = [this](const Actor&, const Json& args) -> Result<Json> {
    JsonFields f(args, kArgs, "args");
    EVIDENT_TRY(f.only({"width", "height", "depth", "dpi"}));
    DisplayOptions o;
    if (f.has("width")) {
      auto v = f.integer("width", protocol::kDisplayWidthMin, protocol::kDisplayWidthMax);
      if (!v.ok()) return v.error();
      o.width = static_cast<int>(*v);
    }
    if (f.has("height")) {
      auto v = f.integer("height", protocol::kDisplayHeightMin, protocol::kDisplayHeightMax);
      if (!v.ok()) return v.error();
      o.height = static_cast<int>(*v);
    }
    if (f.has("depth")) {
      auto v = f.integer("depth", 16, 24);
      if (!v.ok()) return v.error();
      if (*v != 16 && *v != 24) return make_error(kArgs, "field \"depth\" must be 16 or 24");
      o.depth = static_cast<int>(*v);
    }
    if (f.has("dpi")) {
      auto v = f.integer("dpi", protocol::kDisplayDpiMin, protocol::kDisplayDpiMax);
      if (!v.ok()) return v.error();
      o.dpi = static_cast<int>(*v);
    }
    auto d = displays->create(o);
    if (!d.ok()) return d.error();
    return Json{{"display", (*d)->info().to_json()}};
  };

  ops["display.destroy"] = [this](const Actor&, const Json& args) -> Result<Json> {
    JsonFields f(args, kArgs, "args");
    EVIDENT_TRY(f.only({"display_id", "generation"}));
    auto ref = display_ref_arg(f);
    if (!ref.ok()) return ref.error();
    // Browsers of exactly that generation go first (their profiles with them).
    if (displays->get(ref->id, ref->generation).ok()) browsers->close_display(ref->id, ref->generation);
    EVIDENT_TRY(displays->destroy(ref->id, ref->generation));
    return Json{{"display_id", ref->id}, {"generation", ref->generation}};
  };

  ops["display.list"] = [this](const Actor&, const Json& args) -> Result<Json> {
    EVIDENT_TRY(JsonFields(args, kArgs, "args").only({}));
    Json list = Json::array();
    for (const auto& d : displays->list()) list.push_back(d.to_json());
    return Json{{"displays", list}};
  };

  ops["display.status"] = [this](const Actor&, const Json& args) -> Result<Json> {
    JsonFields f(args, kArgs, "args");
    EVIDENT_TRY(f.only({"display_id", "generation"}));
    auto ref = display_ref_arg(f);
    if (!ref.ok()) return ref.error();
    auto st = displays->status(ref->id, ref->generation);
    if (!st.ok()) return st.error();
    Json layers = Json::array();
    for (const auto& l : st->layers) layers.push_back(l.to_json());
    return Json{{"ready", st->ready}, {"layers", layers}};
  };

  ops["display.screenshot"] = [this](const Actor&, const Json& args) -> Result<Json> {
    JsonFields f(args, kArgs, "args");
    EVIDENT_TRY(f.only({"display_id", "generation", "out"}));
    auto ref = display_ref_arg(f);
    if (!ref.ok()) return ref.error();
    auto out = f.string("out", 1, 4096);
    if (!out.ok()) return out.error();
    if ((*out)[0] != '/' || out->find('\0') != std::string::npos) {
      return make_error(kArgs, "field \"out\" must be an absolute path");
    }
    auto d = displays->get(ref->id, ref->generation);
    if (!d.ok()) return d.error();
    Result<PngFrame> frame = display_dead_error();
    // alive() takes x_mutex itself: probe it before locking (it is not recursive).
    if ((*d)->alive()) {
      std::lock_guard lock((*d)->x_mutex());
      if ((*d)->capturer()) frame = (*d)->capturer()->capture_png();
    }
    if (!frame.ok()) return frame.error();
    if (auto st = write_file_atomic(*out, frame->bytes, 0600); !st.ok()) {
      // The message of a file error names the path, which is request content here.
      const std::string& m = st.error().message;
      const auto colon = m.rfind(": ");
      return make_error("screenshot-write-failed",
                        "cannot write the PNG to the path in field \"out\"" +
                            (colon == std::string::npos ? std::string() : m.substr(colon)));
    }
    return Json{{"png", {{"path", *out}, {"sha256", frame->sha256},
                         {"byte_length", frame->bytes.size()}, {"width", frame->width},
                         {"height", frame->height}}}};
  };

  ops["app.launch"] = [this](const Actor&, const Json& args) -> Result<Json> {
    JsonFields f(args, kArgs, "args");
    EVIDENT_TRY(f.only({"display_id", "generation", "argv", "wait_window_ms", "env", "cwd"}));
    auto ref = display_ref_arg(f);
    if (!ref.ok()) return ref.error();
    auto argv_json = f.array("argv", 1, 256);
    if (!argv_json.ok()) return argv_json.error();
    std::vector<std::string> argv;
    for (const auto& a : **argv_json) {
      if (!a.is_string()) return make_error(kArgs, "field \"argv\" must hold only strings");
      argv.push_back(a.get<std::string>());
    }
    std::int64_t wait_ms = 0;
    if (f.has("wait_window_ms")) {
      auto w = f.integer("wait_window_ms", 0, DisplayManager::kMaxWaitWindowMs);
      if (!w.ok()) return w.error();
      wait_ms = *w;
    }
    LaunchOptions launch;
    launch.wait_window_ms = wait_ms;
    EVIDENT_TRY(parse_launch_env_args(args, &launch));  // env, cwd (docs/windows.md)
    auto app = displays->launch_app(ref->id, ref->generation, argv, launch);
    if (!app.ok()) return app.error();
    return Json{{"app", app->to_json()}};
  };

  ops["app.stop"] = [this](const Actor&, const Json& args) -> Result<Json> {
    JsonFields f(args, kArgs, "args");
    EVIDENT_TRY(f.only({"app_id"}));
    auto id = f.string("app_id", 1, 256);
    if (!id.ok()) return id.error();
    auto status = displays->stop_app(*id);
    if (!status.ok()) return status.error();
    return Json{{"app_id", *id}, {"exit_status", *status}};
  };

  ops["app.list"] = [this](const Actor&, const Json& args) -> Result<Json> {
    EVIDENT_TRY(JsonFields(args, kArgs, "args").only({}));
    Json list = Json::array();
    for (const auto& a : displays->list_apps()) list.push_back(a.to_list_json());
    return Json{{"apps", list}};
  };

  // One §4 action batch outside a session (actions module, docs/actions.md). Refused with
  // display-busy while a session (or another batch) holds the display.
  ops["cu.actions"] = [this](const Actor&, const Json& args) -> Result<Json> {
    JsonFields f(args, kArgs, "args");
    EVIDENT_TRY(f.only({"display_id", "generation", "request"}));
    auto ref = display_ref_arg(f);
    if (!ref.ok()) return ref.error();
    auto req = f.object("request");
    if (!req.ok()) return req.error();
    auto d = displays->get(ref->id, ref->generation);
    if (!d.ok()) return d.error();
    std::shared_ptr<OwnedDisplay> disp = *d;
    const std::string owner = random_id("cu-actions");
    if (!disp->try_acquire_session(owner)) {
      return make_error("display-busy", "a session or another action batch holds this display", true);
    }
    struct Release {
      std::shared_ptr<OwnedDisplay> d;
      std::string owner;
      ~Release() { d->release_session(owner); }
    } release{disp, owner};
    const std::string frames = options.runtime_dir + "/cu-frames";
    (void)make_private_dir(frames);
    // Shares the display's lifetime with this batch: a destroy that races it cancels the batch
    // and waits for it (bounded) before freeing what the executor uses (docs/reliability.md).
    // Declared before the executor, so it is dropped after the executor released held input.
    struct CancelTarget {
      std::mutex mu;
      ActionExecutor* executor = nullptr;  // set while the batch runs; cancel() under mu
      void set(ActionExecutor* e) {
        std::lock_guard lock(mu);
        executor = e;
      }
    };
    auto cancel_target = std::make_shared<CancelTarget>();
    std::shared_ptr<void> in_use = disp->begin_batch([cancel_target] {
      std::lock_guard lock(cancel_target->mu);
      if (cancel_target->executor) cancel_target->executor->cancel();
    });
    if (!in_use) return make_error("display-destroyed", "the display was destroyed; nothing ran");
    ExecutorContext ctx;
    {
      std::lock_guard<std::mutex> lock(disp->x_mutex());
      if (!disp->dpy() || !disp->alive()) return display_dead_error();
      ctx.dpy = disp->dpy();
      ctx.capturer = disp->capturer();
      ctx.watcher = disp->change_watcher();
    }
    ctx.dpy_mutex = &disp->x_mutex();
    ctx.width = disp->info().width;
    ctx.height = disp->info().height;
    ctx.observation_dir = frames;
    std::weak_ptr<OwnedDisplay> weak = disp;
    ctx.open_aux = [weak]() -> ::Display* {
      auto dd = weak.lock();
      if (!dd) return nullptr;
      auto c = dd->open_connection();
      return c.ok() ? *c : nullptr;
    };
    auto input = display_input(disp);
    if (!input.ok()) return input.error();
    ctx.input = *input;
    auto ex = ActionExecutor::create(std::move(ctx));
    if (!ex.ok()) return ex.error();
    // The batch releases (and checks) held input before `release`; the keymap restore is
    // deferred to the display's restorer (docs/input.md).
    cancel_target->set(ex->get());
    if (disp->destroyed()) (*ex)->cancel();  // a destroy that began before the store
    auto result = run_action_batch(**ex, **req);
    cancel_target->set(nullptr);
    if (disp->destroyed()) {
      return make_error("display-destroyed",
                        "the display was destroyed while the batch ran; the batch was cut short "
                        "and its held input released");
    }
    return result;
  };

  // One raw §5 request; the session layer parses it strictly (size first, duplicate keys at
  // any depth). docs/sessions.md.
  ops["session"] = [this](const Actor& actor, const Json& args) -> Result<Json> {
    JsonFields f(args, "session-command", "args");
    EVIDENT_TRY(f.only({"request"}));
    auto text = f.string("request");
    if (!text.ok()) return text.error();
    Json r = sessions->handle(actor.to_json(), *text);
    if (!r.value("ok", false)) {
      const Json& e = r["error"];
      return make_error(e["code"].get<std::string>(), e["message"].get<std::string>(),
                        e["retryable"].get<bool>());
    }
    r.erase("ok");
    return r;
  };

  register_browser_ops(ops, *browsers);
  // window.*, wait.*, display.env (ops_windows.cpp).
  register_window_ops(ops, *displays);
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
  EVIDENT_TRY(validate_display_options({size.width, size.height, size.depth, size.dpi}));
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
  for (const auto& w : impl_->options.warm) dm.warm.push_back({w.width, w.height, w.depth, w.dpi});
  if (impl_->options.on_warm_ready) {
    dm.on_warm_ready = [cb = impl_->options.on_warm_ready](const std::string& name,
                                                          const DisplayOptions& o) {
      cb(name, WarmDisplaySize{o.width, o.height, o.depth, o.dpi});
    };
  }
  impl_->displays = std::make_unique<DisplayManager>(dm);
  impl_->browsers = std::make_unique<BrowserManager>(
      *impl_->displays, BrowserManagerOptions{impl_->options.runtime_dir});
  impl_->session_backend = std::make_unique<DisplaySessionBackend>(*impl_->displays);
  SessionOptions so;
  so.evidence_root = impl_->options.state_dir + "/evidence";
  so.scratch_root = impl_->options.runtime_dir + "/sessions";
  so.clock = impl_->options.clock;
  // The first start creates the signing key (docs/receipts.md §8); every close signs.
  so.evidence = std::make_shared<SessionEvidence>(impl_->options.state_dir);
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

Json Engine::call(const Actor& actor, std::string_view request_json) {
  if (request_json.size() > kMaxRequestBytes) {
    return error_response(make_error("request-too-large", "the request is larger than " +
                                                              std::to_string(kMaxRequestBytes) +
                                                              " bytes"));
  }
  auto parsed = parse_json_strict(request_json, kMaxRequestBytes, "request-json");
  if (!parsed.ok()) return error_response(parsed.error());
  return impl_->dispatch(actor, *parsed);
}

Json Engine::call(const Actor& actor, const Json& request) { return impl_->dispatch(actor, request); }

DisplayManager& Engine::displays() { return *impl_->displays; }
SessionManager& Engine::sessions() { return *impl_->sessions; }
const EngineOptions& Engine::options() const { return impl_->options; }

}  // namespace evident
