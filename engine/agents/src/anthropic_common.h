// Anthropic Messages API computer tool, shared by the three Anthropic adapters.
#pragma once

#include "evident/agents/adapter.h"

namespace evident::agents::detail {

struct AnthropicVersion {
  const char* adapter;  // "anthropic-computer-20250124", ...
  bool zoom;            // the `zoom` action exists (computer_20251124 with enable_zoom, toolset)
  bool toolset;         // computer_toolset_20260801: each call is a member-named tool_use with toolset_name
};

class AnthropicAdapter : public Adapter {
 public:
  explicit AnthropicAdapter(AnthropicVersion v) : v_(v) {}
  std::string_view name() const override { return v_.adapter; }
  Result<ParsedTurn> parse(const Json& response, const AdapterInput& in) const override;
  Json tool_results(const ParsedTurn& turn, const std::vector<CallOutcome>& outcomes) const override;
  Json retry_prompt(const Error& why) const override;
  std::pair<int, int> model_image_size(int width, int height) const override;

 private:
  AnthropicVersion v_;
};

// Anthropic's image size rule (docs/agents.md): long edge <= 1568 px and width*height <= 1,200,000
// (1600 tokens at width*height/750), aspect kept, sizes rounded down.
std::pair<int, int> anthropic_image_size(int width, int height);

}  // namespace evident::agents::detail
