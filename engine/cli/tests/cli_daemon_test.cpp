// Integration tests of the real `evident daemon` process and the `evident` CLI binary against
// real Xvfb servers: the protocol's JSON, exit codes, refusals of bad requests for every op,
// socket permissions and SO_PEERCRED, signals (TERM cleans up, KILL takes children along).
#include <gtest/gtest.h>
#include <dirent.h>
#include <signal.h>
#include <fcntl.h>
#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <future>
#include <set>
#include <sstream>

#include "evident/testing/daemon.h"
#include "evident/testing/files.h"
#include "evident/testing/fixture_log.h"
#include "evident/testing/process.h"
#include "evident/testing/xvfb.h"
#include "evident/core/fs.h"
#include "evident/core/json.h"

namespace evident {
namespace {

using testing::path_exists;
using testing::pid_running;
using testing::run_command;
using testing::wait_until;

const std::string kEvident = testing::evident_cli_path();
const std::string kFixture = testing::fixture_app_path();

std::string q(const std::string& s) { return "'" + s + "'"; }

// Sends raw bytes as one request; returns the answer text ("" if none).
std::string raw_request(const std::string& socket_path, const std::string& bytes,
                        bool half_close = true) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket_path.c_str(), sizeof(addr.sun_path) - 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return "";
  }
  std::size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = ::send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n <= 0) break;
    off += static_cast<std::size_t>(n);
  }
  if (half_close) ::shutdown(fd, SHUT_WR);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) out.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  return out;
}

// Processes whose parent is `ppid` (from /proc).
std::vector<pid_t> children_of(pid_t ppid) {
  std::vector<pid_t> out;
  for (const auto& p : testing::list_processes()) {
    if (p.ppid == ppid && p.state != 'Z') out.push_back(p.pid);
  }
  return out;
}

using Daemon = testing::EvidentDaemon;

struct Cli {
  int exit_status = -1;
  Json json;
  std::string out;
};

class CliDaemonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    daemon_ = std::make_unique<Daemon>(dir_);
    ASSERT_TRUE(daemon_->start()) << testing::slurp(dir_ + "/daemon.log");
  }
  // Runs `evident --socket S --json ARGS`; parses the one JSON object it must print.
  Cli cli(const std::string& args, bool json = true) {
    Cli c;
    auto r = run_command(kEvident + " --socket " + q(daemon_->socket()) + (json ? " --json " : " ") + args);
    c.exit_status = r.exit_status;
    c.out = r.out;
    if (json) {
      try {
        c.json = Json::parse(r.out);
      } catch (...) {
        ADD_FAILURE() << "not one JSON object: " << r.out;
      }
    }
    return c;
  }
  Json request(const std::string& bytes) {
    std::string a = raw_request(daemon_->socket(), bytes);
    try {
      return Json::parse(a);
    } catch (...) {
      ADD_FAILURE() << "bad answer to a raw request: " << a;
      return Json();
    }
  }
  testing::TempDir tmp_;  // declared first: removed after the daemon is gone
  const std::string dir_ = tmp_.path();
  std::unique_ptr<Daemon> daemon_;
};

// Proves: every display/app command works end to end through the daemon with the protocol's
// JSON shapes and exit codes; wrong generations are refused and change nothing.
TEST_F(CliDaemonTest, DisplayAndAppLifecycleThroughTheCli) {
  auto created = cli("display create --width 640 --height 480");
  ASSERT_EQ(created.exit_status, 0) << created.out;
  ASSERT_EQ(created.json["ok"], true);
  const Json d = created.json["display"];
  EXPECT_EQ(d.size(), 5u);
  const int id = d["id"];
  const std::string gen = d["generation"];
  EXPECT_EQ(d["name"], ":" + std::to_string(id));
  EXPECT_EQ(d["width"], 640);
  EXPECT_EQ(d["height"], 480);
  const std::string ids = std::to_string(id) + " " + gen;

  // --json after the subcommand works the same.
  auto listed = run_command(kEvident + " display list --socket " + q(daemon_->socket()) + " --json");
  ASSERT_EQ(listed.exit_status, 0);
  Json lj = Json::parse(listed.out);
  ASSERT_EQ(lj["displays"].size(), 1u);
  EXPECT_EQ(lj["displays"][0], d);

  auto status = cli("display status " + ids);
  ASSERT_EQ(status.exit_status, 0);
  EXPECT_EQ(status.json["ready"], true);
  EXPECT_EQ(status.json["layers"].size(), 5u);
  for (const auto& l : status.json["layers"]) {
    EXPECT_EQ(l.size(), 4u);
    EXPECT_EQ(l["state"], "ready") << l.dump();
  }

  // Screenshot to a relative path (the CLI makes it absolute); check it independently.
  auto shot = run_command("cd " + q(dir_) + " && " + kEvident + " --socket " + q(daemon_->socket()) +
                  " --json display screenshot " + ids + " --out shot.png");
  ASSERT_EQ(shot.exit_status, 0) << shot.out;
  Json png = Json::parse(shot.out)["png"];
  EXPECT_EQ(png["path"], dir_ + "/shot.png");
  auto py = run_command("/usr/bin/python3 -c \"import hashlib; from PIL import Image; "
                "b=open('" + dir_ + "/shot.png','rb').read(); im=Image.open('" + dir_ +
                "/shot.png'); print(im.size[0], im.size[1], len(b), hashlib.sha256(b).hexdigest())\"");
  EXPECT_EQ(py.out, "640 480 " + std::to_string(png["byte_length"].get<int>()) + " " +
                        png["sha256"].get<std::string>() + "\n");
  struct stat st{};
  ASSERT_EQ(::stat((dir_ + "/shot.png").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  // An app, with `--` separating its own options.
  auto launched = cli("app launch " + ids + " --wait-window-ms 20000 -- " + kFixture +
                      " --events " + dir_ + "/events.jsonl");
  ASSERT_EQ(launched.exit_status, 0) << launched.out;
  const Json app = launched.json["app"];
  EXPECT_EQ(app.size(), 5u);
  EXPECT_EQ(app["display_id"], id);
  EXPECT_EQ(app["generation"], gen);
  EXPECT_TRUE(pid_running(app["pid"].get<int>()));
  auto apps = cli("app list");
  ASSERT_EQ(apps.json["apps"].size(), 1u);
  EXPECT_EQ(apps.json["apps"][0]["alive"], true);

  // Wrong generations: refused, exit 1, the display and the app keep running.
  for (const std::string bad : {"gen-00000000000000000000000000000000", "nonsense", "\"\""}) {
    auto r = cli("display destroy " + std::to_string(id) + " " + bad);
    EXPECT_EQ(r.exit_status, 1);
    EXPECT_EQ(r.json["error"]["code"], "display-generation-mismatch");
    EXPECT_EQ(cli("display screenshot " + std::to_string(id) + " " + bad + " --out " + dir_ +
                  "/x.png").json["error"]["code"], "display-generation-mismatch");
  }
  EXPECT_FALSE(path_exists(dir_ + "/x.png"));
  EXPECT_EQ(cli("display status 999 " + gen).json["error"]["code"], "display-not-found");
  EXPECT_EQ(cli("display list").json["displays"].size(), 1u);
  EXPECT_TRUE(pid_running(app["pid"].get<int>()));

  auto stopped = cli("app stop " + app["app_id"].get<std::string>());
  ASSERT_EQ(stopped.exit_status, 0);
  EXPECT_EQ(stopped.json["app_id"], app["app_id"]);
  EXPECT_EQ(stopped.json["exit_status"], 0);
  EXPECT_EQ(cli("app stop " + app["app_id"].get<std::string>()).json["error"]["code"],
            "app-not-found");

  auto destroyed = cli("display destroy " + ids);
  ASSERT_EQ(destroyed.exit_status, 0);
  EXPECT_EQ(destroyed.json["display_id"], id);
  EXPECT_EQ(destroyed.json["generation"], gen);
  EXPECT_TRUE(cli("display list").json["displays"].empty());

  // Human output without --json.
  auto human = cli("display list", false);
  EXPECT_EQ(human.exit_status, 0);
  EXPECT_EQ(human.out, "no displays\n");
}

// Proves: usage errors exit 2 and, with --json, still print one usage error object.
TEST_F(CliDaemonTest, UsageErrorsExitTwo) {
  for (const std::string args : {"display create --width abc", "display bogus", "frobnicate",
                                 "display destroy 1", "app launch 1 gen-x",
                                 "daemon --warm 10x10", "daemon --warm 1920x1080x24",
                                 "daemon --warm x480", "daemon --warm 64x64 --warm 64x64 "
                                 "--warm 64x64 --warm 64x64 --warm 80x80"}) {
    auto r = cli(args);
    EXPECT_EQ(r.exit_status, 2) << args;
    EXPECT_EQ(r.json["ok"], false);
    EXPECT_EQ(r.json["error"]["code"], "usage");
  }
  EXPECT_EQ(run_command(kEvident + " display bogus 2>/dev/null").exit_status, 2);
}

// Proves: no daemon -> daemon-unavailable, and the message says exactly how to start one.
TEST_F(CliDaemonTest, NoDaemonSaysHowToStartIt) {
  std::string nowhere = dir_ + "/none/d.sock";
  auto r = run_command(kEvident + " --json --socket " + nowhere + " display list");
  EXPECT_EQ(r.exit_status, 1);
  Json j = Json::parse(r.out);
  EXPECT_EQ(j["error"]["code"], "daemon-unavailable");
  EXPECT_NE(j["error"]["message"].get<std::string>().find("evident daemon --socket " + nowhere +
                                                          " &"),
            std::string::npos);
  // EVIDENT_SOCKET selects the daemon too.
  auto env = run_command("EVIDENT_SOCKET=" + q(daemon_->socket()) + " " + kEvident + " --json display list");
  EXPECT_EQ(env.exit_status, 0);
}

// Proves: `evident daemon` is the evident-daemon program beside `evident` (its own --help, the
// global options before `daemon` passed on: UsageErrorsExitTwo's --warm refusals come from it);
// a front binary without it answers daemon-program-missing naming the path tried, and starts
// nothing.
TEST_F(CliDaemonTest, DaemonProgramMissing) {
  auto help = run_command(kEvident + " daemon --help");
  EXPECT_EQ(help.exit_status, 0);
  EXPECT_NE(help.out.find("--warm"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("--state-dir"), std::string::npos) << help.out;

  const std::string lonely = dir_ + "/lonely";
  ASSERT_EQ(::mkdir(lonely.c_str(), 0700), 0);
  ASSERT_EQ(run_command("cp " + q(kEvident) + " " + q(lonely + "/evident")).exit_status, 0);
  const std::string sock = dir_ + "/lonely/d.sock";
  auto r = run_command(q(lonely + "/evident") + " --json --socket " + q(sock) + " daemon");
  EXPECT_EQ(r.exit_status, 2);
  Json j = Json::parse(r.out);
  EXPECT_EQ(j["ok"], false);
  EXPECT_EQ(j["error"]["code"], "daemon-program-missing");
  EXPECT_NE(j["error"]["message"].get<std::string>().find(lonely + "/evident-daemon"), std::string::npos)
      << j.dump();
  EXPECT_FALSE(path_exists(sock));
  // The same copy still serves every client command against the running daemon.
  auto list = run_command(q(lonely + "/evident") + " --json --socket " + q(daemon_->socket()) + " display list");
  EXPECT_EQ(list.exit_status, 0) << list.out;
}

// Proves: malformed, oversized, duplicate-key and ill-typed requests for every op are refused
// with stable codes and change nothing (displays and apps unchanged).
TEST_F(CliDaemonTest, BadRequestsForEveryOpAreRefusedAndChangeNothing) {
  auto created = cli("display create --width 320 --height 240");
  ASSERT_EQ(created.exit_status, 0);
  const int id = created.json["display"]["id"];
  const std::string gen = created.json["display"]["generation"];
  auto launched = cli("app launch " + std::to_string(id) + " " + gen + " -- sleep 1000");
  ASSERT_EQ(launched.exit_status, 0) << launched.out;
  const Json before_d = cli("display list").json;
  const Json before_a = cli("app list").json;
  const std::string sid = std::to_string(id);
  const std::string g = "\"" + gen + "\"";

  struct Case {
    std::string request;
    std::string code;  // the documented code (docs/errors.md)
  };
  std::vector<Case> cases = {
      // Envelope level.
      {"", "request-json"},
      {"not json", "request-json"},
      {"[1,2]", "request-args"},
      {R"({"op":"display.list","args":{}} trailing)", "request-json"},
      {R"({"op":"display.list","args":{}}{})", "request-json"},
      {R"({"op":"display.list","op":"display.list","args":{}})", "request-json"},
      {R"({"op":"nope","args":{}})", "request-unknown-op"},
      {R"({"args":{}})", "request-args"},
      {R"({"op":7,"args":{}})", "request-args"},
      {R"({"op":"display.list","args":[]})", "request-args"},
      {R"({"op":"display.list","args":{},"extra":1})", "request-args"},
      {R"({"op":"display.list","args":{"x":1.5}})", "request-json"},
      {R"({"op":"display.list","args":{"x":1}})", "request-args"},
      {"{\"op\":\"display.list\",\"args\":{\"s\":\"\xff\"}}", "request-json"},
      {"{\"op\":\"display.create\",\"args\":{\"pad\":\"" + std::string(300 * 1024, 'a') + "\"}}",
       "request-too-large"},
      // display.create
      {R"({"op":"display.create","args":{"width":"640"}})", "request-args"},
      {R"({"op":"display.create","args":{"width":10}})", "request-args"},
      {R"({"op":"display.create","args":{"depth":8}})", "request-args"},
      {R"({"op":"display.create","args":{"dpi":100000}})", "request-args"},
      {R"({"op":"display.create","args":{"width":640,"width":641}})", "request-json"},
      {R"({"op":"display.create","args":{"colour":1}})", "request-args"},
      // display.destroy / status / screenshot
      {R"({"op":"display.destroy","args":{}})", "request-args"},
      {R"({"op":"display.destroy","args":{"display_id":)" + sid + "}}", "request-args"},
      {R"({"op":"display.destroy","args":{"display_id":")" + sid + R"(","generation":)" + g + "}}",
       "request-args"},
      {R"({"op":"display.destroy","args":{"display_id":-1,"generation":)" + g + "}}", "request-args"},
      {R"({"op":"display.destroy","args":{"display_id":)" + sid + R"(,"generation":7}})", "request-args"},
      {R"({"op":"display.destroy","args":{"display_id":)" + sid + R"(,"generation":"gen-bad"}})",
       "display-generation-mismatch"},
      {R"({"op":"display.destroy","args":{"display_id":)" + sid + R"(,"generation":)" + g +
           R"(,"force":true}})", "request-args"},
      {R"({"op":"display.destroy","args":{"display_id":60000,"generation":)" + g + "}}",
       "display-not-found"},
      {R"({"op":"display.status","args":{"display_id":)" + sid + "}}", "request-args"},
      {R"({"op":"display.status","args":{"display_id":)" + sid + R"(,"generation":"gen-00000000000000000000000000000000"}})",
       "display-generation-mismatch"},
      {R"({"op":"display.screenshot","args":{"display_id":)" + sid + R"(,"generation":)" + g + "}}",
       "request-args"},
      {R"({"op":"display.screenshot","args":{"display_id":)" + sid + R"(,"generation":)" + g +
           R"(,"out":"relative.png"}})", "request-args"},
      {R"({"op":"display.screenshot","args":{"display_id":)" + sid + R"(,"generation":)" + g +
           R"(,"out":"/nonexistent-dir/x.png"}})", "screenshot-write-failed"},
      {R"({"op":"display.list","args":{"all":true}})", "request-args"},
      // app.launch / stop / list
      {R"({"op":"app.launch","args":{"display_id":)" + sid + R"(,"generation":)" + g + "}}",
       "request-args"},
      {R"({"op":"app.launch","args":{"display_id":)" + sid + R"(,"generation":)" + g +
           R"(,"argv":[]}})", "request-args"},
      {R"({"op":"app.launch","args":{"display_id":)" + sid + R"(,"generation":)" + g +
           R"(,"argv":"sleep 1"}})", "request-args"},
      {R"({"op":"app.launch","args":{"display_id":)" + sid + R"(,"generation":)" + g +
           R"(,"argv":["sleep",1]}})", "request-args"},
      {R"({"op":"app.launch","args":{"display_id":)" + sid + R"(,"generation":)" + g +
           R"(,"argv":["sleep","1"],"wait_window_ms":-5}})", "request-args"},
      {R"({"op":"app.launch","args":{"display_id":)" + sid + R"(,"generation":)" + g +
           R"(,"argv":["sleep","1"],"env":{}}})", "request-args"},
      {R"({"op":"app.launch","args":{"display_id":)" + sid + R"(,"generation":"gen-00000000000000000000000000000000","argv":["sleep","1"]}})",
       "display-generation-mismatch"},
      {R"({"op":"app.launch","args":{"display_id":)" + sid + R"(,"generation":)" + g +
           R"(,"argv":["evident-no-such-binary"]}})", "app-launch-failed"},
      {R"({"op":"app.stop","args":{}})", "request-args"},
      {R"({"op":"app.stop","args":{"app_id":5}})", "request-args"},
      {R"({"op":"app.stop","args":{"app_id":"app-00000000000000000000000000000000"}})", "app-not-found"},
      {R"({"op":"app.list","args":{"x":1}})", "request-args"},
      {R"({"op":"ping","args":{"x":1}})", "request-args"},
      // cu.actions / session (their own validators; nothing changes)
      {R"({"op":"cu.actions","args":{}})", "request-args"},
      {R"({"op":"cu.actions","args":{"display_id":)" + sid + R"(,"generation":"gen-00000000000000000000000000000000","request":{"actions":[]}}})",
       "display-generation-mismatch"},
      {R"({"op":"cu.actions","args":{"display_id":)" + sid + R"(,"generation":)" + g +
           R"(,"request":{"actions":[{"type":"bogus"}]}}})", "action-invalid"},
      {R"({"op":"session","args":{}})", "session-command"},
      {R"({"op":"session","args":{"request":7}})", "session-command"},
      {R"({"op":"session","args":{"request":"{\"op\":\"status\",\"op\":\"status\"}"}})", "session-json"},
  };
  for (const auto& c : cases) {
    Json r = request(c.request);
    ASSERT_TRUE(r.is_object()) << c.request.substr(0, 200);
    EXPECT_EQ(r["ok"], false) << c.request.substr(0, 200);
    ASSERT_TRUE(r.contains("error")) << c.request.substr(0, 200);
    const std::string code = r["error"]["code"];
    EXPECT_EQ(code, c.code) << c.request.substr(0, 200);
    EXPECT_TRUE(r["error"]["message"].is_string());
    EXPECT_TRUE(r["error"]["retryable"].is_boolean());
  }
  EXPECT_EQ(cli("display list").json, before_d);
  EXPECT_EQ(cli("app list").json, before_a);
  EXPECT_TRUE(cli("display status " + sid + " " + gen).json["ready"].get<bool>());
}

// Proves: a client that disconnects at once does not cancel the work it asked for.
TEST_F(CliDaemonTest, DisconnectDoesNotCancelWork) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, daemon_->socket().c_str(), sizeof(addr.sun_path) - 1);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  std::string req = R"({"op":"display.create","args":{"width":320,"height":240}})";
  ASSERT_EQ(::send(fd, req.data(), req.size(), MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
  ::shutdown(fd, SHUT_WR);
  ::close(fd);  // gone before the answer
  EXPECT_TRUE(wait_until([&] { return cli("display list").json["displays"].size() == 1; }, 20000));
  // The daemon is still healthy.
  EXPECT_EQ(cli("display list").exit_status, 0);
}

// Proves: the socket lives in a 0700 dir as a 0600 socket; a second daemon on the same socket
// is refused; an unsafe directory is refused.
TEST_F(CliDaemonTest, SocketPermissionsAndSingleDaemon) {
  struct stat st{};
  ASSERT_EQ(::stat((dir_ + "/run").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(::lstat(daemon_->socket().c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  auto second = run_command(kEvident + " --json daemon --socket " + q(daemon_->socket()) + " 2>/dev/null");
  EXPECT_EQ(second.exit_status, 1);
  EXPECT_EQ(Json::parse(second.out)["error"]["code"], "daemon-already-running");
  // The first one is still answering.
  EXPECT_EQ(cli("display list").exit_status, 0);

  std::string open_dir = dir_ + "/open";
  ASSERT_EQ(::mkdir(open_dir.c_str(), 0755), 0);
  ASSERT_EQ(::chmod(open_dir.c_str(), 0755), 0);
  auto unsafe = run_command(kEvident + " --json daemon --socket " + open_dir + "/d.sock 2>/dev/null");
  EXPECT_EQ(unsafe.exit_status, 1);
  EXPECT_EQ(Json::parse(unsafe.out)["error"]["code"], "daemon-socket-dir-unsafe");
  EXPECT_FALSE(path_exists(open_dir + "/d.sock"));
}

// Runs `fn` in a child as uid/gid 65534 (nobody); returns what it wrote.
std::string as_nobody(const std::function<std::string()>& fn) {
  int p[2];
  if (::pipe(p) != 0) return "pipe failed";
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(p[0]);
    ::setgroups(0, nullptr);
    if (::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0) {
      ::_exit(3);
    }
    std::string s = fn();
    ssize_t w = ::write(p[1], s.data(), s.size());
    (void)w;
    ::_exit(0);
  }
  ::close(p[1]);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(p[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  ::close(p[0]);
  ::waitpid(pid, nullptr, 0);
  return out;
}

// Proves: another uid cannot even reach the socket (0700 dir); and when the test opens the
// permissions on purpose, the daemon still refuses that uid via SO_PEERCRED.
TEST_F(CliDaemonTest, OtherUidsAreRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to switch uid";
  const std::string sock = daemon_->socket();
  std::string blocked = as_nobody([&] {
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, sock.c_str(), sizeof(addr.sun_path) - 1);
    int r = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    return r == 0 ? std::string("connected") : std::string(std::strerror(errno));
  });
  EXPECT_EQ(blocked, std::strerror(EACCES));

  // Test-only: open the directory and socket so that the peer check itself is exercised.
  ASSERT_EQ(::chmod(dir_.c_str(), 0755), 0);
  ASSERT_EQ(::chmod((dir_ + "/run").c_str(), 0755), 0);
  ASSERT_EQ(::chmod(sock.c_str(), 0666), 0);
  std::string answer = as_nobody([&] {
    return raw_request(sock, R"({"op":"display.create","args":{}})");
  });
  ASSERT_EQ(::chmod(sock.c_str(), 0600), 0);
  ASSERT_EQ(::chmod((dir_ + "/run").c_str(), 0700), 0);
  ASSERT_EQ(::chmod(dir_.c_str(), 0700), 0);
  Json j = Json::parse(answer);
  EXPECT_EQ(j["ok"], false);
  EXPECT_EQ(j["error"]["code"], "daemon-peer-refused");
  EXPECT_TRUE(cli("display list").json["displays"].empty());  // nothing was created
  EXPECT_NE(testing::slurp(dir_ + "/daemon.log").find("refused a connection from uid 65534"),
            std::string::npos);
}

// Proves: SIGTERM destroys everything the daemon owns (Xvfb and app pids gone), removes its
// socket and exits 0.
TEST_F(CliDaemonTest, SigtermDestroysEverythingAndExitsZero) {
  auto created = cli("display create --width 320 --height 240");
  ASSERT_EQ(created.exit_status, 0);
  const int id = created.json["display"]["id"];
  const std::string gen = created.json["display"]["generation"];
  auto app = cli("app launch " + std::to_string(id) + " " + gen + " -- sleep 1000");
  ASSERT_EQ(app.exit_status, 0) << app.out;
  const pid_t app_pid = app.json["app"]["pid"];
  std::vector<pid_t> kids = children_of(daemon_->pid());
  ASSERT_EQ(kids.size(), 2u);  // Xvfb and the app
  ASSERT_EQ(::kill(daemon_->pid(), SIGTERM), 0);
  EXPECT_EQ(daemon_->wait_exit(30000), 0);
  for (pid_t k : kids) EXPECT_FALSE(pid_running(k)) << k;
  EXPECT_FALSE(pid_running(app_pid));
  EXPECT_FALSE(path_exists(daemon_->socket()));
}

// Proves: `evident daemon --warm WxH` keeps one display of that size ready and logs it with its
// name; `display create` of exactly that size leases it (that name, a fresh generation, ready);
// the pool refills with another server; other sizes are ordinary creates; the idle pooled
// display is not listed; SIGTERM takes the idle one down too.
TEST_F(CliDaemonTest, WarmPoolThroughTheDaemon) {
  const std::string wdir = dir_ + "/warm";
  ASSERT_TRUE(make_private_dir(wdir).ok());
  Daemon warm(wdir, {"--warm", "320x240"});
  ASSERT_TRUE(warm.start()) << testing::slurp(warm.log_path());
  auto call = [&](const std::string& args) {
    auto r = run_command(kEvident + " --socket " + q(warm.socket()) + " --json " + args);
    EXPECT_EQ(r.exit_status, 0) << args << ": " << r.out;
    return Json::parse(r.out);
  };
  // The names of the pooled displays the daemon logged as ready, in order.
  auto pooled = [&](const std::string& log) {
    std::vector<std::string> names;
    const std::string tag = "warm display ";
    for (std::size_t at = log.find(tag); at != std::string::npos; at = log.find(tag, at + 1)) {
      const std::size_t start = at + tag.size();
      const std::size_t end = log.find(' ', start);
      if (end != std::string::npos && log.compare(end, 14, " 320x240 ready") == 0) {
        names.push_back(log.substr(start, end - start));
      }
    }
    return names;
  };
  ASSERT_TRUE(testing::wait_file(warm.log_path(),
                                 [&](const std::string& log) { return !pooled(log).empty(); }, 30000))
      << testing::slurp(warm.log_path());
  const std::string first = pooled(testing::slurp(warm.log_path())).front();
  EXPECT_TRUE(call("display list")["displays"].empty()) << "an idle pooled display is listed";

  Json leased = call("display create --width 320 --height 240");
  EXPECT_EQ(leased["display"]["name"], first) << "the create did not lease the pooled display";
  const std::string gen = leased["display"]["generation"];
  EXPECT_EQ(call("display status " + std::to_string(leased["display"]["id"].get<int>()) + " " +
                 gen)["ready"],
            true);

  ASSERT_TRUE(testing::wait_file(warm.log_path(),
                                 [&](const std::string& log) { return pooled(log).size() >= 2; },
                                 30000))
      << "the pool did not refill: " << testing::slurp(warm.log_path());
  const std::string refill = pooled(testing::slurp(warm.log_path()))[1];
  EXPECT_NE(refill, first);
  Json other = call("display create --width 640 --height 480");
  EXPECT_NE(other["display"]["name"], refill);
  EXPECT_NE(other["display"]["generation"], gen);
  EXPECT_EQ(call("display list")["displays"].size(), 2u);

  std::vector<pid_t> kids = children_of(warm.pid());
  EXPECT_EQ(kids.size(), 3u);  // the leased, the other, and the idle refill
  ASSERT_EQ(::kill(warm.pid(), SIGTERM), 0);
  EXPECT_EQ(warm.wait_exit(30000), 0);
  for (pid_t k : kids) EXPECT_FALSE(pid_running(k)) << "Xvfb " << k << " survived";
}

// Proves: SIGKILL of the daemon takes its Xvfb servers and apps with it (parent-death signal).
TEST_F(CliDaemonTest, SigkillTakesDisplaysAndAppsAlong) {
  std::vector<pid_t> app_pids;
  for (int i = 0; i < 2; ++i) {
    auto created = cli("display create --width 320 --height 240");
    ASSERT_EQ(created.exit_status, 0);
    const int id = created.json["display"]["id"];
    const std::string gen = created.json["display"]["generation"];
    auto app = cli("app launch " + std::to_string(id) + " " + gen + " -- sleep 1000");
    ASSERT_EQ(app.exit_status, 0);
    app_pids.push_back(app.json["app"]["pid"]);
  }
  std::vector<pid_t> kids = children_of(daemon_->pid());
  ASSERT_EQ(kids.size(), 4u);
  ASSERT_EQ(::kill(daemon_->pid(), SIGKILL), 0);
  EXPECT_EQ(daemon_->wait_exit(10000), 128 + SIGKILL);
  for (pid_t k : kids) {
    EXPECT_TRUE(wait_until([&] { return !pid_running(k); }, 10000)) << "child " << k << " survived";
  }
}

// Proves: a foreign Xvfb and X client beside the daemon survive many creates/destroys through
// the CLI, including 8 concurrent creates.
TEST_F(CliDaemonTest, ForeignXUntouchedThroughTheDaemon) {
  testing::ForeignX foreign;
  ASSERT_TRUE(foreign.start());
  ASSERT_TRUE(wait_until([&] { return foreign.untouched(); }, 5000));
  std::vector<std::future<Cli>> futures;
  for (int i = 0; i < 8; ++i) {
    futures.push_back(std::async(std::launch::async, [&] {
      return cli("display create --width 320 --height 240");
    }));
  }
  std::set<int> ids;
  for (auto& f : futures) {
    Cli c = f.get();
    ASSERT_EQ(c.exit_status, 0) << c.out;
    ids.insert(c.json["display"]["id"].get<int>());
  }
  EXPECT_EQ(ids.size(), 8u);
  EXPECT_EQ(ids.count(foreign.number), 0u);
  EXPECT_TRUE(foreign.untouched());
  // The listing is held first: a range-for over a member of cli()'s temporary would read it after
  // the temporary is gone (C++20 extends the lifetime of the range expression only).
  auto listed = cli("display list");
  for (const auto& d : listed.json["displays"]) {
    EXPECT_EQ(cli("display destroy " + std::to_string(d["id"].get<int>()) + " " +
                  d["generation"].get<std::string>()).exit_status, 0);
  }
  EXPECT_TRUE(foreign.untouched());
  ASSERT_EQ(cli("display create --width 320 --height 240").exit_status, 0);
  ASSERT_EQ(::kill(daemon_->pid(), SIGTERM), 0);
  EXPECT_EQ(daemon_->wait_exit(30000), 0);
  EXPECT_TRUE(foreign.untouched());
}

}  // namespace
}  // namespace evident
