// Fuzz target: the agent task request parser (engine/task parse_task_request).
// Invariants: refusals carry a documented code and a good message; accepted requests are within
// their bounds (policy strings, digests, lineage rules, response size).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "evident/task/request.h"
#include "fuzz_check.h"

using namespace evident;
using namespace evident::task;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  auto req = parse_task_request(input);
  if (!req.ok()) {
    fuzz::require_good_error(req.error(), input,
                             {"task-input-size", "task-json", "task-command", "task-adapter-unknown",
                              "task-lineage-invalid"});
    return 0;
  }
  const TaskRequest& r = *req;
  switch (r.op) {
    case TaskOp::kBegin:
      fuzz::require(agents::find_adapter(r.policy.adapter) != nullptr, "unknown adapter accepted");
      fuzz::require(!r.policy.provider.empty() && r.policy.provider.size() <= kMaxPolicyFieldBytes &&
                        !r.policy.model.empty() && r.policy.model.size() <= kMaxPolicyFieldBytes,
                    "policy strings out of bounds");
      fuzz::require(is_lower_hex(r.task_sha256, 64), "task_sha256 is not hex");
      fuzz::require((r.mode == TaskMode::kAttest) == !r.prior_receipt_id.empty(), "lineage rule broken");
      break;
    case TaskOp::kTurn:
      fuzz::require(r.response.is_object(), "turn response is not an object");
      fuzz::require(dump_json(r.response).size() <= agents::kMaxResponseBytes, "response over 1 MiB");
      [[fallthrough]];
    case TaskOp::kAbort:
      fuzz::require(r.sequence >= 0, "negative sequence");
      break;
    case TaskOp::kStatus:
      break;
  }
  fuzz::trace("accepted", to_string(r.op));
  return 0;
}
