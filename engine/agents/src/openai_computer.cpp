// OpenAI `computer` (GA): one computer_call carries a batch of `actions`. docs/agents.md.
#include "openai_common.h"

namespace evident::agents::detail {

const Adapter& openai_computer_adapter() {
  static const OpenAiAdapter adapter("openai-computer", true);
  return adapter;
}

}  // namespace evident::agents::detail
