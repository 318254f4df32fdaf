// Shared machinery of the provider adapters (private to engine/agents).
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "evident/agents/adapter.h"

namespace evident::agents::detail {

// Stable codes (docs/errors.md, "Agent tasks").
inline constexpr const char* kResponse = "task-response";
inline constexpr const char* kForbiddenTool = "task-forbidden-tool-call";
inline constexpr const char* kSafety = "task-safety-check-refused";
inline constexpr const char* kForbiddenAction = "task-action-forbidden";
inline constexpr const char* kCallId = "task-call-id-invalid";
inline constexpr const char* kActionLimit = "task-action-limit";
inline constexpr const char* kResultInvalid = "task-result-invalid";

Error response_error(const std::string& message);
Error forbidden_action(const std::string& message);

// Builds a turn: calls and their §4 actions, in display pixels, tracking the pointer.
class TurnBuilder {
 public:
  TurnBuilder(std::string_view adapter, const AdapterInput& in);

  // Starts a call; `id` is checked (1..256 bytes, unique in the turn) unless allow_empty_id.
  Status begin_call(const std::string& id, const std::string& name, bool allow_empty_id = false);
  // The call's next native action; every §4 action appended after it belongs to it.
  void native(std::string name);
  // Appends one §4 action (display pixels). task-action-limit past 16 actions in the turn.
  Status add(Json action);

  // Coordinates: model image pixels (Anthropic, OpenAI) -> display pixels.
  Result<Point> image_point(std::int64_t x, std::int64_t y, const std::string& where) const;
  // Gemini 0..999 -> display pixels.
  Result<Point> normalized_point(std::int64_t x, std::int64_t y, const std::string& where) const;
  // The pointer for an action without a coordinate; task-action-forbidden when unknown.
  Result<Point> current_pointer(const std::string& where) const;

  const Geometry& geometry() const { return in_.geometry; }
  std::size_t call_count() const { return turn_.calls.size(); }

  // Validates every call's actions with the §4 parser (a failure -> task-action-forbidden,
  // naming the call and action index) and returns the turn. task-response for zero calls.
  Result<ParsedTurn> finish();

 private:
  std::string adapter_;
  AdapterInput in_;
  ParsedTurn turn_;
  std::optional<Point> pointer_;
  std::set<std::string> ids_;
  std::size_t actions_ = 0;
};

// A final answer from the model's text: trimmed of whitespace, with one optional Markdown code
// fence (```json ... ``` or ``` ... ```) removed, it must be exactly one JSON object (strict
// parser) of at most 16 KiB canonical. Anything else: a kFinal turn whose result_error is
// task-result-invalid (never an Error of parse()).
ParsedTurn final_answer(std::string_view text);

// The refusal / failure text of a call's answer for the model (no request content).
std::string outcome_text(const CallOutcome& o);

// Reads `key` from `obj` as an array / string / object; nullptr / nullopt when absent or of
// another type.
const Json* get(const Json& obj, std::string_view key);
const Json* get_array(const Json& obj, std::string_view key);
const Json* get_object(const Json& obj, std::string_view key);
std::optional<std::string> get_string(const Json& obj, std::string_view key);
// An integer field; task-response naming `where` when present with another type.
Result<std::optional<std::int64_t>> get_int(const Json& obj, std::string_view key,
                                            const std::string& where);
// Refuses keys of `obj` outside `allowed` with task-response.
Status only_keys(const Json& obj, std::initializer_list<std::string_view> allowed,
                 const std::string& where);

}  // namespace evident::agents::detail
