// OpenAI `computer_use_preview`: one computer_call carries one `action`. docs/agents.md.
#include "openai_common.h"

namespace evident::agents::detail {

const Adapter& openai_computer_use_preview_adapter() {
  static const OpenAiAdapter adapter("openai-computer-use-preview", false);
  return adapter;
}

}  // namespace evident::agents::detail
