#include "evident/session/request.h"

#include "evident/session/machine.h"

#include "evident/receipts/jcs.h"
#include "evident/receipts/receipt.h"
#include "evident/protocol/protocol.h"

namespace evident {

// Op names come from the transition table (protocol/evident.json, machine.h).
const char* to_string(SessionOp op) { return op_row(op).name.data(); }

namespace {

constexpr const char* kCommand = "session-command";

Result<SessionOp> op_from(const std::string& name) {
  // The task ops come only through the task layer's parser (engine/task).
  constexpr std::size_t n = static_cast<std::size_t>(SessionOp::kTaskBegin);
  for (std::size_t i = 0; i < n; ++i) {
    if (name == protocol::kSessionOps[i].name) return static_cast<SessionOp>(i);
  }
  // "expected begin, actions, ... or status", in the table's order.
  std::string expected;
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0) expected += i + 1 == n ? " or " : ", ";
    expected += protocol::kSessionOps[i].name;
  }
  return make_error(kCommand, "session request: unknown op (expected " + expected + ")");
}

// Writes the first error of `r` into `err` and reports whether it was ok.
template <class T>
bool take(Result<T>&& r, T* out, Error* err) {
  if (!r) {
    *err = r.error();
    return false;
  }
  *out = std::move(r).value();
  return true;
}

}  // namespace

Result<SessionRequest> parse_session_request(std::string_view raw) {
  // Size first, so an oversized request is named as such rather than as bad JSON.
  if (raw.size() > kMaxSessionRequestBytes) {
    return make_error("session-input-size", "session request is " + std::to_string(raw.size()) +
                                                " bytes; the limit is 98304 (96 KiB)");
  }
  auto parsed = parse_json_strict(raw, kMaxSessionRequestBytes, "session-json");
  if (!parsed) return parsed.error();
  const Json& j = *parsed;
  if (!j.is_object()) return make_error(kCommand, "session request: must be a JSON object");
  JsonFields f(j, kCommand, "session request");
  auto op_name = f.string("op");
  if (!op_name) return op_name.error();
  auto op = op_from(*op_name);
  if (!op) return op.error();

  SessionRequest req;
  req.op = *op;
  Error err;
  switch (req.op) {
    case SessionOp::kBegin: {
      EVIDENT_TRY(f.only({"op", "display_id", "generation", "app_id", "attempt_id", "job_sha256",
                          "app_exit", "record_video", "browser"}));
      if (!take(f.integer("display_id", 0, kMaxSafeInteger), &req.display_id, &err)) return err;
      // Generation and app id contents are judged against live state (a malformed
      // generation is a mismatch, docs/protocol.md §3), so only their type is checked here.
      if (!take(f.string("generation", 0, 256), &req.generation, &err)) return err;
      if (!take(f.string("app_id", 0, 256), &req.app_id, &err)) return err;
      if (!take(f.string("attempt_id", 1, protocol::kAttemptIdMaxBytes), &req.attempt_id, &err)) return err;
      if (!take(f.sha256_hex("job_sha256"), &req.job_sha256, &err)) return err;
      if (f.has("app_exit")) {
        std::string mode;
        if (!take(f.string("app_exit"), &mode, &err)) return err;
        if (mode != "end" && mode != "record") {
          return make_error(kCommand, "session request: \"app_exit\" must be \"end\" or \"record\"");
        }
        req.record_app_exit = mode == "record";
      }
      if (f.has("record_video")) {
        if (!take(f.boolean("record_video"), &req.record_video, &err)) return err;
      }
      if (f.has("browser")) {
        // Like app_id: its contents are judged against live state (browser-not-found).
        if (!take(f.string("browser", 1, 256), &req.browser_id, &err)) return err;
      }
      return req;
    }
    case SessionOp::kStatus:
      EVIDENT_TRY(f.only({"op", "session_id"}));
      if (!take(f.string("session_id", 0, protocol::kSessionIdMaxBytes), &req.session_id, &err)) return err;
      return req;
    case SessionOp::kActions:
      EVIDENT_TRY(f.only({"op", "session_id", "sequence", "actions", "settle"}));
      break;
    case SessionOp::kFreeze:
    case SessionOp::kClose:
    case SessionOp::kAbort:
      EVIDENT_TRY(f.only({"op", "session_id", "sequence"}));
      break;
    case SessionOp::kObserve:
      EVIDENT_TRY(f.only({"op", "session_id", "sequence", "pre_observation_sha256"}));
      break;
    case SessionOp::kFinish:
      EVIDENT_TRY(f.only({"op", "session_id", "sequence", "observation_sha256", "claims"}));
      break;
    case SessionOp::kTaskBegin:
    case SessionOp::kTaskTurn:
    case SessionOp::kTaskAbort:
    case SessionOp::kTaskStatus:
      return make_error(kCommand, "session request: unknown op");  // op_from never returns them
  }
  if (!take(f.string("session_id", 0, protocol::kSessionIdMaxBytes), &req.session_id, &err)) return err;
  if (!take(f.integer("sequence", 0, kMaxSafeInteger), &req.sequence, &err)) return err;
  if (req.op == SessionOp::kActions) {
    const Json* a = nullptr;
    if (!take(f.array("actions"), &a, &err)) return err;
    if (a->empty() || a->size() > kMaxSessionBatchActions) {
      return make_error("session-actions", "session request: \"actions\" must hold 1..16 actions (got " +
                                               std::to_string(a->size()) + ")");
    }
    req.actions = *a;
    if (f.has("settle")) {  // docs/protocol.md §4: false, true (the default cap) or a cap in ms
      const Json& s = j.at("settle");
      if (s.is_boolean()) {
        req.settle_cap_ms = s.get<bool>() ? protocol::kSettleDefaultCapMs : 0;
      } else if (!take(f.integer("settle", 1, protocol::kSettleMaxCapMs), &req.settle_cap_ms, &err)) {
        return make_error(kCommand, "session request: \"settle\" must be true, false or an integer 1.." +
                                        std::to_string(protocol::kSettleMaxCapMs));
      }
    }
  } else if (req.op == SessionOp::kObserve) {
    if (!take(f.sha256_hex("pre_observation_sha256"), &req.pre_observation_sha256, &err)) return err;
  } else if (req.op == SessionOp::kFinish) {
    if (!take(f.sha256_hex("observation_sha256"), &req.observation_sha256, &err)) return err;
    if (!f.has("claims")) return make_error(kCommand, "session request: missing field \"claims\"");
    const Json& claims = j.at("claims");
    if (!claims.is_object()) {
      return make_error("session-claims", "session request: \"claims\" must be a JSON object");
    }
    auto canon = canonicalize(claims);
    if (!canon) return make_error("session-claims", "session request: \"claims\" " + canon.error().message);
    if (canon->size() > kMaxClaimsCanonicalBytes) {
      return make_error("session-claims", "session request: \"claims\" is " +
                                              std::to_string(canon->size()) +
                                              " bytes in canonical form; the limit is 16384");
    }
    req.claims = claims;
  }
  return req;
}

}  // namespace evident
