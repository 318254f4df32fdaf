// Anthropic computer_20250124: docs/agents.md has the mapping table and its sources.
#include "anthropic_common.h"

namespace evident::agents::detail {

const Adapter& anthropic_computer_20250124_adapter() {
  static const AnthropicAdapter adapter(AnthropicVersion{"anthropic-computer-20250124", false, false});
  return adapter;
}

}  // namespace evident::agents::detail
