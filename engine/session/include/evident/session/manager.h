// The session protocol state machine (contract §5, docs/sessions.md): phases, exact sequences,
// actor binding, limits, deadlines, expiry, frames and the receipt. Pure logic over a
// SessionBackend and a Clock, so unit tests drive it with fakes and expire sessions without
// waiting.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "evident/core/clock.h"
#include "evident/core/json.h"
#include "evident/session/backend.h"
#include "evident/session/request.h"

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
  // Whether `display_id` is held by a live session (so `cu actions` can be refused).
  bool display_in_session(std::int64_t display_id) const;

  struct Record;

 private:
  Json dispatch(const Json& actor, const SessionRequest& req);
  Json begin(const Json& actor, const SessionRequest& req);
  Json continue_op(const Json& actor, const SessionRequest& req);
  void log_end(const Record& r, const std::string& outcome);
  void end_record(const std::shared_ptr<Record>& r, const std::string& phase,
                  const std::string& reason, const Error* error);
  Status cleanup(Record& r);
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
  bool stop_ = false;
  std::thread reaper_;
};

}  // namespace evident
