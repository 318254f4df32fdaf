#include "evident/session/manager.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <optional>
#include <vector>

#include "evident/core/error_json.h"
#include "evident/core/fs.h"
#include "evident/core/random.h"
#include "evident/receipts/receipt.h"
#include "action_adapter.h"
#include "manager_internal.h"
#include "evident/evidence/commitments.h"
#include "evident/evidence/dsse.h"
#include "evident/evidence/session_evidence.h"
#include "evident/receipts/commitment.h"

namespace evident {


// ---- The handler table: one row per op, in SessionOp order (the transition table's rows are
// protocol::kSessionOps, machine.h). A new op adds its row here.
const SessionManager::OpHandler SessionManager::kHandlers[] = {
    {SessionOp::kBegin, nullptr, nullptr, &SessionManager::run_begin},
    {SessionOp::kActions, nullptr, &SessionManager::admit_actions, &SessionManager::run_actions},
    {SessionOp::kFreeze, nullptr, nullptr, &SessionManager::run_freeze},
    {SessionOp::kObserve, nullptr, nullptr, &SessionManager::run_observe},
    {SessionOp::kFinish, nullptr, &SessionManager::admit_finish, &SessionManager::run_finish},
    {SessionOp::kClose, nullptr, nullptr, &SessionManager::run_close},
    {SessionOp::kAbort, nullptr, nullptr, &SessionManager::run_abort},
    {SessionOp::kStatus, &SessionManager::read_status, nullptr, nullptr},
    // The task ops (task_ops.cpp; docs/agents.md "The lane").
    {SessionOp::kTaskBegin, nullptr, nullptr, &SessionManager::run_task_begin},
    {SessionOp::kTaskTurn, nullptr, nullptr, &SessionManager::run_task_turn},
    {SessionOp::kTaskAbort, nullptr, nullptr, &SessionManager::run_abort},
    {SessionOp::kTaskStatus, &SessionManager::read_task_status, nullptr, nullptr},
};

std::string SessionManager::handler_table_problems() {
  std::string out;
  if (std::size(kHandlers) != kSessionOpCount) {
    out += "the handler table has " + std::to_string(std::size(kHandlers)) + " rows for " +
           std::to_string(kSessionOpCount) + " ops; ";
  }
  for (std::size_t i = 0; i < std::size(kHandlers) && i < kSessionOpCount; ++i) {
    const OpHandler& h = kHandlers[i];
    const SessionOpRow& row = protocol::kSessionOps[i];
    std::string name(row.name);
    if (static_cast<std::size_t>(h.op) != i) out += "row " + std::to_string(i) + " is not op " + name + "; ";
    bool read_only = row.allowed_phases != 0 && !row.checks_sequence;
    if (read_only && (!h.read || h.run || h.admit)) out += name + " is read-only: it needs a read function only; ";
    if (!read_only && (h.read || !h.run)) out += name + " needs a run function and no read function; ";
  }
  return out;
}

namespace session_internal {

Json error_fields(const Error& e) { return Json{{"code", e.code}, {"message", e.message}}; }

// engine.host_id of receipt v3: the evidence module's (the engine always has one); the unit
// tests of the protocol alone derive it from the state dir above evidence_root.
std::string session_host_id(const SessionOptions& o) {
  if (o.evidence) return o.evidence->host_id();
  auto slash = o.evidence_root.find_last_of('/');
  auto h = host_id(slash == std::string::npos ? std::string(".") : o.evidence_root.substr(0, slash));
  return h.ok() ? *h : std::string();
}

Json nullable_time(std::int64_t wall) {
  return wall < 0 ? Json(nullptr) : Json(format_rfc3339_ms(wall));
}

namespace {
std::int64_t env_ms(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return 0;
  char* end = nullptr;
  long long n = std::strtoll(v, &end, 10);
  if (*end != '\0' || n <= 0) return 0;
  return n;
}

}  // namespace

// Content-addressed frame file: <dir>/<sha256>.png, 0600, written whole then renamed so a
// name always holds exactly the bytes it names. Identical frames share one file. Durability
// comes from one syncfs() before the receipt is written.
Result<Json> write_frame(const std::string& dir, const SessionFrame& f) {
  std::string path = dir + "/" + f.sha256 + ".png";
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    std::string tmp = dir + "/.frame-" + random_hex(8);
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return fs_error("cannot create a frame file in", dir, errno);
    std::size_t off = 0;
    while (off < f.bytes.size()) {
      ssize_t n = ::write(fd, f.bytes.data() + off, f.bytes.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        int e = errno;
        ::close(fd);
        ::unlink(tmp.c_str());
        return fs_error("cannot write a frame file in", dir, e);
      }
      off += static_cast<std::size_t>(n);
    }
    ::close(fd);
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
      int e = errno;
      ::unlink(tmp.c_str());
      return fs_error("cannot rename a frame file in", dir, e);
    }
  }
  return Json{{"sha256", f.sha256},
              {"byte_length", static_cast<std::int64_t>(f.bytes.size())},
              {"width", f.width},
              {"height", f.height},
              {"path", path}};
}

void sync_dir_fs(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::syncfs(fd);
    ::close(fd);
  }
}

Error not_found(bool task) {
  if (task) {
    return make_error("task-not-found",
                      "no such task for this caller (unknown id, another actor's task, or an "
                      "ended task whose record was dropped)");
  }
  return make_error("session-not-found",
                    "no such session for this caller (unknown id, another actor's session, or "
                    "an ended session whose record was dropped)");
}

}  // namespace session_internal

using namespace session_internal;

void apply_session_timeout_env(SessionOptions* options) {
  if (auto v = env_ms("EVIDENT_SESSION_STAGE_TIMEOUT_MS")) options->stage_timeout_ms = v;
  if (auto v = env_ms("EVIDENT_SESSION_POST_FREEZE_TIMEOUT_MS")) options->post_freeze_timeout_ms = v;
}

std::int64_t SessionManager::session_wall(const Record& r) const {
  return r.started_wall + (now_ms() - r.started_mono);
}

SessionManager::SessionManager(SessionBackend& backend, SessionOptions options)
    : backend_(backend),
      options_(std::move(options)),
      clock_(options_.clock ? options_.clock : &SystemClock::instance()) {}

SessionManager::~SessionManager() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (reaper_.joinable()) reaper_.join();
  abort_all();
}

Json SessionManager::handle(const Json& actor, std::string_view raw_request) {
  try {
    auto req = parse_session_request(raw_request);
    if (!req) return error_response(req.error());
    return dispatch(actor, *req);
  } catch (const std::exception&) {
    return error_response(make_error("internal", "unexpected internal error in the session layer"));
  }
}

// ---- Dispatch: the checks every op addressed to a session shares, in the documented order
// (docs/sessions.md §2): lookup (unknown id, another actor) → the phase's gate (not yet
// visible, expired, ended; read-only ops answer here) → busy → sequence → phase → the op's
// admit → its run.
Json SessionManager::handle(const Json& actor, const SessionRequest& request) {
  try {
    return dispatch(actor, request);
  } catch (const std::exception&) {
    return error_response(make_error("internal", "unexpected internal error in the session layer"));
  }
}

namespace {

// The codes of the checks every addressed op shares, per op family: a task op is answered in
// the task family's words (docs/agents.md "The lane"), a session op exactly as before.
struct FamilyCodes {
  const char* noun;
  const char* expired;
  const char* ended;
  const char* busy;
  const char* sequence;
  const char* phase;
};
constexpr FamilyCodes kSessionCodes{"session", "session-expired", "session-phase", "session-busy",
                                    "session-sequence", "session-phase"};
constexpr FamilyCodes kTaskCodes{"task", "task-deadline", "task-phase", "task-busy", "task-sequence",
                                 "task-phase"};

}  // namespace

Json SessionManager::dispatch(const Json& actor, const SessionRequest& req) {
  const OpHandler& h = kHandlers[static_cast<std::size_t>(req.op)];
  Call c{actor, req, op_row(req.op), nullptr, {}};
  if (c.row.allowed_phases == 0) return run_contained(c, h.run);  // names no session (begin)
  const bool task = is_task_op(req.op);
  const FamilyCodes& k = task ? kTaskCodes : kSessionCodes;
  const std::string noun = k.noun;
  {
    std::unique_lock<std::mutex> lock(mu_);
    expire_due_locked(lock);
    auto it = records_.find(req.session_id);
    // A task is not found by session ops, nor a session by task ops.
    if (it == records_.end() || it->second->actor != actor || it->second->is_task != task) {
      return error_response(not_found(task));
    }
    c.r = it->second;
    Record& r = *c.r;
    // Another thread (the reaper, or another request's scan) is expiring it right now: the answer
    // is the expiry, never busy. end_session clears the flag and notifies; its cleanup is bounded.
    cv_.wait(lock, [&] { return !r.expiring; });
    const Verdict v = verdict(req.op, r.phase);
    switch (v) {
      case Verdict::kNotAddressed:
      case Verdict::kNotFound: return error_response(not_found(task));
      case Verdict::kExpired:
        if (task) {
          return error_response(make_error(k.expired, "the task's deadline has passed; it expired and was "
                                                  "cleaned up without a receipt; begin a new task"));
        }
        return error_response(make_error(k.expired,
                                     "the session passed its deadline and was cleaned up; its "
                                     "display is released; begin a new session"));
      case Verdict::kRead: return (this->*h.read)(c);
      case Verdict::kEnded:
        return error_response(make_error(k.ended, "the " + noun + " has ended (" + phase_name(r) + ": " +
                                                  r.end_reason + "); `status` shows why"));
      case Verdict::kWrongPhase:
      case Verdict::kRun: break;
    }
    if (r.busy) {
      return error_response(make_error(k.busy,
                                   "another request of this " + noun + " is still running; retry "
                                   "after it answers (use status to see where it stands)",
                                   true));
    }
    if (c.row.checks_sequence && req.sequence != r.sequence) {
      return error_response(make_error(k.sequence,
                                   "sequence " + std::to_string(req.sequence) +
                                       " is not the " + noun + "'s current sequence " +
                                       std::to_string(r.sequence) + "; nothing was executed"));
    }
    if (v == Verdict::kWrongPhase) {
      return error_response(make_error(k.phase, "op " + std::string(c.row.name) + " needs phase " +
                                                allowed_phase_names(c.row) + " but the " + noun +
                                                " is in phase " + phase_name(r)));
    }
    if (h.admit) {
      if (auto e = (this->*h.admit)(c)) return error_response(*e);
    }
    r.busy = true;
  }
  // From here on the request owns the session (busy); mu_ is not held during X work.
  return run_contained(c, h.run);
}

Json SessionManager::run_contained(Call& c, Json (SessionManager::*run)(Call&)) {
  try {
    return (this->*run)(c);
  } catch (...) {  // any type: nothing may leave the record owned
    const bool task = is_task_op(c.req.op);
    if (!c.r) {
      return error_response(make_error("internal", "unexpected internal error in the session layer; nothing was begun"));
    }
    return error_response(contain_internal(c.r, task));
  }
}

Error SessionManager::contain_internal(const std::shared_ptr<Record>& rp, bool task) noexcept {
  Record& r = *rp;
  const std::string noun = task ? "task" : "session";
  PhaseGate gate;
  {
    std::lock_guard<std::mutex> lock(mu_);
    gate = phase_gate(r.phase);
  }
  const Error e = make_error("internal", "unexpected internal error in the session layer; " +
                                             (gate == PhaseGate::kInvisible ? "nothing was begun"
                                              : gate == PhaseGate::kLive
                                                  ? "the " + noun + " has ended without a receipt"
                                                  : "the " + noun + " had already ended"));
  try {
    if (gate == PhaseGate::kInvisible) {  // as a begin that fails: undone, forgotten
      (void)cleanup(r);
      if (!r.evidence_dir.empty()) (void)remove_tree(r.evidence_dir);
      std::lock_guard<std::mutex> lock(mu_);
      records_.erase(r.id);
    } else if (gate == PhaseGate::kLive) {
      end_session(r, Phase::kFailed, "internal", &e);
    }
  } catch (...) {
    // The ending itself failed: below, the record is at least given up.
  }
  try {
    // A cleanup that threw before giving the display back: the display lock goes now, or the
    // display would stay taken for good.
    r.lease.reset();
  } catch (...) {
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (gate == PhaseGate::kLive && is_live(r.phase)) {
    r.phase = Phase::kFailed;
    r.end_reason = "internal";
    r.receipt = nullptr;
    r.ended_mono = now_ms();
  }
  r.busy = false;
  cv_.notify_all();
  return e;
}

// ---- How a run handler ends.

Json SessionManager::advance(Call& c, const std::function<void(Record&)>& apply) {
  std::lock_guard<std::mutex> lock(mu_);
  Record& r = *c.r;
  if (apply) apply(r);
  if (c.row.next) r.phase = *c.row.next;
  if (c.row.advances_sequence) r.sequence += 1;
  r.busy = false;
  cv_.notify_all();
  return r.is_task ? task_snapshot(r, now_ms()) : snapshot(r, now_ms());
}

Json SessionManager::refuse(Call& c, const Error& e) {  // nothing changed; the session stays as it was
  std::lock_guard<std::mutex> lock(mu_);
  c.r->busy = false;
  cv_.notify_all();
  return error_response(e);
}

Json SessionManager::fail(Call& c, const Failure& f) {
  // Fail closed: an op whose row names no failure phase still ends the session when its work
  // failed part-way (finish: a display or app lost after observe, a video that failed).
  end_session(*c.r, c.row.on_failure.value_or(Phase::kFailed), f.reason, &f.error);
  return error_response(make_error(f.error.code, f.error.message + "; the " +
                                                 std::string(c.r->is_task ? "task" : "session") +
                                                 " has ended without a receipt"));
}

// ---- Endings.

Status SessionManager::cleanup(Record& r) {
  if (r.cleaned_up) return {};
  r.cleaned_up = true;
  Status result;
  if (r.lease) {
    // Release held keys/buttons BEFORE the display lock goes, so nobody else ever gets a
    // display with our input still held.
    Status rel = r.lease->release_all_checked();
    if (!rel) result = make_error("session-cleanup-failed", "releasing held input failed: " + rel.error().message);
    r.lease.reset();
  }
  r.commitments.clear();
  if (!r.scratch_dir.empty()) {
    Status rm = remove_tree(r.scratch_dir);
    if (!rm && result.ok()) result = make_error("session-cleanup-failed", "removing the session scratch failed: " + rm.error().message);
  }
  return result;
}

// The run log (docs/receipts.md §9): one entry per ended session. An append that fails cannot
// undo the ending; it is reported beside the end (end_cleanup_error stays the cleanup's).
void SessionManager::log_end(const Record& r, Phase outcome) {
  if (!options_.evidence) return;
  if (r.is_task) {  // kind "task" with task_sha256 (docs/receipts.md §9)
    (void)options_.evidence->record_task_end(r.id, r.attempt_id, r.task_sha256,
                                             std::string(to_string(outcome)), clock_->wall_ms());
    return;
  }
  (void)options_.evidence->record_end(r.id, r.attempt_id, r.job_sha256, std::string(to_string(outcome)),
                                      clock_->wall_ms());
}

void SessionManager::end_session(Record& r, Phase final_phase, const std::string& reason, const Error* error) {
  // The first reason stays the reason; a cleanup failure on top (e.g. the release check on a
  // display that is gone) is reported beside it.
  Status st = cleanup(r);
  if (!r.end_logged) log_end(r, final_phase);
  r.end_logged = true;
  // Only a closed session keeps its receipt. receipt.json is written only at close, so for
  // every other ending there is none, except when close itself failed after writing it (the
  // write, or the signing): then it and its envelope are withdrawn here.
  if (final_phase != Phase::kClosed && !r.evidence_dir.empty()) {
    ::unlink((r.evidence_dir + "/" + std::string(kReceiptFileName)).c_str());
    ::unlink((r.evidence_dir + "/" + std::string(kEnvelopeFileName)).c_str());
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (final_phase != Phase::kClosed) r.receipt = nullptr;
  r.phase = final_phase;
  r.end_reason = reason;
  r.end_error = error ? error_fields(*error) : Json(nullptr);
  if (!st) r.end_cleanup_error = error_fields(st.error());
  r.ended_mono = now_ms();
  r.busy = false;
  r.expiring = false;
  cv_.notify_all();
}

// ---- Shared by the handlers.

// A lost display or a dead app ends the session (docs/sessions.md "Fail closed").
// In a session begun with "app_exit":"record" the app's liveness is note_app_exit's to judge.
std::optional<SessionManager::Failure> SessionManager::check_alive(Record& r) {
  switch (r.lease->gone(!r.record_app_exit)) {
    case SessionLease::Gone::kDisplay:
      return Failure{"display-lost", make_error("session-display-lost", "the session's display is gone")};
    case SessionLease::Gone::kApp:
      return Failure{"app-not-live", make_error("app-not-live", "the session's app is no longer running")};
    case SessionLease::Gone::kNothing:
      break;
  }
  return std::nullopt;
}

std::optional<SessionManager::Failure> SessionManager::capture_frame(Record& r, Json* info, std::string* sha) {
  auto frame = r.lease->capture();
  if (!frame) {
    if (!r.lease->display_alive()) {
      return Failure{"display-lost", make_error("session-display-lost", "the session's display is gone")};
    }
    return Failure{"capture-failed", frame.error()};
  }
  auto written = write_frame(r.evidence_dir, *frame);
  if (!written) return Failure{"evidence-write-failed", written.error()};
  *info = *written;
  *sha = frame->sha256;
  return std::nullopt;
}

std::optional<SessionManager::Failure> SessionManager::note_app_exit(Record& r, std::int64_t after_actions,
                                                                     bool after_freeze, bool* exited) {
  *exited = r.app_exit.present;
  if (*exited || !r.record_app_exit || r.lease->gone() != SessionLease::Gone::kApp) {
    return std::nullopt;  // a lost display is check_alive's (it still ends the session)
  }
  Json info;
  std::string sha;
  if (auto f = capture_frame(r, &info, &sha)) return f;
  std::optional<int> status = r.lease->app_exit_status();
  std::lock_guard<std::mutex> lock(mu_);
  r.app_exit.present = true;
  r.app_exit.after_actions = after_actions;
  r.app_exit.after_freeze = after_freeze;
  r.app_exit.exit_status = (status && *status >= 0 && *status <= 255) ? *status : -1;
  r.app_exit.frame_sha256 = sha;
  r.frame = info;
  *exited = true;
  return std::nullopt;
}

// ---- The handlers.

Json SessionManager::run_begin(Call& c) { return begin_common(c, nullptr); }

Json SessionManager::begin_common(Call& c, const std::function<std::optional<Error>(Record&)>& setup) {
  const SessionRequest& req = c.req;
  const bool task = is_task_op(req.op);
  const char* busy = task ? "task-busy" : "session-busy";
  const char* noun = task ? "session or task" : "session";
  auto r = std::make_shared<Record>();
  {
    std::unique_lock<std::mutex> lock(mu_);
    expire_due_locked(lock);
    // A session or task of this display or attempt that the deadline scan is ending right now
    // is gone once its (bounded) cleanup answers: wait for it rather than answer busy.
    cv_.wait(lock, [&] {
      for (const auto& [id, other] : records_) {
        if (other->expiring && (other->display_id == req.display_id || other->attempt_id == req.attempt_id)) {
          return false;
        }
      }
      return true;
    });
    if (stop_) return error_response(make_error(busy, "the engine is shutting down", false));
    std::size_t live = 0;
    for (const auto& [id, other] : records_) {
      if (!is_live(other->phase)) continue;
      ++live;
      // A live session on an earlier generation of this display number (its Xvfb died and the
      // number was reused) cannot block the new display: it fails at its next request.
      if (other->display_id == req.display_id && other->target.generation == req.generation) {
        return error_response(make_error(busy,
                                     "display " + std::to_string(req.display_id) +
                                         " already has a live " + noun + "; close or abort it first",
                                     true));
      }
      if (other->attempt_id == req.attempt_id) {
        return error_response(make_error(
            busy, std::string("this attempt_id already has a live ") + noun + "; close or abort it first",
            true));
      }
    }
    if (live >= options_.max_live_sessions) {
      return error_response(make_error(busy,
                                   "the daemon already has " + std::to_string(live) +
                                       " live sessions (the limit); retry after one ends",
                                   true));
    }
    r->id = random_id(task ? "tsk" : "ses");
    r->actor = c.actor;
    r->display_id = req.display_id;
    r->attempt_id = req.attempt_id;
    r->job_sha256 = req.job_sha256;
    r->record_app_exit = !task && req.record_app_exit;
    r->record_video = !task && req.record_video;
    r->started_mono = now_ms();
    r->started_wall = clock_->wall_ms();
    r->deadline_mono = r->started_mono + options_.stage_timeout_ms;
    if (setup) {
      if (auto e = setup(*r)) return error_response(*e);  // nothing exists yet
    }
    records_[r->id] = r;  // phase beginning: not yet visible
  }
  c.r = r;

  // A begin that fails leaves no session: its setup is undone and its record forgotten.
  auto forget = [&](const Error& e) {
    (void)cleanup(*r);
    if (!r->evidence_dir.empty()) (void)remove_tree(r->evidence_dir);
    {
      std::lock_guard<std::mutex> lock(mu_);
      records_.erase(r->id);
    }
    cv_.notify_all();
    return error_response(e);
  };

  auto lease = backend_.acquire(req.display_id, req.generation, req.app_id);
  if (!lease) {
    // The display lock is shared by sessions and tasks: a task finds it busy as task-busy.
    Error e = lease.error();
    if (task && e.code == "session-busy") e.code = "task-busy";
    return forget(e);
  }
  r->lease = std::move(lease).value();
  r->target = r->lease->target();
  if (!task && !req.browser_id.empty()) {
    // The workspace must be live and of this display generation (docs/sessions.md "Browser").
    auto bound = r->lease->bind_browser(req.browser_id);
    if (!bound) return forget(bound.error());
    r->browser = *bound;
  }
  r->evidence_dir = options_.evidence_root + "/" + r->id;
  r->scratch_dir = options_.scratch_root + "/" + r->id;
  if (auto st = make_private_dir(options_.evidence_root); !st) return forget(st.error());
  if (auto st = make_private_dir(r->evidence_dir); !st) return forget(st.error());
  if (auto st = make_private_dir(options_.scratch_root); !st) return forget(st.error());
  if (auto st = make_private_dir(r->scratch_dir); !st) return forget(st.error());
  if (r->record_video) {
    // Recording from before the initial frame: every event of the transcript is in the video.
    auto age = r->lease->start_video(r->evidence_dir + "/" + std::string(kVideoFileName));
    if (!age) return forget(age.error());
    r->video_start_offset_ms = std::max<std::int64_t>(0, now_ms() - *age - r->started_mono);
  }
  auto frame = r->lease->capture();
  if (!frame) return forget(frame.error());
  auto info = write_frame(r->evidence_dir, *frame);
  if (!info) return forget(info.error());
  Json model = *info;
  if (task) {
    // The task's logic starts on the display's real size (the adapter maps coordinates back).
    TaskStart start{r->task_mode, r->policy_adapter, r->target.width, r->target.height, r->started_mono,
                    r->task_settle};
    auto run = options_.task_lane->start(start);
    if (!run) return forget(run.error());
    r->task = std::move(run).value();
    auto image = r->task->model_image(*frame);
    if (!image) return forget(image.error());
    if (image->sha256 != frame->sha256) {
      SessionFrame scaled{image->png, image->sha256, image->width, image->height};
      auto written = write_frame(r->evidence_dir, scaled);
      if (!written) return forget(written.error());
      model = *written;
    }
  }
  return advance(c, [&](Record& rec) {
    rec.initial_frame = frame->sha256;
    rec.frame = *info;
    rec.model_frame = model;
    rec.sequence = 0;
    if (rec.task) rec.counters = rec.task->counters();
  });
}

std::optional<Error> SessionManager::admit_actions(Call& c) {
  // The whole batch is validated, and counted against the session's limit, before its first
  // action runs.
  const Record& r = *c.r;
  if (r.app_exit.present) {  // docs/sessions.md "App exit": no input after the app's exit
    return make_error("app-not-live",
                      "the session's app has exited (recorded as its app_exit event); no more "
                      "actions run in this session; freeze to go on to the receipt");
  }
  auto parsed = validate_session_batch(c.req.actions, r.target.width, r.target.height);
  if (!parsed) return parsed.error();
  if (r.action_count + static_cast<std::int64_t>(parsed->size()) > kMaxSessionActions) {
    return make_error("session-action-limit",
                      "this batch of " + std::to_string(parsed->size()) + " would pass the limit of " +
                          std::to_string(kMaxSessionActions) + " actions per session (" +
                          std::to_string(r.action_count) + " already run); nothing was executed");
  }
  c.batch = std::move(parsed).value();
  return std::nullopt;
}

Json SessionManager::run_actions(Call& c) {
  Record& r = *c.r;
  Json results = Json::array();
  std::vector<ActionRecord> records;
  std::vector<CommittedValue> commitments;
  auto fail_with_results = [&](const Failure& f) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      r.results = results;
    }
    return fail(c, f);
  };
  // A bound browser is re-checked before the first action: a dead one runs nothing, and the
  // session stays as it was (abort ends it; docs/sessions.md "Browser").
  if (r.browser) {
    if (Status live = r.lease->check_browser(); !live) {
      return refuse(c, make_error(live.error().code, live.error().message +
                                                       "; nothing was executed (abort the session)"));
    }
  }
  // Record mode: an app that is gone before an action stops the batch there (its exit is an
  // event; the actions not run have no result).
  bool exited = false;
  for (std::size_t i = 0; i < c.batch.size(); ++i) {
    if (auto f = note_app_exit(r, r.action_count + static_cast<std::int64_t>(records.size()), false, &exited)) {
      return fail_with_results(*f);
    }
    if (exited) break;
    if (auto f = check_alive(r)) return fail_with_results(*f);
    const Action& a = c.batch[i];
    SessionActionOutcome out = r.lease->execute(a, static_cast<int>(i));
    // With settle, the frame waits for the display to settle after the input (§4 settle).
    std::string settle;
    if (c.req.settle_cap_ms > 0) settle = r.lease->settle(protocol::kSettleQuietMs, c.req.settle_cap_ms);
    Json res{{"index", static_cast<std::int64_t>(i)},
             {"type", action_type(a)},
             {"status", out.status},
             {"detail", out.detail},
             {"frame_sha256", nullptr}};
    if (!settle.empty()) res["settle"] = settle;
    Json info;
    std::string sha;
    auto cap = capture_frame(r, &info, &sha);
    if (!cap) res["frame_sha256"] = sha;
    results.push_back(res);
    {
      std::lock_guard<std::mutex> lock(mu_);
      r.input_event_count += out.input_event_count;
      r.results = results;
      if (!cap) r.frame = info;
    }
    if (cap) return fail(c, *cap);
    if (out.status == "failed") {
      return fail(c, Failure{"action-failed", make_error("session-action-failed",
                                                         "action " + std::to_string(i) + " (" +
                                                             action_type(a) + ") failed: " + out.detail)});
    }
    ActionRecord done;
    done.type = action_type(a);
    done.projection = action_projection(a);
    done.status = out.status;
    done.input = out.input_event_count > 0;
    done.frame_sha256 = sha;
    done.elapsed_ms = now_ms() - r.started_mono;  // actions.json's time
    done.input_events = out.input_event_count;
    done.settle = settle;
    records.push_back(std::move(done));
    if (action_has_commitment(action_type(a))) {
      // The secret stays in memory (and later the private record), never in the receipt.
      const std::string& value =
          (a.type == ActionType::kType || a.type == ActionType::kPaste) ? a.text : a.key;
      auto committed = commit_value(r.action_count + static_cast<std::int64_t>(records.size()) - 1,
                                    action_type(a), value);
      if (!committed) return fail(c, Failure{"commitment-failed", committed.error()});
      records.back().commitment = committed->commitment;
      commitments.push_back(std::move(*committed));
    }
  }
  // An exit caused by the batch's last action is noticed now rather than at the next request.
  if (!exited) {
    if (auto f = note_app_exit(r, r.action_count + static_cast<std::int64_t>(records.size()), false, &exited)) {
      return fail_with_results(*f);
    }
  }
  // And after the last: input that may have gone to a browser that died fails closed.
  if (r.browser) {
    if (Status live = r.lease->check_browser(); !live) {
      return fail_with_results(Failure{"browser-not-live", live.error()});
    }
  }
  return advance(c, [&](Record& rec) {
    rec.results = results;  // also when the batch stopped at the app's exit before running any
    for (auto& ar : records) rec.actions.push_back(std::move(ar));
    for (auto& cv : commitments) rec.commitments.push_back(std::move(cv));
    rec.action_count += static_cast<std::int64_t>(records.size());
  });
}

Json SessionManager::run_freeze(Call& c) {
  Record& r = *c.r;
  // No receipt binds a browser that was not live when input ended: refused, nothing changes.
  if (r.browser) {
    if (Status live = r.lease->check_browser(); !live) {
      return refuse(c, make_error(live.error().code, live.error().message + "; nothing changed (abort the session)"));
    }
  }
  // Input ends for good: release and check every held key/button first.
  Status rel = r.lease->release_all_checked();
  if (!rel) {
    return fail(c, Failure{"cleanup-failed", make_error("session-cleanup-failed",
                                                        "releasing held input failed: " + rel.error().message)});
  }
  bool exited = false;
  if (auto f = note_app_exit(r, r.action_count, false, &exited)) return fail(c, *f);
  if (auto f = check_alive(r)) return fail(c, *f);
  Json info;
  std::string sha;
  if (auto f = capture_frame(r, &info, &sha)) return fail(c, *f);
  return advance(c, [&](Record& rec) {
    rec.freeze_frame = sha;
    rec.frame = info;
    rec.frozen_wall = session_wall(rec);
    rec.deadline_mono = now_ms() + options_.post_freeze_timeout_ms;  // the post-freeze deadline
    rec.results = nullptr;
  });
}

Json SessionManager::run_observe(Call& c) {
  Record& r = *c.r;
  bool exited = false;
  if (auto f = note_app_exit(r, r.action_count, true, &exited)) return fail(c, *f);
  if (auto f = check_alive(r)) return fail(c, *f);
  Json info;
  std::string sha;
  if (auto f = capture_frame(r, &info, &sha)) return fail(c, *f);
  Json s = advance(c, [&](Record& rec) {
    rec.pre_observation = c.req.pre_observation_sha256;
    rec.observation = ObservationRecord{sha, info["byte_length"].get<std::int64_t>(),
                                        info["width"].get<std::int64_t>(),
                                        info["height"].get<std::int64_t>()};
    rec.frame = info;
    rec.observed_wall = session_wall(rec);
  });
  s["pre_observation_sha256"] = c.req.pre_observation_sha256;
  return s;
}

std::optional<Error> SessionManager::admit_finish(Call& c) {
  if (c.req.observation_sha256 != c.r->observation.sha256) {
    return make_error("session-observation",
                      "observation_sha256 is not the SHA-256 of the frame observe "
                      "captured; echo the observe response's frame.sha256");
  }
  return std::nullopt;
}

Json SessionManager::run_finish(Call& c) {
  Record& r = *c.r;
  // Fail closed in every phase: a session whose display or app died after observe gets no
  // receipt either (docs/sessions.md "Fail closed").
  if (auto f = check_alive(r)) return fail(c, *f);
  // The video ends here, before the receipt that binds it. A recorder that fails fails the
  // session (a receipt that promised a video and has none would be a lie); the stopped file is
  // kept for a retried finish.
  if (r.record_video && !r.video) {
    auto video = r.lease->stop_video();
    if (!video) return fail(c, Failure{"video-failed", video.error()});
    std::lock_guard<std::mutex> lock(mu_);
    r.video = *video;
  }
  ReceiptInput in;
  in.session_id = r.id;
  in.host_id = session_host_id(options_);
  in.binding = ReceiptBinding{r.target.display_id, r.target.display_name,
                              r.target.generation, r.target.app_id,
                              r.target.app_pid,    r.target.app_argv_sha256,
                              r.attempt_id,        r.job_sha256};
  in.actor = r.actor;
  in.started_wall_ms = r.started_wall;
  in.frozen_wall_ms = r.frozen_wall;
  in.observed_wall_ms = r.observed_wall;
  in.completed_wall_ms = std::max(session_wall(r), r.observed_wall);
  in.elapsed_ms = now_ms() - r.started_mono;
  in.initial_frame_sha256 = r.initial_frame;
  in.actions = r.actions;
  in.app_exit = r.app_exit;
  in.freeze_frame_sha256 = r.freeze_frame;
  in.input_event_count = r.input_event_count;
  in.pre_observation_sha256 = r.pre_observation;
  in.observation = r.observation;
  in.claims = c.req.claims;
  if (r.video) {
    in.artifacts.push_back(ArtifactRecord{std::string(kArtifactKindVideo), std::string(kVideoFileName),
                                          std::string(kVideoMediaType), r.video->sha256, r.video->byte_length,
                                          r.video->fps, r.video_start_offset_ms});
  }
  if (r.browser) {
    const SessionBrowser& b = *r.browser;
    in.browser = BrowserBindingRecord{b.workspace_id, b.browser_version, b.target_id, b.profile_sha256,
                                      b.width, b.height};
  }
  // A failure here is the caller's to retry or abort: the session stays observed (its row has
  // no failure phase).
  auto receipt = build_receipt(in);
  if (!receipt) return refuse(c, receipt.error());
  // Frames first, durably, then actions.json. receipt.json is written only at close, after
  // cleanup: a session that never closes (aborted, expired, the daemon killed) leaves no
  // receipt that could verify as the record of a completed session (docs/sessions.md).
  sync_dir_fs(r.evidence_dir);
  if (auto st = write_actions_file(r.evidence_dir, in, *receipt); !st) return refuse(c, st.error());
  return advance(c, [&](Record& rec) {
    rec.receipt = *receipt;
    rec.receipt_id = (*receipt)["receipt_id"].get<std::string>();
  });
}

Json SessionManager::run_close(Call& c) {
  Record& r = *c.r;
  if (auto f = check_alive(r)) return fail(c, *f);
  Json sealed = nullptr;
  if (auto refused = close_and_seal(r, c.row.on_failure.value_or(Phase::kFailed), &sealed)) return *refused;
  end_session(r, *c.row.next, "closed");
  std::lock_guard<std::mutex> lock(mu_);
  Json s = snapshot(r, now_ms());
  s["closed"] = true;
  s["cleanup_complete"] = true;
  s["receipt_id"] = r.receipt_id;
  s["receipt_path"] = r.receipt_path;
  if (!sealed.is_null()) {
    s["envelope_path"] = r.envelope_path;
    s["log"] = sealed;
  }
  return s;
}

std::optional<Json> SessionManager::close_and_seal(Record& r, Phase failed, Json* sealed_out) {
  // The secrets outlive cleanup only until the private record is written below.
  std::vector<CommittedValue> commitments = std::move(r.commitments);
  // Close answers only after cleanup is complete. Fail closed: a session whose cleanup failed
  // keeps no receipt (none was written).
  if (Status st = cleanup(r); !st) {
    end_session(r, failed, "cleanup-failed", &st.error());
    return error_response(make_error(st.error().code, st.error().message + "; the receipt was withdrawn"));
  }
  // Cleanup is complete: the receipt becomes receipt.json now (atomically, then the
  // directory synced), and only then is it signed. Fail closed: a receipt that cannot be
  // written is never there.
  const std::string receipt_path = r.evidence_dir + "/" + std::string(kReceiptFileName);
  if (Status w = write_receipt_atomic(r.evidence_dir, r.receipt); !w) {
    end_session(r, failed, "evidence-write-failed", &w.error());  // removes a partial receipt.json
    return error_response(make_error(w.error().code, w.error().message + "; no receipt was kept"));
  }
  sync_dir_fs(r.evidence_dir);
  // Sign at close: the run-log entry, then receipt.dsse.json. Fail closed: a receipt that
  // cannot be signed is withdrawn.
  Json sealed = nullptr;
  if (options_.evidence) {
    const std::string& state = options_.evidence->state_dir();
    // The private record first: a signed receipt whose commitments cannot be disclosed
    // is not kept either (its ending is logged as failed by end_session).
    Result<Json> seal = make_error("fs-error", "not sealed", false);
    if (auto w = write_session_commitments(state, r.id, r.receipt_id, commitments); !w) {
      seal = w.error();
    } else {
      seal = options_.evidence->seal_closed(r.evidence_dir, r.receipt, clock_->wall_ms());
      r.end_logged = true;  // seal_closed appends the closed entry (and a failed one if it fails after)
    }
    commitments.clear();
    if (!seal) {
      remove_session_commitments(state, r.id);
      end_session(r, failed, "sign-failed", &seal.error());  // withdraws receipt.json and its envelope
      return error_response(make_error(seal.error().code, seal.error().message + "; the receipt was withdrawn"));
    }
    sealed = *seal;
  }
  std::lock_guard<std::mutex> lock(mu_);
  r.receipt_path = receipt_path;
  if (!sealed.is_null()) r.envelope_path = r.evidence_dir + "/" + std::string(kEnvelopeFileName);
  r.log = sealed;
  *sealed_out = sealed;
  return std::nullopt;
}

Json SessionManager::run_abort(Call& c) {
  Record& r = *c.r;
  // An aborted session keeps no receipt, whatever phase it reached: receipt.json is written
  // only at close. Abort answers only after cleanup is complete; if it fails, the session
  // ends failed instead.
  if (Status st = cleanup(r); !st) {
    end_session(r, c.row.on_failure.value_or(Phase::kFailed), "cleanup-failed", &st.error());
    return error_response(st.error());
  }
  end_session(r, *c.row.next, "aborted");
  std::lock_guard<std::mutex> lock(mu_);
  Json s = r.is_task ? task_snapshot(r, now_ms()) : snapshot(r, now_ms());
  s["aborted"] = true;
  s["cleanup_complete"] = true;
  return s;
}

Json SessionManager::read_status(Call& c) { return snapshot(*c.r, now_ms()); }
Json SessionManager::read_task_status(Call& c) { return task_snapshot(*c.r, now_ms()); }

// ---- Deadlines and retention: one computation (due_at) for the scan and the reaper's wake-up.

std::optional<std::int64_t> SessionManager::due_at(const Record& r) const {
  if (r.busy) return std::nullopt;  // a running request is never cut off; it is due once it answers
  switch (phase_gate(r.phase)) {
    case PhaseGate::kInvisible: return std::nullopt;
    case PhaseGate::kLive: return r.deadline_mono;
    case PhaseGate::kEnded:
    case PhaseGate::kExpired: return r.ended_mono + options_.ended_retention_ms;
  }
  return std::nullopt;
}

std::int64_t SessionManager::next_due_locked() const {
  std::int64_t next = INT64_MAX;
  for (const auto& [id, r] : records_) {
    if (auto at = due_at(*r)) next = std::min(next, *at);
  }
  return next;
}

std::size_t SessionManager::expire_due_locked(std::unique_lock<std::mutex>& lock) {
  std::int64_t now = now_ms();
  std::vector<std::shared_ptr<Record>> due;
  std::vector<std::pair<std::int64_t, std::string>> ended;
  for (auto it = records_.begin(); it != records_.end();) {
    Record& r = *it->second;
    auto at = due_at(r);
    if (at && now >= *at) {
      if (!is_live(r.phase)) {  // an ended record past its retention is dropped
        it = records_.erase(it);
        continue;
      }
      r.busy = true;  // a live session past its deadline expires (below, without mu_)
      r.expiring = true;
      due.push_back(it->second);
    } else if (!is_live(r.phase) && !r.busy) {
      ended.emplace_back(r.ended_mono, it->first);
    }
    ++it;
  }
  // The oldest ended records beyond the count cap are dropped too.
  if (ended.size() > options_.max_ended_records) {
    std::sort(ended.begin(), ended.end());
    for (std::size_t i = 0; i + options_.max_ended_records < ended.size(); ++i) {
      records_.erase(ended[i].second);
    }
  }
  if (due.empty()) return 0;
  lock.unlock();
  for (auto& r : due) end_session(*r, Phase::kExpired, "expired");
  lock.lock();
  cv_.notify_all();
  return due.size();
}

std::size_t SessionManager::expire_due() {
  std::unique_lock<std::mutex> lock(mu_);
  return expire_due_locked(lock);
}

std::int64_t SessionManager::next_deadline_ms() const {
  std::lock_guard<std::mutex> lock(mu_);
  return next_due_locked();
}

void SessionManager::start_reaper() {
  std::lock_guard<std::mutex> guard(mu_);
  if (reaper_.joinable() || stop_) return;
  reaper_ = std::thread([this] {
    // Signals belong to the daemon's signalfd, never to this thread.
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, nullptr);
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      expire_due_locked(lock);
      if (stop_) break;
      std::int64_t next = next_due_locked();
      if (next == INT64_MAX) {
        cv_.wait(lock);
      } else {
        std::int64_t wait = std::max<std::int64_t>(1, next - now_ms());
        cv_.wait_for(lock, std::chrono::milliseconds(wait));
      }
    }
  });
}

void SessionManager::abort_all() {
  std::unique_lock<std::mutex> lock(mu_);
  // Requests in flight finish first: their input is never cut off mid-way.
  cv_.wait(lock, [&] {
    for (const auto& [id, r] : records_) {
      if (r->busy) return false;
    }
    return true;
  });
  std::vector<std::shared_ptr<Record>> live;
  for (auto& [id, r] : records_) {
    if (is_live(r->phase)) {
      r->busy = true;
      live.push_back(r);
    }
  }
  lock.unlock();
  for (auto& r : live) end_session(*r, Phase::kAborted, "engine-shutdown");
  cv_.notify_all();
}

bool SessionManager::wait_ended(const std::string& session_id, std::int64_t timeout_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  // Every ending sets the phase and clears busy under mu_, then notifies cv_ (end_session).
  return cv_.wait_for(lock, std::chrono::milliseconds(std::max<std::int64_t>(0, timeout_ms)), [&] {
    auto it = records_.find(session_id);
    return it != records_.end() && !is_live(it->second->phase) && !it->second->busy;
  });
}

std::size_t SessionManager::live_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::size_t n = 0;
  for (const auto& [id, r] : records_) n += is_live(r->phase) ? 1 : 0;
  return n;
}

// ---- Replies: the snapshot every successful reply carries.

namespace session_internal {

Json binding_json(const SessionManager::Record& r) {
  return Json{{"display_id", r.target.display_id},
              {"display_name", r.target.display_name},
              {"generation", r.target.generation},
              {"app_id", r.target.app_id},
              {"app_pid", r.target.app_pid},
              {"app_argv_sha256", r.target.app_argv_sha256},
              {"attempt_id", r.attempt_id},
              {"job_sha256", r.job_sha256}};
}

Json snapshot(const SessionManager::Record& r, std::int64_t now_mono) {
  Json s = Json::object();
  s["ok"] = true;
  s["session_id"] = r.id;
  s["sequence"] = r.sequence;
  s["phase"] = std::string(to_string(r.phase));
  s["binding"] = binding_json(r);
  s["actor"] = r.actor;
  s["evidence_dir"] = r.evidence_dir;
  s["started_at"] = format_rfc3339_ms(r.started_wall);
  s["frozen_at"] = nullable_time(r.frozen_wall);
  s["observed_at"] = nullable_time(r.observed_wall);
  s["action_count"] = r.action_count;
  s["input_event_count"] = r.input_event_count;
  s["frame"] = r.frame;
  s["results"] = r.results;
  s["receipt"] = r.receipt;
  if (r.browser) {  // only in a session that bound a browser (docs/sessions.md "Browser")
    s["browser"] = Json{{"workspace_id", r.browser->workspace_id},
                        {"browser_version", r.browser->browser_version},
                        {"target_id", r.browser->target_id},
                        {"profile_sha256", r.browser->profile_sha256},
                        {"viewport", {{"width", r.browser->width}, {"height", r.browser->height}}}};
  }
  if (r.app_exit.present) {  // only once the app's exit was recorded (docs/sessions.md "App exit")
    s["app_exit"] = Json{{"exit_status", r.app_exit.exit_status >= 0 ? Json(r.app_exit.exit_status) : Json(nullptr)},
                         {"frame_sha256", r.app_exit.frame_sha256},
                         {"after_freeze", r.app_exit.after_freeze}};
  }
  if (is_live(r.phase)) {
    s["expires_in_ms"] = std::max<std::int64_t>(0, r.deadline_mono - now_mono);
    s["ended"] = nullptr;
  } else {
    s["expires_in_ms"] = nullptr;
    s["ended"] = Json{{"reason", r.end_reason}, {"error", r.end_error}, {"cleanup_error", r.end_cleanup_error}};
  }
  return s;
}

}  // namespace session_internal

}  // namespace evident
