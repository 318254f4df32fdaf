// The report: the 64-action golden renders with every check passing and one row per event;
// projections that do not re-hash, altered or missing frames and a foreign actions.json are
// failing checks, not drawn; claims and attempt ids are escaped (HTML and Markdown); typed text
// never appears; the page references nothing outside itself; limits refuse with
// report-too-large before any frame is read.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <gtest/gtest.h>

#include "evident/evidence/session_evidence.h"

#include "evident/core/fs.h"
#include "evident/core/random.h"
#include "evident/core/sha256.h"
#include "evident/receipts/receipt.h"
#include "evident/report/report.h"
#include "../../receipts/tests/golden.h"
#include "../../receipts/tests/task_golden.h"

namespace evident {
namespace {

namespace fs = std::filesystem;
using testing::golden_dir;
using testing::golden_input;
using testing::read_text;
using testing::write_text;

std::size_t count(const std::string& haystack, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + 1)) ++n;
  return n;
}

// A private copy of a golden as an evidence directory: receipt.json, actions.json, frames.
class EvidenceDir {
 public:
  explicit EvidenceDir(const std::string& golden) : dir_("/tmp/evident-report-test-" + random_hex(8)) {
    fs::create_directories(dir_);
    fs::copy_file(golden_dir(golden) + "/receipt.json", dir_ + "/receipt.json");
    if (fs::exists(golden_dir(golden) + "/actions.json")) {
      fs::copy_file(golden_dir(golden) + "/actions.json", dir_ + "/actions.json");
    }
    for (const auto& f : fs::directory_iterator(golden_dir(golden) + "/frames")) {
      fs::copy_file(f.path(), dir_ + "/" + f.path().filename().string());
    }
  }
  ~EvidenceDir() { fs::remove_all(dir_); }
  const std::string& path() const { return dir_; }

 private:
  std::string dir_;
};

Evidence load(const std::string& dir) {
  ReportOptions o;
  o.evidence_dir = dir;
  auto ev = load_evidence(o);
  EXPECT_TRUE(ev.ok()) << (ev.ok() ? "" : ev.error().code + ": " + ev.error().message);
  return ev.ok() ? *ev : Evidence{};
}

std::vector<std::string> failed(const Evidence& ev) {
  std::vector<std::string> names;
  for (const auto& c : ev.checks) {
    if (!c.ok) names.push_back(c.name);
  }
  return names;
}

// Replaces the receipt of `dir` by one built from `in` (and its actions.json).
void rebuild(const std::string& dir, const ReceiptInput& in) {
  auto receipt = build_receipt(in);
  ASSERT_TRUE(receipt.ok()) << receipt.error().message;
  ASSERT_TRUE(write_evidence_files(dir, in, *receipt).ok());
}

// --key authenticates the envelope the engine writes at close (the same checks as `evident
// verify --key`): signed by the given key -> authenticated; another key, a changed signature or
// a frame changed after signing -> NOT authenticated, with the failing checks named.
TEST(Report, KeyAuthenticatesTheEnvelopeAndRefusesAnyOtherKeyOrTampering) {
  EvidenceDir d("three-actions");
  const std::string state = d.path() + "/state";
  SessionEvidence signer(state);
  ASSERT_TRUE(signer.key().ok());
  auto receipt = load_receipt_file(d.path() + "/receipt.json");
  ASSERT_TRUE(receipt.ok());
  ASSERT_TRUE(signer.seal_closed(d.path(), *receipt, 1'764'000'000'000).ok());

  ReportOptions o;
  o.evidence_dir = d.path();
  auto unchecked = load_evidence(o);
  ASSERT_TRUE(unchecked.ok());
  EXPECT_TRUE(unchecked->ok);
  EXPECT_EQ(unchecked->signature_state, "unchecked");  // signed, but no key: not authenticated
  EXPECT_NE(render_html(*unchecked).find("signed, not authenticated: no --key given"), std::string::npos);

  o.key_path = state + "/keys/signing.pub";
  auto good = load_evidence(o);
  ASSERT_TRUE(good.ok()) << good.error().code;
  EXPECT_TRUE(good->ok) << ::testing::PrintToString(failed(*good));
  EXPECT_EQ(good->signature_state, "authenticated");
  EXPECT_EQ(good->key_id, signer.key()->key_id());
  std::string html = render_html(*good);
  EXPECT_NE(html.find("authenticated by " + signer.key()->key_id()), std::string::npos);
  EXPECT_NE(html.find("data-signature=\"authenticated\""), std::string::npos);

  SessionEvidence other(d.path() + "/other-state");
  ASSERT_TRUE(other.key().ok());
  o.key_path = d.path() + "/other-state/keys/signing.pub";
  auto foreign = load_evidence(o);
  ASSERT_TRUE(foreign.ok());
  EXPECT_FALSE(foreign->ok);
  EXPECT_EQ(foreign->signature_state, "failed");
  // Neither the envelope nor the run log's tree head is signed by that key.
  EXPECT_EQ(failed(*foreign), (std::vector<std::string>{"signature", "log_inclusion"}));
  EXPECT_NE(render_html(*foreign).find("NOT authenticated"), std::string::npos);

  // A signature changed by one character.
  o.key_path = state + "/keys/signing.pub";
  const std::string env_path = d.path() + "/receipt.dsse.json";
  const std::string env_text = read_text(env_path);
  auto env = parse_json_strict(env_text, 1 << 20, "t");
  ASSERT_TRUE(env.ok());
  std::string sig = (*env)["signatures"][0]["sig"];
  sig[5] = sig[5] == 'A' ? 'B' : 'A';
  (*env)["signatures"][0]["sig"] = sig;
  { std::ofstream(env_path, std::ios::trunc) << env->dump(); }
  auto bad_sig = load_evidence(o);
  ASSERT_TRUE(bad_sig.ok());
  EXPECT_FALSE(bad_sig->ok);
  EXPECT_EQ(bad_sig->signature_state, "failed");
  { std::ofstream(env_path, std::ios::trunc) << env_text; }
  ASSERT_TRUE(load_evidence(o)->ok);

  // A frame changed after signing: the envelope still names the frame digests the receipt
  // binds, so the frame file is what fails (the `frames` check against the files).
  const std::string frame = d.path() + "/" + (*receipt)["observation"]["sha256"].get<std::string>() + ".png";
  { std::ofstream(frame, std::ios::app) << "x"; }
  auto bad_frame = load_evidence(o);
  ASSERT_TRUE(bad_frame.ok());
  EXPECT_FALSE(bad_frame->ok);
  std::vector<std::string> names = failed(*bad_frame);
  EXPECT_EQ(names, (std::vector<std::string>{"frames"}));
  EXPECT_NE(render_html(*bad_frame).find("NOT verified"), std::string::npos);
}

TEST(Report, GoldenRendersEveryEventWithEveryCheckPassing) {
  EvidenceDir d("sixty-four-actions");
  Evidence ev = load(d.path());
  EXPECT_TRUE(ev.ok) << ::testing::PrintToString(failed(ev));
  ASSERT_EQ(ev.events.size(), 68u);
  // verify's 11 checks (with frames) plus actions_file and action_projections.
  EXPECT_EQ(ev.checks.size(), 13u);
  EXPECT_EQ(ev.checks[11].name, "actions_file");
  EXPECT_EQ(ev.checks[12].name, "action_projections");
  for (const auto& e : ev.events) {
    if (e.kind == "action") { EXPECT_EQ(e.projection_state, "ok") << e.index; }
  }
  EXPECT_EQ(ev.signature_state, "absent");

  std::string html = render_html(ev);
  EXPECT_EQ(count(html, "<li class=\"event\""), 68u);
  const Json& transcript = ev.receipt["transcript"];
  for (const Json& e : transcript) {
    std::string row = "id=\"event-" + std::to_string(e["index"].get<int>()) + "\" data-index=\"" +
                      std::to_string(e["index"].get<int>()) + "\" data-kind=\"" + e["kind"].get<std::string>() +
                      "\" data-frame-sha256=\"" + e["frame_sha256"].get<std::string>() + "\"";
    EXPECT_EQ(count(html, row), 1u) << row;
  }
  // Every distinct frame is embedded exactly once, as the bytes of the file it names.
  std::regex css(R"(\.f-([0-9a-f]{64})\{background-image:url\(data:image/png;base64,([A-Za-z0-9+/=]+)\)\})");
  std::size_t embedded = 0;
  for (std::sregex_iterator it(html.begin(), html.end(), css), end; it != end; ++it) {
    std::string sha = (*it)[1];
    EXPECT_EQ(ev.frames.count(sha), 1u);
    EXPECT_EQ((*it)[2].length(), (read_text(d.path() + "/" + sha + ".png").size() + 2) / 3 * 4);
    ++embedded;
  }
  EXPECT_EQ(embedded, ev.frames.size());
  // Geometry drawn for pointer actions only (clicks, drags, scrolls, moves of the golden).
  std::size_t pointer = 0;
  for (const auto& e : ev.events) {
    if (e.action == "click" || e.action == "double_click" || e.action == "triple_click" ||
        e.action == "drag" || e.action == "scroll" || e.action == "move_mouse") {
      ++pointer;
    }
  }
  EXPECT_GT(pointer, 0u);
  EXPECT_EQ(count(html, "<g class=\"geom\""), 2 * pointer);  // before and after
  // Self-contained: no script, no external reference of any kind.
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find(" src="), std::string::npos);
  EXPECT_EQ(html.find(" href="), std::string::npos);
  EXPECT_NE(html.find("default-src 'none'"), std::string::npos);
  // Typed text and key names of the golden's inputs never appear.
  EXPECT_EQ(html.find("héllo"), std::string::npos);
  EXPECT_EQ(html.find("世界"), std::string::npos);
  EXPECT_EQ(html.find("shift"), std::string::npos);
}

// A task receipt (the stage vector of receipts/task): named by its task id, with its mode,
// policy and host; each turn event is a row of its own saying its calls, with the display frame
// and the (scaled) image the model was shown; the result in place of claims.
TEST(Report, TaskReceiptHasTurnRowsPolicyAndResult) {
  const std::string src = testing::source_path("receipts/task/stage");
  const std::string dir = "/tmp/evident-report-task-" + random_hex(8);
  fs::create_directories(dir);
  fs::copy_file(src + "/receipt.json", dir + "/receipt.json");
  for (const auto& f : fs::directory_iterator(src + "/frames")) {
    fs::copy_file(f.path(), dir + "/" + f.path().filename().string());
  }
  // actions.json as the task lane writes it: the vector's projections, named by the task id.
  {
    ReceiptInput projections;
    projections.actions = testing::task_vector_input("stage").actions;
    auto receipt = load_receipt_file(dir + "/receipt.json");
    ASSERT_TRUE(receipt.ok());
    ASSERT_TRUE(write_actions_file(dir, projections, *receipt).ok());
    std::string text = read_text(dir + "/actions.json");
    EXPECT_NE(text.find("\"task_id\":\"" + (*receipt)["task_id"].get<std::string>() + "\""), std::string::npos);
    EXPECT_EQ(text.find("session_id"), std::string::npos);
    EXPECT_EQ(text.find("\"text\""), std::string::npos);  // projections hold no typed text
  }
  Evidence ev = load(dir);
  EXPECT_TRUE(ev.task);
  EXPECT_TRUE(ev.ok) << ::testing::PrintToString(failed(ev));
  ASSERT_GE(ev.checks.size(), 2u);
  EXPECT_EQ(ev.checks[ev.checks.size() - 2].name, "actions_file");
  EXPECT_EQ(ev.checks.back().name, "action_projections");
  const Json& r = ev.receipt;
  std::string html = render_html(ev);
  // Geometry for the vector's two clicks and its zoom (before and after each).
  EXPECT_EQ(count(html, "<g class=\"geom\""), 6u);
  EXPECT_EQ(count(html, "<li class=\"event\""), r["transcript"].size());
  EXPECT_EQ(html.find("<dt>session</dt>"), std::string::npos);
  EXPECT_NE(html.find("<dt>task</dt><dd><code>" + r["task_id"].get<std::string>() + "</code>"), std::string::npos);
  EXPECT_NE(html.find("<dt>host</dt><dd><code>" + r["engine"]["host_id"].get<std::string>() + "</code>"),
            std::string::npos);
  EXPECT_NE(html.find("<code>" + r["policy"]["model"].get<std::string>() + "</code>"), std::string::npos);
  EXPECT_NE(html.find("<title>Evident evidence: " + r["task_id"].get<std::string>()), std::string::npos);
  // Turn rows, as the receipt states them (expected text written from the vector's members).
  EXPECT_EQ(count(html, "data-kind=\"turn\""), 4u);
  EXPECT_NE(html.find("<span class=\"kind\">turn 1: 2 calls (left_click, type)</span>"), std::string::npos);
  EXPECT_NE(html.find("<span class=\"kind\">turn 2: 3 calls (key, type, zoom, left_click)</span>"), std::string::npos);
  EXPECT_NE(html.find("<span class=\"kind\">turn 4: final answer (no calls)</span>"), std::string::npos);
  // Turn 1's model image was scaled: both it and the display frame are shown.
  const Json& t1 = r["transcript"][1];
  ASSERT_NE(t1["model_image_sha256"], t1["frame_sha256"]);
  EXPECT_EQ(ev.frames.count(t1["model_image_sha256"].get<std::string>()), 1u);
  EXPECT_NE(html.find("the image the model was shown \u00b7 <code>" +
                      t1["model_image_sha256"].get<std::string>().substr(0, 12)), std::string::npos);
  // The result, not claims; the commitments of the typed text and the key, never the secrets.
  EXPECT_NE(html.find("<h3>Result</h3>"), std::string::npos);
  EXPECT_EQ(count(html, "class=\"commitment\""), 3u);
  for (const Json& e : r["transcript"]) {
    if (e.contains("commitment")) {
      EXPECT_NE(html.find("data-commitment=\"" + e["commitment"].get<std::string>() + "\""), std::string::npos);
    }
  }
  std::string markdown = render_markdown(ev, dir);
  EXPECT_NE(markdown.find("- task " + r["task_id"].get<std::string>()), std::string::npos);
  EXPECT_NE(markdown.find("| 1 | turn 1: 2 calls \\(left\\_click, type\\) |"), std::string::npos);
  EXPECT_NE(markdown.find("Result (the policy's final answer"), std::string::npos);
  fs::remove_all(dir);
}

// A session begun with app_exit "record" whose batch had settle: the settle outcome of each
// action and the app's exit (with its status) are rows of the timeline.
TEST(Report, SettleOutcomesAndTheAppExitAreShown) {
  EvidenceDir d("v3-app-exit-settle");
  Evidence ev = load(d.path());
  EXPECT_TRUE(ev.ok) << ::testing::PrintToString(failed(ev));
  std::string html = render_html(ev);
  EXPECT_EQ(count(html, "<span class=\"settle\">settle: settled</span>"), 1u);
  EXPECT_EQ(count(html, "<span class=\"settle\">settle: still_loading</span>"), 1u);
  EXPECT_EQ(count(html, "<span class=\"settle\">settle: fixed</span>"), 1u);
  EXPECT_EQ(count(html, "data-kind=\"app_exit\""), 1u);
  EXPECT_NE(html.find("<span class=\"kind\">app exit</span>"), std::string::npos);
  EXPECT_NE(html.find("{&quot;exit_status&quot;:3}"), std::string::npos);
  EXPECT_NE(html.find("<dt>host</dt>"), std::string::npos);
  EXPECT_EQ(count(html, "class=\"commitment\""), 1u);  // the key action
  std::string markdown = render_markdown(ev, d.path());
  EXPECT_NE(markdown.find("settle: still\\_loading"), std::string::npos);
  EXPECT_NE(markdown.find("| 4 | app exit |"), std::string::npos);
}

TEST(Report, TamperedProjectionIsAFailedCheckAndIsNotDrawn) {
  EvidenceDir d("three-actions");
  auto doc = parse_json_strict(read_text(d.path() + "/actions.json"), 1 << 20, "t");
  ASSERT_TRUE(doc.ok());
  ASSERT_EQ((*doc)["actions"][0]["projection"]["type"], "click");
  (*doc)["actions"][0]["projection"]["x"] = 999;  // not what the receipt bound
  write_text(d.path() + "/actions.json", dump_json(*doc));
  Evidence ev = load(d.path());
  EXPECT_EQ(failed(ev), (std::vector<std::string>{"action_projections"}));
  EXPECT_EQ(ev.events[1].projection_state, "mismatch");
  EXPECT_EQ(ev.events[2].projection_state, "ok");
  std::string html = render_html(ev);
  EXPECT_NE(html.find("data-projection=\"mismatch\""), std::string::npos);
  EXPECT_EQ(html.find("999"), std::string::npos);
  EXPECT_EQ(count(html, "<g class=\"geom\""), 0u);  // the only pointer action is the tampered one
  EXPECT_NE(html.find("class=\"verdict fail\""), std::string::npos);
}

TEST(Report, ForeignOrMalformedActionsFileFails) {
  EvidenceDir d("three-actions");
  EvidenceDir other("sixty-four-actions");
  fs::copy_file(other.path() + "/actions.json", d.path() + "/actions.json", fs::copy_options::overwrite_existing);
  Evidence ev = load(d.path());
  EXPECT_EQ(failed(ev), (std::vector<std::string>{"actions_file", "action_projections"}));
  write_text(d.path() + "/actions.json", "{\"a\":1,\"a\":2}");
  ev = load(d.path());
  EXPECT_EQ(failed(ev), (std::vector<std::string>{"actions_file", "action_projections"}));
  // Without actions.json: the receipt still verifies; actions are shown by kind only.
  fs::remove(d.path() + "/actions.json");
  ev = load(d.path());
  EXPECT_TRUE(ev.ok);
  EXPECT_EQ(ev.checks.size(), 11u);
  EXPECT_EQ(ev.events[1].projection_state, "absent");
  EXPECT_NE(render_html(ev).find("No actions.json"), std::string::npos);
}

TEST(Report, MissingOrAlteredFramesAreFailedChecksAndNotShown) {
  EvidenceDir d("three-actions");
  Evidence ev = load(d.path());
  std::string first = ev.events[0].frame_sha256;
  std::string second = ev.events[1].frame_sha256;
  ASSERT_NE(first, second);
  fs::remove(d.path() + "/" + first + ".png");
  std::string bytes = read_text(d.path() + "/" + second + ".png");
  bytes[bytes.size() - 5] ^= 1;
  write_text(d.path() + "/" + second + ".png", bytes);
  ev = load(d.path());
  EXPECT_EQ(failed(ev), (std::vector<std::string>{"frames"}));
  EXPECT_FALSE(ev.frames.at(first).present);
  EXPECT_TRUE(ev.frames.at(second).present);
  EXPECT_FALSE(ev.frames.at(second).matches);
  std::string html = render_html(ev);
  EXPECT_EQ(html.find(".f-" + first + "{"), std::string::npos);
  EXPECT_EQ(html.find(".f-" + second + "{"), std::string::npos);
  EXPECT_NE(html.find("frame missing from the evidence directory"), std::string::npos);
  EXPECT_NE(html.find("frame does not match its digest"), std::string::npos);
}

TEST(Report, ClaimsAndAttemptIdAreEscapedNeverExecuted) {
  EvidenceDir d("three-actions");
  ReceiptInput in = golden_input("three-actions");
  in.binding.attempt_id = "a|b<img src=x onerror=alert(1)>`](javascript:x)";
  in.claims = Json{{"note", "</pre><script>alert('x')</script>"}, {"md", "```\n</details>|[x](http://evil)"}};
  rebuild(d.path(), in);
  Evidence ev = load(d.path());
  EXPECT_TRUE(ev.ok) << ::testing::PrintToString(failed(ev));
  std::string html = render_html(ev);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_NE(html.find("&lt;/pre&gt;&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"), std::string::npos);
  EXPECT_EQ(html.find(" href="), std::string::npos);  // the claims' link is text, not a link
  std::string mdoc = render_markdown(ev, d.path());
  EXPECT_EQ(mdoc.find("<img"), std::string::npos);
  EXPECT_EQ(mdoc.find("](javascript"), std::string::npos);
  EXPECT_NE(mdoc.find("a\\|b&lt;img src=x onerror=alert\\(1\\)&gt;\\`\\]\\(javascript:x\\)"), std::string::npos);
  // The claims sit in a fence longer than any backtick run inside them.
  EXPECT_NE(mdoc.find("\n````json\n"), std::string::npos);
}

// A v3 session that bound a browser workspace (docs/receipts.md §15): the report names the
// workspace, the browser, the viewport and the page target in both formats, escaped, and a
// receipt without the member shows no browser row.
TEST(Report, BoundBrowserWorkspaceIsShown) {
  EvidenceDir d("v3-three-actions");
  Evidence plain = load(d.path());
  EXPECT_EQ(render_html(plain).find("<dt>browser</dt>"), std::string::npos);
  EXPECT_EQ(render_markdown(plain, d.path()).find("browser workspace"), std::string::npos);

  ReceiptInput in = golden_input("v3-three-actions");
  BrowserBindingRecord b;
  b.workspace_id = "browser-0123456789abcdef0123456789abcdef";
  b.browser_version = "Chrome/140.0.7339.185 <b>&";
  b.target_id = "A1B2C3D4E5F60718293A4B5C6D7E8F90";
  b.profile_sha256 = std::string(64, 'e');
  b.width = 800;
  b.height = 600;
  in.browser = b;
  rebuild(d.path(), in);
  Evidence ev = load(d.path());
  EXPECT_TRUE(ev.ok) << ::testing::PrintToString(failed(ev));
  std::string html = render_html(ev);
  EXPECT_NE(html.find("<dt>browser</dt><dd><code>browser-0123456789abcdef0123456789abcdef</code> \u00b7 "
                      "Chrome/140.0.7339.185 &lt;b&gt;&amp; \u00b7 viewport 800\u00d7600 \u00b7 page target "
                      "<code>A1B2C3D4E5F60718293A4B5C6D7E8F90</code> \u00b7 profile sha256 <code>" +
                      std::string(64, 'e') + "</code></dd>"),
            std::string::npos);
  EXPECT_EQ(html.find("<b>&"), std::string::npos);
  std::string mdoc = render_markdown(ev, d.path());
  EXPECT_NE(mdoc.find("\n- browser workspace browser-0123456789abcdef0123456789abcdef (Chrome/140.0.7339.185 "
                      "&lt;b&gt;&amp;, viewport 800x600, page target A1B2C3D4E5F60718293A4B5C6D7E8F90)\n"),
            std::string::npos)
      << mdoc;
}

TEST(Report, MarkdownHasOneRowPerEventWithRelativeFrameLinks) {
  EvidenceDir d("three-actions");
  Evidence ev = load(d.path());
  std::string mdoc = render_markdown(ev, d.path());
  EXPECT_NE(mdoc.find("verified (all 13 checks passed)"), std::string::npos);
  for (const auto& e : ev.events) {
    std::string row = "| " + std::to_string(e.index) + " | ";
    EXPECT_EQ(count(mdoc, "\n" + row), 1u) << row;
    EXPECT_NE(mdoc.find("](" + e.frame_sha256 + ".png)"), std::string::npos);
  }
  EXPECT_NE(mdoc.find("click at \\(20, 15\\), left button"), std::string::npos);
  // From a subdirectory the links climb out of it.
  fs::create_directories(d.path() + "/out");
  std::string sub = render_markdown(ev, d.path() + "/out");
  EXPECT_NE(sub.find("](../" + ev.events[0].frame_sha256 + ".png)"), std::string::npos);
}

TEST(Report, CommandWritesPrivateFileAndReportsChecks) {
  EvidenceDir d("three-actions");
  ReportOptions o;
  o.evidence_dir = d.path();
  std::ostringstream out, err;
  EXPECT_EQ(run_report_command(o, true, out, err), 0) << out.str() << err.str();
  auto result = parse_json_strict(out.str(), 1 << 20, "t");
  ASSERT_TRUE(result.ok()) << out.str();
  EXPECT_EQ((*result)["ok"], true);
  EXPECT_EQ((*result)["signature"], "absent");
  std::string path = (*result)["report"]["path"];
  EXPECT_EQ(path, d.path() + "/report.html");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ((*result)["report"]["sha256"], sha256_hex(read_text(path)));
  EXPECT_EQ((*result)["checks"].size(), 13u);

  // --key with a key but no signature: written, but the envelope check fails (exit 1,
  // verify-failed); the page never claims what it could not check.
  SessionEvidence signer(d.path() + "/state");
  ASSERT_TRUE(signer.key().ok());
  o.key_path = d.path() + "/state/keys/signing.pub";
  o.format = ReportFormat::kMarkdown;
  std::ostringstream out2, err2;
  EXPECT_EQ(run_report_command(o, true, out2, err2), 1);
  result = parse_json_strict(out2.str(), 1 << 20, "t");
  ASSERT_TRUE(result.ok());
  EXPECT_EQ((*result)["error"]["code"], "verify-failed");
  EXPECT_NE((*result)["error"]["message"].get<std::string>().find("envelope"), std::string::npos)
      << out2.str();
  EXPECT_EQ((*result)["authenticated"], false);
  EXPECT_TRUE(fs::exists(d.path() + "/report.md"));
  // A --key that cannot be read is an error of its own: no report is written.
  fs::remove(d.path() + "/report.md");
  o.key_path = d.path() + "/no-such.pub";
  std::ostringstream out2b, err2b;
  EXPECT_NE(run_report_command(o, true, out2b, err2b), 0);
  EXPECT_NE(out2b.str().find("\"key-unreadable\""), std::string::npos) << out2b.str();
  EXPECT_FALSE(fs::exists(d.path() + "/report.md"));

  // -o - with --json is a usage error; nothing written.
  o.key_path.clear();
  o.out_path = "-";
  std::ostringstream out3, err3;
  EXPECT_EQ(run_report_command(o, true, out3, err3), 2);
  EXPECT_NE(out3.str().find("\"report-usage\""), std::string::npos);
  // -o - without --json: the document on stdout, the verdict on stderr.
  std::ostringstream out4, err4;
  EXPECT_EQ(run_report_command(o, false, out4, err4), 0);
  EXPECT_EQ(out4.str().rfind("### Evident evidence", 0), 0u);
  EXPECT_NE(err4.str().find("verified: all 13 checks passed"), std::string::npos);
}

TEST(Report, RefusesUnreadableAndOversizedEvidence) {
  ReportOptions o;
  o.evidence_dir = "/tmp/evident-report-test-missing-" + random_hex(8);
  auto ev = load_evidence(o);
  ASSERT_FALSE(ev.ok());
  EXPECT_EQ(ev.error().code, "report-unreadable");

  EvidenceDir d("three-actions");
  o.evidence_dir = d.path();
  fs::remove(d.path() + "/receipt.json");
  ev = load_evidence(o);
  ASSERT_FALSE(ev.ok());
  EXPECT_EQ(ev.error().code, "receipt-unreadable");

  EvidenceDir big("three-actions");
  o.evidence_dir = big.path();
  Evidence fine = load(big.path());
  // A referenced frame over 32 MiB (a sparse file: nothing is read).
  std::string frame = big.path() + "/" + fine.events[1].frame_sha256 + ".png";
  ASSERT_EQ(::truncate(frame.c_str(), static_cast<off_t>(kMaxReportFrameBytes) + 1), 0);
  ev = load_evidence(o);
  ASSERT_FALSE(ev.ok());
  EXPECT_EQ(ev.error().code, "report-too-large");
  ASSERT_EQ(::truncate(frame.c_str(), 10), 0);
  // actions.json over 1 MiB.
  ASSERT_EQ(::truncate((big.path() + "/actions.json").c_str(), static_cast<off_t>(kMaxActionsFileBytes) + 1), 0);
  ev = load_evidence(o);
  ASSERT_FALSE(ev.ok());
  EXPECT_EQ(ev.error().code, "report-too-large");
  // The messages never echo a path.
  EXPECT_EQ(ev.error().message.find(big.path()), std::string::npos);
}

// Proves: whatever type a receipt or actions.json member has, the report loads and renders
// (no exception, no crash) and shows the failure as checks; every leaf of the receipt and of
// actions.json is replaced in turn by values of every other JSON type.
TEST(Report, AnyMemberOfAnyTypeRendersAsFailedChecks) {
  EvidenceDir d("three-actions");
  const std::string receipt_text = read_text(d.path() + "/receipt.json");
  const std::string actions_text = read_text(d.path() + "/actions.json");
  const Json receipt = *parse_json_strict(receipt_text, 1 << 20, "t");
  const Json actions = *parse_json_strict(actions_text, 1 << 20, "t");
  const std::vector<Json> junk = {nullptr, true, -1, "x<script>", Json::array({1, "a"}),
                                  Json{{"k", Json::array()}}};
  std::size_t runs = 0;
  auto each_leaf = [&](const Json& doc, const std::string& file) {
    Json flat = doc.flatten();
    for (auto it = flat.begin(); it != flat.end(); ++it) {
      for (const Json& value : junk) {
        if (value == it.value()) continue;  // not a change
        Json mutated = doc;
        mutated[Json::json_pointer(it.key())] = value;
        write_text(d.path() + "/" + file, dump_json(mutated));
        ReportOptions o;
        o.evidence_dir = d.path();
        auto ev = load_evidence(o);
        ASSERT_TRUE(ev.ok()) << it.key();
        std::string html = render_html(*ev);
        std::string mdoc = render_markdown(*ev, d.path());
        EXPECT_EQ(html.find("<script"), std::string::npos) << it.key();
        // In Markdown, the claims sit verbatim inside a code fence (shown literally); nothing
        // outside the fence may hold markup from the evidence.
        auto open = mdoc.find("```json\n");
        auto close = open == std::string::npos ? open : mdoc.find("\n```\n", open);
        std::string outside = open == std::string::npos ? mdoc : mdoc.substr(0, open) + mdoc.substr(close);
        EXPECT_EQ(outside.find("<script"), std::string::npos) << it.key();
        if (ev->ok) {
          // Only a value that changes nothing bound may still verify (none in this golden).
          ADD_FAILURE() << file << " " << it.key() << " -> " << value.dump() << " still verifies";
        }
        ++runs;
      }
    }
    write_text(d.path() + "/" + file, file == "receipt.json" ? receipt_text : actions_text);
  };
  each_leaf(receipt, "receipt.json");
  each_leaf(actions, "actions.json");
  EXPECT_GT(runs, 500u);
}

}  // namespace
}  // namespace evident
