// The session protocol state machine (docs/protocol.md §5, docs/sessions.md): phases, exact
// sequences, actor binding, limits, deadlines, expiry, frames and the receipt. Pure logic over a
// SessionBackend and a Clock, so unit tests drive it with fakes and expire sessions without
// waiting.
//
// Shape (docs/sessions.md "The state machine"): the phases and the transition table come from
// the protocol file (machine.h); dispatch() applies the checks every addressed op shares (lookup,
// phase gate, busy, sequence, phase) in one place; each op has one handler row (kHandlers:
// a read, admit and/or run function); every ending goes through end_session(); every deadline
// and retention time through due_at(). A new op is a protocol entry, a SessionOp, a parser case
// and a handler row; a new phase is a protocol entry and its phase_gate() case.
#pragma once

#include <condition_variable>
#include <functional>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "evident/core/clock.h"
#include "evident/core/json.h"
#include "evident/session/backend.h"
#include "evident/session/machine.h"
#include "evident/session/request.h"
#include "evident/session/task_lane.h"

namespace evident {
class SessionEvidence;
}

namespace evident {

struct SessionOptions {
  std::string evidence_root;  // <state_dir>/evidence; each session writes <root>/<session_id>/
  std::string scratch_root;   // private runtime scratch; <root>/<session_id>/ removed at cleanup
  const Clock* clock = nullptr;                 // default SystemClock
  // Defaults: the limits of protocol/evident.json.
  std::int64_t stage_timeout_ms = protocol::kSessionStageTimeoutMs;             // begin's admission → freeze
  std::int64_t post_freeze_timeout_ms = protocol::kSessionPostFreezeTimeoutMs;  // freeze → observe, finish, close
  std::size_t max_live_sessions = protocol::kLiveSessionsMax;
  std::int64_t ended_retention_ms = protocol::kSessionEndedRetentionMs;  // how long an ended record answers status
  std::size_t max_ended_records = protocol::kSessionEndedRecordsMax;     // older ended records are dropped first
  // Signs receipts at close and appends every ending to the run log (docs/receipts.md §8–§9).
  // The engine always sets it; null (unit tests of the protocol alone) signs and logs nothing.
  std::shared_ptr<SessionEvidence> evidence;
  // The agent task lane (engine/task, make_task_lane()): adapters, limits, running a turn.
  // Null: task.begin is refused with task-adapter-unknown (unit tests of sessions alone).
  std::shared_ptr<const TaskLane> task_lane;
  std::size_t max_prior_receipts = protocol::kTaskPriorReceiptsMax;  // stage receipts kept for lineage
};

// A stage task receipt this engine issued, remembered for attest lineage (docs/agents.md).
struct PriorReceipt {
  std::string receipt_id;
  std::string generation;
  std::string app_id;
  std::string attempt_id;
  std::int64_t completed_wall_ms = 0;
  std::string completed_at;  // the receipt's completed_at, as written
  std::string transcript_sha256;
  std::int64_t transcript_event_count = 0;
};

// Reads the test-only deadline overrides EVIDENT_SESSION_STAGE_TIMEOUT_MS and
// EVIDENT_SESSION_POST_FREEZE_TIMEOUT_MS (positive integers) into `options`.
void apply_session_timeout_env(SessionOptions* options);

class SessionManager {
 public:
  SessionManager(SessionBackend& backend, SessionOptions options);
  ~SessionManager();  // stops the reaper and aborts every live session (cleanup runs)
  SessionManager(const SessionManager&) = delete;
  SessionManager& operator=(const SessionManager&) = delete;

  // Handles one raw request from `actor` (the control surface's resolved actor JSON) and
  // returns {"ok":true,...snapshot} or {"ok":false,"error":{...}}. Thread-safe; never throws.
  // Error ids: every session-* id of docs/sessions.md, display-generation-mismatch,
  // app-not-live, capture-*, receipt-*, fs-error.
  Json handle(const Json& actor, std::string_view raw_request);
  // The same for a request another layer parsed (the task layer's parse_task_session_request:
  // task.* ops). Thread-safe; never throws. Task error ids: docs/agents.md "The lane".
  Json handle(const Json& actor, const SessionRequest& request);

  // Expires every live session whose deadline has passed (cleanup runs, the display is
  // released) and drops ended records past their retention. Returns how many expired.
  std::size_t expire_due();
  // Monotonic ms of the next deadline or retention drop; INT64_MAX if none.
  std::int64_t next_deadline_ms() const;

  // Starts a thread that calls expire_due() at each deadline (waits on a condition variable,
  // never polls). Only meaningful with a real clock.
  void start_reaper();
  // Aborts every live session (cleanup runs); used at shutdown. Waits for requests in flight.
  void abort_all();

  // Waits until session `session_id` has ended (expired, aborted, failed or closed) and its
  // cleanup ran — held input released, the display's session lock given back — or until
  // `timeout_ms` (steady time, independent of the Clock) passed. Returns whether it ended; an
  // unknown id is "not ended". Wakes on the manager's own condition variable, which every
  // ending (the reaper's expiry included) notifies, so callers (tests) wait on the event
  // instead of polling state. No error ids.
  bool wait_ended(const std::string& session_id, std::int64_t timeout_ms);

  std::size_t live_count() const;

  // Whether every op of the transition table has exactly one handler row, in op order, of the
  // kind its row needs (read-only ops a read function, the others a run function). Empty when
  // so; otherwise what is wrong (tests; the tables are fixed at compile time).
  static std::string handler_table_problems();

  struct Record;

 private:
  // One request on its way through dispatch() and its handler.
  struct Call {
    const Json& actor;
    const SessionRequest& req;
    const SessionOpRow& row;
    std::shared_ptr<Record> r;  // the addressed session (begin: the one it creates)
    std::vector<Action> batch;  // actions: the batch admit validated, for run
  };
  // Why the work of an op failed: the end reason and the error the caller gets.
  struct Failure {
    std::string reason;
    Error error;
  };
  // One row per op, in SessionOp order. `read`: read-only ops, under mu_, in every phase the
  // row allows (also while another request runs). `admit`: under mu_ after the shared checks,
  // before the session is marked busy; a refusal changes nothing. `run`: without mu_, with the
  // session busy (begin: before any session exists); it ends with advance(), refuse(), fail()
  // or end_session().
  struct OpHandler {
    SessionOp op;
    Json (SessionManager::*read)(Call&);
    std::optional<Error> (SessionManager::*admit)(Call&);
    Json (SessionManager::*run)(Call&);
  };
  static const OpHandler kHandlers[];

  Json dispatch(const Json& actor, const SessionRequest& req);
  // Runs a handler that owns its record (busy). An exception escaping it (a bug, or memory)
  // answers `internal` and never leaves the record owned: contain_internal() below.
  Json run_contained(Call& c, Json (SessionManager::*run)(Call&));
  // The record of a request whose handler threw: a begin not yet visible is undone (nothing was
  // begun); a live session or task ends `failed` with reason "internal" (cleanup, the display
  // released, one run-log entry, no receipt); an ended one is only released. Returns the error
  // the caller gets. Never throws past itself: whatever fails here, busy is cleared.
  Error contain_internal(const std::shared_ptr<Record>& r, bool task) noexcept;

  // The handlers (docs/sessions.md §2 says what each does).
  Json run_begin(Call& c);
  std::optional<Error> admit_actions(Call& c);
  Json run_actions(Call& c);
  Json run_freeze(Call& c);
  Json run_observe(Call& c);
  std::optional<Error> admit_finish(Call& c);
  Json run_finish(Call& c);
  Json run_close(Call& c);
  Json run_abort(Call& c);  // session abort and task.abort
  // close's work after cleanup's start: cleanup, receipt.json, the private commitments record,
  // the signature and run-log entry. nullopt when closed and sealed (`sealed` = {"index",
  // "tree_head"} or null without evidence); otherwise the error reply (the session has ended
  // in `failed`).
  std::optional<Json> close_and_seal(Record& r, Phase failed, Json* sealed);
  Json read_status(Call& c);
  // The task ops (task_ops.cpp; docs/agents.md "The lane").
  Json run_task_begin(Call& c);
  Json run_task_turn(Call& c);
  Json read_task_status(Call& c);
  // The internal freeze -> observe -> finish -> close of a task whose final answer is valid.
  Json finish_task(Call& c, const Json& result);
  std::optional<Error> check_lineage_locked(const SessionRequest& req, std::int64_t start_wall,
                                            PriorReceipt* out) const;
  void remember_prior_locked(const PriorReceipt& p);
  // begin and task.begin: the shared admission (uniqueness, live limit) and setup (lease,
  // directories, the initial frame). `setup` fills the new record under mu_ before it exists.
  Json begin_common(Call& c, const std::function<std::optional<Error>(Record&)>& setup);

  // How a run handler ends. advance(): the work succeeded; `apply` records its results, the
  // phase becomes row.next and a row that advances the sequence advances it (under mu_).
  // refuse(): nothing changed, the session stays as it was. fail(): the work failed; the
  // session ends in row.on_failure with `f`.
  Json advance(Call& c, const std::function<void(Record&)>& apply);
  Json refuse(Call& c, const Error& e);
  Json fail(Call& c, const Failure& f);
  // The one ending of every session (close, abort, failures, expiry, shutdown). Called without
  // mu_, with the record busy: cleanup (unless the handler already ran it), one run-log entry
  // (unless the close's seal wrote it), then under mu_ the final phase, reason and errors. Only
  // a closed session keeps its receipt: for any other ending the receipt is dropped and a
  // receipt.json / receipt.dsse.json a failed close wrote is removed. A cleanup failure here is
  // reported beside the reason.
  void end_session(Record& r, Phase final_phase, const std::string& reason, const Error* error = nullptr);
  // Releases held input, gives the display back, forgets the commitments, removes the scratch.
  // Runs once per session; later calls return ok.
  Status cleanup(Record& r);
  void log_end(const Record& r, Phase outcome);
  // Shared by the handlers: is the display alive and the app running; a fresh frame, written.
  std::optional<Failure> check_alive(Record& r);
  std::optional<Failure> capture_frame(Record& r, Json* info, std::string* sha256);
  // A session begun with "app_exit":"record" whose app is gone: records its app_exit event
  // once (a fresh frame, the exit status; docs/sessions.md "App exit"). Sets *exited when the
  // app is gone (recorded now or before). Without record mode, or while the app runs, nothing.
  // `after_actions`: the action events before it (the batch's included).
  std::optional<Failure> note_app_exit(Record& r, std::int64_t after_actions, bool after_freeze,
                                       bool* exited);

  // The one deadline computation: when `r` is due (a live session's deadline, an ended record's
  // retention end), or nullopt while a request runs on it or begin sets it up. Under mu_.
  std::optional<std::int64_t> due_at(const Record& r) const;
  std::int64_t next_due_locked() const;
  std::size_t expire_due_locked(std::unique_lock<std::mutex>& lock);
  std::int64_t now_ms() const { return clock_->monotonic_ms(); }
  // Wall time of a session event: the wall clock read once at begin plus monotonic time since,
  // so a wall-clock step (NTP, a manual change) mid-session cannot put frozen_at/observed_at/
  // completed_at before started_at (which the receipt check refuses). docs/sessions.md.
  std::int64_t session_wall(const Record& r) const;

  SessionBackend& backend_;
  SessionOptions options_;
  const Clock* clock_;

  mutable std::mutex mu_;
  std::condition_variable cv_;  // request finished / deadline changed / stop
  std::map<std::string, std::shared_ptr<Record>> records_;
  std::vector<PriorReceipt> priors_;  // oldest first, at most options_.max_prior_receipts
  bool stop_ = false;
  std::thread reaper_;
};

}  // namespace evident
