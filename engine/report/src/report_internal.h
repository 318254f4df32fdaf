// Helpers shared by the report's loader and renderers (not installed).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "evident/core/json.h"

namespace evident::report_detail {

// Safe accessors on untrusted JSON: never throw; a missing or mistyped member is "absent".
const Json* member(const Json& object, std::string_view key);
std::string string_member(const Json& object, std::string_view key);
std::optional<std::int64_t> int_member(const Json& object, std::string_view key);

}  // namespace evident::report_detail
