// Building and writing `evident.session-receipt/v3` receipts (docs/receipts.md,
// docs/receipts.md; v2 is still built for the v2 goldens).
// The session module records what happened; this module turns it into the receipt JSON with
// every digest, so the format lives in one place and needs no X.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "evident/core/json.h"
#include "evident/core/status.h"
#include "evident/protocol/protocol.h"

namespace evident {

inline constexpr std::string_view kReceiptSchemaV2 = "evident.session-receipt/v2";
inline constexpr std::string_view kReceiptSchemaV3 = "evident.session-receipt/v3";
// What new sessions write.
inline constexpr std::string_view kReceiptSchema = kReceiptSchemaV3;
inline constexpr std::size_t kMaxClaimsCanonicalBytes = protocol::kClaimsMaxCanonicalBytes;
inline constexpr std::string_view kReceiptFileName = "receipt.json";
// actions.json: each action's projection in order, written beside receipt.json (docs/evidence.md).
inline constexpr std::string_view kActionsFileName = "actions.json";
inline constexpr std::string_view kActionsSchema = "evident.actions/v1";
inline constexpr std::size_t kMaxActionsFileBytes = 1024 * 1024;

// A file of the evidence dir bound by the receipt besides the frames (receipt "artifacts",
// docs/receipts.md §14). Today one kind: the session's video (begin's record_video).
inline constexpr std::string_view kArtifactKindVideo = "video";
inline constexpr std::string_view kVideoFileName = "video.webm";
inline constexpr std::string_view kVideoMediaType = "video/webm";
struct ArtifactRecord {
  std::string kind;        // "video"
  std::string name;        // the file's name in the evidence dir: "video.webm"
  std::string media_type;  // "video/webm"
  std::string sha256;      // of the file's bytes
  std::int64_t byte_length = 0;
  std::int64_t fps = 0;
  // Monotonic ms from begin's admission to the video's first frame: an event that happened
  // at elapsed E is at E - start_offset_ms in the video.
  std::int64_t start_offset_ms = 0;
};

// v3, sessions begun with "browser": the browser workspace the session bound (receipt
// "browser", docs/receipts.md §15), as checked live at begin.
struct BrowserBindingRecord {
  std::string workspace_id;     // "browser-<32 hex>"
  std::string browser_version;  // CDP Browser.getVersion "product"
  std::string target_id;        // the page target's CDP targetId
  std::string profile_sha256;   // docs/browsers.md "Profile digest"
  std::int64_t width = 0;       // the CSS viewport
  std::int64_t height = 0;
};

// The resources a session was bound to at begin (receipt "binding").
struct ReceiptBinding {
  std::int64_t display_id = 0;
  std::string display_name;      // ":N"
  std::string generation;        // "gen-<32 hex>"
  std::string app_id;            // "app-<32 hex>"
  std::int64_t app_pid = 0;
  std::string app_argv_sha256;   // 64 lowercase hex
  std::string attempt_id;        // 1..256 bytes, as sent by the caller
  std::string job_sha256;        // 64 lowercase hex, as sent by the caller
};

// One executed session action, in order.
struct ActionRecord {
  std::string type;          // the action's "type", e.g. "click"
  Json projection;           // P: the action with secrets removed; use project_action()
  std::string status;        // "ok" or "injected" (a failed action ends the session)
  bool input = false;        // true iff the action dispatched at least one input event
  std::string frame_sha256;  // the full-display frame captured after the action
  // Monotonic ms from begin's admission to the capture of `frame_sha256`; -1 when unknown.
  // Recorded in actions.json only (not bound by the receipt).
  std::int64_t elapsed_ms = -1;
  // v3: the X input events the action sent (the event's `input_events`).
  std::int64_t input_events = 0;
  // v3: for type/key/paste/hold_key, H("evident/commitment/v1", {salt, value}) (commitment.h);
  // empty for every other kind.
  std::string commitment;
  // v3, sessions: the outcome of the settle wait before `frame_sha256` was taken ("settled",
  // "still_loading", "fixed", "off": protocol::kSettleOutcomes), or empty when the batch asked
  // for no settle (the event then has no "settle" key).
  std::string settle;
};

// v3, sessions begun with "app_exit":"record": the app's exit, recorded as an `app_exit` event
// (docs/receipts.md). It follows the first `after_actions` action events, or the freeze event
// when `after_freeze`; no action event follows it.
struct AppExitRecord {
  bool present = false;
  std::int64_t after_actions = 0;   // action events before it
  bool after_freeze = false;        // detected at observe, after the freeze event
  std::int64_t exit_status = -1;    // exit code, or 128+signal; -1 when unknown (null)
  std::string frame_sha256;         // the full-display frame captured when the exit was recorded
};

// The frame captured by observe.
struct ObservationRecord {
  std::string sha256;
  std::int64_t byte_length = 0;
  std::int64_t width = 0;
  std::int64_t height = 0;
};

// Everything a receipt binds. Times are wall-clock ms since the epoch (rendered RFC 3339).
struct ReceiptInput {
  int schema_version = 3;                    // 3 (new sessions) or 2 (the v2 goldens)
  std::string session_id;                    // "ses-<32 hex>"
  std::string host_id;                       // v3: engine.host_id, "hst-<32 hex>"
  std::string engine_version = EVIDENT_VERSION;
  ReceiptBinding binding;
  Json actor;                                // as resolved by the control surface
  std::int64_t started_wall_ms = 0;          // begin's admission
  std::int64_t frozen_wall_ms = 0;
  std::int64_t observed_wall_ms = 0;
  std::int64_t completed_wall_ms = 0;        // finish
  std::int64_t elapsed_ms = 0;               // monotonic, begin's admission to finish
  std::string initial_frame_sha256;          // captured by begin
  std::vector<ActionRecord> actions;
  AppExitRecord app_exit;                    // v3 only; absent unless present
  std::string freeze_frame_sha256;           // the display's frame when freeze was accepted
  std::int64_t input_event_count = 0;        // input events dispatched by all actions
  std::string pre_observation_sha256;        // the caller's digest, as sent to observe
  ObservationRecord observation;
  Json claims;                               // the caller's claims object, as sent to finish
  std::vector<ArtifactRecord> artifacts;     // v3 only; the receipt has "artifacts" iff non-empty
  std::optional<BrowserBindingRecord> browser;  // v3 only; the receipt has "browser" iff set
};

// The projection P of a validated action (docs/protocol.md §6): "type", "key" and "paste" keep only
// {"type"}; "hold_key" keeps {"type","ms"}; every other action keeps all its fields (geometry,
// button, direction, amount, ms — none of them secret). Never fails; a non-object yields {}.
Json project_action(const Json& action);

// Builds the receipt: transcript events, stage/transcript/claims digests and receipt_id, then
// verifies it with verify_receipt() as a self-check. Errors: "session-claims" (claims not an
// object or its JCS form > 16 KiB), "receipt-invalid" (an input field is malformed, e.g. a
// digest that is not 64 lowercase hex, an unknown status; the message names the field),
// "receipt-noncanonical" (a projection, actor or claims value holds a float).
Result<Json> build_receipt(const ReceiptInput& input);

// The exact bytes of a receipt file: JCS(receipt) followed by one "\n".
// Error "receipt-noncanonical".
Result<std::string> receipt_file_bytes(const Json& receipt);

// Writes `dir`/receipt.json (0600) atomically with receipt_file_bytes(). Errors:
// "receipt-noncanonical", "fs-error".
Status write_receipt_atomic(const std::string& dir, const Json& receipt);

// The actions.json document of `receipt` (built from `input` by build_receipt):
// {"schema":"evident.actions/v1","session_id","receipt_id","actions":[{"event_index",
// "projection","projection_sha256","elapsed_ms"}]}, one entry per action event in order, each
// projection exactly the object whose H("evident/action-projection/v2", P) is that event's
// projection_sha256 (so it holds no secrets). Errors: "receipt-invalid" (receipt and input
// disagree), "receipt-noncanonical".
Result<Json> build_actions_file(const ReceiptInput& input, const Json& receipt);

// Writes `dir`/actions.json (JCS + "\n", 0600, atomic): what finish leaves in the evidence
// directory besides the frames (receipt.json is written only at close). Errors: as above,
// "fs-error".
Status write_actions_file(const std::string& dir, const ReceiptInput& input, const Json& receipt);

// write_actions_file, then write_receipt_atomic (for tools and tests that make a whole evidence
// directory at once). Errors: as above.
Status write_evidence_files(const std::string& dir, const ReceiptInput& input,
                            const Json& receipt);

}  // namespace evident
