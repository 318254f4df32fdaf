#include "evident/task/request.h"

#include <utility>

namespace evident::task {

const char* to_string(TaskOp op) {
  switch (op) {
    case TaskOp::kBegin: return "begin";
    case TaskOp::kTurn: return "turn";
    case TaskOp::kAbort: return "abort";
    case TaskOp::kStatus: return "status";
  }
  return "?";
}

namespace {

constexpr const char* kCommand = "task-command";

template <class T>
bool take(Result<T>&& r, T* out, Error* err) {
  if (!r) {
    *err = r.error();
    return false;
  }
  *out = std::move(r).value();
  return true;
}

// Unknown fields are refused without naming them (a field name is request content).
Status only_fields(const Json& obj, std::initializer_list<std::string_view> allowed, const char* where) {
  if (!obj.is_object()) return make_error(kCommand, std::string(where) + ": must be a JSON object");
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool known = false;
    for (std::string_view a : allowed) known = known || it.key() == a;
    if (!known) return make_error(kCommand, std::string(where) + ": has a field this op does not accept");
  }
  return ok_status();
}

// `settle`: false | true | {"quiet_ms","cap_ms"} (each 1..settle_max_cap_ms, quiet <= cap).
Result<TaskSettle> parse_settle(const Json& v) {
  const std::string max = std::to_string(protocol::kSettleMaxCapMs);
  TaskSettle s;
  if (v.is_boolean()) {
    s.enabled = v.get<bool>();
    return s;
  }
  const std::string shape = "task request: field \"settle\" must be false, true or {\"quiet_ms\",\"cap_ms\"}";
  if (!v.is_object()) return make_error(kCommand, shape);
  EVIDENT_TRY(only_fields(v, {"quiet_ms", "cap_ms"}, "task request settle"));
  JsonFields f(v, kCommand, "task request settle");
  if (f.has("quiet_ms")) {
    auto q = f.integer("quiet_ms", 1, protocol::kSettleMaxCapMs);
    if (!q) return make_error(kCommand, "task request: settle.quiet_ms must be an integer 1.." + max);
    s.quiet_ms = *q;
  }
  if (f.has("cap_ms")) {
    auto c = f.integer("cap_ms", 1, protocol::kSettleMaxCapMs);
    if (!c) return make_error(kCommand, "task request: settle.cap_ms must be an integer 1.." + max);
    s.cap_ms = *c;
  }
  if (s.quiet_ms > s.cap_ms) {
    return make_error(kCommand, "task request: settle.quiet_ms must not exceed settle.cap_ms");
  }
  return s;
}

bool is_receipt_id(const std::string& s) {
  return s.size() == 68 && s.starts_with("etr-") && is_lower_hex(std::string_view(s).substr(4), 64);
}

}  // namespace

Result<TaskRequest> parse_task_request(std::string_view raw) {
  if (raw.size() > kMaxTaskRequestBytes) {
    return make_error("task-input-size", "task request is " + std::to_string(raw.size()) +
                                             " bytes; the limit is " + std::to_string(kMaxTaskRequestBytes));
  }
  auto parsed = parse_json_strict(raw, kMaxTaskRequestBytes, "task-json");
  if (!parsed) return parsed.error();
  const Json& j = *parsed;
  if (!j.is_object()) return make_error(kCommand, "task request: must be a JSON object");
  JsonFields f(j, kCommand, "task request");
  auto op = f.string("op");
  if (!op) return op.error();
  TaskRequest req;
  Error err;
  if (*op == "begin") {
    req.op = TaskOp::kBegin;
    EVIDENT_TRY(only_fields(j, {"op", "mode", "display_id", "generation", "app_id", "attempt_id", "task_sha256",
                                "policy", "prior_receipt_id", "settle"}, "task request"));
    std::string mode;
    if (!take(f.string("mode"), &mode, &err)) return err;
    if (mode == "stage") req.mode = TaskMode::kStage;
    else if (mode == "attest") req.mode = TaskMode::kAttest;
    else return make_error(kCommand, "task request: field \"mode\" must be stage or attest");
    if (!take(f.integer("display_id", 0, kMaxSafeInteger), &req.display_id, &err)) return err;
    if (!take(f.string("generation", 0, 256), &req.generation, &err)) return err;
    if (!take(f.string("app_id", 0, 256), &req.app_id, &err)) return err;
    if (!take(f.string("attempt_id", 1, protocol::kAttemptIdMaxBytes), &req.attempt_id, &err)) return err;
    if (!take(f.sha256_hex("task_sha256"), &req.task_sha256, &err)) return err;
    auto policy = f.object("policy");
    if (!policy) return policy.error();
    JsonFields p(**policy, kCommand, "task request policy");
    EVIDENT_TRY(only_fields(**policy, {"adapter", "provider", "model"}, "task request policy"));
    if (!take(p.string("adapter", 1, kMaxPolicyFieldBytes), &req.policy.adapter, &err)) return err;
    if (!take(p.string("provider", 1, kMaxPolicyFieldBytes), &req.policy.provider, &err)) return err;
    if (!take(p.string("model", 1, kMaxPolicyFieldBytes), &req.policy.model, &err)) return err;
    if (!agents::find_adapter(req.policy.adapter)) {
      return make_error("task-adapter-unknown", "task request: policy.adapter is not a known adapter "
                                                "(docs/agents.md lists them)");
    }
    const bool has_prior = f.has("prior_receipt_id");
    if (req.mode == TaskMode::kStage && has_prior) {
      return make_error("task-lineage-invalid", "task request: a stage task has no prior receipt");
    }
    if (req.mode == TaskMode::kAttest) {
      if (!has_prior) return make_error("task-lineage-invalid", "task request: an attest task needs prior_receipt_id");
      auto prior = f.string("prior_receipt_id", 0, 256);
      if (!prior) return make_error("task-lineage-invalid", "task request: prior_receipt_id must be a string");
      if (!is_receipt_id(*prior)) {
        return make_error("task-lineage-invalid", "task request: prior_receipt_id must be etr- and 64 lowercase hex");
      }
      req.prior_receipt_id = std::move(*prior);
    }
    if (f.has("settle")) {
      auto settle = parse_settle(j.at("settle"));
      if (!settle) return settle.error();
      req.settle = *settle;
    }
    return req;
  }
  if (*op == "status") {
    req.op = TaskOp::kStatus;
    EVIDENT_TRY(only_fields(j, {"op", "task_id"}, "task request"));
    if (!take(f.string("task_id", 0, 256), &req.task_id, &err)) return err;
    return req;
  }
  if (*op == "turn") {
    req.op = TaskOp::kTurn;
    EVIDENT_TRY(only_fields(j, {"op", "task_id", "sequence", "response"}, "task request"));
  } else if (*op == "abort") {
    req.op = TaskOp::kAbort;
    EVIDENT_TRY(only_fields(j, {"op", "task_id", "sequence"}, "task request"));
  } else {
    return make_error(kCommand, "task request: unknown op (expected begin, turn, abort or status)");
  }
  if (!take(f.string("task_id", 0, 256), &req.task_id, &err)) return err;
  if (!take(f.integer("sequence", 0, kMaxSafeInteger), &req.sequence, &err)) return err;
  if (req.op == TaskOp::kTurn) {
    auto response = f.object("response");
    if (!response) return response.error();
    if (dump_json(**response).size() > agents::kMaxResponseBytes) {
      return make_error("task-input-size", "task request: response is over 1 MiB serialized");
    }
    req.response = **response;
  }
  return req;
}

Result<SessionRequest> parse_task_session_request(std::string_view raw) {
  auto t = parse_task_request(raw);
  if (!t) return t.error();
  SessionRequest r;
  switch (t->op) {
    case TaskOp::kBegin: r.op = SessionOp::kTaskBegin; break;
    case TaskOp::kTurn: r.op = SessionOp::kTaskTurn; break;
    case TaskOp::kAbort: r.op = SessionOp::kTaskAbort; break;
    case TaskOp::kStatus: r.op = SessionOp::kTaskStatus; break;
  }
  r.display_id = t->display_id;
  r.generation = std::move(t->generation);
  r.app_id = std::move(t->app_id);
  r.attempt_id = std::move(t->attempt_id);
  r.task_mode = to_string(t->mode);
  r.task_sha256 = std::move(t->task_sha256);
  r.policy_adapter = std::move(t->policy.adapter);
  r.policy_provider = std::move(t->policy.provider);
  r.policy_model = std::move(t->policy.model);
  r.prior_receipt_id = std::move(t->prior_receipt_id);
  r.task_settle = t->settle;
  r.session_id = std::move(t->task_id);
  r.sequence = t->sequence;
  r.response = std::move(t->response);
  return r;
}

}  // namespace evident::task
