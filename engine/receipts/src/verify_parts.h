// Internal to engine/receipts: the rules the session receipt and the task receipt share, in one
// place (shapes of the shared members, action events, counters, input flags, projections,
// timestamps, frames, the receipt id over a composed JCS body). verify.cpp defines them;
// verify.cpp and task_verify.cpp use them. Each returns "" when the rule holds, else a detail
// for people that never echoes receipt content.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "evident/core/json.h"

namespace evident::receipt_parts {

bool is_hex64(const Json& v);
bool is_prefixed_id(const Json& v, std::string_view prefix, std::size_t hex_len);
bool str_eq(const Json& v, std::string_view s);
bool is_int_at_least(const Json& v, std::int64_t min);
bool is_string_len(const Json& v, std::size_t min, std::size_t max);
bool has_exact_keys(const Json& v, std::initializer_list<std::string_view> keys);
std::string short_hex(const std::string& s);
bool regular_file(const std::string& path);

// Shapes of members both receipts carry.
std::string engine_problem(const Json& engine, bool v3);
// The session binding's eight keys (with_job) or the task binding's seven (no job_sha256).
std::string binding_problem(const Json& binding, bool with_job);
std::string actor_problem(const Json& actor);
std::string observation_problem(const Json& observation);

// Which action kinds an action event may name.
enum class ActionSet { kSession, kTask };  // task: the session kinds plus zoom
// An `action` event (v2 or v3 shape); `where` names it in the detail ("transcript[3]").
std::string action_event_problem(const Json& e, const std::string& where, bool v3, ActionSet set);
// `{"index","kind",<keys>...}` with every non-index, non-kind key 64 lowercase hex.
std::string frame_event_problem(const Json& e, const std::string& where,
                                std::initializer_list<std::string_view> hex_keys);

// Over the action events (`kinds[i] == "action"`) of a transcript:
// action_count equals their number and input_event_count their input_events sum (v3).
std::string counters_v3_problem(const Json& t, const std::vector<std::string_view>& kinds,
                                std::int64_t action_count, std::int64_t input_event_count);
// Each event's input flag is input_events > 0; a kind that sends no input sent none.
std::string input_flags_problem(const Json& t, const std::vector<std::string_view>& kinds);
// The constant-projection kinds carry H(action-projection, {"type": kind}).
std::string projections_problem(const Json& t, const std::vector<std::string_view>& kinds);
// The named RFC 3339 ms timestamps are well-formed (1970..9999) and non-decreasing.
std::string timestamps_problem(const Json& r, std::initializer_list<const char*> keys);
// Every wanted frame is DIR/<sha>.png and hashes to its name; the observed one also matches the
// observation's byte_length and IHDR width/height. `count` gets the number checked.
std::string frames_problem(const std::string& dir, const std::set<std::string>& wanted,
                           const Json& observation, std::size_t* count);
// The --png file is the observed frame.
std::string png_problem(const std::string& path, const Json& observation_sha);

// JCS of the transcript's events, each canonicalized once, composed into arrays.
struct TranscriptJcs {
  std::vector<std::string> events;
  bool canonical = true;
  std::string join(std::size_t count) const;  // "[e0,e1,...]" of the first count events
};
TranscriptJcs transcript_jcs(const Json& t);
// JCS of the receipt object without "receipt_id", composing the given members' JCS from
// pre-computed bytes (`precomputed`: key → JCS) and canonicalizing the rest. ok=false when a
// member is not canonicalizable. The top-level keys are plain ASCII, so map order is JCS order.
std::string body_jcs_without_id(const Json& r,
                                const std::vector<std::pair<std::string_view, const std::string*>>& precomputed,
                                bool* ok);

}  // namespace evident::receipt_parts
