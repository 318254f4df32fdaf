// Apps on owned displays: launch (optionally waiting for a window), stop, list.
#include "evident/display/display.h"

#include <sys/stat.h>

#include <cctype>
#include <optional>
#include <set>

#include "evident/core/random.h"
#include "evident/display/windows.h"
#include "evident/display/x11.h"
#include "app_logs.h"
#include "display_internal.h"

namespace evident {

using namespace display_detail;

// ------------------------------------------------------------------------------------- apps

AppInfo DisplayManager::snapshot(App& app) {
  AppInfo info = app.info;
  info.exit_status = app.child->exit_status();
  info.alive = !info.exit_status.has_value();
  return info;
}

namespace {

Status validate_argv(const std::vector<std::string>& argv) {
  if (argv.empty() || argv.size() > static_cast<std::size_t>(protocol::kAppArgvItemsMax)) {
    return make_error("app-args", "argv must have 1.." + std::to_string(protocol::kAppArgvItemsMax) + " items");
  }
  std::size_t total = 0;
  for (const auto& a : argv) {
    if (a.size() > static_cast<std::size_t>(protocol::kAppArgvItemMaxBytes)) {
      return make_error("app-args", "an argv item is longer than " +
                                        std::to_string(protocol::kAppArgvItemMaxBytes) + " bytes");
    }
    if (a.find('\0') != std::string::npos) {
      return make_error("app-args", "an argv item contains a NUL byte");
    }
    total += a.size();
  }
  if (argv[0].empty()) return make_error("app-args", "the command is empty");
  if (total > static_cast<std::size_t>(protocol::kAppArgvTotalMaxBytes)) {
    return make_error("app-args", "argv is larger than " +
                                      std::to_string(protocol::kAppArgvTotalMaxBytes) + " bytes");
  }
  return {};
}


}  // namespace

Status validate_launch_options(const LaunchOptions& o) {
  if (o.env.size() > LaunchOptions::kMaxEnvEntries) {
    return make_error("app-args", "env has more than " + std::to_string(LaunchOptions::kMaxEnvEntries) +
                                      " entries");
  }
  std::size_t total = 0;
  std::set<std::string> names;
  for (std::size_t i = 0; i < o.env.size(); ++i) {
    const std::string& e = o.env[i];
    const std::string which = "env entry " + std::to_string(i + 1);
    total += e.size();
    if (e.find('\0') != std::string::npos) return make_error("app-args", which + " contains a NUL byte");
    const auto eq = e.find('=');
    if (eq == std::string::npos || eq == 0 || eq > 256) {
      return make_error("app-args", which + " is not KEY=VALUE with a 1..256 byte KEY");
    }
    const std::string key = e.substr(0, eq);
    const auto c0 = static_cast<unsigned char>(key[0]);
    bool valid = std::isalpha(c0) || c0 == '_';
    for (unsigned char c : key) valid = valid && (std::isalnum(c) || c == '_');
    if (!valid) return make_error("app-args", which + ": KEY must match [A-Za-z_][A-Za-z0-9_]*");
    if (key == "DISPLAY" || key == "XAUTHORITY") {
      return make_error("app-args", which + ": DISPLAY and XAUTHORITY are set by evident to the "
                                            "display's own values and cannot be overridden");
    }
    if (!names.insert(key).second) return make_error("app-args", which + " repeats an earlier KEY");
  }
  if (total > LaunchOptions::kMaxEnvBytes) {
    return make_error("app-args", "env is larger than " + std::to_string(LaunchOptions::kMaxEnvBytes) +
                                      " bytes");
  }
  if (!o.cwd.empty()) {
    if (o.cwd.size() > LaunchOptions::kMaxCwdBytes || o.cwd[0] != '/' ||
        o.cwd.find('\0') != std::string::npos) {
      return make_error("app-args", "cwd must be an absolute path of at most " +
                                        std::to_string(LaunchOptions::kMaxCwdBytes) + " bytes");
    }
    struct stat st{};
    if (::stat(o.cwd.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return make_error("app-args", "cwd is not an existing directory");
    }
  }
  return {};
}

Result<AppInfo> DisplayManager::launch_app(int display_id, const std::string& generation,
                                           const std::vector<std::string>& argv,
                                           std::int64_t wait_window_ms) {
  LaunchOptions o;
  o.wait_window_ms = wait_window_ms;
  return launch_app(display_id, generation, argv, o);
}

Result<AppInfo> DisplayManager::launch_app(int display_id, const std::string& generation,
                                           const std::vector<std::string>& argv,
                                           const LaunchOptions& launch) {
  const std::int64_t wait_window_ms = launch.wait_window_ms;
  EVIDENT_TRY(validate_argv(argv));
  EVIDENT_TRY(validate_launch_options(launch));
  if (wait_window_ms < 0 || wait_window_ms > kMaxWaitWindowMs) {
    return make_error("app-args", "wait_window_ms must be in 0.." + std::to_string(kMaxWaitWindowMs));
  }
  auto got = get_live(display_id, generation);
  if (!got.ok()) return got.error();
  std::shared_ptr<OwnedDisplay> d = *got;
  {
    std::lock_guard lock(mu_);
    if (shutting_down_) return shutting_down();
    if (static_cast<int>(apps_.size()) >= options_.max_apps) {
      return make_error("app-limit", "at most " + std::to_string(options_.max_apps) +
                                         " apps per engine; stop one first");
    }
  }
  // A relative path with a '/' ("./run.sh") is relative to the app's working directory.
  const std::string command =
      (!launch.cwd.empty() && argv[0][0] != '/' && argv[0].find('/') != std::string::npos)
          ? launch.cwd + "/" + argv[0]
          : argv[0];
  auto exe = resolve_executable(command, path_env());
  if (!exe.ok()) {
    // The command is request content: never echoed (docs/errors.md).
    return make_error("app-launch-failed", "cannot launch the command (argv[0]): " +
                                               exe.error().message);
  }

  auto app = std::make_shared<App>();
  app->info.app_id = random_id("app");
  app->info.display_id = display_id;
  app->info.generation = generation;
  app->info.argv_sha256 = argv_sha256(argv);
  EVIDENT_TRY(make_private_dir(options_.runtime_dir));
  EVIDENT_TRY(make_private_dir(options_.runtime_dir + "/apps"));
  app->info.log_path = options_.runtime_dir + "/apps/" + app->info.app_id + ".log";
  // The app writes into a pipe that the log thread copies into its log, bounded (app_logs.h).
  auto log_fd = logs_->open(app->info.log_path);
  if (!log_fd.ok()) return log_fd.error();
  Fd log(*log_fd);
  // Every way out of this launch without a registered app ends its log (kept among the newest).
  struct LogEnder {
    AppLogs& logs;
    const std::string& path;
    bool registered = false;
    ~LogEnder() {
      if (!registered) logs.ended(path);
    }
  } log_ender{*logs_, app->info.log_path};
  Fd devnull(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (devnull.fd < 0) {
    return make_error("app-launch-failed", std::string("cannot open /dev/null: ") + std::strerror(errno));
  }

  // For --wait-window-ms: watch root's children from BEFORE the spawn, so no map is missed.
  ::Display* watch = nullptr;
  std::optional<WindowWaiter> waiter;
  if (wait_window_ms > 0) {
    auto c = d->open_connection();
    if (!c.ok()) return display_dead_error();
    watch = *c;
    auto w = WindowWaiter::start(watch);
    if (!w.ok()) {
      close_x_connection(watch);
      return w.error();
    }
    waiter.emplace(std::move(*w));
  }
  struct WatchCloser {
    ::Display*& w;
    ~WatchCloser() { close_x_connection(w); }
  } closer{watch};

  SpawnSpec spec;
  spec.path = *exe;
  spec.argv = argv;
  std::vector<std::string> overrides = launch.env;
  if (auto bus = d->accessibility_bus()) {
    // The display's accessibility stack wins over the caller's entries of the same names.
    const std::vector<std::string> ours = bus->app_env();
    auto key = [](const std::string& e) { return e.substr(0, e.find('=')); };
    overrides.erase(std::remove_if(overrides.begin(), overrides.end(),
                                   [&](const std::string& e) {
                                     return std::any_of(ours.begin(), ours.end(), [&](const std::string& o) {
                                       return key(o) == key(e);
                                     });
                                   }),
                    overrides.end());
    overrides.insert(overrides.end(), ours.begin(), ours.end());
  }
  overrides.push_back("DISPLAY=" + d->info().name);
  overrides.push_back("XAUTHORITY=" + d->auth_file());
  spec.env = environment_with(overrides);
  spec.cwd = launch.cwd;
  spec.stdin_fd = devnull.fd;
  spec.stdout_fd = log.fd;
  spec.stderr_fd = log.fd;
  auto child = spawner_.spawn(spec);
  if (!child.ok()) {
    return make_error("app-launch-failed",
                      "cannot launch the command (argv[0]): " + child.error().message);
  }
  log.reset();  // only the app holds the write end: EOF on the pipe once it and its children end
  app->child = std::move(*child);
  app->info.pid = app->child->pid();
  {
    std::lock_guard lock(mu_);
    if (shutting_down_) {
      app->child->stop(kAppStopBoundMs);
      return shutting_down();
    }
    apps_[app->info.app_id] = app;
  }
  log_ender.registered = true;
  auto forget = [&] {
    {
      std::lock_guard lock(mu_);
      apps_.erase(app->info.app_id);
    }
    logs_->ended(app->info.log_path);
  };
  auto exited_error = [&](int status) {
    logs_->flush(app->info.log_path);  // what it printed before exiting is in the log it names
    return make_error("app-exited", "the app exited at once with status " + std::to_string(status) +
                                        " (its output is in " + app->info.log_path + ")");
  };

  if (wait_window_ms <= 0) {
    if (app->child->wait_exit(kAppEarlyExitGraceMs)) {
      forget();
      return exited_error(app->child->reap());
    }
    return snapshot(*app);
  }

  const std::int64_t deadline_us = steady_us() + wait_window_ms * 1000;
  // The app's whole process tree: `sh -c "zenity ...; echo done"` maps zenity's window, a child
  // of the launched pid (docs/windows.md, "Which windows belong to an app").
  WindowMatch match;
  match.pid_tree = app->info.pid;
  WindowWaiter::Scan scan;
  // On a managed display the window counts once the keeper has fitted, raised and focused it:
  // a `type` right after the launch then reaches it (docs/windows.md, "Managed windows").
  auto found = [&] {
    if (auto keeper = d->keeper()) (void)keeper->sync(WindowKeeper::kSyncBoundMs);
    return snapshot(*app);
  };
  for (;;) {
    if (waiter->find(match, true, &scan)) return found();
    if (x_connection_dead(watch)) {
      forget();
      app->child->stop(kAppStopBoundMs);
      return display_dead_error();
    }
    if (app->child->exited()) {
      forget();
      return exited_error(app->child->reap());
    }
    const auto wake = waiter->wait(deadline_us, app->child->pidfd());
    if (wake == WindowWaiter::Wake::kTimeout) {
      if (waiter->find(match, true, &scan)) return found();
      forget();
      app->child->stop(kAppStopBoundMs);
      return make_error("app-window-timeout",
                        "waited " + std::to_string(wait_window_ms) + " ms for " +
                            describe_match(match) + ", created after the launch; saw " +
                            describe_scan(scan, true) + ". The app was stopped");
    }
  }
}

Result<int> DisplayManager::stop_app(const std::string& app_id) {
  std::shared_ptr<App> app;
  {
    std::lock_guard lock(mu_);
    auto it = apps_.find(app_id);
    if (it == apps_.end()) {
      return make_error("app-not-found", "no app with that id is owned by this engine");
    }
    app = it->second;
    apps_.erase(it);
  }
  auto status = app->child->stop(kAppStopBoundMs);
  logs_->ended(app->info.log_path);
  return status;
}

std::vector<AppInfo> DisplayManager::list_apps() {
  std::vector<std::shared_ptr<App>> apps;
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, a] : apps_) apps.push_back(a);
  }
  std::vector<AppInfo> out;
  for (auto& a : apps) out.push_back(snapshot(*a));
  return out;
}

Result<AppInfo> DisplayManager::app(const std::string& app_id) {
  std::shared_ptr<App> a;
  {
    std::lock_guard lock(mu_);
    auto it = apps_.find(app_id);
    if (it == apps_.end()) {
      return make_error("app-not-found", "no app with that id is owned by this engine");
    }
    a = it->second;
  }
  return snapshot(*a);
}

bool DisplayManager::app_alive(const std::string& app_id) {
  auto a = app(app_id);
  return a.ok() && a->alive;
}

void DisplayManager::stop_apps_of(int display_id, const std::string& generation) {
  std::vector<std::shared_ptr<App>> victims;
  {
    std::lock_guard lock(mu_);
    for (auto it = apps_.begin(); it != apps_.end();) {
      if (it->second->info.display_id == display_id && it->second->info.generation == generation) {
        victims.push_back(it->second);
        it = apps_.erase(it);
      } else {
        ++it;
      }
    }
  }
  stop_all(victims, kAppStopBoundMs);
  for (const auto& v : victims) logs_->ended(v->info.log_path);
}

}  // namespace evident
