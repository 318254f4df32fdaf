// The task ops of the session state machine (docs/agents.md "The lane"): task.begin, task.turn,
// task.status (task.abort is the session's abort handler). They share dispatch (lookup, actor,
// busy, sequence, phase), begin's setup, end_session, close_and_seal and due_at with the session
// ops; what is specific to a task (the adapter, the limits, running a parsed turn) is the
// TaskRun the lane (engine/task) made at begin.
#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "evident/core/fs.h"
#include "evident/evidence/commitments.h"
#include "evident/receipts/commitment.h"
#include "evident/receipts/receipt.h"
#include "evident/receipts/task_receipt.h"
#include "manager_internal.h"

namespace evident {

using namespace session_internal;

namespace {

// The end reason of a turn that ended the task, from its error code.
std::string failure_reason(const Error& e) {
  if (e.code == "task-action-failed") return "action-failed";
  if (e.code == "session-display-lost") return "display-lost";
  if (e.code == "app-not-live") return "app-not-live";
  if (e.code == "fs-error") return "evidence-write-failed";
  if (e.code == "internal") return "internal";
  return "capture-failed";  // capture-*, image-scale-failed
}

}  // namespace

// ---- Lineage (docs/agents.md "Lineage"): an attest task follows a stage task receipt this
// engine issued, on the same display generation, app and attempt, and starts no earlier than
// that receipt's completed_at.
std::optional<Error> SessionManager::check_lineage_locked(const SessionRequest& req, std::int64_t start_wall,
                                                          PriorReceipt* out) const {
  auto it = std::find_if(priors_.begin(), priors_.end(),
                         [&](const PriorReceipt& p) { return p.receipt_id == req.prior_receipt_id; });
  if (it == priors_.end()) {
    return make_error("task-prior-receipt-unknown",
                      "prior_receipt_id names no stage task receipt this engine issued (it "
                      "remembers the last " + std::to_string(options_.max_prior_receipts) + ")");
  }
  if (it->generation != req.generation || it->app_id != req.app_id || it->attempt_id != req.attempt_id) {
    return make_error("task-lineage-invalid",
                      "the prior stage receipt is for another display generation, app or attempt");
  }
  if (start_wall < it->completed_wall_ms) {
    return make_error("task-chronology", "the attest task would start before its prior stage "
                                         "receipt's completed_at");
  }
  *out = *it;
  return std::nullopt;
}

void SessionManager::remember_prior_locked(const PriorReceipt& p) {
  priors_.push_back(p);
  if (priors_.size() > options_.max_prior_receipts) {
    priors_.erase(priors_.begin(), priors_.begin() + static_cast<std::ptrdiff_t>(priors_.size() -
                                                                                options_.max_prior_receipts));
  }
}

// ---- task.begin: begin's admission and setup, plus the task's fields, lineage and logic.
Json SessionManager::run_task_begin(Call& c) {
  const SessionRequest& req = c.req;
  if (!options_.task_lane) {
    return error_response(make_error("task-adapter-unknown", "this engine has no task lane"));
  }
  return begin_common(c, [&](Record& r) -> std::optional<Error> {
    r.is_task = true;
    r.task_mode = req.task_mode;
    r.task_sha256 = req.task_sha256;
    r.job_sha256.clear();
    r.policy_adapter = req.policy_adapter;
    r.policy_provider = req.policy_provider;
    r.policy_model = req.policy_model;
    r.task_settle = req.task_settle;
    r.deadline_mono = r.started_mono + options_.task_lane->deadline_ms(req.task_mode);
    if (req.task_mode == "attest") {
      if (auto e = check_lineage_locked(req, r.started_wall, &r.prior)) return e;
    }
    return std::nullopt;
  });
}

// ---- task.turn: the whole turn is validated (adapter parse, then the limits) before its first
// action runs; a refusal ends the task (fail closed), nothing of it ran.
Json SessionManager::run_task_turn(Call& c) {
  Record& r = *c.r;
  TaskRun& t = *r.task;
  if (Status st = t.admit(c.req.response, now_ms()); !st) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      r.counters = t.counters();  // the refused calls and safety checks say why
    }
    return fail(c, Failure{"turn-refused", st.error()});
  }
  TaskTurnEvent ev;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ev.turn = static_cast<std::int64_t>(r.turns.size()) + 1;
    ev.model_image_sha256 = r.model_frame["sha256"].get<std::string>();
    ev.frame_sha256 = r.frame["sha256"].get<std::string>();
    ev.first_action = r.actions.size();
  }
  const std::string dir = r.evidence_dir;
  TaskTurnOutcome out = t.run_admitted(*r.lease, r.action_count, [&dir](const SessionFrame& f) -> Status {
    auto w = write_frame(dir, f);
    if (!w) return w.error();
    return ok_status();
  });
  ev.call_count = out.call_count;
  ev.call_ids = std::move(out.call_ids);
  ev.native_actions = std::move(out.native_actions);

  if (out.kind == TaskTurnOutcome::Kind::kResult) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      r.turns.push_back(std::move(ev));
      r.counters = t.counters();
    }
    return finish_task(c, out.result);
  }
  if (out.kind == TaskTurnOutcome::Kind::kInvalidResult) {
    const TaskCounters counted = t.counters();
    if (counted.turns_left <= 0) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        r.counters = counted;
      }
      return fail(c, Failure{"result-invalid", out.result_error});
    }
    return advance(c, [&](Record& rec) {
      rec.turns.push_back(std::move(ev));
      rec.counters = counted;
      rec.results = nullptr;
      rec.tool_results = nullptr;
      rec.retry_prompt = out.retry_prompt;
      rec.result_error = error_fields(out.result_error);
    });
  }

  // A calls turn: its actions become action records (with commitments for typed text and keys,
  // which never leave memory but for the private record at close).
  std::vector<ActionRecord> records;
  std::vector<CommittedValue> commitments;
  std::int64_t input_events = 0;
  std::optional<Failure> failure;
  for (const TaskRanAction& a : out.actions) {
    ActionRecord done;
    done.type = a.type;
    done.projection = a.projection;
    done.status = a.status;
    done.input = a.input;
    done.frame_sha256 = a.frame_sha256;
    done.elapsed_ms = now_ms() - r.started_mono;
    done.input_events = a.input_events;
    input_events += a.input_events;
    if (action_has_commitment(a.type) && a.status != "failed") {
      const std::string& value =
          (a.action.type == ActionType::kType || a.action.type == ActionType::kPaste) ? a.action.text : a.action.key;
      auto committed = commit_value(r.action_count + static_cast<std::int64_t>(records.size()), a.type, value);
      if (!committed) {
        failure = Failure{"commitment-failed", committed.error()};
        break;
      }
      done.commitment = committed->commitment;
      commitments.push_back(std::move(*committed));
    }
    records.push_back(std::move(done));
  }
  if (!failure && out.failure) failure = Failure{failure_reason(*out.failure), *out.failure};
  // The frames the model is shown next: the display after the turn, and its model image.
  Json frame_info = nullptr, model_info = nullptr;
  if (!failure && out.last_frame) {
    auto info = write_frame(r.evidence_dir, *out.last_frame);  // already written by the sink
    if (!info) failure = Failure{"evidence-write-failed", info.error()};
    else frame_info = *info;
    if (!failure) {
      auto image = t.model_image(*out.last_frame);
      if (!image) {
        failure = Failure{"capture-failed", image.error()};
      } else if (image->sha256 == out.last_frame->sha256) {
        model_info = frame_info;
      } else {
        auto written = write_frame(r.evidence_dir,
                                   SessionFrame{image->png, image->sha256, image->width, image->height});
        if (!written) failure = Failure{"evidence-write-failed", written.error()};
        else model_info = *written;
      }
    }
  }
  if (failure) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      r.counters = t.counters();
      r.results = out.results;
      r.tool_results = out.tool_results;
      r.input_event_count += input_events;
    }
    return fail(c, *failure);
  }
  return advance(c, [&](Record& rec) {
    ev.action_count = records.size();
    rec.turns.push_back(std::move(ev));
    for (auto& ar : records) rec.actions.push_back(std::move(ar));
    for (auto& cv : commitments) rec.commitments.push_back(std::move(cv));
    rec.action_count += static_cast<std::int64_t>(records.size());
    rec.input_event_count += input_events;
    rec.counters = t.counters();
    rec.results = out.results;
    rec.tool_results = out.tool_results;
    rec.retry_prompt = nullptr;
    rec.result_error = nullptr;
    if (!frame_info.is_null()) {
      rec.frame = frame_info;
      rec.model_frame = model_info;
    }
  });
}

// ---- A valid final answer: the engine freezes, observes one fresh frame, finishes with the
// result as claims (the task receipt), and closes (cleanup, receipt.json, signature, run log).
Json SessionManager::finish_task(Call& c, const Json& result) {
  Record& r = *c.r;
  const Phase failed = c.row.on_failure.value_or(Phase::kFailed);
  auto end_failed = [&](const Failure& f) {
    end_session(r, failed, f.reason, &f.error);
    return error_response(make_error(f.error.code, f.error.message + "; the task has ended without a receipt"));
  };
  // freeze: input ends for good.
  if (Status rel = r.lease->release_all_checked(); !rel) {
    return end_failed(Failure{"cleanup-failed", make_error("session-cleanup-failed",
                                                           "releasing held input failed: " + rel.error().message)});
  }
  if (auto f = check_alive(r)) return end_failed(*f);
  Json freeze_info;
  std::string freeze_sha;
  if (auto f = capture_frame(r, &freeze_info, &freeze_sha)) return end_failed(*f);
  const std::int64_t frozen_wall = session_wall(r);
  // observe: one fresh frame after input ended.
  if (auto f = check_alive(r)) return end_failed(*f);
  Json obs_info;
  std::string obs_sha;
  if (auto f = capture_frame(r, &obs_info, &obs_sha)) return end_failed(*f);
  const std::int64_t observed_wall = std::max(session_wall(r), frozen_wall);

  TaskReceiptInput in;
  std::string pre_observation;
  {
    std::lock_guard<std::mutex> lock(mu_);
    pre_observation = r.frame["sha256"].get<std::string>();  // the last frame issued before observe
    r.freeze_frame = freeze_sha;
    r.frozen_wall = frozen_wall;
    r.observed_wall = observed_wall;
    r.pre_observation = pre_observation;
    r.observation = ObservationRecord{obs_sha, obs_info["byte_length"].get<std::int64_t>(),
                                      obs_info["width"].get<std::int64_t>(), obs_info["height"].get<std::int64_t>()};
    r.frame = obs_info;
    r.model_frame = nullptr;
    r.results = nullptr;
    r.tool_results = nullptr;
    r.retry_prompt = nullptr;
    r.result_error = nullptr;
    in.task_id = r.id;
    in.host_id = session_host_id(options_);
    in.mode = r.task_mode;
    in.binding = ReceiptBinding{r.target.display_id, r.target.display_name, r.target.generation,
                                r.target.app_id,     r.target.app_pid,      r.target.app_argv_sha256,
                                r.attempt_id,        ""};
    in.actor = r.actor;
    in.policy = TaskPolicy{r.policy_adapter, r.policy_provider, r.policy_model};
    in.task_sha256 = r.task_sha256;
    in.started_wall_ms = r.started_wall;
    in.frozen_wall_ms = frozen_wall;
    in.observed_wall_ms = observed_wall;
    in.completed_wall_ms = std::max(session_wall(r), observed_wall);
    in.elapsed_ms = now_ms() - r.started_mono;
    in.initial_frame_sha256 = r.initial_frame;
    for (const TaskTurnEvent& t : r.turns) {
      TaskTurnRecord tr;
      tr.turn = t.turn;
      tr.call_ids = t.call_ids;
      tr.native_actions = t.native_actions;
      tr.model_image_sha256 = t.model_image_sha256;
      tr.frame_sha256 = t.frame_sha256;
      tr.action_count = t.action_count;
      in.turns.push_back(std::move(tr));
    }
    in.actions = r.actions;
    in.freeze_frame_sha256 = freeze_sha;
    in.input_event_count = r.input_event_count;
    in.pre_observation_sha256 = pre_observation;
    in.observation = r.observation;
    in.result = result;
    in.refused_call_count = r.counters.refused_call_count;
    in.invalid_result_count = r.counters.invalid_result_count;
    in.safety_check_count = r.counters.safety_check_count;
    if (!r.prior.receipt_id.empty()) {
      in.lineage = TaskLineage{r.prior.receipt_id, r.prior.transcript_sha256, r.prior.transcript_event_count,
                               r.prior.completed_wall_ms};
    }
  }
  // finish: the task receipt (self-verified by the builder). A receipt that cannot be built
  // ends the task without one (the caller cannot retry a final answer).
  auto receipt = build_task_receipt(in);
  if (!receipt) return end_failed(Failure{"receipt-failed", receipt.error()});
  sync_dir_fs(r.evidence_dir);  // the frames, durably, before receipt.json
  {
    // actions.json: each action's projection, for the report's geometry (docs/evidence.md).
    ReceiptInput projections;
    projections.actions = in.actions;
    if (auto st = write_actions_file(r.evidence_dir, projections, *receipt); !st) {
      return end_failed(Failure{"evidence-write-failed", st.error()});
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    r.receipt = *receipt;
    r.receipt_id = (*receipt)["receipt_id"].get<std::string>();
    if (c.row.advances_sequence) r.sequence += 1;  // the final turn was accepted
  }
  // close: cleanup, receipt.json, the signature and the run-log entry.
  Json sealed = nullptr;
  if (auto refused = close_and_seal(r, failed, &sealed)) return *refused;
  end_session(r, Phase::kClosed, "closed");
  std::lock_guard<std::mutex> lock(mu_);
  if (r.task_mode == "stage") {
    const Json& rc = r.receipt;
    remember_prior_locked(PriorReceipt{r.receipt_id, r.target.generation, r.target.app_id, r.attempt_id,
                                       in.completed_wall_ms, rc["completed_at"].get<std::string>(),
                                       rc["transcript_sha256"].get<std::string>(),
                                       static_cast<std::int64_t>(rc["transcript"].size())});
  }
  Json s = task_snapshot(r, now_ms());
  s["cleanup_complete"] = true;
  return s;
}

// ---- The task snapshot (docs/agents.md "Snapshots").
namespace session_internal {

std::string phase_name(const SessionManager::Record& r) {
  // A task whose valid final answer closed it is reported "finished" (the task's word).
  if (r.is_task && r.phase == Phase::kClosed) return "finished";
  return std::string(to_string(r.phase));
}

Json task_snapshot(const SessionManager::Record& r, std::int64_t now_mono) {
  Json s = Json::object();
  s["ok"] = true;
  s["task_id"] = r.id;
  s["sequence"] = r.sequence;
  s["mode"] = r.task_mode;
  s["phase"] = phase_name(r);
  s["binding"] = Json{{"display_id", r.target.display_id},
                      {"display_name", r.target.display_name},
                      {"generation", r.target.generation},
                      {"app_id", r.target.app_id},
                      {"app_pid", r.target.app_pid},
                      {"app_argv_sha256", r.target.app_argv_sha256},
                      {"attempt_id", r.attempt_id},
                      {"task_sha256", r.task_sha256}};
  s["policy"] = Json{{"adapter", r.policy_adapter}, {"provider", r.policy_provider}, {"model", r.policy_model}};
  s["prior_receipt_id"] = r.prior.receipt_id.empty() ? Json(nullptr) : Json(r.prior.receipt_id);
  s["actor"] = r.actor;
  s["evidence_dir"] = r.evidence_dir;
  s["started_at"] = format_rfc3339_ms(r.started_wall);
  s["limits"] = r.task ? r.task->limits_json() : Json(nullptr);
  s["settle"] = r.task_settle.to_json();
  s["turn_count"] = r.counters.turn_count;
  s["turns_left"] = r.counters.turns_left;
  s["actions_left"] = r.counters.actions_left;
  s["call_count"] = r.counters.call_count;
  s["refused_call_count"] = r.counters.refused_call_count;
  s["invalid_result_count"] = r.counters.invalid_result_count;
  s["safety_check_count"] = r.counters.safety_check_count;
  s["action_count"] = r.action_count;
  s["input_event_count"] = r.input_event_count;
  // `frame`: the image the model is shown next (the display frame, or its scaled copy);
  // `display_frame`: the full-display frame it was made from.
  s["frame"] = r.model_frame.is_null() ? r.frame : r.model_frame;
  s["display_frame"] = r.frame;
  s["results"] = r.results;
  s["tool_results"] = r.tool_results;
  s["retry_prompt"] = r.retry_prompt;
  s["result_error"] = r.result_error;
  s["receipt"] = r.receipt;
  s["receipt_id"] = r.receipt.is_null() ? Json(nullptr) : Json(r.receipt_id);
  s["receipt_path"] = r.receipt.is_null() || r.receipt_path.empty() ? Json(nullptr) : Json(r.receipt_path);
  s["envelope_path"] = r.receipt.is_null() || r.envelope_path.empty() ? Json(nullptr) : Json(r.envelope_path);
  s["log"] = r.receipt.is_null() ? Json(nullptr) : r.log;
  if (is_live(r.phase)) {
    s["deadline_ms_left"] = nullptr;
    if (r.task) s["deadline_ms_left"] = r.task->deadline_ms_left(now_mono);
    s["ended"] = nullptr;
  } else {
    s["deadline_ms_left"] = nullptr;
    s["ended"] = Json{{"reason", r.end_reason}, {"error", r.end_error}, {"cleanup_error", r.end_cleanup_error}};
  }
  return s;
}

}  // namespace session_internal
}  // namespace evident
