// Running one parsed agent turn on a session's display (docs/agents.md "Running a turn"): every
// action of every call in order, each followed by a full-display frame; the halt rule (after a
// failed action, a lost display or a dead app nothing more runs, later calls are answered
// not_run, and the task ends); each call answered with its own image (the frame after its last
// action, or its zoom), scaled to the provider's size; the provider-native tool results.
// Pure logic over a SessionLease, so unit tests drive it with a fake display.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "evident/agents/adapter.h"
#include "evident/agents/scale.h"
#include "evident/core/json.h"
#include "evident/core/status.h"
#include "evident/session/backend.h"
#include "evident/session/request.h"

namespace evident::task {

// One action that ran (the transcript's action event, docs/receipts.md, docs/agents.md).
struct RanAction {
  std::size_t call = 0;
  std::string type;               // §4 type (never secret)
  Json projection;                // the receipt projection P (secrets removed)
  std::string status;             // ok | injected | failed
  std::string detail;             // never typed text or key names
  bool input = false;             // events reached the X server
  std::int64_t input_events = 0;
  std::string settle;             // settled | still_loading | fixed | off: the wait before the frame
  std::string frame_sha256;       // the full-display frame taken after it
};

struct TurnRun {
  std::vector<RanAction> actions;
  std::vector<agents::CallStatus> call_status;  // one per call
  std::vector<agents::ModelImage> call_images;  // one per call that ran (the image it answers with)
  Json results = Json::array();   // per call: {"call","native_actions","status","actions":[...]}
  Json tool_results;              // the adapter's provider-native answer to every call
  std::optional<SessionFrame> last_frame;  // the display after the turn (null if none was taken)
  // Set when the turn ended the task: "task-action-failed", "session-display-lost",
  // "app-not-live", capture-* or "image-scale-failed". Nothing ran after it.
  std::optional<Error> failure;
};

// Called with every frame the turn takes, before it is referenced (writes it to the evidence
// directory). An error ends the turn like a capture failure.
using FrameSink = std::function<Status(const SessionFrame&)>;

// Runs `turn` (a kCalls turn, already admitted by the TaskBudget) on `lease`. `first_index` is
// the task-wide index of the turn's first action (executor indices and result indices).
// `settle`: after an action that injected input, the wait before its frame (off: none, the
// outcome recorded as "off").
TurnRun run_turn(SessionLease& lease, const agents::Adapter& adapter, const agents::ParsedTurn& turn,
                 std::int64_t first_index, const FrameSink& sink, const TaskSettle& settle = {});

// The image the model is shown of `frame`: the frame itself, or scaled to the adapter's size.
Result<agents::ModelImage> model_image_of(const agents::Adapter& adapter, const SessionFrame& frame);

}  // namespace evident::task
