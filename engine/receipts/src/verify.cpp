#include "evident/receipts/verify.h"
#include "evident/core/error_json.h"

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <set>
#include <string_view>

#include "evident/core/clock.h"
#include "evident/core/fs.h"
#include "evident/core/sha256.h"
#include "evident/receipts/commitment.h"
#include "evident/receipts/jcs.h"
#include "evident/receipts/receipt.h"
#include "evident/receipts/task_receipt.h"
#include "verify_parts.h"

namespace evident {
namespace receipt_parts {

constexpr std::size_t kMaxSessionActions = 64;

bool is_hex64(const Json& v) {
  return v.is_string() && is_lower_hex(v.get_ref<const std::string&>(), 64);
}

bool is_prefixed_id(const Json& v, std::string_view prefix, std::size_t hex_len) {
  if (!v.is_string()) return false;
  const auto& s = v.get_ref<const std::string&>();
  return s.size() == prefix.size() + hex_len && s.compare(0, prefix.size(), prefix) == 0 &&
         is_lower_hex(std::string_view(s).substr(prefix.size()), hex_len);
}

// String comparison without building a temporary Json (the verifier's hot path).
bool str_eq(const Json& v, std::string_view s) {
  return v.is_string() && v.get_ref<const std::string&>() == s;
}

bool is_int_at_least(const Json& v, std::int64_t min) {
  // Booleans are not integers in nlohmann::json, so no special case is needed.
  if (v.is_number_unsigned()) {
    auto u = v.get<std::uint64_t>();
    return u <= static_cast<std::uint64_t>(kMaxSafeInteger) &&
           static_cast<std::int64_t>(u) >= min;
  }
  if (v.is_number_integer()) {
    auto i = v.get<std::int64_t>();
    return i >= min && i <= kMaxSafeInteger;
  }
  return false;
}

bool is_string_len(const Json& v, std::size_t min, std::size_t max) {
  if (!v.is_string()) return false;
  auto n = v.get_ref<const std::string&>().size();
  return n >= min && n <= max;
}

// Exactly these keys, no others. The object's keys are iterated in order and compared with the
// sorted expected keys, without building strings (this runs for every transcript event).
bool has_exact_keys(const Json& v, std::initializer_list<std::string_view> keys) {
  if (!v.is_object() || v.size() != keys.size()) return false;
  std::array<std::string_view, 64> sorted{};
  if (keys.size() > sorted.size()) return false;
  std::copy(keys.begin(), keys.end(), sorted.begin());
  std::sort(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(keys.size()));
  std::size_t i = 0;
  for (auto it = v.begin(); it != v.end(); ++it, ++i) {
    if (it.key() != sorted[i]) return false;
  }
  return true;
}

std::string short_hex(const std::string& s) { return s.substr(0, 12) + "…"; }

namespace {

bool kind_sends_input(std::string_view kind) {
  for (const auto& k : protocol::kActionKinds) {
    if (k.name == kind) return k.input;
  }
  return false;
}

// H("evident/action-projection/v2", {"type": kind}) for the kinds whose projection is constant
// (protocol::kConstantProjectionKinds); null for the others.
const std::string* constant_projection_sha(std::string_view kind) {
  static const std::vector<std::pair<std::string, std::string>> kTable = [] {
    std::vector<std::pair<std::string, std::string>> out;
    for (std::string_view k : protocol::kConstantProjectionKinds) {
      out.emplace_back(std::string(k),
                       *domain_digest(kDomainActionProjection, Json{{"type", std::string(k)}}));
    }
    return out;
  }();
  for (const auto& [k, sha] : kTable) {
    if (k == kind) return &sha;
  }
  return nullptr;
}

// The kinds protocol/evident.json allows in sessions; tasks add zoom (docs/receipts.md).
const std::set<std::string, std::less<>>& action_types(ActionSet set) {
  static const std::set<std::string, std::less<>> kSession = [] {
    std::set<std::string, std::less<>> out;
    for (const auto& k : protocol::kActionKinds) {
      if (k.session) out.emplace(k.name);
    }
    return out;
  }();
  static const std::set<std::string, std::less<>> kTask = [] {
    std::set<std::string, std::less<>> out = kSession;
    out.emplace("zoom");
    return out;
  }();
  return set == ActionSet::kTask ? kTask : kSession;
}

struct PngInfo {
  bool ok = false;
  std::int64_t width = 0;
  std::int64_t height = 0;
};

// Reads width/height from the PNG signature and the IHDR chunk that must follow it.
PngInfo png_ihdr(const std::string& bytes) {
  static constexpr unsigned char kSig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  PngInfo info;
  if (bytes.size() < 33) return info;
  auto u = [&](std::size_t i) { return static_cast<unsigned char>(bytes[i]); };
  for (int i = 0; i < 8; ++i) {
    if (u(i) != kSig[i]) return info;
  }
  auto be32 = [&](std::size_t i) {
    return (static_cast<std::uint32_t>(u(i)) << 24) | (static_cast<std::uint32_t>(u(i + 1)) << 16) |
           (static_cast<std::uint32_t>(u(i + 2)) << 8) | static_cast<std::uint32_t>(u(i + 3));
  };
  if (be32(8) != 13 || bytes.compare(12, 4, "IHDR") != 0) return info;
  info.width = be32(16);
  info.height = be32(20);
  info.ok = true;
  return info;
}

}  // namespace

bool regular_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string engine_problem(const Json& eng, bool v3) {
  if (v3) {
    if (!has_exact_keys(eng, {"name", "version", "host_id"}) || eng["name"] != "evident" ||
        !is_string_len(eng["version"], 1, 64) || !is_prefixed_id(eng["host_id"], "hst-", 32)) {
      return "engine is not {\"name\":\"evident\",\"version\":<1..64 bytes>,\"host_id\":hst-<32 hex>}";
    }
  } else if (!has_exact_keys(eng, {"name", "version"}) || eng["name"] != "evident" ||
             !is_string_len(eng["version"], 1, 64)) {
    return "engine is not {\"name\":\"evident\",\"version\":<1..64 bytes>}";
  }
  return "";
}

std::string binding_problem(const Json& b, bool with_job) {
  if (with_job) {
    if (!has_exact_keys(b, {"display_id", "display_name", "generation", "app_id", "app_pid",
                            "app_argv_sha256", "attempt_id", "job_sha256"})) {
      return "binding does not have exactly its eight keys";
    }
  } else if (!has_exact_keys(b, {"display_id", "display_name", "generation", "app_id", "app_pid",
                                 "app_argv_sha256", "attempt_id"})) {
    return "binding does not have exactly its seven keys";
  }
  if (!is_int_at_least(b["display_id"], 0)) return "binding.display_id is not an integer >= 0";
  if (!is_string_len(b["display_name"], 1, 64)) return "binding.display_name is not 1..64 bytes";
  if (!is_prefixed_id(b["generation"], "gen-", 32)) return "binding.generation is not gen-<32 hex>";
  if (!is_prefixed_id(b["app_id"], "app-", 32)) return "binding.app_id is not app-<32 hex>";
  if (!is_int_at_least(b["app_pid"], 1)) return "binding.app_pid is not an integer >= 1";
  if (!is_hex64(b["app_argv_sha256"])) return "binding.app_argv_sha256 is not 64 lowercase hex";
  if (!is_string_len(b["attempt_id"], 1, 256)) return "binding.attempt_id is not 1..256 bytes";
  if (with_job && !is_hex64(b["job_sha256"])) return "binding.job_sha256 is not 64 lowercase hex";
  return "";
}

std::string actor_problem(const Json& actor) {
  bool actor_ok = false;
  if (actor.is_object() && actor.contains("kind")) {
    if (actor["kind"] == "local_user") {
      actor_ok = has_exact_keys(actor, {"kind", "uid"}) && is_int_at_least(actor["uid"], 0);
    } else if (actor["kind"] == "in_process") {
      actor_ok = has_exact_keys(actor, {"kind", "uid", "pid"}) && is_int_at_least(actor["uid"], 0) &&
                 is_int_at_least(actor["pid"], 1);
    }
  }
  return actor_ok ? "" : "actor is not a local_user or in_process actor";
}

std::string observation_problem(const Json& o) {
  if (!has_exact_keys(o, {"sha256", "byte_length", "width", "height"}) || !is_hex64(o["sha256"]) ||
      !is_int_at_least(o["byte_length"], 1) || !is_int_at_least(o["width"], 1) ||
      !is_int_at_least(o["height"], 1)) {
    return "observation is not {sha256, byte_length>=1, width>=1, height>=1}";
  }
  return "";
}

std::string action_event_problem(const Json& e, const std::string& where_s, bool v3,
                                 ActionSet set) {
  const std::string& where = where_s;
  // Found before it is read: const operator[] on a missing key is undefined behaviour in
  // nlohmann::json (it dereferences the map's end); the keys are checked only below.
  static const Json kMissing;
  const auto a_it = e.is_object() ? e.find("action") : e.end();
  const Json& a = e.is_object() && a_it != e.end() ? *a_it : kMissing;
  if (!a.is_string() || !action_types(set).contains(a.get_ref<const std::string&>())) {
    return where + (set == ActionSet::kTask ? ".action is not a task action type"
                                            : ".action is not a session action type");
  }
  // v3 session action events may carry the outcome of the settle wait before their frame
  // (docs/receipts.md); it is checked here and the rest of the event as without it.
  if (v3 && set == ActionSet::kSession && e.is_object() && e.contains("settle")) {
    const Json& st = e["settle"];
    bool known = false;
    if (st.is_string()) {
      for (std::string_view o : protocol::kSettleOutcomes) known = known || st.get_ref<const std::string&>() == o;
    }
    if (!known) return where + ".settle is not a settle outcome";
    Json rest = e;
    rest.erase("settle");
    return action_event_problem(rest, where_s, v3, set);
  }
  if (!v3) {
    if (!has_exact_keys(e, {"index", "kind", "action", "projection_sha256", "status", "input",
                            "frame_sha256"})) {
      return where + " has wrong keys";
    }
  } else if (action_has_commitment(a.get_ref<const std::string&>())) {
    if (!has_exact_keys(e, {"index", "kind", "action", "projection_sha256", "status", "input",
                            "input_events", "commitment", "frame_sha256"})) {
      return where + " has wrong keys";
    }
    if (!is_hex64(e["commitment"])) return where + ".commitment is not 64 lowercase hex";
  } else if (!has_exact_keys(e, {"index", "kind", "action", "projection_sha256", "status",
                                 "input", "input_events", "frame_sha256"})) {
    return where + " has wrong keys";
  }
  if (v3 && !is_int_at_least(e["input_events"], 0)) {
    return where + ".input_events is not an integer >= 0";
  }
  if (!is_hex64(e["projection_sha256"])) return where + ".projection_sha256 is not 64 lowercase hex";
  const Json& st = e["status"];
  if (!st.is_string() || (st != "ok" && st != "injected")) {
    return where + ".status is not \"ok\" or \"injected\"";
  }
  if (!e["input"].is_boolean()) return where + ".input is not a boolean";
  if (!is_hex64(e["frame_sha256"])) return where + ".frame_sha256 is not 64 lowercase hex";
  return "";
}

std::string frame_event_problem(const Json& e, const std::string& where,
                                std::initializer_list<std::string_view> hex_keys) {
  std::array<std::string_view, 8> keys{};
  std::size_t n = 0;
  keys[n++] = "index";
  keys[n++] = "kind";
  for (auto k : hex_keys) keys[n++] = k;
  // has_exact_keys takes an initializer_list; compare sizes and membership instead.
  if (!e.is_object() || e.size() != n) return where + " has wrong keys";
  for (std::size_t i = 0; i < n; ++i) {
    if (!e.contains(std::string(keys[i]))) return where + " has wrong keys";
  }
  for (auto k : hex_keys) {
    if (!is_hex64(e[std::string(k)])) {
      return where + "." + std::string(k) + " is not 64 lowercase hex";
    }
  }
  return "";
}

std::string counters_v3_problem(const Json& t, const std::vector<std::string_view>& kinds,
                                std::int64_t action_count, std::int64_t input_event_count) {
  std::int64_t actions = 0;
  // Each input_events ≤ 2^53-1, at most 80 events: no overflow in int64.
  std::int64_t sum = 0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (kinds[i] != "action") continue;
    ++actions;
    sum += t[i]["input_events"].get<std::int64_t>();
  }
  if (action_count != actions) {
    return "action_count " + std::to_string(action_count) + " but " + std::to_string(actions) +
           " action events";
  }
  if (input_event_count != sum) {
    return "input_event_count " + std::to_string(input_event_count) +
           " is not the sum of the events' input_events (" + std::to_string(sum) + ")";
  }
  return "";
}

std::string input_flags_problem(const Json& t, const std::vector<std::string_view>& kinds) {
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (kinds[i] != "action") continue;
    const Json& e = t[i];
    const std::int64_t n = e["input_events"].get<std::int64_t>();
    if (e["input"].get<bool>() != (n > 0)) {
      return "transcript[" + std::to_string(i) + "].input disagrees with its input_events";
    }
    if (n > 0 && !kind_sends_input(e["action"].get_ref<const std::string&>())) {
      return "transcript[" + std::to_string(i) + "] is of a kind that sends no input";
    }
  }
  return "";
}

std::string projections_problem(const Json& t, const std::vector<std::string_view>& kinds) {
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (kinds[i] != "action") continue;
    const std::string* want = constant_projection_sha(t[i]["action"].get_ref<const std::string&>());
    if (want != nullptr && !str_eq(t[i]["projection_sha256"], *want)) {
      return "transcript[" + std::to_string(i) +
             "].projection_sha256 is not the constant projection of its kind";
    }
  }
  return "";
}

std::string timestamps_problem(const Json& r, std::initializer_list<const char*> keys) {
  std::int64_t prev = -1;
  for (const char* k : keys) {
    std::int64_t ms = 0;
    const auto& s = r[k].get_ref<const std::string&>();
    if (!parse_rfc3339_ms(s, &ms) || ms < 0 || ms > 253402300799999) {
      return std::string(k) + " is not YYYY-MM-DDTHH:MM:SS.mmmZ (1970..9999)";
    }
    if (ms < prev) return std::string(k) + " is earlier than the previous timestamp";
    prev = ms;
  }
  return "";
}

std::string frames_problem(const std::string& dir, const std::set<std::string>& wanted,
                           const Json& observation, std::size_t* count) {
  *count = wanted.size();
  const std::string& obs = observation["sha256"].get_ref<const std::string&>();
  for (const auto& h : wanted) {
    std::string path = dir + "/" + h + ".png";
    if (!regular_file(path)) return "missing frame " + h + ".png";
    auto bytes = read_file(path, kMaxFrameFileBytes);
    if (!bytes.ok()) return "unreadable frame " + h + ".png";
    if (sha256_hex(*bytes) != h) return "frame " + h + ".png does not hash to its name";
    if (h == obs) {
      PngInfo info = png_ihdr(*bytes);
      if (static_cast<std::int64_t>(bytes->size()) != observation["byte_length"]) {
        return "observed frame byte_length differs";
      }
      if (!info.ok) return "observed frame is not a PNG with IHDR";
      if (info.width != observation["width"] || info.height != observation["height"]) {
        return "observed frame width/height differ from its IHDR";
      }
    }
  }
  return "";
}

std::string artifacts_problem(const Json& a, const Json& elapsed_ms) {
  // Today one kind, the session's video, at most once (docs/receipts.md §13).
  if (!a.is_array() || a.empty() || a.size() > 1) return "artifacts is not an array of 1 entry";
  const Json& v = a[0];
  if (!has_exact_keys(v, {"kind", "name", "media_type", "sha256", "byte_length", "fps", "start_offset_ms"})) {
    return "artifact 0 does not have exactly kind, name, media_type, sha256, byte_length, fps, start_offset_ms";
  }
  if (!str_eq(v["kind"], kArtifactKindVideo) || !str_eq(v["name"], kVideoFileName) ||
      !str_eq(v["media_type"], kVideoMediaType)) {
    return "artifact 0 is not the video (kind video, name video.webm, media_type video/webm)";
  }
  if (!is_hex64(v["sha256"])) return "artifact 0 sha256 is not 64 lowercase hex";
  if (!is_int_at_least(v["byte_length"], 1) || v["byte_length"].get<std::int64_t>() >= protocol::kVideoMaxBytes) {
    return "artifact 0 byte_length is not in 1..video_max_bytes-1";
  }
  if (!is_int_at_least(v["fps"], 1) || v["fps"].get<std::int64_t>() > 60) return "artifact 0 fps is not in 1..60";
  if (!is_int_at_least(v["start_offset_ms"], 0) || !elapsed_ms.is_number_integer() ||
      v["start_offset_ms"].get<std::int64_t>() > elapsed_ms.get<std::int64_t>()) {
    return "artifact 0 start_offset_ms is not in 0..elapsed_ms";
  }
  return "";
}

// The "browser" member (docs/receipts.md §15): the workspace a session bound.
std::string browser_problem(const Json& b) {
  if (!has_exact_keys(b, {"workspace_id", "browser_version", "target_id", "profile_sha256", "viewport"})) {
    return "browser does not have exactly workspace_id, browser_version, target_id, profile_sha256, viewport";
  }
  if (!is_prefixed_id(b["workspace_id"], "browser-", 32)) return "browser.workspace_id is not browser-<32 hex>";
  if (!is_string_len(b["browser_version"], 1, 256)) return "browser.browser_version is not 1..256 printable ASCII";
  for (unsigned char c : b["browser_version"].get_ref<const std::string&>()) {
    if (c < 0x20 || c > 0x7e) return "browser.browser_version is not 1..256 printable ASCII";
  }
  if (!is_string_len(b["target_id"], 1, 128)) return "browser.target_id is not 1..128 of [0-9A-Za-z._-]";
  for (char c : b["target_id"].get_ref<const std::string&>()) {
    const bool ok = (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '.' ||
                    c == '_' || c == '-';
    if (!ok) return "browser.target_id is not 1..128 of [0-9A-Za-z._-]";
  }
  if (!is_hex64(b["profile_sha256"])) return "browser.profile_sha256 is not 64 lowercase hex";
  const Json& vp = b["viewport"];
  const auto side = [](const Json& v) {
    return is_int_at_least(v, protocol::kBrowserViewportMin) && v.get<std::int64_t>() <= protocol::kBrowserViewportMax;
  };
  if (!has_exact_keys(vp, {"width", "height"}) || !side(vp["width"]) || !side(vp["height"])) {
    return "browser.viewport is not {width,height} each in browser_viewport_min..browser_viewport_max";
  }
  return "";
}

std::string artifact_files_problem(const std::string& dir, const Json& artifacts) {
  for (const Json& a : artifacts) {
    const std::string name = a["name"].get<std::string>();
    const std::string path = dir + "/" + name;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return "missing artifact " + name;
    if (st.st_size != a["byte_length"].get<std::int64_t>()) return "artifact " + name + " byte_length differs";
    auto bytes = read_file(path, static_cast<std::size_t>(protocol::kVideoMaxBytes));
    if (!bytes.ok()) return "unreadable artifact " + name;
    if (sha256_hex(*bytes) != a["sha256"].get<std::string>()) return "artifact " + name + " does not hash to its sha256";
  }
  return "";
}

std::string png_problem(const std::string& path, const Json& observation_sha) {
  auto bytes = regular_file(path) ? read_file(path, kMaxFrameFileBytes)
                                  : Result<std::string>(make_error("fs-error", "", false));
  if (!bytes.ok()) return "cannot read the --png file";
  if (sha256_hex(*bytes) != observation_sha) return "the --png file is not the observed frame";
  return "";
}

std::string TranscriptJcs::join(std::size_t count) const {
  std::string out = "[";
  for (std::size_t i = 0; i < count; ++i) {
    if (i) out.push_back(',');
    out += events[i];
  }
  out.push_back(']');
  return out;
}

TranscriptJcs transcript_jcs(const Json& t) {
  TranscriptJcs out;
  out.events.reserve(t.size());
  for (const auto& e : t) {
    auto bytes = canonicalize(e);
    if (!bytes.ok()) {
      out.canonical = false;
      out.events.emplace_back();
    } else {
      out.events.push_back(std::move(*bytes));
    }
  }
  return out;
}

std::string body_jcs_without_id(
    const Json& r, const std::vector<std::pair<std::string_view, const std::string*>>& precomputed,
    bool* ok) {
  std::string body = "{";
  *ok = true;
  for (auto it = r.begin(); it != r.end() && *ok; ++it) {
    if (it.key() == "receipt_id") continue;
    if (body.size() > 1) body.push_back(',');
    body += "\"" + it.key() + "\":";
    const std::string* pre = nullptr;
    for (const auto& [k, bytes] : precomputed) {
      if (k == it.key()) pre = bytes;
    }
    if (pre != nullptr) {
      body += *pre;
    } else {
      auto bytes = canonicalize(it.value());
      *ok = bytes.ok();
      if (*ok) body += *bytes;
    }
  }
  body.push_back('}');
  return body;
}

}  // namespace receipt_parts

namespace {

using namespace receipt_parts;

// Returns "" when the event is well-formed, else a description.
std::string event_schema_problem(const Json& e, std::size_t pos, bool v3) {
  // Built only for the message: this runs for every event of every receipt.
  auto where = [pos] { return "transcript[" + std::to_string(pos) + "]"; };
  if (!e.is_object()) return where() + " is not an object";
  auto kind_it = e.find("kind");
  if (kind_it == e.end() || !kind_it->is_string()) return where() + ".kind is missing";
  const auto& kind = kind_it->get_ref<const std::string&>();
  auto idx = e.find("index");
  if (idx == e.end() || !is_int_at_least(*idx, 0)) return where() + ".index is not an integer >= 0";
  if (kind == "initial_frame" || kind == "freeze") {
    return frame_event_problem(e, where(), {"frame_sha256"});
  }
  if (kind == "action") return action_event_problem(e, where(), v3, ActionSet::kSession);
  if (kind == "observation") {
    return frame_event_problem(e, where(), {"frame_sha256", "pre_observation_sha256"});
  }
  if (kind == "claims") return frame_event_problem(e, where(), {"claims_sha256", "frame_sha256"});
  if (kind == "app_exit" && v3) {  // docs/receipts.md: the app's exit, recorded (app_exit:"record")
    if (!has_exact_keys(e, {"index", "kind", "exit_status", "frame_sha256"})) return where() + " has wrong keys";
    const Json& x = e["exit_status"];
    if (!x.is_null() && !(is_int_at_least(x, 0) && x.get<std::int64_t>() <= 255)) {
      return where() + ".exit_status is not null or an integer 0..255";
    }
    if (!is_hex64(e["frame_sha256"])) return where() + ".frame_sha256 is not 64 lowercase hex";
    return "";
  }
  return where() + ".kind is not a known event kind";
}

// Returns "" when the receipt has the v2 shape (docs/receipts.md, check "schema").
std::string schema_problem(const Json& r) {
  if (!r.is_object()) return "receipt is not a JSON object";
  // v3 may add "artifacts" (docs/receipts.md §14) and "browser" (§15).
  const bool with_artifacts = r.contains("artifacts");
  const bool with_browser = r.contains("browser");
  {
    static constexpr std::string_view kRequired[] = {
        "schema", "session_id", "engine", "binding", "actor", "execution", "started_at", "frozen_at",
        "observed_at", "completed_at", "elapsed_ms", "action_count", "input_event_count",
        "post_observation_input_event_count", "transcript", "stage_transcript_sha256",
        "transcript_sha256", "pre_observation_sha256", "observation", "claims", "claims_sha256",
        "receipt_id"};
    std::size_t present = 0;
    for (std::string_view k : kRequired) present += r.contains(std::string(k)) ? 1 : 0;
    const std::size_t optional = (with_artifacts ? 1 : 0) + (with_browser ? 1 : 0);
    if (present != std::size(kRequired) || r.size() != present + optional) {
      return "receipt does not have exactly the top-level keys of a session receipt";
    }
  }
  const bool v3 = str_eq(r["schema"], kReceiptSchemaV3);
  if (!v3 && !str_eq(r["schema"], kReceiptSchemaV2)) {
    return "schema is not \"evident.session-receipt/v3\" or \"evident.session-receipt/v2\"";
  }
  if (with_artifacts) {
    if (!v3) return "artifacts need schema evident.session-receipt/v3";
    if (auto p = artifacts_problem(r["artifacts"], r["elapsed_ms"]); !p.empty()) return p;
  }
  if (with_browser) {
    if (!v3) return "browser needs schema evident.session-receipt/v3";
    if (auto p = browser_problem(r["browser"]); !p.empty()) return p;
  }
  if (!is_prefixed_id(r["session_id"], "ses-", 32)) return "session_id is not ses-<32 hex>";
  if (auto p = engine_problem(r["engine"], v3); !p.empty()) return p;
  if (auto p = binding_problem(r["binding"], true); !p.empty()) return p;
  if (auto p = actor_problem(r["actor"]); !p.empty()) return p;
  const Json& ex = r["execution"];
  if (!has_exact_keys(ex, {"kind", "internal_model_calls", "claims_authority"}) ||
      ex["kind"] != "external-actions" || !ex["internal_model_calls"].is_number_integer() ||
      ex["internal_model_calls"] != 0 || ex["claims_authority"] != "external-caller") {
    return "execution is not the external-actions constant";
  }
  for (const char* k : {"started_at", "frozen_at", "observed_at", "completed_at"}) {
    if (!r[k].is_string()) return std::string(k) + " is not a string";
  }
  for (const char* k :
       {"elapsed_ms", "action_count", "input_event_count", "post_observation_input_event_count"}) {
    if (!is_int_at_least(r[k], 0)) return std::string(k) + " is not an integer >= 0";
  }
  const Json& t = r["transcript"];
  // v3 may add one app_exit event.
  if (!t.is_array() || t.size() < 4 || t.size() > kMaxSessionActions + (v3 ? 5 : 4)) {
    return v3 ? "transcript is not an array of 4..69 events" : "transcript is not an array of 4..68 events";
  }
  for (std::size_t i = 0; i < t.size(); ++i) {
    std::string p = event_schema_problem(t[i], i, v3);
    if (!p.empty()) return p;
  }
  for (const char* k : {"stage_transcript_sha256", "transcript_sha256", "pre_observation_sha256",
                        "claims_sha256"}) {
    if (!is_hex64(r[k])) return std::string(k) + " is not 64 lowercase hex";
  }
  if (auto p = observation_problem(r["observation"]); !p.empty()) return p;
  if (!r["claims"].is_object()) return "claims is not an object";
  if (!is_prefixed_id(r["receipt_id"], "ecr-", 64)) return "receipt_id is not ecr-<64 hex>";
  return "";
}

}  // namespace

std::vector<std::string> VerifyReport::failed_names() const {
  std::vector<std::string> names;
  for (const auto& c : checks) {
    if (!c.ok) names.push_back(c.name);
  }
  return names;
}

VerifyReport verify_receipt(const Json& r, const VerifyOptions& options) {
  if (is_task_receipt(r)) return verify_task_receipt(r, options);
  VerifyReport report;
  report.receipt_id = (r.is_object() && r.contains("receipt_id") && r["receipt_id"].is_string())
                          ? r["receipt_id"]
                          : Json(nullptr);
  auto add = [&report](std::string name, bool ok, std::string detail) {
    report.checks.push_back(VerifyCheck{std::move(name), ok, std::move(detail)});
  };

  // 1. schema: everything else relies on the shape, so a malformed receipt stops here.
  std::string problem = schema_problem(r);
  if (!problem.empty()) {
    add("schema", false, problem);
    report.ok = false;
    return report;
  }
  const bool v3 = str_eq(r["schema"], kReceiptSchemaV3);
  add("schema", true, r["schema"].get<std::string>());
  const Json& t = r["transcript"];
  // Each event's kind, looked up once: the checks below consult it several times per event.
  std::vector<std::string_view> kinds;
  kinds.reserve(t.size());
  for (const auto& e : t) kinds.push_back(e["kind"].get_ref<const std::string&>());

  // Canonicalize each part once; the transcript's and the receipt body's JCS are composed from
  // their parts' JCS.
  const TranscriptJcs events = transcript_jcs(t);
  const std::string transcript_jcs_bytes = events.join(t.size());
  const bool transcript_canonical = events.canonical;
  bool claims_canonical = true;
  std::string claims_jcs;
  {
    auto bytes = canonicalize(r["claims"]);
    claims_canonical = bytes.ok();
    if (bytes.ok()) claims_jcs = std::move(*bytes);
  }

  // 2. receipt_id
  {
    bool ok = transcript_canonical && claims_canonical;
    std::string body;
    if (ok) {
      body = body_jcs_without_id(r, {{"transcript", &transcript_jcs_bytes}, {"claims", &claims_jcs}},
                                 &ok);
    }
    std::string want = ok ? "ecr-" + domain_digest_of_jcs(kDomainReceipt, body) : std::string();
    ok = ok && str_eq(r["receipt_id"], want);
    add("receipt_id", ok, ok ? "matches" : "recomputed " + want.substr(0, 16) + "…");
  }
  // 3. transcript_sha256
  {
    std::string want =
        transcript_canonical ? domain_digest_of_jcs(kDomainTranscript, transcript_jcs_bytes) : "";
    bool ok = transcript_canonical && str_eq(r["transcript_sha256"], want);
    add("transcript_sha256", ok, ok ? "matches" : "recomputed " + short_hex(want));
  }
  // 4. stage_transcript_sha256: events up to and including the first freeze.
  {
    std::size_t freeze = t.size();
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (kinds[i] == "freeze") { freeze = i; break; }
    }
    if (freeze == t.size()) {
      add("stage_transcript_sha256", false, "no freeze event");
    } else {
      std::string want = transcript_canonical
                             ? domain_digest_of_jcs(kDomainStageTranscript, events.join(freeze + 1))
                             : "";
      bool ok = transcript_canonical && str_eq(r["stage_transcript_sha256"], want);
      add("stage_transcript_sha256", ok, ok ? "matches" : "recomputed " + short_hex(want));
    }
  }
  // 5. claims_sha256
  {
    std::string detail;
    std::string want = claims_canonical ? domain_digest_of_jcs(kDomainClaims, claims_jcs) : "";
    if (!claims_canonical) {
      detail = "claims are not canonicalizable";
    } else if (claims_jcs.size() > kMaxClaimsCanonicalBytes) {
      detail = "claims are " + std::to_string(claims_jcs.size()) + " bytes canonical (limit 16384)";
    } else if (!str_eq(r["claims_sha256"], want)) {
      detail = "claims_sha256 differs from recomputed " + short_hex(want);
    } else {
      for (std::size_t i = 0; i < t.size(); ++i) {
        if (kinds[i] == "claims" && !str_eq(t[i]["claims_sha256"], want)) {
          detail = "transcript[" + std::to_string(i) + "].claims_sha256 differs";
          break;
        }
      }
    }
    add("claims_sha256", detail.empty(), detail.empty() ? "matches" : detail);
  }
  // 6. event_order: contiguous indices and initial_frame action{0,64} freeze observation claims.
  {
    std::string detail;
    for (std::size_t i = 0; i < t.size() && detail.empty(); ++i) {
      if (!is_int_at_least(t[i]["index"], 0) || t[i]["index"].get<std::int64_t>() !=
                                                     static_cast<std::int64_t>(i)) {
        detail = "transcript[" + std::to_string(i) + "].index is not " + std::to_string(i);
      }
    }
    if (detail.empty()) {
      // At most one app_exit (v3), right before the freeze or right before the observation
      // (so no action follows it): the order is checked on the kinds without it.
      std::vector<std::string_view> order;
      order.reserve(kinds.size());
      std::size_t exits = 0;
      bool exit_placed = true;
      for (std::size_t i = 0; i < kinds.size(); ++i) {
        if (kinds[i] != "app_exit") {
          order.push_back(kinds[i]);
          continue;
        }
        ++exits;
        exit_placed = exit_placed && i >= 1 && i + 1 < kinds.size() &&
                      (kinds[i + 1] == "freeze" || kinds[i + 1] == "observation");
      }
      const std::size_t n = order.size();
      bool ok = n >= 4 && (order[0] == "initial_frame") && (order[n - 3] == "freeze") &&
                (order[n - 2] == "observation") && (order[n - 1] == "claims");
      for (std::size_t i = 1; ok && i + 3 < n; ++i) ok = (order[i] == "action");
      if (!ok) detail = "kinds are not initial_frame, action*, freeze, observation, claims";
      else if (exits > 1) detail = "more than one app_exit event";
      else if (!exit_placed) detail = "app_exit is not right before the freeze or the observation";
    }
    add("event_order", detail.empty(),
        detail.empty() ? std::to_string(t.size()) + " events in order" : detail);
  }
  // 7. counters
  {
    const std::int64_t action_count = r["action_count"].get<std::int64_t>();
    const std::int64_t input_events = r["input_event_count"].get<std::int64_t>();
    std::string detail;
    if (v3) {
      detail = counters_v3_problem(t, kinds, action_count, input_events);
    } else {
      std::int64_t actions = 0;
      std::int64_t with_input = 0;
      for (std::size_t i = 0; i < t.size(); ++i) {
        if (kinds[i] == "action") {
          ++actions;
          if (t[i]["input"] == true) ++with_input;
        }
      }
      if (action_count != actions) {
        detail = "action_count " + std::to_string(action_count) + " but " +
                 std::to_string(actions) + " action events";
      } else if (input_events < with_input) {
        detail = "input_event_count " + std::to_string(input_events) + " < " +
                 std::to_string(with_input) + " actions with input";
      } else if (with_input == 0 && input_events != 0) {
        detail = "input_event_count is not 0 although no action had input";
      }
    }
    add("counters", detail.empty(), detail.empty() ? "consistent with events" : detail);
  }
  if (v3) {
    // 7a. input_flags: each event's input flag is its input_events > 0, and a kind that sends
    // no input (protocol/evident.json) sent none.
    std::string detail = input_flags_problem(t, kinds);
    add("input_flags", detail.empty(), detail.empty() ? "agree with input_events and kinds" : detail);
    // 7b. projections: the kinds whose projection is the constant {"type": kind}.
    detail = projections_problem(t, kinds);
    add("projections", detail.empty(), detail.empty() ? "constant projections recompute" : detail);
  }
  // 8. post_observation_input_event_count
  {
    bool ok = r["post_observation_input_event_count"] == 0;
    add("post_observation_input_event_count", ok, ok ? "0" : "not 0");
  }
  // 9. timestamps
  {
    std::string detail =
        timestamps_problem(r, {"started_at", "frozen_at", "observed_at", "completed_at"});
    add("timestamps", detail.empty(), detail.empty() ? "well-formed and ordered" : detail);
  }
  // 10. observation_digest
  {
    const Json& obs = r["observation"]["sha256"];
    std::string detail;
    int observations = 0;
    int claims = 0;
    for (std::size_t i = 0; i < t.size() && detail.empty(); ++i) {
      const Json& e = t[i];
      if (kinds[i] == "observation") {
        ++observations;
        if (!str_eq(e["frame_sha256"], obs.get_ref<const std::string&>())) detail = "observation event frame differs from observation";
        else if (e["pre_observation_sha256"] != r["pre_observation_sha256"])
          detail = "observation event pre_observation_sha256 differs";
      } else if (kinds[i] == "claims") {
        ++claims;
        if (!str_eq(e["frame_sha256"], obs.get_ref<const std::string&>())) detail = "claims event frame differs from observation";
      }
    }
    if (detail.empty() && (observations == 0 || claims == 0)) {
      detail = "no observation or no claims event";
    }
    add("observation_digest", detail.empty(), detail.empty() ? "matches" : detail);
  }
  // 11. frames
  if (!options.frames_dir.empty()) {
    std::set<std::string> wanted;
    for (const auto& e : t) wanted.insert(e["frame_sha256"].get<std::string>());
    wanted.insert(r["observation"]["sha256"].get<std::string>());
    std::size_t count = 0;
    std::string detail = frames_problem(options.frames_dir, wanted, r["observation"], &count);
    add("frames", detail.empty(),
        detail.empty() ? std::to_string(count) + " frames present and hashed" : detail);
    // 11a. artifacts (only a receipt that binds some): each file present and hashed.
    if (r.contains("artifacts")) {
      std::string adetail = artifact_files_problem(options.frames_dir, r["artifacts"]);
      add("artifacts", adetail.empty(),
          adetail.empty() ? std::to_string(r["artifacts"].size()) + " artifact present and hashed" : adetail);
    }
  }
  // 12. png
  if (!options.png_path.empty()) {
    std::string detail = png_problem(options.png_path, r["observation"]["sha256"]);
    add("png", detail.empty(), detail.empty() ? "is the observed frame" : detail);
  }
  // 13. expect_job
  if (!options.expect_job_sha256.empty()) {
    std::string want = options.expect_job_sha256;
    std::transform(want.begin(), want.end(), want.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    bool ok = r["binding"]["job_sha256"] == want;
    add("expect_job", ok, ok ? "binding.job_sha256 matches" : "binding.job_sha256 differs");
  }
  // 14. expect_uid
  if (options.expect_uid.has_value()) {
    bool ok = r["actor"]["uid"] == *options.expect_uid;
    add("expect_uid", ok, ok ? "actor.uid matches" : "actor.uid differs");
  }

  // D1–D3. disclosure (only with --disclosure): a well-formed disclosure (the command checked
  // its shape) against this receipt's committed action.
  if (!options.disclosure.is_null()) {
    for (auto& c : check_disclosure(r, options.disclosure)) add(c.name, c.ok, c.detail);
  }

  report.ok = std::all_of(report.checks.begin(), report.checks.end(),
                          [](const VerifyCheck& c) { return c.ok; });
  return report;
}

Result<std::string> read_receipt_bytes(const std::string& path) {
  if (!regular_file(path)) {
    return make_error("receipt-unreadable", "receipt file does not exist or is not a regular file");
  }
  auto text = read_file(path, kMaxReceiptFileBytes);
  if (!text.ok()) {
    return make_error("receipt-unreadable", "cannot read the receipt file: " + text.error().message);
  }
  return text;
}

Result<Json> load_disclosure_file(const std::string& path) {
  if (!regular_file(path)) {
    return make_error("disclosure-unreadable",
                      "the disclosure file does not exist or is not a regular file");
  }
  auto text = read_file(path, kMaxDisclosureFileBytes);
  if (!text.ok()) {
    return make_error("disclosure-unreadable",
                      "cannot read the disclosure file (missing, unreadable or over 64 KiB)");
  }
  auto parsed = parse_json_strict(*text, kMaxDisclosureFileBytes, "disclosure-invalid");
  if (!parsed.ok()) {
    return make_error("disclosure-invalid", "the disclosure file is not strict JSON");
  }
  std::string problem = disclosure_shape_problem(*parsed);
  if (!problem.empty()) return make_error("disclosure-invalid", problem);
  return parsed;
}

Result<Json> load_prior_receipt_file(const std::string& path) {
  auto loaded = load_receipt_file(path);
  if (loaded.ok()) return loaded;
  if (loaded.error().code == "receipt-unreadable") {
    return make_error("verify-prior-unreadable",
                      "the --prior receipt does not exist, is not a regular file, cannot be read "
                      "or is over 8 MiB");
  }
  return make_error("verify-prior-json", "the --prior receipt is not strict JSON");
}

Result<Json> load_receipt_file(const std::string& path) {
  auto text = read_receipt_bytes(path);
  if (!text.ok()) return text.error();
  return parse_json_strict(*text, kMaxReceiptFileBytes, "receipt-json");
}

int run_verify_command(const std::string& path, const VerifyOptions& options, bool json,
                       std::ostream& out, VerifyExtension* extension) {
  auto fail = [&](const std::string& code, const std::string& message, int status) {
    if (json) {
      out << dump_json(error_response(make_error(code, message, false)))
          << "\n";
    } else {
      out << "error: " << message << " (" << code << ")\n";
    }
    return status;
  };
  if (!options.expect_job_sha256.empty()) {
    std::string lower = options.expect_job_sha256;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (!is_lower_hex(lower, 64)) {
      return fail("verify-usage", "--expect-job must be 64 hex characters", 2);
    }
  }
  if (extension != nullptr) {
    if (auto st = extension->prepare(); !st) return fail(st.error().code, st.error().message, 2);
  }
  auto bytes = read_receipt_bytes(path);
  if (!bytes.ok()) return fail(bytes.error().code, bytes.error().message, 1);
  auto receipt = parse_json_strict(*bytes, kMaxReceiptFileBytes, "receipt-json");
  if (!receipt.ok()) return fail(receipt.error().code, receipt.error().message, 1);

  VerifyOptions opts = options;
  if (!opts.disclosure_path.empty()) {
    auto d = load_disclosure_file(opts.disclosure_path);
    if (!d.ok()) return fail(d.error().code, d.error().message, 1);
    opts.disclosure = std::move(*d);
  }
  if (!opts.prior_path.empty()) {
    auto p = load_prior_receipt_file(opts.prior_path);
    if (!p.ok()) return fail(p.error().code, p.error().message, 1);
    opts.prior = std::move(*p);
  }
  VerifyReport report = verify_receipt(*receipt, opts);
  // Nothing here checks a signature: unauthenticated unless an extension proves otherwise.
  Json extra{{"authenticated", false}, {"key_id", nullptr}};
  std::string note(kUnauthenticatedNote);
  if (extension != nullptr) {
    extension->run(path, *bytes, *receipt, report, extra, note);
    report.ok = std::all_of(report.checks.begin(), report.checks.end(),
                            [](const VerifyCheck& c) { return c.ok; });
  }
  Json checks = Json::array();
  for (const auto& c : report.checks) {
    checks.push_back(Json{{"name", c.name}, {"ok", c.ok}, {"detail", c.detail}});
  }
  std::string failed;
  for (const auto& n : report.failed_names()) failed += (failed.empty() ? "" : ", ") + n;
  if (json) {
    Json result{{"ok", report.ok}, {"receipt_id", report.receipt_id}, {"checks", checks}};
    for (auto it = extra.begin(); it != extra.end(); ++it) result[it.key()] = it.value();
    if (!report.ok) {
      result["error"] = Json{{"code", "verify-failed"},
                             {"message", "failed checks: " + failed},
                             {"retryable", false}};
    }
    out << dump_json(result) << "\n";
  } else {
    out << "receipt " << (report.receipt_id.is_string() ? report.receipt_id.get<std::string>()
                                                         : std::string("(no receipt_id)"))
        << "\n";
    for (const auto& c : report.checks) {
      out << "  " << (c.ok ? "ok  " : "FAIL") << "  " << c.name << ": " << c.detail << "\n";
    }
    if (report.ok) {
      out << "verified: all " << report.checks.size() << " checks passed\n";
    } else {
      out << "verification failed: " << failed << "\n";
    }
    if (!note.empty()) out << note << "\n";
  }
  return report.ok ? 0 : 1;
}

}  // namespace evident
