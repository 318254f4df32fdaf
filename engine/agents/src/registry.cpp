#include <array>

#include "evident/agents/adapter.h"

namespace evident::agents {
namespace detail {
const Adapter& anthropic_computer_20250124_adapter();
const Adapter& anthropic_computer_20251124_adapter();
const Adapter& anthropic_toolset_20260801_adapter();
const Adapter& openai_computer_adapter();
const Adapter& openai_computer_use_preview_adapter();
const Adapter& gemini_computer_use_adapter();
const Adapter& gemini_computer_use_35_adapter();
const Adapter& evident_adapter();
}  // namespace detail

namespace {
const std::array<const Adapter*, 8>& all() {
  static const std::array<const Adapter*, 8> adapters = {
      &detail::anthropic_computer_20250124_adapter(), &detail::anthropic_computer_20251124_adapter(),
      &detail::anthropic_toolset_20260801_adapter(),  &detail::openai_computer_adapter(),
      &detail::openai_computer_use_preview_adapter(), &detail::gemini_computer_use_adapter(),
      &detail::gemini_computer_use_35_adapter(),      &detail::evident_adapter(),
  };
  return adapters;
}
}  // namespace

const Adapter* find_adapter(std::string_view name) {
  for (const Adapter* a : all()) {
    if (a->name() == name) return a;
  }
  return nullptr;
}

std::vector<std::string_view> adapter_names() {
  std::vector<std::string_view> out;
  for (const Adapter* a : all()) out.push_back(a->name());
  return out;
}

}  // namespace evident::agents
