#include "evident/receipts/receipt.h"

#include "evident/core/clock.h"
#include "evident/core/fs.h"
#include "evident/receipts/commitment.h"
#include "evident/receipts/jcs.h"
#include "evident/receipts/verify.h"
#include "build_parts.h"

namespace evident {

Json project_action(const Json& action) {
  if (!action.is_object()) return Json::object();
  auto type_it = action.find("type");
  const std::string type =
      (type_it != action.end() && type_it->is_string()) ? type_it->get<std::string>() : "";
  // Typed text, key names and pasted text are secrets: not even their digest may appear.
  if (type == "type" || type == "key" || type == "paste") return Json{{"type", type}};
  if (type == "hold_key") {
    Json p{{"type", type}};
    if (auto ms = action.find("ms"); ms != action.end()) p["ms"] = *ms;
    return p;
  }
  Json p = action;
  // Defensive: these fields belong only to the secret-bearing actions above.
  p.erase("text");
  p.erase("key");
  return p;
}

namespace receipt_parts {

Result<std::string> checked_claims_jcs(const Json& claims, std::string_view code,
                                       std::string_view what) {
  if (!claims.is_object()) {
    return make_error(std::string(code), std::string(what) + " must be a JSON object");
  }
  auto bytes = canonicalize(claims);
  if (!bytes.ok()) return bytes.error();
  if (bytes->size() > kMaxClaimsCanonicalBytes) {
    return make_error(std::string(code), std::string(what) + " are " +
                                             std::to_string(bytes->size()) +
                                             " bytes canonical; the limit is 16384");
  }
  return bytes;
}

Result<Json> action_event(const ActionRecord& a, std::size_t i, std::int64_t index, bool v3) {
  Json projection = project_action(a.projection);
  auto t = projection.find("type");
  if (t == projection.end() || !t->is_string() || t->get<std::string>() != a.type) {
    return make_error("receipt-invalid",
                      "action " + std::to_string(i) + ": projection type differs from type");
  }
  auto projection_sha = domain_digest(kDomainActionProjection, projection);
  if (!projection_sha.ok()) return projection_sha.error();
  Json event{{"index", index},
             {"kind", "action"},
             {"action", a.type},
             {"projection_sha256", *projection_sha},
             {"status", a.status},
             {"input", a.input},
             {"frame_sha256", a.frame_sha256}};
  if (!a.settle.empty()) {
    if (!v3) return make_error("receipt-invalid", "action " + std::to_string(i) + ": settle needs receipt v3");
    event["settle"] = a.settle;
  }
  if (v3) {
    event["input_events"] = a.input_events;
    if (action_has_commitment(a.type)) {
      event["commitment"] = a.commitment;
    } else if (!a.commitment.empty()) {
      return make_error("receipt-invalid",
                        "action " + std::to_string(i) + ": a commitment on a kind without one");
    }
  }
  return event;
}

Json frame_event(std::int64_t index, std::string_view kind, const std::string& frame_sha256) {
  return Json{{"index", index}, {"kind", std::string(kind)}, {"frame_sha256", frame_sha256}};
}

Json observation_event(std::int64_t index, const ObservationRecord& o,
                       const std::string& pre_observation_sha256) {
  return Json{{"index", index},
              {"kind", "observation"},
              {"frame_sha256", o.sha256},
              {"pre_observation_sha256", pre_observation_sha256}};
}

Json binding_json(const ReceiptBinding& b, bool with_job) {
  Json out{{"display_id", b.display_id},
           {"display_name", b.display_name},
           {"generation", b.generation},
           {"app_id", b.app_id},
           {"app_pid", b.app_pid},
           {"app_argv_sha256", b.app_argv_sha256},
           {"attempt_id", b.attempt_id}};
  if (with_job) out["job_sha256"] = b.job_sha256;
  return out;
}

Json observation_json(const ObservationRecord& o) {
  return Json{{"sha256", o.sha256},
              {"byte_length", o.byte_length},
              {"width", o.width},
              {"height", o.height}};
}

Json artifact_json(const ArtifactRecord& a) {
  return Json{{"kind", a.kind},
              {"name", a.name},
              {"media_type", a.media_type},
              {"sha256", a.sha256},
              {"byte_length", a.byte_length},
              {"fps", a.fps},
              {"start_offset_ms", a.start_offset_ms}};
}

Json browser_binding_json(const BrowserBindingRecord& b) {
  return Json{{"workspace_id", b.workspace_id},
              {"browser_version", b.browser_version},
              {"target_id", b.target_id},
              {"profile_sha256", b.profile_sha256},
              {"viewport", {{"width", b.width}, {"height", b.height}}}};
}

Json engine_json(const std::string& version, const std::string* host_id) {
  Json out{{"name", "evident"}, {"version", version}};
  if (host_id != nullptr) out["host_id"] = *host_id;
  return out;
}

Status self_check(const Json& receipt) {
  // Never hand out a receipt that `evident verify` would reject.
  VerifyReport report = verify_receipt(receipt, VerifyOptions{});
  if (report.ok) return {};
  std::string message = "receipt input is malformed; failed checks:";
  for (const auto& c : report.checks) {
    if (!c.ok) message += " " + c.name + " (" + c.detail + ")";
  }
  return make_error("receipt-invalid", message);
}

}  // namespace receipt_parts

using namespace receipt_parts;

Result<Json> build_receipt(const ReceiptInput& in) {
  auto claims_bytes = checked_claims_jcs(in.claims, "session-claims", "claims");
  if (!claims_bytes.ok()) return claims_bytes.error();
  const std::string claims_sha = domain_digest_of_jcs(kDomainClaims, *claims_bytes);

  if (in.schema_version != 2 && in.schema_version != 3) {
    return make_error("receipt-invalid", "schema_version must be 2 or 3");
  }
  const bool v3 = in.schema_version == 3;
  Json transcript = Json::array();
  std::int64_t index = 0;
  const AppExitRecord& exit = in.app_exit;
  if (exit.present && (!v3 || exit.after_actions < 0 ||
                       exit.after_actions > static_cast<std::int64_t>(in.actions.size()) ||
                       (exit.after_freeze && exit.after_actions != static_cast<std::int64_t>(in.actions.size())))) {
    return make_error("receipt-invalid", "app_exit: not after the actions it follows (or not v3)");
  }
  auto exit_event = [&](std::int64_t at) {
    return Json{{"index", at},
                {"kind", "app_exit"},
                {"exit_status", exit.exit_status >= 0 ? Json(exit.exit_status) : Json(nullptr)},
                {"frame_sha256", exit.frame_sha256}};
  };
  transcript.push_back(frame_event(index++, "initial_frame", in.initial_frame_sha256));
  for (std::size_t i = 0; i < in.actions.size(); ++i) {
    if (exit.present && !exit.after_freeze && exit.after_actions == static_cast<std::int64_t>(i)) {
      return make_error("receipt-invalid", "app_exit: an action follows the app's exit");
    }
    auto event = action_event(in.actions[i], i, index++, v3);
    if (!event.ok()) return event.error();
    transcript.push_back(std::move(*event));
  }
  if (exit.present && !exit.after_freeze) transcript.push_back(exit_event(index++));
  transcript.push_back(frame_event(index++, "freeze", in.freeze_frame_sha256));
  std::size_t stage_events = transcript.size();
  if (exit.present && exit.after_freeze) transcript.push_back(exit_event(index++));
  transcript.push_back(observation_event(index++, in.observation, in.pre_observation_sha256));
  transcript.push_back(Json{{"index", index++},
                            {"kind", "claims"},
                            {"claims_sha256", claims_sha},
                            {"frame_sha256", in.observation.sha256}});

  Json stage = Json::array();
  for (std::size_t i = 0; i < stage_events; ++i) stage.push_back(transcript[i]);
  auto stage_sha = domain_digest(kDomainStageTranscript, stage);
  if (!stage_sha.ok()) return stage_sha.error();
  auto transcript_sha = domain_digest(kDomainTranscript, transcript);
  if (!transcript_sha.ok()) return transcript_sha.error();

  Json receipt{
      {"schema", v3 ? kReceiptSchemaV3 : kReceiptSchemaV2},
      {"session_id", in.session_id},
      {"engine", engine_json(in.engine_version, v3 ? &in.host_id : nullptr)},
      {"binding", binding_json(in.binding, true)},
      {"actor", in.actor},
      {"execution",
       {{"kind", "external-actions"},
        {"internal_model_calls", 0},
        {"claims_authority", "external-caller"}}},
      {"started_at", format_rfc3339_ms(in.started_wall_ms)},
      {"frozen_at", format_rfc3339_ms(in.frozen_wall_ms)},
      {"observed_at", format_rfc3339_ms(in.observed_wall_ms)},
      {"completed_at", format_rfc3339_ms(in.completed_wall_ms)},
      {"elapsed_ms", in.elapsed_ms},
      {"action_count", static_cast<std::int64_t>(in.actions.size())},
      {"input_event_count", in.input_event_count},
      {"post_observation_input_event_count", 0},
      {"transcript", std::move(transcript)},
      {"stage_transcript_sha256", *stage_sha},
      {"transcript_sha256", *transcript_sha},
      {"pre_observation_sha256", in.pre_observation_sha256},
      {"observation", observation_json(in.observation)},
      {"claims", in.claims},
      {"claims_sha256", claims_sha},
  };
  if (!in.artifacts.empty()) {
    if (!v3) return make_error("receipt-invalid", "artifacts need receipt v3");
    Json artifacts = Json::array();
    for (const ArtifactRecord& a : in.artifacts) artifacts.push_back(artifact_json(a));
    receipt["artifacts"] = std::move(artifacts);
  }
  if (in.browser) {
    if (!v3) return make_error("receipt-invalid", "browser needs receipt v3");
    receipt["browser"] = browser_binding_json(*in.browser);
  }
  auto receipt_sha = domain_digest(kDomainReceipt, receipt);
  if (!receipt_sha.ok()) return receipt_sha.error();
  receipt["receipt_id"] = "ecr-" + *receipt_sha;

  if (auto st = self_check(receipt); !st) return st.error();
  return receipt;
}

Result<std::string> receipt_file_bytes(const Json& receipt) {
  auto bytes = canonicalize(receipt);
  if (!bytes.ok()) return bytes.error();
  bytes->push_back('\n');
  return bytes;
}

Status write_receipt_atomic(const std::string& dir, const Json& receipt) {
  auto bytes = receipt_file_bytes(receipt);
  if (!bytes.ok()) return bytes.error();
  return write_file_atomic(dir + "/" + std::string(kReceiptFileName), *bytes, 0600);
}

Result<Json> build_actions_file(const ReceiptInput& input, const Json& receipt) {
  auto rid = receipt.find("receipt_id");
  auto transcript = receipt.find("transcript");
  if (rid == receipt.end() || !rid->is_string() || transcript == receipt.end() ||
      !transcript->is_array()) {
    return make_error("receipt-invalid", "actions file: not a built receipt");
  }
  Json entries = Json::array();
  std::size_t next = 0;
  for (const Json& event : *transcript) {
    if (!event.is_object() || event.value("kind", "") != "action") continue;
    if (next >= input.actions.size()) {
      return make_error("receipt-invalid", "actions file: more action events than actions");
    }
    const ActionRecord& a = input.actions[next++];
    Json projection = project_action(a.projection);
    auto sha = domain_digest(kDomainActionProjection, projection);
    if (!sha.ok()) return sha.error();
    if (event.value("projection_sha256", "") != *sha) {
      return make_error("receipt-invalid", "actions file: action " + std::to_string(next - 1) +
                                               " does not match its event");
    }
    entries.push_back(Json{{"event_index", event["index"]},
                           {"projection", std::move(projection)},
                           {"projection_sha256", *sha},
                           {"elapsed_ms", a.elapsed_ms >= 0 ? Json(a.elapsed_ms) : Json(nullptr)}});
  }
  if (next != input.actions.size()) {
    return make_error("receipt-invalid", "actions file: fewer action events than actions");
  }
  // A task receipt's file names its task (docs/evidence.md): "task_id" in place of "session_id".
  if (receipt.contains("task_id")) {
    return Json{{"schema", kActionsSchema},
                {"task_id", receipt.value("task_id", "")},
                {"receipt_id", *rid},
                {"actions", std::move(entries)}};
  }
  return Json{{"schema", kActionsSchema},
              {"session_id", receipt.value("session_id", "")},
              {"receipt_id", *rid},
              {"actions", std::move(entries)}};
}

Status write_actions_file(const std::string& dir, const ReceiptInput& input, const Json& receipt) {
  auto actions = build_actions_file(input, receipt);
  if (!actions.ok()) return actions.error();
  auto bytes = canonicalize(*actions);
  if (!bytes.ok()) return bytes.error();
  bytes->push_back('\n');
  return write_file_atomic(dir + "/" + std::string(kActionsFileName), *bytes, 0600);
}

Status write_evidence_files(const std::string& dir, const ReceiptInput& input,
                            const Json& receipt) {
  if (auto st = write_actions_file(dir, input, receipt); !st) return st;
  return write_receipt_atomic(dir, receipt);
}

}  // namespace evident
