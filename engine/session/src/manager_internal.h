// Internal to the session module: the record of one session or task, and the helpers the
// handler files (manager.cpp, task_ops.cpp) share.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "evident/core/error_json.h"  // error_response: every error reply
#include "evident/core/json.h"
#include "evident/core/status.h"
#include "evident/evidence/commitments.h"
#include "evident/receipts/receipt.h"
#include "evident/session/manager.h"
#include "evident/session/task_lane.h"

namespace evident {

// One receipt turn event, before the receipt is built (call ids stay in memory only).
struct TaskTurnEvent {
  std::int64_t turn = 0;  // 1-based
  std::int64_t call_count = 0;
  std::vector<std::string> call_ids;
  std::vector<std::string> native_actions;
  std::string model_image_sha256;  // the image the model was shown for this turn
  std::string frame_sha256;        // the display frame it was made from
  std::size_t first_action = 0;    // index into Record::actions of this turn's first action
  std::size_t action_count = 0;
};

struct SessionManager::Record {
  std::string id;
  Json actor;
  Phase phase = Phase::kBeginning;
  std::int64_t sequence = 0;
  std::int64_t display_id = 0;  // as requested at begin (for uniqueness while beginning)
  SessionTarget target;
  std::string attempt_id;
  std::string job_sha256;
  bool record_app_exit = false;  // begin's "app_exit":"record"
  bool record_video = false;     // begin's "record_video": true
  std::int64_t video_start_offset_ms = 0;  // the video's first frame, in ms after started_mono
  std::optional<SessionVideo> video;       // the finished file (finish stops the recorder)
  std::optional<SessionBrowser> browser;   // begin's "browser", as checked live at begin
  AppExitRecord app_exit;        // the recorded exit (present once it happened)
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
  bool busy = true;          // a request (or cleanup) is running on it
  bool expiring = false;     // busy because the deadline scan is ending it (end_session clears it)
  bool cleaned_up = false;   // cleanup() ran (it runs once)
  bool end_logged = false;   // the run-log entry of the ending is written (close's seal writes it)
  std::string end_reason;
  Json end_error = nullptr;
  Json end_cleanup_error = nullptr;
  std::int64_t ended_mono = 0;

  // ---- A task (op family task.*, docs/agents.md "The lane"); unset for a session.
  bool is_task = false;
  std::string task_mode;  // "stage" | "attest"
  std::string task_sha256;
  std::string policy_adapter, policy_provider, policy_model;
  TaskSettle task_settle;  // task.begin `settle`
  PriorReceipt prior;     // attest: the stage receipt it follows (prior.receipt_id empty in stage)
  std::unique_ptr<TaskRun> task;
  std::vector<TaskTurnEvent> turns;  // the receipt's turn events, in order
  TaskCounters counters;
  Json model_frame = nullptr;   // the image the model is shown next: {sha256,byte_length,width,height,path}
  Json tool_results = nullptr;  // the latest turn's provider-native answer
  Json retry_prompt = nullptr;  // after an invalid final answer, while turns remain
  Json result_error = nullptr;  // {code, message} of that invalid final answer
  Json log = nullptr;           // after close: {"index","tree_head"}
  std::string receipt_path, envelope_path;
};

namespace session_internal {

Json error_fields(const Error& e);
std::string session_host_id(const SessionOptions& o);
Json nullable_time(std::int64_t wall);
// Content-addressed <dir>/<sha256>.png (0600, written whole then renamed); the frame's info
// {sha256, byte_length, width, height, path}.
Result<Json> write_frame(const std::string& dir, const SessionFrame& f);
void sync_dir_fs(const std::string& dir);
Error not_found(bool task);
Json binding_json(const SessionManager::Record& r);
Json snapshot(const SessionManager::Record& r, std::int64_t now_mono);
// The phase's name in replies: a task closed by its valid final answer is "finished".
std::string phase_name(const SessionManager::Record& r);
Json task_snapshot(const SessionManager::Record& r, std::int64_t now_mono);

}  // namespace session_internal
}  // namespace evident
