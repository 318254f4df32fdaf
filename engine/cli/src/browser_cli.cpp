#include "browser_cli.h"

#include <iostream>

namespace evident {

BrowserCli::BrowserCli(CLI::App& app) {
  auto* b = app.add_subcommand("browser", "Chromium workspaces on owned displays");
  b->require_subcommand(1);
  create_ = b->add_subcommand("create", "start Chromium on a display: ID GENERATION URL [--viewport WxH]");
  create_->add_option("ID", display_id_)->required();
  create_->add_option("GENERATION", generation_)->required();
  create_->add_option("URL", url_, "http(s), file, about or data URL")->required();
  create_->add_option("--viewport", viewport_, "exact CSS viewport WIDTHxHEIGHT (default: the display's size)");
  create_->add_option("--extra-arg", extra_args_, "one more Chromium flag, as --extra-arg=--name=value (repeatable)");
  create_->add_option("--profile-dir", profile_dir_, "a new directory for the profile (must not exist)");
  close_ = b->add_subcommand("close", "stop Chromium and remove its profile");
  close_->add_option("BROWSER_ID", browser_id_)->required();
  list_ = b->add_subcommand("list", "the browsers this daemon started and their liveness");
  status_ = b->add_subcommand("status", "liveness layers, probed fresh");
  status_->add_option("BROWSER_ID", browser_id_)->required();
  evaluate_ = b->add_subcommand("evaluate", "evaluate a JavaScript expression in the page (JSON result)");
  evaluate_->add_option("BROWSER_ID", browser_id_)->required();
  evaluate_->add_option("EXPRESSION", expression_)->required();
  navigate_ = b->add_subcommand("navigate", "load a URL and wait for its load event");
  navigate_->add_option("BROWSER_ID", browser_id_)->required();
  navigate_->add_option("URL", url_)->required();
  element_box_ = b->add_subcommand("element-box", "screen box of the first element matching a CSS selector");
  element_box_->add_option("BROWSER_ID", browser_id_)->required();
  element_box_->add_option("SELECTOR", selector_)->required();
}

namespace {
// "WxH" in decimal (at most 5 digits a side; the range is checked by the engine).
std::optional<std::pair<int, int>> parse_viewport(const std::string& s) {
  const auto x = s.find('x');
  if (x == std::string::npos || x == 0 || x + 1 >= s.size() || x > 5 || s.size() - x - 1 > 5) return std::nullopt;
  int v[2] = {0, 0};
  for (int part = 0; part < 2; ++part) {
    const std::string d = part == 0 ? s.substr(0, x) : s.substr(x + 1);
    for (char c : d) {
      if (c < '0' || c > '9') return std::nullopt;
      v[part] = v[part] * 10 + (c - '0');
    }
  }
  return std::make_pair(v[0], v[1]);
}
}  // namespace

std::optional<Result<std::pair<std::string, Json>>> BrowserCli::request() const {
  using R = Result<std::pair<std::string, Json>>;
  if (create_->parsed()) {
    Json args{{"display_id", display_id_}, {"generation", generation_}, {"url", url_}};
    if (!viewport_.empty()) {
      auto vp = parse_viewport(viewport_);
      if (!vp) return R(make_error("usage", "--viewport is WIDTHxHEIGHT in CSS pixels, e.g. 1280x720"));
      args["viewport"] = {{"width", vp->first}, {"height", vp->second}};
    }
    if (!extra_args_.empty()) args["extra_args"] = extra_args_;
    if (!profile_dir_.empty()) args["profile_dir"] = profile_dir_;
    return R(std::make_pair(std::string("browser.create"), args));
  }
  if (close_->parsed()) return R(std::make_pair(std::string("browser.close"), Json{{"browser_id", browser_id_}}));
  if (list_->parsed()) return R(std::make_pair(std::string("browser.list"), Json::object()));
  if (status_->parsed()) return R(std::make_pair(std::string("browser.status"), Json{{"browser_id", browser_id_}}));
  if (evaluate_->parsed()) {
    return R(std::make_pair(std::string("browser.evaluate"), Json{{"browser_id", browser_id_}, {"expression", expression_}}));
  }
  if (navigate_->parsed()) {
    return R(std::make_pair(std::string("browser.navigate"), Json{{"browser_id", browser_id_}, {"url", url_}}));
  }
  if (element_box_->parsed()) {
    return R(std::make_pair(std::string("browser.element_box"), Json{{"browser_id", browser_id_}, {"selector", selector_}}));
  }
  return std::nullopt;
}

bool print_browser_human(const std::string& op, const Json& r) {
  if (op == "browser.create") {
    const Json& b = r["browser"];
    std::cout << "browser " << b["browser_id"].get<std::string>() << "  pid " << b["pid"].get<int>()
              << "  on display " << b["display_id"].get<int>() << "  viewport "
              << b["viewport"]["width"].get<int>() << "x" << b["viewport"]["height"].get<int>() << "  "
              << b["version"].get<std::string>() << std::endl;
    return true;
  }
  if (op == "browser.close") {
    std::cout << "closed " << r["browser_id"].get<std::string>() << "  exit status "
              << r["exit_status"].get<int>() << std::endl;
    return true;
  }
  if (op == "browser.list") {
    if (r["browsers"].empty()) {
      std::cout << "no browsers" << std::endl;
      return true;
    }
    for (const auto& b : r["browsers"]) {
      std::cout << b["browser_id"].get<std::string>() << "  display " << b["display_id"].get<int>()
                << "  pid " << b["pid"].get<int>() << "  " << (b["alive"].get<bool>() ? "running" : "exited")
                << std::endl;
    }
    return true;
  }
  if (op == "browser.status") {
    std::cout << (r["live"].get<bool>() ? "live" : "not live");
    for (const char* k : {"process", "display", "cdp", "page_target"}) {
      std::cout << "  " << k << " " << (r[k].get<bool>() ? "ok" : "gone");
    }
    std::cout << std::endl;
    return true;
  }
  if (op == "browser.evaluate") {
    std::cout << r["value_json"].get<std::string>() << std::endl;
    return true;
  }
  if (op == "browser.navigate") {
    std::cout << r["url"].get<std::string>() << std::endl;
    return true;
  }
  if (op == "browser.element_box") {
    const Json& b = r["box"];
    std::cout << b["x"].get<int>() << "," << b["y"].get<int>() << " " << b["width"].get<int>() << "x"
              << b["height"].get<int>() << "  centre " << b["center_x"].get<int>() << ","
              << b["center_y"].get<int>() << std::endl;
    return true;
  }
  return false;
}

}  // namespace evident
