// Request checks of browser workspaces: pure logic, no browser started.
#include <gtest/gtest.h>

#include "evident/browser/browser.h"

namespace evident {
namespace {

BrowserOptions good() {
  BrowserOptions o;
  o.display_id = 1;
  o.generation = "gen-00000000000000000000000000000000";
  o.url = "http://127.0.0.1:8000/x.html";
  return o;
}

std::string code(const Status& s) { return s.ok() ? "ok" : s.error().code; }

TEST(BrowserOptions, UrlSchemes) {
  for (const char* u : {"http://a/", "HTTPS://a/", "file:///tmp/x.html", "about:blank", "data:text/html,<p>x</p>"}) {
    EXPECT_EQ(code(validate_browser_url(u)), "ok") << u;
  }
  for (const char* u : {"javascript:alert(1)", "chrome://settings", "ftp://a/", "blank", "view-source:http://a/",
                        "devtools://devtools/x", "ws://127.0.0.1:1/"}) {
    EXPECT_EQ(code(validate_browser_url(u)), "browser-url-scheme") << u;
  }
  EXPECT_EQ(code(validate_browser_url("")), "browser-args");
  EXPECT_EQ(code(validate_browser_url("http://a/ b")), "browser-args");
  EXPECT_EQ(code(validate_browser_url("http://a/\n")), "browser-args");
  EXPECT_EQ(code(validate_browser_url("http://a/" + std::string(BrowserLimits::kMaxUrlBytes, 'x'))), "browser-args");
}

TEST(BrowserOptions, ViewportRange) {
  auto o = good();
  EXPECT_EQ(code(validate_browser_options(o)), "ok");  // 0x0: the display's size
  o.width = 64;
  o.height = 8192;
  EXPECT_EQ(code(validate_browser_options(o)), "ok");
  for (auto [w, h] : std::vector<std::pair<int, int>>{{63, 100}, {100, 8193}, {100, 0}, {0, 100}, {-1, 100}}) {
    o.width = w;
    o.height = h;
    EXPECT_EQ(code(validate_browser_options(o)), "browser-viewport-range") << w << "x" << h;
  }
}

TEST(BrowserOptions, ExtraArgsAreBoundedFlagsThatOverrideNothingOfOurs) {
  auto o = good();
  o.extra_args = {"--lang=de", "--disable-features=Foo", "--enable-logging"};
  EXPECT_EQ(code(validate_browser_options(o)), "ok");
  for (const char* a : {"--user-data-dir=/tmp/x", "--remote-debugging-port=9222",
                        "--remote-debugging-address=0.0.0.0", "--remote-allow-origins=*", "--app=http://x/",
                        "--headless", "--headless=new", "--window-size=1,1", "--kiosk", "http://positional/",
                        "-single-dash", "--", "--a\nb"}) {
    o.extra_args = {a};
    EXPECT_EQ(code(validate_browser_options(o)), "browser-args") << a;
  }
  o.extra_args = {std::string("--x=") + std::string(BrowserLimits::kMaxExtraArgBytes, 'y')};
  EXPECT_EQ(code(validate_browser_options(o)), "browser-args");
  o.extra_args.assign(BrowserLimits::kMaxExtraArgs + 1, "--lang=de");
  EXPECT_EQ(code(validate_browser_options(o)), "browser-args");
}

TEST(BrowserOptions, ProfileDirMustBeAbsolute) {
  auto o = good();
  o.profile_dir = "relative/dir";
  EXPECT_EQ(code(validate_browser_options(o)), "browser-args");
  o.profile_dir = "/tmp/some-new-dir";
  EXPECT_EQ(code(validate_browser_options(o)), "ok");
}

}  // namespace
}  // namespace evident
