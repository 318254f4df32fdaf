// `evident report`: one self-contained HTML page (or a short Markdown summary) of an evidence
// directory — the transcript's timeline with every frame, the pointer geometry of each action
// (from actions.json, each projection re-hashed to its receipt digest before it is drawn), the
// observed frame, the claims, every verification check and the signature status
// (docs/evidence.md). Depends on receipts and core only: no X, no network.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "evident/core/json.h"
#include "evident/core/status.h"
#include "evident/evidence/dsse.h"
#include "evident/receipts/verify.h"

namespace evident {

// Size limits of an evidence directory the report reads (documented in docs/evidence.md;
// over any of them: "report-too-large", checked before any frame is read).
inline constexpr std::size_t kMaxReportFrames = 72;                       // distinct frames
inline constexpr std::size_t kMaxReportFrameBytes = 32u * 1024 * 1024;    // one frame
inline constexpr std::size_t kMaxReportTotalFrameBytes = 96u * 1024 * 1024;  // all frames
inline constexpr std::size_t kMaxReportEnvelopeBytes = 1024 * 1024;       // receipt.dsse.json

enum class ReportFormat { kHtml, kMarkdown };

struct ReportOptions {
  std::string evidence_dir;  // holds receipt.json, actions.json, receipt.dsse.json
  std::string frames_dir;    // where <sha256>.png are; empty: evidence_dir
  std::string key_path;      // --key PUB: authenticate the envelope (signature, subjects, log proof)
  ReportFormat format = ReportFormat::kHtml;
  std::string out_path;      // empty: <evidence_dir>/report.html|report.md; "-": stdout
};

struct ReportFrame {
  std::string sha256;
  bool present = false;   // DIR/<sha256>.png is a regular file within the limits
  bool matches = false;   // its bytes hash to sha256 (only then is it shown)
  std::string bytes;      // the PNG, when it matches
  std::int64_t width = 0, height = 0;  // from IHDR, when it matches
  std::string path;
};

// One transcript event as the report shows it. Everything comes from the receipt (or, for
// `projection` and `elapsed_ms`, from actions.json) and is treated as untrusted text.
struct ReportEvent {
  std::int64_t index = -1;
  std::string kind;               // as in the receipt ("" if not a string)
  std::string action;             // action events: the action type
  std::string status;             // action events: ok | injected
  std::optional<bool> input;      // action events
  std::string frame_sha256;       // "" when absent or not hex64
  Json settle;                    // the event's settle member, if any (else null)
  Json extra;                     // members not shown elsewhere (e.g. an app_exit status)
  std::string commitment;         // v3 action events: the salted commitment (hex64), else ""
  std::optional<std::int64_t> input_events;  // v3 action events
  // Task receipts' turn events (docs/receipts.md §12): one row each.
  std::optional<std::int64_t> turn, call_count;
  std::vector<std::string> native_actions;   // printable names only
  std::string model_image_sha256;            // "" when absent or not hex64
  // actions.json: the projection, shown only when it re-hashes to projection_sha256.
  Json projection;                // null unless projection_state == "ok"
  std::string projection_state;   // action events: ok | mismatch | absent
  std::optional<std::int64_t> elapsed_ms;  // from actions.json (not bound by the receipt)
  std::string when;               // RFC 3339 time for non-action events, "" otherwise
  std::optional<std::int64_t> offset_ms;   // from started_at
};

// The session's video (the receipt's "video" artifact, docs/evidence.md "Video"): shown when its
// file is present and the receipt's artifacts check passed (it hashes as bound).
struct ReportVideo {
  std::string path;                   // <frames dir>/video.webm
  std::int64_t start_offset_ms = 0;   // the video's time 0, in ms after begin's admission
  std::int64_t byte_length = 0;
  std::string sha256;
  bool verified = false;              // the artifacts check passed
};

struct Evidence {
  std::string evidence_dir, frames_dir;
  std::optional<ReportVideo> video;     // the receipt binds a video
  Json receipt;
  bool task = false;                    // an evident.task-receipt/v1 (else a session receipt)
  VerifyReport verify;                  // the receipts verifier, with --frames
  std::vector<VerifyCheck> checks;      // verify's checks, then the report's own (below)
  bool ok = false;                      // every check passed
  bool actions_file_present = false;
  std::vector<ReportEvent> events;
  std::map<std::string, ReportFrame> frames;
  // absent (no receipt.dsse.json) | unchecked (signed, no --key given) | authenticated (--key:
  // every envelope check passed) | failed (--key: an envelope check failed)
  std::string signature_state;
  std::string signature_detail;         // for people
  Json key_id = nullptr;                // the key that verified (authenticated only)
};

// A short phrase for the verdict line: "integrity only: not signed", "signed, not
// authenticated: no --key given", "authenticated by ed25519:…", "NOT authenticated".
std::string signature_phrase(const Evidence& ev);

// Reads and checks an evidence directory. Errors: "report-unreadable" (DIR is not a readable
// directory), "receipt-unreadable"/"receipt-json" (receipt.json), "report-too-large" (a limit
// above). Everything else (a bad digest, a missing frame, a malformed actions.json) is a check.
Result<Evidence> load_evidence(const ReportOptions& options);

// The self-contained page: inline CSS, frames as data: URIs, SVG geometry, no script, no
// external reference; a Content-Security-Policy forbids any load but data: images.
// `link_base_dir`: the output's directory; the video (never embedded: it can be large) is
// linked relative to it, and each timeline row links to its moment (a media fragment, #t=).
std::string render_html(const Evidence& evidence, const std::string& link_base_dir = ".");

// The Markdown summary; frame links are relative to `link_base_dir` (the output's directory).
std::string render_markdown(const Evidence& evidence, const std::string& link_base_dir);

// The `evident report` command: loads, renders, writes (0600, atomic) and prints the result to
// `out` (one JSON object with `json`). Exit 0 when written and every check passed, 1 otherwise
// ("verify-failed" when written with failing checks; the load and write errors above, or
// "fs-error", when nothing was written), 2 for "report-usage".
int run_report_command(const ReportOptions& options, bool json, std::ostream& out,
                       std::ostream& err);

}  // namespace evident
