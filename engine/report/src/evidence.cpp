// Loading an evidence directory for the report: limits first, then the receipt verifier, the
// frames (each shown only when its bytes hash to its name) and actions.json (each projection
// shown only when it re-hashes to its event's projection_sha256).
#include <sys/stat.h>

#include <set>
#include <string_view>

#include "evident/core/clock.h"
#include "evident/core/fs.h"
#include "evident/core/sha256.h"
#include "evident/receipts/jcs.h"
#include "evident/receipts/receipt.h"
#include "evident/receipts/task_receipt.h"
#include "evident/report/report.h"

#include "evident/evidence/signed_verify.h"
#include "report_internal.h"

namespace evident {
namespace report_detail {

const Json* member(const Json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(std::string(key));
  return it == object.end() ? nullptr : &*it;
}

std::string string_member(const Json& object, std::string_view key) {
  const Json* v = member(object, key);
  return v && v->is_string() ? v->get<std::string>() : std::string();
}

std::optional<std::int64_t> int_member(const Json& object, std::string_view key) {
  const Json* v = member(object, key);
  if (!v) return std::nullopt;
  if (v->is_number_integer() && !v->is_number_unsigned()) return v->get<std::int64_t>();
  if (v->is_number_unsigned() && v->get<std::uint64_t>() <= static_cast<std::uint64_t>(kMaxSafeInteger)) {
    return static_cast<std::int64_t>(v->get<std::uint64_t>());
  }
  return std::nullopt;
}

}  // namespace report_detail

namespace {

using report_detail::int_member;
using report_detail::member;
using report_detail::string_member;

constexpr std::size_t kMaxReportEvents = 256;

// stat() result: -1 missing or not a regular file, else its size.
long long regular_size(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return -1;
  return static_cast<long long>(st.st_size);
}

bool png_size(const std::string& bytes, std::int64_t* w, std::int64_t* h) {
  static const unsigned char kSig[8] = {0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a, 0x0a};
  if (bytes.size() < 24 || bytes.compare(0, 8, reinterpret_cast<const char*>(kSig), 8) != 0 ||
      bytes.compare(12, 4, "IHDR") != 0) {
    return false;
  }
  auto be32 = [&](std::size_t at) {
    return (std::int64_t{static_cast<unsigned char>(bytes[at])} << 24) |
           (std::int64_t{static_cast<unsigned char>(bytes[at + 1])} << 16) |
           (std::int64_t{static_cast<unsigned char>(bytes[at + 2])} << 8) |
           std::int64_t{static_cast<unsigned char>(bytes[at + 3])};
  };
  *w = be32(16);
  *h = be32(20);
  return *w > 0 && *h > 0;
}

Error too_large(const std::string& what) {
  return make_error("report-too-large", "the evidence directory is over the report's limits: " + what +
                                            " (docs/evidence.md)");
}

// The actions.json check; fills each action event's projection state.
VerifyCheck check_actions_file(const std::string& text, const Json& receipt,
                               std::vector<ReportEvent>& events) {
  VerifyCheck c{"actions_file", false, ""};
  auto parsed = parse_json_strict(text, kMaxActionsFileBytes, "report-actions");
  if (!parsed.ok()) {
    c.detail = "actions.json is not strict JSON";
    return c;
  }
  const Json& doc = *parsed;
  auto exact_keys = [](const Json& o, std::initializer_list<const char*> keys) {
    if (!o.is_object() || o.size() != keys.size()) return false;
    for (const char* k : keys) {
      if (!o.contains(k)) return false;
    }
    return true;
  };
  // A task's file names its task_id in place of the session_id.
  const bool task = receipt.contains("task_id");
  const char* id_key = task ? "task_id" : "session_id";
  if (!exact_keys(doc, {"schema", id_key, "receipt_id", "actions"}) ||
      string_member(doc, "schema") != kActionsSchema) {
    c.detail = "actions.json is not an evident.actions/v1 document";
    return c;
  }
  const Json* entries = member(doc, "actions");
  if (!entries || !entries->is_array()) {
    c.detail = "actions.json has no actions array";
    return c;
  }
  std::vector<ReportEvent*> action_events;
  for (auto& e : events) {
    if (e.kind == "action") action_events.push_back(&e);
  }
  std::string problem;
  if (string_member(doc, "receipt_id") != string_member(receipt, "receipt_id")) {
    problem = "actions.json names another receipt_id";
  } else if (string_member(doc, id_key) != string_member(receipt, id_key)) {
    problem = std::string("actions.json names another ") + id_key;
  } else if (entries->size() != action_events.size()) {
    problem = "actions.json lists " + std::to_string(entries->size()) + " actions; the transcript has " +
              std::to_string(action_events.size());
  }
  const std::size_t n = std::min(entries->size(), action_events.size());
  for (std::size_t k = 0; k < n; ++k) {
    const Json& entry = (*entries)[k];
    ReportEvent& e = *action_events[k];
    auto event_index = int_member(entry, "event_index");
    const Json* projection = member(entry, "projection");
    if (!event_index || *event_index != e.index || !projection || !projection->is_object()) {
      if (problem.empty()) problem = "actions.json entry " + std::to_string(k) + " does not describe event " + std::to_string(e.index);
      continue;
    }
    const Json* receipt_events = member(receipt, "transcript");
    std::string bound;
    if (receipt_events && receipt_events->is_array() &&
        static_cast<std::size_t>(e.index) < receipt_events->size()) {
      bound = string_member((*receipt_events)[static_cast<std::size_t>(e.index)], "projection_sha256");
    }
    // The entry's shape: exactly these members; elapsed_ms a non-negative integer or null; the
    // repeated projection_sha256 equal to the event's.
    const Json* elapsed = member(entry, "elapsed_ms");
    auto ms = int_member(entry, "elapsed_ms");
    const bool elapsed_ok = elapsed && (elapsed->is_null() || (ms && *ms >= 0));
    if (!exact_keys(entry, {"event_index", "projection", "projection_sha256", "elapsed_ms"}) ||
        !elapsed_ok || string_member(entry, "projection_sha256") != bound) {
      if (problem.empty()) problem = "actions.json entry " + std::to_string(k) + " is malformed";
    }
    if (ms && *ms >= 0) e.elapsed_ms = ms;
    auto sha = domain_digest(kDomainActionProjection, *projection);
    if (sha.ok() && !bound.empty() && *sha == bound && string_member(*projection, "type") == e.action) {
      e.projection = *projection;
      e.projection_state = "ok";
    } else {
      e.projection_state = "mismatch";
    }
  }
  c.ok = problem.empty();
  c.detail = c.ok ? "actions.json belongs to this receipt and lists its " +
                        std::to_string(action_events.size()) + " actions"
                  : problem;
  return c;
}

}  // namespace

Result<Evidence> load_evidence(const ReportOptions& options) {
  Evidence ev;
  ev.evidence_dir = options.evidence_dir;
  ev.frames_dir = options.frames_dir.empty() ? options.evidence_dir : options.frames_dir;
  struct stat st {};
  if (ev.evidence_dir.empty() || ::stat(ev.evidence_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return make_error("report-unreadable", "the evidence directory does not exist or is not a directory");
  }
  if (::stat(ev.frames_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return make_error("report-unreadable", "the frames directory does not exist or is not a directory");
  }
  const std::string receipt_path = ev.evidence_dir + "/" + std::string(kReceiptFileName);
  const std::string actions_path = ev.evidence_dir + "/" + std::string(kActionsFileName);
  const std::string envelope_path = ev.evidence_dir + "/" + std::string(kEnvelopeFileName);
  if (regular_size(receipt_path) > static_cast<long long>(kMaxReceiptFileBytes)) {
    return too_large("receipt.json exceeds 8 MiB");
  }
  const long long actions_size = regular_size(actions_path);
  if (actions_size > static_cast<long long>(kMaxActionsFileBytes)) {
    return too_large("actions.json exceeds 1 MiB");
  }
  const long long envelope_size = regular_size(envelope_path);
  if (envelope_size > static_cast<long long>(kMaxReportEnvelopeBytes)) {
    return too_large("receipt.dsse.json exceeds 1 MiB");
  }
  auto receipt = load_receipt_file(receipt_path);
  if (!receipt.ok()) return receipt.error();
  ev.receipt = std::move(*receipt);
  ev.task = is_task_receipt(ev.receipt);

  // The events and the frames they name; every limit is checked before a frame is read.
  std::set<std::string> wanted;
  auto add_frame = [&](const std::string& sha) {
    if (is_lower_hex(sha, 64)) wanted.insert(sha);
  };
  const Json* transcript = member(ev.receipt, "transcript");
  if (transcript && transcript->is_array()) {
    if (transcript->size() > kMaxReportEvents) {
      return too_large("the transcript has more than " + std::to_string(kMaxReportEvents) + " events");
    }
    for (const Json& raw : *transcript) {
      ReportEvent e;
      if (auto i = int_member(raw, "index")) e.index = *i;
      e.kind = string_member(raw, "kind");
      e.action = string_member(raw, "action");
      e.status = string_member(raw, "status");
      if (const Json* in = member(raw, "input"); in && in->is_boolean()) e.input = in->get<bool>();
      e.frame_sha256 = string_member(raw, "frame_sha256");
      if (!is_lower_hex(e.frame_sha256, 64)) e.frame_sha256.clear();
      if (const Json* s = member(raw, "settle")) e.settle = *s;
      e.commitment = string_member(raw, "commitment");
      if (!is_lower_hex(e.commitment, 64)) e.commitment.clear();
      e.input_events = int_member(raw, "input_events");
      if (e.kind == "turn") {
        e.turn = int_member(raw, "turn");
        e.call_count = int_member(raw, "call_count");
        if (const Json* n = member(raw, "native_actions"); n && n->is_array()) {
          for (const Json& a : *n) {
            // Provider action names are short printable tokens (the verifier checks them).
            if (a.is_string() && a.get_ref<const std::string&>().size() <= 64) {
              e.native_actions.push_back(a.get<std::string>());
            }
            if (e.native_actions.size() >= 256) break;
          }
        }
        e.model_image_sha256 = string_member(raw, "model_image_sha256");
        if (!is_lower_hex(e.model_image_sha256, 64)) e.model_image_sha256.clear();
      }
      e.extra = Json::object();
      if (raw.is_object()) {
        for (auto it = raw.begin(); it != raw.end(); ++it) {
          static const std::set<std::string> kShown = {
              "index", "kind", "action", "status", "input", "frame_sha256", "settle",
              "projection_sha256", "pre_observation_sha256", "claims_sha256", "result_sha256",
              "commitment", "input_events"};
          static const std::set<std::string> kTurnShown = {"turn", "call_count", "native_actions",
                                                           "model_image_sha256", "call_ids_sha256"};
          if (kShown.count(it.key()) || (e.kind == "turn" && kTurnShown.count(it.key()))) continue;
          e.extra[it.key()] = it.value();
        }
      }
      if (e.kind == "action") e.projection_state = "absent";
      add_frame(e.frame_sha256);
      add_frame(e.model_image_sha256);
      ev.events.push_back(std::move(e));
    }
  }
  if (const Json* obs = member(ev.receipt, "observation")) add_frame(string_member(*obs, "sha256"));
  if (wanted.size() > kMaxReportFrames) {
    return too_large("more than " + std::to_string(kMaxReportFrames) + " distinct frames");
  }
  std::size_t total = 0;
  for (const auto& sha : wanted) {
    ReportFrame f;
    f.sha256 = sha;
    f.path = ev.frames_dir + "/" + sha + ".png";
    long long size = regular_size(f.path);
    if (size > static_cast<long long>(kMaxReportFrameBytes)) return too_large("a frame exceeds 32 MiB");
    if (size >= 0) {
      total += static_cast<std::size_t>(size);
      f.present = true;
    }
    ev.frames.emplace(sha, std::move(f));
  }
  if (total > kMaxReportTotalFrameBytes) return too_large("the frames exceed 96 MiB in all");

  VerifyOptions vo;
  vo.frames_dir = ev.frames_dir;
  ev.verify = verify_receipt(ev.receipt, vo);
  ev.checks = ev.verify.checks;
  if (const Json* arts = member(ev.receipt, "artifacts"); arts && arts->is_array() && arts->size() == 1) {
    const Json& a = (*arts)[0];
    auto offset = int_member(a, "start_offset_ms");
    auto bytes = int_member(a, "byte_length");
    if (string_member(a, "kind") == "video" && string_member(a, "name") == "video.webm" && offset && bytes) {
      ReportVideo v;
      v.path = ev.frames_dir + "/video.webm";
      v.start_offset_ms = *offset;
      v.byte_length = *bytes;
      v.sha256 = string_member(a, "sha256");
      for (const auto& c : ev.verify.checks) {
        if (c.name == "artifacts") v.verified = c.ok;
      }
      ev.video = v;
    }
  }

  for (auto& [sha, f] : ev.frames) {
    if (!f.present) continue;
    auto bytes = read_file(f.path, kMaxReportFrameBytes);
    if (!bytes.ok()) {
      f.present = false;
      continue;
    }
    if (sha256_hex(*bytes) == sha && png_size(*bytes, &f.width, &f.height)) {
      f.matches = true;
      f.bytes = std::move(*bytes);
    }
  }

  // Times: every offset is from started_at.
  std::int64_t started = 0;
  const bool have_start = parse_rfc3339_ms(string_member(ev.receipt, "started_at"), &started);
  auto at = [&](ReportEvent& e, std::string_view key) {
    e.when = string_member(ev.receipt, key);
    std::int64_t t = 0;
    if (have_start && parse_rfc3339_ms(e.when, &t)) e.offset_ms = t - started;
  };
  for (auto& e : ev.events) {
    if (e.kind == "initial_frame") at(e, "started_at");
    else if (e.kind == "freeze") at(e, "frozen_at");
    else if (e.kind == "observation") at(e, "observed_at");
    else if (e.kind == "claims" || e.kind == "result") at(e, "completed_at");
  }

  if (actions_size >= 0) {
    ev.actions_file_present = true;
    auto text = read_file(actions_path, kMaxActionsFileBytes);
    VerifyCheck c = text.ok() ? check_actions_file(*text, ev.receipt, ev.events)
                              : VerifyCheck{"actions_file", false, "actions.json cannot be read"};
    ev.checks.push_back(c);
    std::size_t total_actions = 0, matched = 0;
    std::string first_bad;
    for (const auto& e : ev.events) {
      if (e.kind != "action") continue;
      ++total_actions;
      if (e.projection_state == "ok") ++matched;
      else if (first_bad.empty()) first_bad = "event " + std::to_string(e.index) + ": " +
                                              (e.projection_state == "mismatch"
                                                   ? "its projection does not hash to projection_sha256"
                                                   : "no projection listed");
    }
    VerifyCheck p{"action_projections", matched == total_actions, ""};
    p.detail = p.ok ? "all " + std::to_string(total_actions) + " projections hash to their projection_sha256"
                    : std::to_string(matched) + " of " + std::to_string(total_actions) +
                          " projections hash to their projection_sha256; " + first_bad;
    ev.checks.push_back(p);
  }

  if (options.key_path.empty()) {
    ev.signature_state = envelope_size < 0 ? "absent" : "unchecked";
    ev.signature_detail =
        envelope_size < 0
            ? "not signed: there is no receipt.dsse.json. The checks above show that the receipt "
              "is internally consistent, not who made it."
            : "signed (receipt.dsse.json), but not checked: no --key was given, so the receipt is "
              "not authenticated. The checks above show that it is internally consistent, not who "
              "made it.";
  } else {
    // The same envelope checks as `evident verify --key` (docs/receipts.md), on the exact
    // bytes of receipt.json: signature, statement, subjects (receipt and frames), log proof.
    AuthOptions auth;
    auth.key_files = {options.key_path};
    auto keys = load_trusted_keys(auth);
    if (!keys.ok()) return keys.error();
    auto bytes = read_receipt_bytes(receipt_path);
    if (!bytes.ok()) return bytes.error();
    AuthResult a = verify_receipt_envelope(*bytes, ev.receipt, envelope_path, *keys);
    for (auto& c : a.checks) ev.checks.push_back(std::move(c));
    ev.key_id = a.key_id;
    ev.signature_state = a.authenticated ? "authenticated" : "failed";
    ev.signature_detail =
        a.authenticated
            ? "authenticated: receipt.dsse.json is signed by " + a.key_id.get<std::string>() +
                  " (the --key given), its subjects are receipt.json's exact bytes and the "
                  "receipt's frame digests, and the run-log inclusion proof checks."
            : "NOT authenticated with the --key given: see the failing envelope checks above.";
  }

  ev.ok = !ev.checks.empty();
  for (const auto& c : ev.checks) ev.ok = ev.ok && c.ok;
  return ev;
}

std::string signature_phrase(const Evidence& ev) {
  if (ev.signature_state == "authenticated" && ev.key_id.is_string()) {
    return "authenticated by " + ev.key_id.get<std::string>();
  }
  if (ev.signature_state == "unchecked") return "signed, not authenticated: no --key given";
  if (ev.signature_state == "failed") return "NOT authenticated";
  return "integrity only: not signed";
}

}  // namespace evident
