// Fuzz target: the `cu actions` request parser (engine/actions parse_action_batch_request, the
// pure first step of run_action_batch), for a display whose size the first 4 input bytes pick.
// Invariants: refusals are actions-request / action-invalid with good messages and no secrets;
// accepted batches hold only in-display, bounded actions whose projections drop secrets.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "evident/actions/batch.h"
#include "fuzz_check.h"
#include "secrets_check.h"

using namespace evident;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 4) return 0;
  // Display sizes a display.create may have: 1..8192 on each side.
  const int width = 1 + ((data[0] << 8 | data[1]) % 8192);
  const int height = 1 + ((data[2] << 8 | data[3]) % 8192);
  const std::string_view input(reinterpret_cast<const char*>(data + 4), size - 4);
  auto request = parse_json_strict(input, protocol::kRequestMaxBytes, "request-json");
  if (!request.ok()) {
    fuzz::require_good_error(request.error(), input, {"request-json"});
    return 0;
  }
  auto batch = parse_action_batch_request(*request, width, height);
  if (!batch.ok()) {
    fuzz::require_good_error(batch.error(), input, {"actions-request", "action-invalid"});
    if (request->is_object() && request->contains("actions")) {
      fuzz::require_no_secrets((*request)["actions"], batch.error().message);
    }
    return 0;
  }
  fuzz::check_parsed_actions(batch->actions, width, height, /*session=*/false);
  fuzz::require(batch->settle_cap_ms >= 0 && batch->settle_cap_ms <= kSettleMaxCapMs, "settle cap out of range");
  fuzz::trace("accepted");
  return 0;
}
