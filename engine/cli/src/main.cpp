// The `evident` command line: CLI11 subcommands that talk to the daemon (one JSON request per
// command), `verify` and `report` (local, no daemon), and `daemon`, which execs the
// `evident-daemon` program beside this one (daemon_main.cpp). This binary links no X, D-Bus or
// engine library: a command is a short-lived process whose start-up is mostly the loading of
// its libraries (docs/cli.md "One front binary, one daemon program").
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli_common.h"
#include "evident/core/fs.h"
#include "evident/core/json.h"
#include "evident/core/utf8.h"
#include "evident/daemon/client.h"
#include "evident/protocol/protocol.h"
#include "evident/report/report.h"
#include "evidence_cli.h"
#include "python_delegate.h"
#include "browser_cli.h"
#include "verify_cli.h"
#include "task_cli.h"
#include "windows_cli.h"

namespace evident {
namespace {

constexpr std::size_t kMaxRequestText = protocol::kRequestMaxBytes - 4096;

struct Globals {
  bool json = false;
  std::string socket;
};

int print_error(const Globals& g, const Error& e, int exit_code) {
  return print_cli_error(g.json, e, exit_code);
}

// `evident daemon ARGS`: execs the evident-daemon program installed beside this binary (the
// build tree and `cmake --install` both put them side by side) with the global options given
// before `daemon` and ARGS. The process keeps its pid. daemon-program-missing when it cannot.
int exec_daemon_program(const Globals& g, const std::vector<std::string>& global_args,
                        int argc, char** argv) {
  const std::string self = own_program_path();
  const std::string program =
      self.empty() ? "evident-daemon" : (std::filesystem::path(self).parent_path() / "evident-daemon").string();
  std::vector<std::string> args{program};
  args.insert(args.end(), global_args.begin(), global_args.end());
  args.insert(args.end(), argv, argv + argc);
  std::vector<char*> c_args;
  for (auto& a : args) c_args.push_back(a.data());
  c_args.push_back(nullptr);
  ::execv(program.c_str(), c_args.data());
  const int err = errno;
  return print_error(g, make_error("daemon-program-missing", "cannot run " + program + " (" +
                                                                 std::strerror(err) + ")"), 2);
}

// Reads a --request value: inline JSON, @FILE or - (stdin), bounded by `max` (the op's raw
// request bound; the envelope the text is embedded in is within its op's envelope bound,
// the daemon's Engine::max_request_bytes). "request-input", "request-too-large".
Result<std::string> read_request_arg(const std::string& value, std::size_t max = kMaxRequestText) {
  std::string text;
  if (value == "-") {
    std::ostringstream ss;
    char buf[65536];
    while (std::cin.read(buf, sizeof buf) || std::cin.gcount() > 0) {
      ss.write(buf, std::cin.gcount());
      if (static_cast<std::size_t>(ss.tellp()) > max) {
        return make_error("request-too-large", "the request on stdin is too large");
      }
    }
    text = ss.str();
  } else if (!value.empty() && value[0] == '@') {
    auto r = read_file(value.substr(1), max);
    if (!r.ok()) {
      return make_error(r.error().code == "fs-too-large" ? "request-too-large" : "request-input",
                        r.error().message);
    }
    text = *r;
  } else {
    text = value;
  }
  if (text.size() > max) {
    return make_error("request-too-large", "the request is too large");
  }
  return text;
}

std::string pad(const std::string& s, std::size_t w) {
  return s.size() >= w ? s + " " : s + std::string(w - s.size(), ' ');
}

// Human output for each op's success.
void print_human(const std::string& op, const Json& r) {
  if (print_browser_human(op, r)) return;
  if (op == "task") {  // never the base64 frames of tool_results (task_cli.h)
    print_task_human(std::cout, r);
    std::cout << std::flush;
    return;
  }
  if (op == "accessibility.tree") {
    // One line per node, indented by depth: role "name" [states] x,y WxH = value.
    for (const auto& n : r["nodes"]) {
      std::cout << std::string(2 * static_cast<std::size_t>(n["depth"].get<int>()), ' ')
                << n["role"].get<std::string>() << " " << Json(n["name"].get<std::string>()).dump();
      if (!n["states"].empty()) {
        std::cout << " [";
        bool first = true;
        for (const auto& st : n["states"]) {
          std::cout << (first ? "" : " ") << st.get<std::string>();
          first = false;
        }
        std::cout << "]";
      }
      if (n["bounds"].is_object()) {
        const Json& b = n["bounds"];
        std::cout << " " << b["x"].get<int>() << "," << b["y"].get<int>() << " "
                  << b["width"].get<int>() << "x" << b["height"].get<int>();
      }
      if (n["value_withheld"].get<bool>()) {
        std::cout << " (value withheld)";
      } else if (n["value"].is_string()) {
        std::cout << " = " << Json(n["value"].get<std::string>()).dump();
      }
      std::cout << "\n";
    }
    std::cout << r["node_count"].get<int>() << " nodes"
              << (r["truncated"].get<bool>() ? " (truncated by " + r["truncated_by"].get<std::string>() + ")" : "")
              << std::endl;
    return;
  }
  if (op == "display.create") {
    const Json& d = r["display"];
    std::cout << "display " << d["name"].get<std::string>() << " ready  id "
              << d["id"].get<int>() << "  generation " << d["generation"].get<std::string>()
              << "  " << d["width"].get<int>() << "x" << d["height"].get<int>() << std::endl;
  } else if (op == "display.destroy") {
    std::cout << "destroyed display " << r["display_id"].get<int>() << " ("
              << r["generation"].get<std::string>() << ")" << std::endl;
  } else if (op == "display.list") {
    if (r["displays"].empty()) {
      std::cout << "no displays" << std::endl;
      return;
    }
    std::cout << pad("ID", 6) << pad("NAME", 8) << pad("GENERATION", 38) << "SIZE" << std::endl;
    for (const auto& d : r["displays"]) {
      std::cout << pad(std::to_string(d["id"].get<int>()), 6)
                << pad(d["name"].get<std::string>(), 8)
                << pad(d["generation"].get<std::string>(), 38) << d["width"].get<int>() << "x"
                << d["height"].get<int>() << std::endl;
    }
  } else if (op == "display.status") {
    std::cout << "ready: " << (r["ready"].get<bool>() ? "yes" : "no") << std::endl;
    for (const auto& l : r["layers"]) {
      std::cout << "  " << pad(l["name"].get<std::string>(), 16)
                << pad(l["state"].get<std::string>(), 9) << l["detail"].get<std::string>();
      if (!l["fix"].get<std::string>().empty()) {
        std::cout << "  (fix: " << l["fix"].get<std::string>() << ")";
      }
      std::cout << std::endl;
    }
  } else if (op == "display.screenshot") {
    const Json& p = r["png"];
    std::cout << "wrote " << p["path"].get<std::string>() << "  " << p["width"].get<int>()
              << "x" << p["height"].get<int>() << "  " << p["byte_length"].get<std::int64_t>()
              << " bytes  sha256 " << p["sha256"].get<std::string>() << std::endl;
  } else if (op == "app.launch") {
    const Json& a = r["app"];
    std::cout << "launched " << a["app_id"].get<std::string>() << "  pid "
              << a["pid"].get<int>() << "  on display " << a["display_id"].get<int>()
              << std::endl;
  } else if (op == "app.stop") {
    std::cout << "stopped " << r["app_id"].get<std::string>() << "  exit status "
              << r["exit_status"].get<int>() << std::endl;
  } else if (op == "app.list") {
    if (r["apps"].empty()) {
      std::cout << "no apps" << std::endl;
      return;
    }
    std::cout << pad("APP", 38) << pad("DISPLAY", 9) << pad("PID", 9) << "STATE" << std::endl;
    for (const auto& a : r["apps"]) {
      std::string state = a["alive"].get<bool>()
                              ? "running"
                              : "exited " + std::to_string(a["exit_status"].get<int>());
      std::cout << pad(a["app_id"].get<std::string>(), 38)
                << pad(std::to_string(a["display_id"].get<int>()), 9)
                << pad(std::to_string(a["pid"].get<int>()), 9) << state << std::endl;
    }
  } else {
    std::cout << r.dump(2) << std::endl;
  }
}

// Sends one request; prints the answer; returns the exit status.
int send(const Globals& g, const std::string& op, const std::string& request_text) {
  std::string socket = g.socket.empty() ? socket_path_from_env() : g.socket;
  auto answer = daemon_call(socket, request_text);
  if (!answer.ok()) return print_error(g, answer.error(), 1);
  const Json& r = *answer;
  bool ok = r.value("ok", false);
  if (g.json) {
    std::cout << dump_json(r) << std::endl;
  } else if (ok) {
    print_human(op, r);
  } else {
    const Json& e = r["error"];
    std::cerr << "evident: error [" << e.value("code", "?") << "]: " << e.value("message", "")
              << std::endl;
  }
  return ok ? 0 : 1;
}

int send(const Globals& g, const std::string& op, const Json& args) {
  return send(g, op, dump_json(Json{{"op", op}, {"args", args}}));
}

std::string absolute(const std::string& path) {
  std::error_code ec;
  auto p = std::filesystem::absolute(path, ec);
  return ec ? path : p.lexically_normal().string();
}

int run(int argc, char** argv) {
  Globals g;
  // --json must shape even a usage error, so look for it before parsing (not after "--").
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") break;
    if (a == "--json") g.json = true;
  }
  // Every argument must be valid UTF-8 before anything parses it: requests are JSON (UTF-8
  // only), and an argument that cannot be carried must be refused, never mangled or allowed to
  // reach a serializer. The argument is not echoed; its position is.
  for (int i = 1; i < argc; ++i) {
    if (!is_valid_utf8(argv[i])) {
      return print_error(g, make_error("usage", "argument " + std::to_string(i) +
                                                    " is not valid UTF-8"), 2);
    }
  }

  // `merge` and `fanout` (after any global options) are the Python package's; the rest of the
  // command line is its own (python_delegate.cpp). `verify` is the same function as the X-free
  // `evident-verify` executable (verify_cli.cpp), given the rest of the command line.
  // `text` (OCR of a display, docs/windows.md) is the package's too: it reaches the daemon given
  // by --socket (passed on as EVIDENT_SOCKET) through evident.Client.
  std::string pre_socket;
  std::vector<std::string> global_args;  // as given, for evident-daemon
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--json") {
      global_args.push_back(a);
      continue;
    }
    if (a.rfind("--socket=", 0) == 0) {
      pre_socket = a.substr(9);
      global_args.push_back(a);
      continue;
    }
    if (a == "--socket") {
      global_args.push_back(a);
      if (i + 1 < argc) {
        pre_socket = argv[i + 1];
        global_args.emplace_back(argv[i + 1]);
      }
      ++i;
      continue;
    }
    if (a == "daemon") return exec_daemon_program(g, global_args, argc - i - 1, argv + i + 1);
    if (a == "merge" || a == "fanout") {
      return exec_python_module(a == "merge" ? "evident.merge" : "evident.fanout",
                                std::vector<std::string>(argv + i + 1, argv + argc), g.json);
    }
    if (a == "text") {
      if (!pre_socket.empty()) ::setenv("EVIDENT_SOCKET", pre_socket.c_str(), 1);
      return exec_python_module("evident.text_cli", std::vector<std::string>(argv + i + 1, argv + argc),
                                g.json);
    }
    if (a == "verify") {
      argv[i] = const_cast<char*>("evident verify");  // its --help names the command
      return run_verify_program(argc - i, argv + i, g.json);
    }
    break;
  }

  CLI::App app{"evident: owned X displays, native input, exact frames and verifiable receipts"};
  app.fallthrough();  // global options also after the subcommand (inherited by subcommands)
  app.require_subcommand(1);
  app.add_flag("--json", g.json, "print exactly one JSON object");
  app.add_option("--socket", g.socket, "the daemon's socket (default $EVIDENT_SOCKET or " +
                                           default_socket_path() + ")");

  // daemon (handled before parsing, above, by exec_daemon_program); listed for --help.
  app.add_subcommand("daemon",
                     "run the daemon in the foreground (the evident-daemon program; its options: "
                     "evident daemon --help)");

  // display
  auto* display = app.add_subcommand("display", "owned displays");
  display->require_subcommand(1);
  int width = 1280, height = 800, depth = 24, dpi = 96;
  auto* d_create = display->add_subcommand("create", "start an owned display and wait until ready");
  d_create->add_option("--width", width)->capture_default_str();
  d_create->add_option("--height", height)->capture_default_str();
  d_create->add_option("--depth", depth)->capture_default_str();
  d_create->add_option("--dpi", dpi)->capture_default_str();
  std::string keyboard_layout;
  d_create->add_option("--keyboard-layout", keyboard_layout, "XKB layout applied once ready (de, fr, ...)");
  bool manage_windows = false;
  d_create->add_flag("--manage-windows", manage_windows,
                     "fit, raise and focus every newly mapped window (docs/windows.md)");
  bool accessibility_flag = false;
  d_create->add_flag("--accessibility", accessibility_flag,
                     "a private accessibility stack (D-Bus session bus, AT-SPI bus, registry)");
  int id = 0;
  std::string gen, out;
  auto* d_destroy = display->add_subcommand("destroy", "stop the display's apps, then the display");
  d_destroy->add_option("ID", id)->required();
  d_destroy->add_option("GENERATION", gen)->required();
  auto* d_list = display->add_subcommand("list", "the displays this daemon owns");
  auto* d_status = display->add_subcommand("status", "readiness layers, probed fresh");
  d_status->add_option("ID", id)->required();
  d_status->add_option("GENERATION", gen)->required();
  auto* d_shot = display->add_subcommand("screenshot", "one full-display PNG");
  d_shot->add_option("ID", id)->required();
  d_shot->add_option("GENERATION", gen)->required();
  d_shot->add_option("--out", out, "the PNG file to write (0600)")->required();

  // app
  auto* appc = app.add_subcommand("app", "apps on owned displays");
  appc->require_subcommand(1);
  std::string wait_window_ms;  // parsed below: refused, never clamped, beyond the bound
  std::vector<std::string> cmd;
  std::string app_id;
  auto* a_launch = appc->add_subcommand("launch", "launch an app on a display: ID GENERATION -- CMD [ARG...]");
  a_launch->add_option("ID", id)->required();
  a_launch->add_option("GENERATION", gen)->required();
  a_launch->add_option("--wait-window-ms", wait_window_ms,
                       "wait for a mapped top-level window of the app's process tree");
  std::vector<std::string> launch_env;
  std::string launch_cwd;
  a_launch->add_option("--env", launch_env, "KEY=VALUE for the app (repeatable; not DISPLAY/XAUTHORITY)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  a_launch->add_option("--cwd", launch_cwd, "the app's working directory");
  a_launch->add_option("CMD", cmd, "the command and its arguments (after --)")->required();
  auto* a_stop = appc->add_subcommand("stop", "stop an app (TERM, then KILL after 3 s)");
  a_stop->add_option("APP_ID", app_id)->required();
  auto* a_list = appc->add_subcommand("list", "apps and their liveness");

  // accessibility tree (docs/accessibility.md)
  auto* ax = app.add_subcommand("accessibility", "AT-SPI2 trees of apps on accessibility displays");
  ax->require_subcommand(1);
  int ax_max_nodes = 0, ax_max_depth = 0;
  auto* ax_tree = ax->add_subcommand("tree", "the accessibility tree of an app: APP_ID");
  ax_tree->add_option("APP_ID", app_id)->required();
  ax_tree->add_option("--max-nodes", ax_max_nodes, "at most this many nodes");
  ax_tree->add_option("--max-depth", ax_max_depth, "at most this many levels below the app");

  // window list|wait|capture|focus, wait stable|pixels, display env (windows_cli.cpp)
  auto window_cli = add_window_commands(app, *display);

  // cu actions
  auto* cu = app.add_subcommand("cu", "computer-use actions outside a session");
  cu->require_subcommand(1);
  std::string request;
  auto* cu_actions = cu->add_subcommand("actions", "run one action batch: ID GENERATION --request JSON|@FILE|-");
  cu_actions->add_option("ID", id)->required();
  cu_actions->add_option("GENERATION", gen)->required();
  cu_actions->add_option("--request", request, "JSON, @FILE or - (stdin)")->required();

  // session
  auto* session = app.add_subcommand("session", "one request of the session protocol");
  session->add_option("--request", request, "JSON, @FILE or - (stdin)")->required();
  // task (docs/agents.md "The lane"): one request of the agent task protocol
  auto* task = app.add_subcommand("task", "one request of the agent task protocol (task.begin/turn/abort/status)");
  task->add_option("--request", request, "JSON, @FILE or - (stdin)")->required();

  BrowserCli browser_cli(app);  // browser (browser_cli.cpp)

  // verify (local; handled before parsing, above, by run_verify_program); listed for --help.
  app.add_subcommand("verify", "verify a receipt offline: RECEIPT [--frames DIR] [--key PUB.pem]... "
                               "(the same as evident-verify)");
  EvidenceCli evidence_cli;  // key, log, disclose (evidence_cli.cpp)
  add_evidence_commands(app, evidence_cli);

  // report (local)
  auto* report = app.add_subcommand("report", "write a self-contained HTML (or Markdown) report of an evidence directory");
  ReportOptions ro;
  std::string report_format = "html";
  report->add_option("DIR", ro.evidence_dir, "the evidence directory (receipt.json, actions.json, frames)")->required();
  report->add_option("-o,--out", ro.out_path, "the file to write (default DIR/report.html or DIR/report.md; - for stdout)");
  report->add_option("--format", report_format, "html (default) or markdown")
      ->check(CLI::IsMember({"html", "markdown"}));
  report->add_option("--frames", ro.frames_dir, "where the frames are (default DIR)");
  report->add_option("--key", ro.key_path, "a public key to authenticate receipt.dsse.json with");

  // merge and fanout run the Python package (handled before parsing, above); listed for --help.
  app.add_subcommand("merge", "verify shard bundles and merge them: DIR... -o OUT "
                              "(python3 -m evident.merge; docs/scale.md)");
  app.add_subcommand("fanout", "run session jobs on a Dask cluster: --scheduler ADDR JOBS.json "
                               "-o OUT (python3 -m evident.fanout; docs/scale.md)");
  app.add_subcommand("text", "text on a display by OCR (tesseract): read ID GENERATION | find ID "
                             "GENERATION TEXT (python3 -m evident.text_cli; docs/windows.md)");

  if (auto done = parse_command_line(app, argc, argv, g.json, "evident --help")) return *done;

  if (d_create->parsed()) {
    Json args{{"width", width}, {"height", height}, {"depth", depth}, {"dpi", dpi}};
    if (d_create->count("--keyboard-layout")) args["keyboard_layout"] = keyboard_layout;
    if (manage_windows) args["manage_windows"] = true;
    if (accessibility_flag) args["accessibility"] = true;
    return send(g, "display.create", args);
  }
  if (d_destroy->parsed()) return send(g, "display.destroy", Json{{"display_id", id}, {"generation", gen}});
  if (d_list->parsed()) return send(g, "display.list", Json::object());
  if (d_status->parsed()) return send(g, "display.status", Json{{"display_id", id}, {"generation", gen}});
  if (d_shot->parsed()) {
    return send(g, "display.screenshot",
                Json{{"display_id", id}, {"generation", gen}, {"out", absolute(out)}});
  }
  if (a_launch->parsed()) {
    Json args{{"display_id", id}, {"generation", gen}, {"argv", cmd}};
    if (a_launch->count("--wait-window-ms")) {
      // Digits only, checked against the bound before any conversion can overflow.
      const auto max = protocol::kAppWaitWindowMsMax;
      std::int64_t v = 0;
      bool valid = !wait_window_ms.empty() && wait_window_ms.size() <= 18;
      for (char c : wait_window_ms) valid = valid && c >= '0' && c <= '9';
      if (valid) {
        v = std::stoll(wait_window_ms);
        valid = v <= max;
      }
      if (!valid) {
        return print_error(g, make_error("usage", "--wait-window-ms must be an integer in 0.." +
                                                      std::to_string(max)), 2);
      }
      args["wait_window_ms"] = v;
    }
    if (a_launch->count("--env")) args["env"] = launch_env;
    if (a_launch->count("--cwd")) args["cwd"] = absolute(launch_cwd);
    return send(g, "app.launch", args);
  }
  if (a_stop->parsed()) return send(g, "app.stop", Json{{"app_id", app_id}});
  if (a_list->parsed()) return send(g, "app.list", Json::object());
  if (auto rc = run_window_command(*window_cli, g.json, g.socket)) return *rc;
  if (cu_actions->parsed()) {
    auto text = read_request_arg(request);
    if (!text.ok()) return print_error(g, text.error(), 1);
    // Checked here so that the raw text can be embedded as is (duplicate keys still reach the
    // daemon's strict parser; trailing data cannot alter the envelope).
    auto parsed = parse_json_strict(*text, kMaxRequestText, "request-json");
    if (!parsed.ok()) return print_error(g, parsed.error(), 1);
    std::string envelope = "{\"op\":\"cu.actions\",\"args\":{\"display_id\":" +
                           std::to_string(id) + ",\"generation\":" + dump_json(Json(gen)) +
                           ",\"request\":" + *text + "}}";
    return send(g, "cu.actions", envelope);
  }
  if (session->parsed()) {
    auto text = read_request_arg(request);
    if (!text.ok()) return print_error(g, text.error(), 1);
    // From a file or stdin the bytes are unchecked so far; a JSON string can carry only UTF-8.
    if (!is_valid_utf8(*text)) {
      return print_error(g, make_error("session-json", "session request is not valid UTF-8"), 1);
    }
    // The raw text goes through as a string, so the session layer's strict parser sees it as
    // sent (duplicate keys included).
    return send(g, "session", Json{{"request", *text}});
  }
  if (task->parsed()) {
    // A task turn carries a provider response of up to 1 MiB: the raw request is bounded by the
    // task layer's limit, and its envelope by the task op's (the daemon's Engine::max_request_bytes).
    auto text = read_request_arg(request, protocol::kTaskRequestMaxBytes);
    if (!text.ok()) return print_error(g, text.error(), 1);
    if (!is_valid_utf8(*text)) {
      return print_error(g, make_error("task-json", "task request is not valid UTF-8"), 1);
    }
    return send(g, "task", Json{{"request", *text}});
  }
  if (ax_tree->parsed()) {
    Json args{{"app_id", app_id}};
    if (ax_tree->count("--max-nodes")) args["max_nodes"] = ax_max_nodes;
    if (ax_tree->count("--max-depth")) args["max_depth"] = ax_max_depth;
    return send(g, "accessibility.tree", args);
  }
  if (auto b = browser_cli.request()) {
    if (!b->ok()) return print_error(g, b->error(), 2);
    return send(g, (*b)->first, (*b)->second);
  }
  if (report->parsed()) {
    ro.format = report_format == "markdown" ? ReportFormat::kMarkdown : ReportFormat::kHtml;
    return run_report_command(ro, g.json, std::cout, std::cerr);
  }
  if (auto status = run_evidence_commands(evidence_cli, g.json)) return *status;
  return print_error(g, make_error("usage", "no command given"), 2);
}

}  // namespace
}  // namespace evident

// Anything that escapes a command is an `internal` error response (cli_common.h).
int main(int argc, char** argv) { return evident::run_guarded(evident::run, argc, argv); }
