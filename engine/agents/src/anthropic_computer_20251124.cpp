// Anthropic computer_20251124 (zoom): docs/agents.md has the mapping table and its sources.
#include "anthropic_common.h"

namespace evident::agents::detail {

const Adapter& anthropic_computer_20251124_adapter() {
  static const AnthropicAdapter adapter(AnthropicVersion{"anthropic-computer-20251124", true, false});
  return adapter;
}

}  // namespace evident::agents::detail
