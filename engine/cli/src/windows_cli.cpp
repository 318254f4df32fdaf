#include "windows_cli.h"

#include <cstdint>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "evident/core/error_json.h"
#include "evident/core/json.h"
#include "evident/daemon/client.h"

namespace evident {

struct WindowCli {
  int id = 0;
  std::string gen;
  // window
  CLI::App* list = nullptr;
  CLI::App* wait = nullptr;
  CLI::App* capture = nullptr;
  CLI::App* focus = nullptr;
  std::string app_id, title, wm_class, out, region, color, reference, until, templ;
  bool mapped_only = false;
  std::int64_t pid = 0, window = 0, timeout_ms = 0, quiet_ms = 300, tolerance = 0,
               min_permille = 1000, max_pixels = 0, min_score_permille = 950;
  // wait
  CLI::App* stable = nullptr;
  CLI::App* pixels = nullptr;
  CLI::App* image = nullptr;
  // display env
  CLI::App* env = nullptr;
};

namespace {

std::string pad(const std::string& s, std::size_t w) {
  return s.size() >= w ? s + " " : s + std::string(w - s.size(), ' ');
}

int usage(bool json, const std::string& message) {
  if (json) {
    std::cout << dump_json(error_response(make_error("usage", message))) << std::endl;
  } else {
    std::cerr << "evident: usage error: " << message << "\n(run: evident --help)" << std::endl;
  }
  return 2;
}

// "X,Y,W,H" -> {"x","y","width","height"}.
bool parse_region(const std::string& text, Json* out) {
  std::vector<long> v;
  std::size_t start = 0;
  while (start <= text.size() && v.size() < 5) {
    const auto comma = text.find(',', start);
    const std::string part = text.substr(start, comma == std::string::npos ? std::string::npos
                                                                             : comma - start);
    if (part.empty() || part.size() > 6) return false;
    std::size_t used = 0;
    long n = 0;
    try {
      n = std::stol(part, &used);
    } catch (...) {
      return false;
    }
    if (used != part.size()) return false;
    v.push_back(n);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (v.size() != 4) return false;
  *out = Json{{"x", v[0]}, {"y", v[1]}, {"width", v[2]}, {"height", v[3]}};
  return true;
}

// "#rrggbb" or "rrggbb" -> {"r","g","b"}.
bool parse_color(std::string text, Json* out) {
  if (!text.empty() && text[0] == '#') text.erase(0, 1);
  if (text.size() != 6) return false;
  for (char c : text) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  }
  *out = Json{{"r", std::stoi(text.substr(0, 2), nullptr, 16)},
              {"g", std::stoi(text.substr(2, 2), nullptr, 16)},
              {"b", std::stoi(text.substr(4, 2), nullptr, 16)}};
  return true;
}

std::string absolute(const std::string& path) {
  std::error_code ec;
  auto p = std::filesystem::absolute(path, ec);
  return ec ? path : p.lexically_normal().string();
}

void print_window_row(const Json& w) {
  std::string pid = w["pid"].is_null() ? "-" : std::to_string(w["pid"].get<long>());
  std::string geo = std::to_string(w["width"].get<int>()) + "x" +
                    std::to_string(w["height"].get<int>()) + "+" +
                    std::to_string(w["x"].get<int>()) + "+" + std::to_string(w["y"].get<int>());
  std::string flags = std::string(w["mapped"].get<bool>() ? "mapped" : "unmapped") +
                      (w["focused"].get<bool>() ? ",focused" : "") +
                      (w["override_redirect"].get<bool>() ? ",override" : "");
  std::cout << pad(std::to_string(w["id"].get<std::uint64_t>()), 11) << pad(pid, 8)
            << pad(geo, 20) << pad(flags, 24) << pad(w["class"].get<std::string>(), 14)
            << w["title"].get<std::string>() << std::endl;
}

void print_human(const std::string& op, const Json& r) {
  if (op == "window.list") {
    if (r["windows"].empty()) {
      std::cout << "no top-level windows" << std::endl;
    } else {
      std::cout << pad("ID", 11) << pad("PID", 8) << pad("GEOMETRY", 20) << pad("STATE", 24)
                << pad("CLASS", 14) << "TITLE" << std::endl;
      for (const auto& w : r["windows"]) print_window_row(w);
    }
    std::cout << "focus: " << r["focus"]["kind"].get<std::string>() << std::endl;
  } else if (op == "window.wait") {
    if (r["outcome"] == "found") {
      std::cout << "found after " << r["elapsed_ms"].get<std::int64_t>() << " ms:" << std::endl;
      print_window_row(r["window"]);
    } else {
      std::cout << "timeout after " << r["elapsed_ms"].get<std::int64_t>() << " ms: waited for "
                << r["waited_for"].get<std::string>() << "; saw " << r["seen"].get<std::string>()
                << std::endl;
    }
  } else if (op == "window.capture") {
    const Json& p = r["png"];
    std::cout << "wrote " << p["path"].get<std::string>() << "  " << p["width"].get<int>() << "x"
              << p["height"].get<int>() << "  sha256 " << p["sha256"].get<std::string>()
              << (r["clipped"].get<bool>() ? "  (clipped to the display)" : "") << std::endl;
  } else if (op == "window.focus") {
    std::cout << (r["focused"].get<bool>() ? "focused" : "not focused") << "  (focus: "
              << r["focus"]["kind"].get<std::string>() << ")" << std::endl;
  } else if (op == "wait.image") {
    const Json& b = r["best"];
    std::cout << r["outcome"].get<std::string>() << " after " << r["elapsed_ms"].get<std::int64_t>()
              << " ms: best match " << b["width"].get<int>() << "x" << b["height"].get<int>() << "+"
              << b["x"].get<int>() << "+" << b["y"].get<int>() << " score "
              << b["score_permille"].get<int>() << "/1000 (needed "
              << r["min_score_permille"].get<int>() << ")" << std::endl;
  } else if (op == "wait.stable" || op == "wait.pixels") {
    std::cout << r["outcome"].get<std::string>() << " after " << r["elapsed_ms"].get<std::int64_t>()
              << " ms" << std::endl;
  } else if (op == "display.env") {
    // Shell syntax, so `eval "$(evident display env ID GEN)"` works.
    for (const auto& [k, v] : r["env"].items()) {
      std::string s = v.get<std::string>();
      std::string q = "'";
      for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
      q += "'";
      std::cout << "export " << k << "=" << q << std::endl;
    }
  } else {
    std::cout << r.dump(2) << std::endl;
  }
}

int send(bool json, const std::string& socket_opt, const std::string& op, const Json& args) {
  const std::string socket = socket_opt.empty() ? socket_path_from_env() : socket_opt;
  auto answer = daemon_call(socket, dump_json(Json{{"op", op}, {"args", args}}));
  if (!answer.ok()) {
    if (json) {
      std::cout << dump_json(error_response(answer.error())) << std::endl;
    } else {
      std::cerr << "evident: error [" << answer.error().code << "]: " << answer.error().message
                << std::endl;
    }
    return 1;
  }
  const Json& r = *answer;
  const bool ok = r.value("ok", false);
  if (json) {
    std::cout << dump_json(r) << std::endl;
  } else if (ok) {
    print_human(op, r);
  } else {
    const Json& e = r["error"];
    std::cerr << "evident: error [" << e.value("code", "?") << "]: " << e.value("message", "")
              << std::endl;
  }
  if (!ok) return 1;
  // A wait that timed out is an answer, not an error, but scripts must be able to tell.
  if (r.contains("outcome") && r["outcome"] == "timeout") return 1;
  return 0;
}

}  // namespace

std::shared_ptr<WindowCli> add_window_commands(CLI::App& app, CLI::App& display) {
  auto c = std::make_shared<WindowCli>();
  auto ref = [&](CLI::App* sub) {
    sub->add_option("ID", c->id)->required();
    sub->add_option("GENERATION", c->gen)->required();
  };
  auto* window = app.add_subcommand("window", "top-level windows of a display (docs/windows.md)");
  window->require_subcommand(1);
  c->list = window->add_subcommand("list", "list top-level windows: id, pid, geometry, state, class, title");
  ref(c->list);
  c->list->add_option("--app", c->app_id, "only windows of this app's process tree");
  c->list->add_flag("--mapped-only", c->mapped_only, "only mapped windows");

  c->wait = window->add_subcommand("wait", "wait (X events, bounded) for a mapped window that matches");
  ref(c->wait);
  c->wait->add_option("--title", c->title, "a substring of the title");
  c->wait->add_option("--class", c->wm_class, "the WM_CLASS class or instance, exactly");
  c->wait->add_option("--pid", c->pid, "owned by this pid, a descendant or its process group");
  c->wait->add_option("--app", c->app_id, "owned by this app's process tree");
  c->wait->add_option("--timeout-ms", c->timeout_ms, "at most 120000 (default 10000)");

  c->capture = window->add_subcommand("capture", "a PNG of one window's area: ID GENERATION WINDOW --out PATH");
  ref(c->capture);
  c->capture->add_option("WINDOW", c->window, "the window id (from window list)")->required();
  c->capture->add_option("--out", c->out, "the PNG file to write (0600)")->required();

  c->focus = window->add_subcommand("focus", "raise a window and give it the input focus (outside sessions)");
  ref(c->focus);
  c->focus->add_option("WINDOW", c->window, "the window id (from window list)")->required();

  auto* wait = app.add_subcommand("wait", "waits without input (docs/windows.md)");
  wait->require_subcommand(1);
  c->stable = wait->add_subcommand("stable", "wait until a region shows no change for --quiet-ms");
  ref(c->stable);
  c->stable->add_option("--region", c->region, "X,Y,W,H (default: the whole display)");
  c->stable->add_option("--quiet-ms", c->quiet_ms, "quiet time (default 300)");
  c->stable->add_option("--timeout-ms", c->timeout_ms, "at most 120000 (default 5000)");

  c->pixels = wait->add_subcommand("pixels", "wait until a region shows a colour or matches a reference PNG");
  ref(c->pixels);
  c->pixels->add_option("--region", c->region, "X,Y,W,H (with --reference: W,H = the image's size)")->required();
  c->pixels->add_option("--color", c->color, "#rrggbb");
  c->pixels->add_option("--reference", c->reference, "a PNG file");
  c->pixels->add_option("--tolerance", c->tolerance, "per-channel tolerance 0..255 (default 0)");
  c->pixels->add_option("--min-permille", c->min_permille, "with --color: share of pixels, 1..1000 (default 1000)");
  c->pixels->add_option("--max-pixels", c->max_pixels, "with --reference: pixels allowed to differ (default 0)");
  c->pixels->add_option("--until", c->until, "with --reference: matches (default) or differs");
  c->pixels->add_option("--timeout-ms", c->timeout_ms, "at most 120000 (default 5000)");

  c->image = wait->add_subcommand("image", "wait until a template PNG appears (OpenCV template matching)");
  ref(c->image);
  c->image->add_option("--template", c->templ, "a PNG file: the image to find")->required();
  c->image->add_option("--region", c->region, "X,Y,W,H searched (default: the whole display)");
  c->image->add_option("--min-score-permille", c->min_score_permille,
                       "the match score needed, 1..1000 (default 950)");
  c->image->add_option("--timeout-ms", c->timeout_ms, "at most 120000 (default 5000; 0: look once)");

  c->env = display.add_subcommand("env", "DISPLAY and the private XAUTHORITY, as shell exports");
  ref(c->env);
  return c;
}

std::optional<int> run_window_command(const WindowCli& c, bool json, const std::string& socket) {
  Json args{{"display_id", c.id}, {"generation", c.gen}};
  if (c.env->parsed()) return send(json, socket, "display.env", args);
  if (c.list->parsed()) {
    if (!c.app_id.empty()) args["app_id"] = c.app_id;
    args["mapped_only"] = c.mapped_only;
    return send(json, socket, "window.list", args);
  }
  if (c.wait->parsed()) {
    if (c.wait->count("--title")) args["title"] = c.title;
    if (c.wait->count("--class")) args["class"] = c.wm_class;
    if (c.wait->count("--pid")) args["pid"] = c.pid;
    if (c.wait->count("--app")) args["app_id"] = c.app_id;
    if (c.wait->count("--timeout-ms")) args["timeout_ms"] = c.timeout_ms;
    return send(json, socket, "window.wait", args);
  }
  if (c.capture->parsed()) {
    args["id"] = c.window;
    args["out"] = absolute(c.out);
    return send(json, socket, "window.capture", args);
  }
  if (c.focus->parsed()) {
    args["id"] = c.window;
    return send(json, socket, "window.focus", args);
  }
  if (c.image->parsed()) {
    if (!c.region.empty()) {
      Json r;
      if (!parse_region(c.region, &r)) return usage(json, "--region must be X,Y,W,H (integers)");
      args["region"] = r;
    }
    args["template"] = absolute(c.templ);
    if (c.image->count("--min-score-permille")) args["min_score_permille"] = c.min_score_permille;
    if (c.image->count("--timeout-ms")) args["timeout_ms"] = c.timeout_ms;
    return send(json, socket, "wait.image", args);
  }
  if (c.stable->parsed() || c.pixels->parsed()) {
    CLI::App* sub = c.stable->parsed() ? c.stable : c.pixels;
    if (!c.region.empty()) {
      Json r;
      if (!parse_region(c.region, &r)) return usage(json, "--region must be X,Y,W,H (integers)");
      args["region"] = r;
    }
    if (sub->count("--timeout-ms")) args["timeout_ms"] = c.timeout_ms;
    if (sub == c.stable) {
      if (sub->count("--quiet-ms")) args["quiet_ms"] = c.quiet_ms;
      return send(json, socket, "wait.stable", args);
    }
    if (sub->count("--color") == sub->count("--reference")) {
      return usage(json, "give exactly one of --color or --reference");
    }
    if (sub->count("--color")) {
      Json col;
      if (!parse_color(c.color, &col)) return usage(json, "--color must be #rrggbb");
      args["color"] = col;
      if (sub->count("--min-permille")) args["min_permille"] = c.min_permille;
    } else {
      args["reference"] = absolute(c.reference);
      if (sub->count("--max-pixels")) args["max_pixels"] = c.max_pixels;
      if (sub->count("--until")) args["until"] = c.until;
    }
    if (sub->count("--tolerance")) args["tolerance"] = c.tolerance;
    return send(json, socket, "wait.pixels", args);
  }
  return std::nullopt;
}

}  // namespace evident
