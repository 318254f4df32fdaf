// A recorded session on a real Xvfb display with the real fixture app (docs/evidence.md "Video"):
// ffmpeg's x11grab writes video.webm from begin to finish, the receipt binds it as its artifact
// and the signed envelope names it; ffprobe decodes every frame of it, and its first and last
// frames show what the session's initial and observed PNGs show. A recording that is aborted
// leaves no recorder running; an engine without ffmpeg refuses record_video and begins nothing.
#include <dirent.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "evident/core/sha256.h"
#include "evident/evidence/signed_verify.h"
#include "evident/receipts/verify.h"
#include "engine_harness.h"

namespace evident {
namespace {

using testing::code_of;
using testing::EngineHarness;
using testing::pixel_hex;
using testing::run_command;
using testing::shell_quote;

Json op_req(const std::string& op, const std::string& sid, std::int64_t seq) {
  return Json{{"op", op}, {"session_id", sid}, {"sequence", seq}};
}

Json begin_recorded(EngineHarness& h, const std::string& app_id, const std::string& attempt) {
  return h.session(Json{{"op", "begin"},
                        {"display_id", h.display_id()},
                        {"generation", h.generation()},
                        {"app_id", app_id},
                        {"attempt_id", attempt},
                        {"job_sha256", std::string(64, 'a')},
                        {"record_video", true}});
}

// The recorder processes of display `name` still running: ffmpeg with x11grab on that display.
int recorders_of(const std::string& name) {
  int n = 0;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return -1;
  while (dirent* e = ::readdir(proc)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::ifstream f(std::string("/proc/") + e->d_name + "/cmdline", std::ios::binary);
    std::string cmd((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (cmd.find("x11grab") != std::string::npos && cmd.find(std::string("\0-i\0", 4) + name + '\0') != std::string::npos) ++n;
  }
  ::closedir(proc);
  return n;
}

// |a - b| per channel of two "RRGGBB" strings, the largest.
int channel_distance(const std::string& a, const std::string& b) {
  if (a.size() != 6 || b.size() != 6) return 999;
  int worst = 0;
  for (int i = 0; i < 6; i += 2) {
    int x = std::stoi(a.substr(i, 2), nullptr, 16);
    int y = std::stoi(b.substr(i, 2), nullptr, 16);
    worst = std::max(worst, std::abs(x - y));
  }
  return worst;
}

TEST(SessionVideoX11, ARecordedSessionBindsAVideoThatShowsTheSession) {
  ASSERT_TRUE(testing::have_program("ffmpeg")) << "ffmpeg is not installed (ci/packages.txt installs it)";
  EngineHarness h(320, 200);
  const std::string app = h.launch_app();
  ASSERT_FALSE(app.empty());
  Json b = begin_recorded(h, app, "attempt-video");
  ASSERT_EQ(code_of(b), "ok") << b.dump();
  const std::string sid = b["session_id"];
  const std::string dir = b["evidence_dir"];
  EXPECT_EQ(recorders_of(b["binding"]["display_name"]), 1);
  // Click the text field and type the trigger: the window turns green (the fixture's rule).
  Json a = h.session(Json{{"op", "actions"}, {"session_id", sid}, {"sequence", 0}, {"settle", true},
                          {"actions", Json::array({Json{{"type", "click"}, {"x", 100}, {"y", 40}},
                                                   Json{{"type", "type"}, {"text", "evident"}}})}});
  ASSERT_EQ(code_of(a), "ok") << a.dump();
  ASSERT_TRUE(h.log().wait_for([](const std::vector<Json>& ev) {
    for (const auto& e : ev) if (e["type"] == "trigger") return true;
    return false;
  }));
  Json f = h.session(op_req("freeze", sid, 1));
  ASSERT_EQ(code_of(f), "ok") << f.dump();
  Json o = h.session(Json{{"op", "observe"}, {"session_id", sid}, {"sequence", 2},
                          {"pre_observation_sha256", f["frame"]["sha256"]}});
  ASSERT_EQ(code_of(o), "ok") << o.dump();
  Json fin = h.session(Json{{"op", "finish"}, {"session_id", sid}, {"sequence", 3},
                            {"observation_sha256", o["frame"]["sha256"]},
                            {"claims", {{"background", "green"}}}});
  ASSERT_EQ(code_of(fin), "ok") << fin.dump();
  EXPECT_EQ(recorders_of(b["binding"]["display_name"]), 0);  // stopped at finish
  Json c = h.session(op_req("close", sid, 4));
  ASSERT_EQ(code_of(c), "ok") << c.dump();

  // The artifact is the file: its digest by sha256sum (not the engine's hasher), its size.
  const std::string video = dir + "/video.webm";
  const Json& art = fin["receipt"]["artifacts"][0];
  auto sum = run_command("sha256sum " + shell_quote(video));
  ASSERT_EQ(sum.exit_status, 0);
  EXPECT_EQ(sum.out.substr(0, 64), art["sha256"].get<std::string>());
  EXPECT_EQ(static_cast<std::int64_t>(std::filesystem::file_size(video)), art["byte_length"].get<std::int64_t>());
  EXPECT_EQ(art["fps"], 10);
  EXPECT_GE(art["start_offset_ms"].get<std::int64_t>(), 0);
  EXPECT_LE(art["start_offset_ms"].get<std::int64_t>(), fin["receipt"]["elapsed_ms"].get<std::int64_t>());
  EXPECT_EQ(std::filesystem::status(video).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);

  // ffprobe decodes every frame: VP8 at the display's size, at least one frame.
  auto probe = run_command("ffprobe -v error -count_frames -select_streams v:0 -show_entries "
                           "stream=codec_name,width,height,nb_read_frames -of csv=p=0 " + shell_quote(video));
  ASSERT_EQ(probe.exit_status, 0) << probe.out;
  int w = 0, hh = 0, frames = 0;
  char codec[16] = {0};
  ASSERT_EQ(std::sscanf(probe.out.c_str(), "%15[^,],%d,%d,%d", codec, &w, &hh, &frames), 4) << probe.out;
  EXPECT_STREQ(codec, "vp8");
  EXPECT_EQ(w, 320);
  EXPECT_EQ(hh, 200);
  EXPECT_GE(frames, 1);
  // Its first frame shows the initial display (the fixture's dark grey), its last the green one.
  const std::string first = dir + "-first.png", last = dir + "-last.png";
  ASSERT_EQ(run_command("ffmpeg -v error -y -i " + shell_quote(video) + " -frames:v 1 " + shell_quote(first)).exit_status, 0);
  ASSERT_EQ(run_command("ffmpeg -v error -y -sseof -0.3 -i " + shell_quote(video) + " -update 1 " + shell_quote(last)).exit_status, 0);
  EXPECT_LE(channel_distance(pixel_hex(first, 5, 5), pixel_hex(b["frame"]["path"], 5, 5)), 24)
      << pixel_hex(first, 5, 5);
  EXPECT_LE(channel_distance(pixel_hex(last, 5, 5), pixel_hex(o["frame"]["path"], 5, 5)), 24)
      << pixel_hex(last, 5, 5);
  std::filesystem::remove(first);
  std::filesystem::remove(last);

  // Both checks by the receipts module, and the signed envelope names the video with its digest.
  auto bytes = read_file(dir + "/receipt.json", 1 << 20);
  ASSERT_TRUE(bytes.ok());
  auto receipt = load_receipt_file(dir + "/receipt.json");
  ASSERT_TRUE(receipt.ok());
  VerifyOptions vo;
  vo.frames_dir = dir;
  VerifyReport rep = verify_receipt(*receipt, vo);
  EXPECT_TRUE(rep.ok) << ::testing::PrintToString(rep.failed_names());
  EXPECT_EQ(rep.checks.back().name, "artifacts");
  AuthOptions ao;
  ao.key_files = {h.root() + "/state/keys/signing.pub"};
  auto keys = load_trusted_keys(ao);
  ASSERT_TRUE(keys.ok());
  AuthResult auth = verify_receipt_envelope(*bytes, *receipt, dir + "/receipt.dsse.json", *keys);
  EXPECT_TRUE(auth.authenticated);
  auto payload = run_command("jq -r .payload " + shell_quote(dir + "/receipt.dsse.json") + " | base64 -d");
  ASSERT_EQ(payload.exit_status, 0);
  auto statement = parse_json_strict(payload.out, 1 << 20, "test");
  ASSERT_TRUE(statement.ok()) << payload.out;
  const Json& last_subject = (*statement)["subject"].back();  // the artifacts follow the frames
  EXPECT_EQ(last_subject["name"], "video.webm");
  EXPECT_EQ(last_subject["digest"]["sha256"], art["sha256"]);
  // A video changed afterwards no longer verifies, and names the check.
  {
    std::ofstream append(video, std::ios::app | std::ios::binary);
    append << 'x';
  }
  rep = verify_receipt(*receipt, vo);
  EXPECT_EQ(rep.failed_names(), std::vector<std::string>{"artifacts"});
}

TEST(SessionVideoX11, AnAbortedRecordingLeavesNoRecorderAndNoReceipt) {
  ASSERT_TRUE(testing::have_program("ffmpeg")) << "ffmpeg is not installed (ci/packages.txt installs it)";
  EngineHarness h(320, 200);
  const std::string app = h.launch_app();
  ASSERT_FALSE(app.empty());
  Json b = begin_recorded(h, app, "attempt-abort");
  ASSERT_EQ(code_of(b), "ok") << b.dump();
  const std::string name = b["binding"]["display_name"];
  EXPECT_EQ(recorders_of(name), 1);
  Json ab = h.session(op_req("abort", b["session_id"], 0));
  ASSERT_EQ(code_of(ab), "ok") << ab.dump();
  EXPECT_EQ(recorders_of(name), 0);
  EXPECT_FALSE(std::filesystem::exists(b["evidence_dir"].get<std::string>() + "/receipt.json"));
}

TEST(SessionVideoX11, WithoutFfmpegRecordVideoIsUnavailableAndBeginsNothing) {
  EngineHarness h(320, 200);
  const std::string app = h.launch_app();
  ASSERT_FALSE(app.empty());
  const char* old = std::getenv("PATH");
  const std::string saved = old ? old : "";
  ::setenv("PATH", "/nonexistent-evident-test", 1);  // the engine resolves ffmpeg on its PATH
  Json b = begin_recorded(h, app, "attempt-noffmpeg");
  ::setenv("PATH", saved.c_str(), 1);
  EXPECT_EQ(code_of(b), "video-unavailable") << b.dump();
  // Nothing was begun: the display is free for the next session.
  Json again = h.begin("attempt-after");
  EXPECT_EQ(code_of(again), "ok") << again.dump();
}

}  // namespace
}  // namespace evident
