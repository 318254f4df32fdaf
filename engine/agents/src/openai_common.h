// OpenAI Responses API computer tool, shared by the GA (`computer`, batched `actions`) and the
// preview (`computer_use_preview`, one `action`) adapters.
#pragma once

#include "evident/agents/adapter.h"

namespace evident::agents::detail {

class OpenAiAdapter : public Adapter {
 public:
  OpenAiAdapter(const char* name, bool batched) : name_(name), batched_(batched) {}
  std::string_view name() const override { return name_; }
  Result<ParsedTurn> parse(const Json& response, const AdapterInput& in) const override;
  Json tool_results(const ParsedTurn& turn, const std::vector<CallOutcome>& outcomes) const override;
  Json retry_prompt(const Error& why) const override;

 private:
  const char* name_;
  bool batched_;
};

// OpenAI's `wait` action carries no duration; the engine waits this long (the OpenAI CUA sample
// app's default; docs/agents.md).
inline constexpr std::int64_t kOpenAiWaitMs = 1000;

}  // namespace evident::agents::detail
