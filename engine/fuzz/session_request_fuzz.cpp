// Fuzz target: the session request parser (engine/session parse_session_request) and, for an
// `actions` request, the session action validation it is followed by (parse_actions in session
// mode), i.e. everything a §5 request goes through before any state is looked up.
// Invariants: refusals carry one of the documented codes with a good message (no echo, no typed
// text or key names); accepted requests hold exactly their op's fields within their bounds, and
// the receipt projection of every parsed action drops secrets.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "evident/actions/action.h"
#include "evident/receipts/jcs.h"
#include "evident/session/request.h"
#include "fuzz_check.h"
#include "secrets_check.h"

using namespace evident;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  auto req = parse_session_request(input);
  if (!req.ok()) {
    fuzz::require_good_error(req.error(), input,
                             {"session-input-size", "session-json", "session-command",
                              "session-actions", "session-claims"});
    return 0;
  }
  const SessionRequest& r = *req;
  switch (r.op) {
    case SessionOp::kBegin:
      fuzz::require(r.sequence == -1, "begin with a sequence");
      fuzz::require(!r.attempt_id.empty() && r.attempt_id.size() <= 256, "attempt_id out of bounds");
      fuzz::require(is_lower_hex(r.job_sha256, 64), "job_sha256 is not 64 lowercase hex");
      break;
    case SessionOp::kStatus:
      break;
    default:
      fuzz::require(r.sequence >= 0 && r.sequence <= kMaxSafeInteger, "continuation sequence out of range");
      break;
  }
  if (r.op == SessionOp::kFinish) {
    fuzz::require(r.claims.is_object(), "finish claims not an object");
    auto jcs = canonicalize(r.claims);
    fuzz::require(jcs.ok(), "accepted claims that do not canonicalize");
    fuzz::require(jcs->size() <= protocol::kClaimsMaxCanonicalBytes, "claims over the canonical limit");
    fuzz::require(is_lower_hex(r.observation_sha256, 64), "observation_sha256 is not hex");
  }
  if (r.op == SessionOp::kObserve) {
    fuzz::require(is_lower_hex(r.pre_observation_sha256, 64), "pre_observation_sha256 is not hex");
  }
  if (r.op == SessionOp::kActions) {
    fuzz::require(r.actions.is_array() && !r.actions.empty() &&
                      r.actions.size() <= kMaxSessionBatchActions,
                  "actions array out of bounds");
    // What the session layer does next with the batch (manager.cpp), for a 1280x800 display.
    auto actions = parse_actions(r.actions, BatchMode::kSession, CoordinateSpace::kPixel, 1280, 800);
    if (!actions.ok()) {
      fuzz::require_good_error(actions.error(), input,
                               {"session-actions", "session-action", "session-action-forbidden"});
      fuzz::require_no_secrets(r.actions, actions.error().message);
    } else {
      fuzz::check_parsed_actions(*actions, 1280, 800, /*session=*/true);
      fuzz::trace("accepted actions");
    }
  }
  fuzz::trace("accepted", to_string(r.op));
  return 0;
}
