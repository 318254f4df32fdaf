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
#include <optional>
#include <vector>

#include "evident/core/fs.h"
#include "evident/core/random.h"
#include "evident/receipts/receipt.h"
#include "action_adapter.h"
#include "evident/evidence/commitments.h"
#include "evident/evidence/dsse.h"
#include "evident/evidence/session_evidence.h"
#include "evident/receipts/commitment.h"

namespace evident {

// Phases: "beginning" (admitted, not yet visible), then the contract's stage → frozen →
// observed → finished, and the ended states closed / aborted / failed / expired.
struct SessionManager::Record {
  std::string id;
  Json actor;
  std::string phase = "beginning";
  std::int64_t sequence = 0;
  std::int64_t display_id = 0;  // as requested at begin (for uniqueness while beginning)
  SessionTarget target;
  std::string attempt_id;
  std::string job_sha256;
  std::unique_ptr<SessionLease> lease;
  std::string evidence_dir;
  std::string scratch_dir;
  std::int64_t started_wall = 0;
  std::int64_t started_mono = 0;
  std::int64_t frozen_wall = -1;
  std::int64_t observed_wall = -1;
  std::int64_t deadline_mono = 0;
  std::int64_t action_count = 0;
  std::int64_t input_event_count = 0;
  Json frame = nullptr;    // the latest frame: {sha256, byte_length, width, height, path}
  Json results = nullptr;  // the latest actions batch's per-action results
  std::vector<ActionRecord> actions;
  // Receipt v3: salt and value of each committed action (type/key/hold_key), in memory until
  // close writes them to the state dir's private record (docs/receipts.md); cleared at cleanup.
  std::vector<CommittedValue> commitments;
  std::string initial_frame;
  std::string freeze_frame;
  std::string pre_observation;
  ObservationRecord observation;
  Json receipt = nullptr;
  std::string receipt_id;
  bool busy = true;  // a request (or cleanup) is running on it
  std::string end_reason;
  Json end_error = nullptr;
  Json end_cleanup_error = nullptr;
  std::int64_t ended_mono = 0;

  bool live() const {
    return phase == "beginning" || phase == "stage" || phase == "frozen" ||
           phase == "observed" || phase == "finished";
  }
};

namespace {

Json error_json(const Error& e) {
  return Json{{"ok", false},
              {"error", {{"code", e.code}, {"message", e.message}, {"retryable", e.retryable}}}};
}

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

std::int64_t env_ms(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return 0;
  char* end = nullptr;
  long long n = std::strtoll(v, &end, 10);
  if (*end != '\0' || n <= 0) return 0;
  return n;
}

// Content-addressed frame file: <dir>/<sha256>.png, 0600, written whole then renamed so a
// name always holds exactly the bytes it names. Identical frames share one file. Durability
// comes from one syncfs() before the receipt is written.
Result<Json> write_frame(const std::string& dir, const SessionFrame& f) {
  std::string path = dir + "/" + f.sha256 + ".png";
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    std::string tmp = dir + "/.frame-" + random_hex(8);
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return make_error("fs-error", "cannot create a frame file in " + dir + ": " + std::strerror(errno));
    std::size_t off = 0;
    while (off < f.bytes.size()) {
      ssize_t n = ::write(fd, f.bytes.data() + off, f.bytes.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        int e = errno;
        ::close(fd);
        ::unlink(tmp.c_str());
        return make_error("fs-error", "cannot write a frame file in " + dir + ": " + std::strerror(e));
      }
      off += static_cast<std::size_t>(n);
    }
    ::close(fd);
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
      int e = errno;
      ::unlink(tmp.c_str());
      return make_error("fs-error", "cannot rename a frame file in " + dir + ": " + std::strerror(e));
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

const char* allowed_phase(SessionOp op) {
  switch (op) {
    case SessionOp::kActions:
    case SessionOp::kFreeze: return "stage";
    case SessionOp::kObserve: return "frozen";
    case SessionOp::kFinish: return "observed";
    case SessionOp::kClose: return "finished";
    default: return nullptr;  // abort: any live phase; begin/status: not phase-bound
  }
}

Error not_found() {
  return make_error("session-not-found",
                    "no such session for this caller (unknown id, another actor's session, or "
                    "an ended session whose record was dropped)");
}

}  // namespace

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

namespace {

Json snapshot(const SessionManager::Record& r, std::int64_t now_mono);

}  // namespace

Json SessionManager::handle(const Json& actor, std::string_view raw_request) {
  try {
    auto req = parse_session_request(raw_request);
    if (!req) return error_json(req.error());
    return dispatch(actor, *req);
  } catch (const std::exception&) {
    return error_json(make_error("internal", "unexpected internal error in the session layer"));
  }
}

Json SessionManager::dispatch(const Json& actor, const SessionRequest& req) {
  if (req.op == SessionOp::kBegin) return begin(actor, req);
  return continue_op(actor, req);
}

// ---------------------------------------------------------------------------------------------

namespace {

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
  s["phase"] = r.phase;
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
  if (r.live()) {
    s["expires_in_ms"] = std::max<std::int64_t>(0, r.deadline_mono - now_mono);
    s["ended"] = nullptr;
  } else {
    s["expires_in_ms"] = nullptr;
    s["ended"] = Json{{"reason", r.end_reason}, {"error", r.end_error}, {"cleanup_error", r.end_cleanup_error}};
  }
  return s;
}

}  // namespace

Json SessionManager::begin(const Json& actor, const SessionRequest& req) {
  auto r = std::make_shared<Record>();
  {
    std::unique_lock<std::mutex> lock(mu_);
    expire_due_locked(lock);
    if (stop_) return error_json(make_error("session-busy", "the engine is shutting down"));
    std::size_t live = 0;
    for (const auto& [id, other] : records_) {
      if (!other->live()) continue;
      ++live;
      if (other->display_id == req.display_id) {
        return error_json(make_error("session-busy",
                                     "display " + std::to_string(req.display_id) +
                                         " already has a live session; close or abort it first",
                                     true));
      }
      if (other->attempt_id == req.attempt_id) {
        return error_json(make_error(
            "session-busy", "this attempt_id already has a live session; close or abort it first",
            true));
      }
    }
    if (live >= options_.max_live_sessions) {
      return error_json(make_error("session-busy",
                                   "the daemon already has " + std::to_string(live) +
                                       " live sessions (the limit); retry after one ends",
                                   true));
    }
    r->id = random_id("ses");
    r->actor = actor;
    r->display_id = req.display_id;
    r->attempt_id = req.attempt_id;
    r->job_sha256 = req.job_sha256;
    r->started_mono = now_ms();
    r->started_wall = clock_->wall_ms();
    r->deadline_mono = r->started_mono + options_.stage_timeout_ms;
    records_[r->id] = r;
  }

  auto fail = [&](const Error& e) {
    if (r->lease) {
      (void)r->lease->release_all_checked();
      r->lease.reset();
    }
    if (!r->scratch_dir.empty()) (void)remove_tree(r->scratch_dir);
    if (!r->evidence_dir.empty()) (void)remove_tree(r->evidence_dir);
    {
      std::lock_guard<std::mutex> lock(mu_);
      records_.erase(r->id);
    }
    cv_.notify_all();
    return error_json(e);
  };

  auto lease = backend_.acquire(req.display_id, req.generation, req.app_id);
  if (!lease) return fail(lease.error());
  r->lease = std::move(lease).value();
  r->target = r->lease->target();
  r->evidence_dir = options_.evidence_root + "/" + r->id;
  r->scratch_dir = options_.scratch_root + "/" + r->id;
  if (auto st = make_private_dir(options_.evidence_root); !st) return fail(st.error());
  if (auto st = make_private_dir(r->evidence_dir); !st) return fail(st.error());
  if (auto st = make_private_dir(options_.scratch_root); !st) return fail(st.error());
  if (auto st = make_private_dir(r->scratch_dir); !st) return fail(st.error());
  auto frame = r->lease->capture();
  if (!frame) return fail(frame.error());
  auto info = write_frame(r->evidence_dir, *frame);
  if (!info) return fail(info.error());

  std::lock_guard<std::mutex> lock(mu_);
  r->initial_frame = frame->sha256;
  r->frame = *info;
  r->phase = "stage";
  r->sequence = 0;
  r->busy = false;
  cv_.notify_all();
  return snapshot(*r, now_ms());
}

// ---------------------------------------------------------------------------------------------

Status SessionManager::cleanup(Record& r) {
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
void SessionManager::log_end(const Record& r, const std::string& outcome) {
  if (!options_.evidence) return;
  (void)options_.evidence->record_end(r.id, r.attempt_id, r.job_sha256, outcome, clock_->wall_ms());
}

// Runs cleanup for a session that ended abnormally (no receipt) and records why.
// Called without mu_, with r->busy set.
void SessionManager::end_record(const std::shared_ptr<Record>& r, const std::string& phase,
                                const std::string& reason, const Error* error) {
  // The first reason stays the reason; a cleanup failure on top (e.g. the release check on a
  // display that is gone) is reported beside it.
  Status st = cleanup(*r);
  log_end(*r, phase);
  Json err = error ? Json{{"code", error->code}, {"message", error->message}} : Json(nullptr);
  std::lock_guard<std::mutex> lock(mu_);
  r->phase = phase;
  r->end_reason = reason;
  r->end_error = err;
  if (!st) r->end_cleanup_error = Json{{"code", st.error().code}, {"message", st.error().message}};
  r->ended_mono = now_ms();
  r->busy = false;
  cv_.notify_all();
}

Json SessionManager::continue_op(const Json& actor, const SessionRequest& req) {
  std::shared_ptr<Record> r;
  std::vector<Action> batch;
  {
    std::unique_lock<std::mutex> lock(mu_);
    expire_due_locked(lock);
    auto it = records_.find(req.session_id);
    if (it == records_.end() || it->second->phase == "beginning" || it->second->actor != actor) {
      return error_json(not_found());
    }
    r = it->second;
    if (r->phase == "expired") {
      return error_json(make_error("session-expired",
                                   "the session passed its deadline and was cleaned up; its "
                                   "display is released; begin a new session"));
    }
    if (req.op == SessionOp::kStatus) return snapshot(*r, now_ms());
    if (!r->live()) {
      return error_json(make_error("session-phase", "the session has ended (" + r->phase + ": " +
                                                        r->end_reason + "); `status` shows why"));
    }
    if (r->busy) {
      return error_json(make_error("session-busy",
                                   "another request of this session is still running; retry "
                                   "after it answers (use status to see where it stands)",
                                   true));
    }
    if (req.sequence != r->sequence) {
      return error_json(make_error("session-sequence",
                                   "sequence " + std::to_string(req.sequence) +
                                       " is not the session's current sequence " +
                                       std::to_string(r->sequence) + "; nothing was executed",
                                   false));
    }
    const char* want = allowed_phase(req.op);
    if (want && r->phase != want) {
      return error_json(make_error("session-phase", std::string("op ") + to_string(req.op) +
                                                        " needs phase " + want +
                                                        " but the session is in phase " + r->phase));
    }
    if (req.op == SessionOp::kActions) {
      // The whole batch is validated before its first action runs.
      auto parsed = validate_session_batch(req.actions, r->target.width, r->target.height);
      if (!parsed) return error_json(parsed.error());
      if (r->action_count + static_cast<std::int64_t>(parsed->size()) > kMaxSessionActions) {
        return error_json(make_error(
            "session-action-limit",
            "this batch of " + std::to_string(parsed->size()) + " would pass the limit of 64 " +
                "actions per session (" + std::to_string(r->action_count) + " already run); " +
                "nothing was executed"));
      }
      batch = std::move(parsed).value();
    }
    if (req.op == SessionOp::kFinish && req.observation_sha256 != r->observation.sha256) {
      return error_json(make_error("session-observation",
                                   "observation_sha256 is not the SHA-256 of the frame observe "
                                   "captured; echo the observe response's frame.sha256"));
    }
    r->busy = true;
  }

  // From here on the request owns the session (busy); mu_ is not held during X work.
  auto refuse = [&](const Error& e) {  // nothing changed; the session stays as it was
    std::lock_guard<std::mutex> lock(mu_);
    r->busy = false;
    cv_.notify_all();
    return error_json(e);
  };
  auto end_failed = [&](const std::string& reason, const Error& e) {
    end_record(r, "failed", reason, &e);
    return error_json(make_error(e.code, e.message + "; the session has ended without a receipt"));
  };
  // A lost display or a dead app ends the session (contract §5).
  auto check_alive = [&]() -> std::optional<Json> {
    if (!r->lease->display_alive()) {
      return end_failed("display-lost", make_error("session-display-lost", "the session's display is gone"));
    }
    if (!r->lease->app_alive()) {
      return end_failed("app-not-live", make_error("app-not-live", "the session's app is no longer running"));
    }
    return std::nullopt;
  };
  auto capture_frame = [&](Json* info, std::string* sha) -> std::optional<Json> {
    auto frame = r->lease->capture();
    if (!frame) {
      if (!r->lease->display_alive()) {
        return end_failed("display-lost", make_error("session-display-lost", "the session's display is gone"));
      }
      return end_failed("capture-failed", frame.error());
    }
    auto written = write_frame(r->evidence_dir, *frame);
    if (!written) return end_failed("evidence-write-failed", written.error());
    *info = *written;
    *sha = frame->sha256;
    return std::nullopt;
  };

  switch (req.op) {
    case SessionOp::kActions: {
      Json results = Json::array();
      std::vector<ActionRecord> records;
      std::vector<CommittedValue> commitments;
      std::int64_t events = 0;
      Json last_frame;
      for (std::size_t i = 0; i < batch.size(); ++i) {
        if (auto e = check_alive()) {
          std::lock_guard<std::mutex> lock(mu_);
          r->results = results;
          return *e;
        }
        const Action& a = batch[i];
        SessionActionOutcome out = r->lease->execute(a, static_cast<int>(i));
        events += out.input_event_count;
        Json res{{"index", static_cast<std::int64_t>(i)},
                 {"type", action_type(a)},
                 {"status", out.status},
                 {"detail", out.detail},
                 {"frame_sha256", nullptr}};
        Json info;
        std::string sha;
        auto cap = capture_frame(&info, &sha);
        if (!cap) res["frame_sha256"] = sha;
        results.push_back(res);
        {
          std::lock_guard<std::mutex> lock(mu_);
          r->input_event_count += out.input_event_count;
          r->results = results;
          if (!cap) r->frame = info;
        }
        if (cap) return *cap;
        if (out.status == "failed") {
          return end_failed("action-failed",
                            make_error("session-action-failed",
                                       "action " + std::to_string(i) + " (" + action_type(a) +
                                           ") failed: " + out.detail));
        }
        records.push_back(ActionRecord{action_type(a), action_projection(a), out.status,
                                       out.input_event_count > 0, sha});
        records.back().elapsed_ms = now_ms() - r->started_mono;  // actions.json's time
        records.back().input_events = out.input_event_count;
        if (action_has_commitment(action_type(a))) {
          // The secret stays in memory (and later the private record), never in the receipt.
          const std::string& value =
              (a.type == ActionType::kType || a.type == ActionType::kPaste) ? a.text : a.key;
          auto c = commit_value(r->action_count + static_cast<std::int64_t>(records.size()) - 1,
                                action_type(a), value);
          if (!c) return end_failed("commitment-failed", c.error());
          records.back().commitment = c->commitment;
          commitments.push_back(std::move(*c));
        }
      }
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& rec : records) r->actions.push_back(std::move(rec));
      for (auto& c : commitments) r->commitments.push_back(std::move(c));
      r->action_count += static_cast<std::int64_t>(records.size());
      r->sequence += 1;
      r->busy = false;
      cv_.notify_all();
      return snapshot(*r, now_ms());
    }
    case SessionOp::kFreeze: {
      // Input ends for good: release and check every held key/button first.
      Status rel = r->lease->release_all_checked();
      if (!rel) {
        return end_failed("cleanup-failed", make_error("session-cleanup-failed",
                                                      "releasing held input failed: " + rel.error().message));
      }
      if (auto e = check_alive()) return *e;
      Json info;
      std::string sha;
      if (auto e = capture_frame(&info, &sha)) return *e;
      std::lock_guard<std::mutex> lock(mu_);
      r->freeze_frame = sha;
      r->frame = info;
      r->frozen_wall = session_wall(*r);
      r->deadline_mono = now_ms() + options_.post_freeze_timeout_ms;
      r->phase = "frozen";
      r->sequence += 1;
      r->results = nullptr;
      r->busy = false;
      cv_.notify_all();
      return snapshot(*r, now_ms());
    }
    case SessionOp::kObserve: {
      if (auto e = check_alive()) return *e;
      Json info;
      std::string sha;
      if (auto e = capture_frame(&info, &sha)) return *e;
      std::lock_guard<std::mutex> lock(mu_);
      r->pre_observation = req.pre_observation_sha256;
      r->observation = ObservationRecord{sha, info["byte_length"].get<std::int64_t>(),
                                         info["width"].get<std::int64_t>(),
                                         info["height"].get<std::int64_t>()};
      r->frame = info;
      r->observed_wall = session_wall(*r);
      r->phase = "observed";
      r->sequence += 1;
      r->busy = false;
      cv_.notify_all();
      Json s = snapshot(*r, now_ms());
      s["pre_observation_sha256"] = r->pre_observation;
      return s;
    }
    case SessionOp::kFinish: {
      ReceiptInput in;
      in.session_id = r->id;
      in.host_id = session_host_id(options_);
      in.binding = ReceiptBinding{r->target.display_id, r->target.display_name,
                                  r->target.generation, r->target.app_id,
                                  r->target.app_pid,    r->target.app_argv_sha256,
                                  r->attempt_id,        r->job_sha256};
      in.actor = r->actor;
      in.started_wall_ms = r->started_wall;
      in.frozen_wall_ms = r->frozen_wall;
      in.observed_wall_ms = r->observed_wall;
      in.completed_wall_ms = std::max(session_wall(*r), r->observed_wall);
      in.elapsed_ms = now_ms() - r->started_mono;
      in.initial_frame_sha256 = r->initial_frame;
      in.actions = r->actions;
      in.freeze_frame_sha256 = r->freeze_frame;
      in.input_event_count = r->input_event_count;
      in.pre_observation_sha256 = r->pre_observation;
      in.observation = r->observation;
      in.claims = req.claims;
      auto receipt = build_receipt(in);
      if (!receipt) return refuse(receipt.error());
      // Frames first, durably, then actions.json. receipt.json is written only at close, after
      // cleanup: a session that never closes (aborted, expired, the daemon killed) leaves no
      // receipt that could verify as the record of a completed session (docs/sessions.md).
      sync_dir_fs(r->evidence_dir);
      if (auto st = write_actions_file(r->evidence_dir, in, *receipt); !st) return refuse(st.error());
      std::lock_guard<std::mutex> lock(mu_);
      r->receipt = *receipt;
      r->receipt_id = (*receipt)["receipt_id"].get<std::string>();
      r->phase = "finished";
      r->sequence += 1;
      r->busy = false;
      cv_.notify_all();
      return snapshot(*r, now_ms());
    }
    case SessionOp::kClose: {
      // The secrets outlive cleanup only until the private record is written below.
      std::vector<CommittedValue> commitments = std::move(r->commitments);
      Status st = cleanup(*r);
      if (!st) {
        // Fail closed: a session whose cleanup failed keeps no receipt (none was written).
        log_end(*r, "failed");
        std::lock_guard<std::mutex> lock(mu_);
        r->receipt = nullptr;
        r->phase = "failed";
        r->end_reason = "cleanup-failed";
        r->end_error = Json{{"code", st.error().code}, {"message", st.error().message}};
        r->ended_mono = now_ms();
        r->busy = false;
        cv_.notify_all();
        return error_json(make_error(st.error().code, st.error().message + "; the receipt was withdrawn"));
      }
      // Cleanup is complete: the receipt becomes receipt.json now (atomically, then the
      // directory synced), and only then is it signed. Fail closed: a receipt that cannot be
      // written is never there.
      const std::string receipt_path = r->evidence_dir + "/" + std::string(kReceiptFileName);
      if (Status w = write_receipt_atomic(r->evidence_dir, r->receipt); !w) {
        ::unlink(receipt_path.c_str());
        log_end(*r, "failed");
        std::lock_guard<std::mutex> lock(mu_);
        r->receipt = nullptr;
        r->phase = "failed";
        r->end_reason = "evidence-write-failed";
        r->end_error = Json{{"code", w.error().code}, {"message", w.error().message}};
        r->ended_mono = now_ms();
        r->busy = false;
        cv_.notify_all();
        return error_json(make_error(w.error().code, w.error().message + "; no receipt was kept"));
      }
      sync_dir_fs(r->evidence_dir);
      // Sign at close: the run-log entry, then receipt.dsse.json. Fail closed: a receipt that
      // cannot be signed is withdrawn (seal_closed logs the failure).
      Json sealed = nullptr;
      if (options_.evidence) {
        const std::string& state = options_.evidence->state_dir();
        // The private record first: a signed receipt whose commitments cannot be disclosed
        // is not kept either.
        Result<Json> seal = make_error("fs-error", "not sealed");
        if (auto w = write_session_commitments(state, r->id, r->receipt_id, commitments); !w) {
          seal = w.error();
          (void)options_.evidence->record_end(r->id, r->attempt_id, r->job_sha256, "failed",
                                              clock_->wall_ms());
        } else {
          seal = options_.evidence->seal_closed(r->evidence_dir, r->receipt, clock_->wall_ms());
        }
        commitments.clear();
        if (!seal) {
          remove_session_commitments(state, r->id);
          ::unlink((r->evidence_dir + "/" + std::string(kReceiptFileName)).c_str());
          ::unlink((r->evidence_dir + "/" + std::string(kEnvelopeFileName)).c_str());
          std::lock_guard<std::mutex> lock(mu_);
          r->receipt = nullptr;
          r->phase = "failed";
          r->end_reason = "sign-failed";
          r->end_error = Json{{"code", seal.error().code}, {"message", seal.error().message}};
          r->ended_mono = now_ms();
          r->busy = false;
          cv_.notify_all();
          return error_json(make_error(seal.error().code, seal.error().message + "; the receipt was withdrawn"));
        }
        sealed = *seal;
      }
      std::lock_guard<std::mutex> lock(mu_);
      r->phase = "closed";
      r->end_reason = "closed";
      r->ended_mono = now_ms();
      r->busy = false;
      cv_.notify_all();
      Json s = snapshot(*r, now_ms());
      s["closed"] = true;
      s["cleanup_complete"] = true;
      s["receipt_id"] = r->receipt_id;
      s["receipt_path"] = receipt_path;
      if (!sealed.is_null()) {
        s["envelope_path"] = r->evidence_dir + "/" + std::string(kEnvelopeFileName);
        s["log"] = sealed;
      }
      return s;
    }
    case SessionOp::kAbort: {
      Status st = cleanup(*r);
      // An aborted session keeps no receipt, whatever phase it reached: receipt.json is
      // written only at close.
      log_end(*r, st ? "aborted" : "failed");
      std::lock_guard<std::mutex> lock(mu_);
      r->receipt = nullptr;
      r->phase = st ? "aborted" : "failed";
      r->end_reason = st ? "aborted" : "cleanup-failed";
      r->end_error = st ? Json(nullptr) : Json{{"code", st.error().code}, {"message", st.error().message}};
      r->ended_mono = now_ms();
      r->busy = false;
      cv_.notify_all();
      if (!st) return error_json(st.error());
      Json s = snapshot(*r, now_ms());
      s["aborted"] = true;
      s["cleanup_complete"] = true;
      return s;
    }
    default:
      break;
  }
  return refuse(make_error("session-command", "unsupported op"));
}

// ---------------------------------------------------------------------------------------------

std::size_t SessionManager::expire_due_locked(std::unique_lock<std::mutex>& lock) {
  std::int64_t now = now_ms();
  std::vector<std::shared_ptr<Record>> due;
  for (auto& [id, r] : records_) {
    if (r->live() && r->phase != "beginning" && !r->busy && now >= r->deadline_mono) {
      r->busy = true;
      due.push_back(r);
    }
  }
  // Drop ended records past retention, and the oldest beyond the count cap.
  std::vector<std::pair<std::int64_t, std::string>> ended;
  for (auto it = records_.begin(); it != records_.end();) {
    const auto& r = it->second;
    if (!r->live() && !r->busy && now - r->ended_mono >= options_.ended_retention_ms) {
      it = records_.erase(it);
      continue;
    }
    if (!r->live() && !r->busy) ended.emplace_back(r->ended_mono, it->first);
    ++it;
  }
  if (ended.size() > options_.max_ended_records) {
    std::sort(ended.begin(), ended.end());
    for (std::size_t i = 0; i + options_.max_ended_records < ended.size(); ++i) {
      records_.erase(ended[i].second);
    }
  }
  if (due.empty()) return 0;
  lock.unlock();
  for (auto& r : due) {
    Status st = cleanup(*r);
    // Only a closed session keeps its receipt: an expired one never reached close, so none
    // was written.
    log_end(*r, "expired");
    std::lock_guard<std::mutex> g(mu_);
    r->receipt = nullptr;
    r->phase = "expired";
    r->end_reason = "expired";
    if (!st) r->end_cleanup_error = Json{{"code", st.error().code}, {"message", st.error().message}};
    r->ended_mono = now_ms();
    r->busy = false;
  }
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
  std::int64_t next = INT64_MAX;
  for (const auto& [id, r] : records_) {
    if (r->busy) continue;
    if (r->live() && r->phase != "beginning") next = std::min(next, r->deadline_mono);
    if (!r->live()) next = std::min(next, r->ended_mono + options_.ended_retention_ms);
  }
  return next;
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
      std::int64_t next = INT64_MAX;
      for (const auto& [id, r] : records_) {
        if (r->busy) continue;
        if (r->live() && r->phase != "beginning") next = std::min(next, r->deadline_mono);
        if (!r->live()) next = std::min(next, r->ended_mono + options_.ended_retention_ms);
      }
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
    if (r->live()) {
      r->busy = true;
      live.push_back(r);
    }
  }
  lock.unlock();
  for (auto& r : live) {
    Status st = cleanup(*r);
    log_end(*r, "aborted");
    std::lock_guard<std::mutex> g(mu_);
    r->receipt = nullptr;
    r->phase = "aborted";
    r->end_reason = "engine-shutdown";
    if (!st) r->end_cleanup_error = Json{{"code", st.error().code}, {"message", st.error().message}};
    r->ended_mono = now_ms();
    r->busy = false;
  }
  cv_.notify_all();
}

bool SessionManager::wait_ended(const std::string& session_id, std::int64_t timeout_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  // Every ending sets the phase and clears busy under mu_, then notifies cv_.
  return cv_.wait_for(lock, std::chrono::milliseconds(std::max<std::int64_t>(0, timeout_ms)), [&] {
    auto it = records_.find(session_id);
    return it != records_.end() && !it->second->live() && !it->second->busy;
  });
}

std::size_t SessionManager::live_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::size_t n = 0;
  for (const auto& [id, r] : records_) n += r->live() ? 1 : 0;
  return n;
}

bool SessionManager::display_in_session(std::int64_t display_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [id, r] : records_) {
    if (r->live() && r->display_id == display_id) return true;
  }
  return false;
}

}  // namespace evident
