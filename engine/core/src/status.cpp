#include "evident/core/status.h"

#include "evident/protocol/protocol.h"

namespace evident {

bool declared_retryable(std::string_view code, bool depends) {
  const auto* e = protocol::find_error_code(code);
  if (e == nullptr) return depends;
  switch (e->retryable) {
    case protocol::Retryable::kYes: return true;
    case protocol::Retryable::kNo: return false;
    case protocol::Retryable::kDepends: break;
  }
  return depends;
}

}  // namespace evident
