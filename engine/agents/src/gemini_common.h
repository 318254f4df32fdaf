// Gemini API computer use (generateContent), shared by the 2.5 and 3.5 function-set adapters.
#pragma once

#include "evident/agents/adapter.h"

namespace evident::agents::detail {

class TurnBuilder;

// Maps one predefined function call (name, args without safety_decision) of a function set.
// Returns task-forbidden-tool-call through `known = false` for names outside the set.
using GeminiMapper = Status (*)(TurnBuilder& b, const std::string& fn, const Json& args,
                                const std::string& where, bool* known);

class GeminiAdapter : public Adapter {
 public:
  GeminiAdapter(const char* name, GeminiMapper mapper) : name_(name), mapper_(mapper) {}
  std::string_view name() const override { return name_; }
  Result<ParsedTurn> parse(const Json& response, const AdapterInput& in) const override;
  Json tool_results(const ParsedTurn& turn, const std::vector<CallOutcome>& outcomes) const override;
  Json retry_prompt(const Error& why) const override;

 private:
  const char* name_;
  GeminiMapper mapper_;
};

// Helpers for the function-set files.
Result<Point> gemini_xy(TurnBuilder& b, const Json& args, const char* kx, const char* ky, const std::string& where);
Result<bool> gemini_bool(const Json& args, const char* key, bool fallback, const std::string& where);
// A scroll of `magnitude` grid units (default 800) in `direction` at `p`.
Status gemini_scroll(TurnBuilder& b, Point p, const Json& args, const std::string& where);

// Gemini's default scroll magnitude (Google's reference implementation), in 0..999 grid units.
inline constexpr std::int64_t kGeminiDefaultMagnitude = 800;

}  // namespace evident::agents::detail
