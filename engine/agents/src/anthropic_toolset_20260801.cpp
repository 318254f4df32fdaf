// Anthropic computer_toolset_20260801: docs/agents.md has the mapping table and its sources.
#include "anthropic_common.h"

namespace evident::agents::detail {

const Adapter& anthropic_toolset_20260801_adapter() {
  static const AnthropicAdapter adapter(AnthropicVersion{"anthropic-toolset-20260801", true, true});
  return adapter;
}

}  // namespace evident::agents::detail
