#include "evident/task/turn.h"

#include <utility>

#include "evident/actions/batch.h"

namespace evident::task {

Result<agents::ModelImage> model_image_of(const agents::Adapter& adapter, const SessionFrame& frame) {
  auto [w, h] = adapter.model_image_size(frame.width, frame.height);
  if (w == frame.width && h == frame.height) {
    agents::ModelImage same;
    same.png = frame.bytes;
    same.sha256 = frame.sha256;
    same.width = frame.width;
    same.height = frame.height;
    return same;
  }
  return agents::scale_png_for_model(frame.bytes, w, h);
}

TurnRun run_turn(SessionLease& lease, const agents::Adapter& adapter, const agents::ParsedTurn& turn,
                 std::int64_t first_index, const FrameSink& sink, const TaskSettle& settle) {
  TurnRun run;
  std::int64_t index = first_index;
  auto fail = [&](Error e) { run.failure = std::move(e); };
  for (std::size_t c = 0; c < turn.calls.size(); ++c) {
    const agents::MappedCall& call = turn.calls[c];
    Json call_result{{"call", static_cast<std::int64_t>(c)}, {"native_actions", call.native_actions},
                     {"status", "not_run"}, {"actions", Json::array()}};
    if (run.failure) {
      run.call_status.push_back(agents::CallStatus::kNotRun);
      run.results.push_back(std::move(call_result));
      continue;
    }
    std::optional<agents::ModelImage> zoom;
    for (const Action& a : call.parsed) {
      if (const auto gone = lease.gone(); gone != SessionLease::Gone::kNothing) {
        fail(gone == SessionLease::Gone::kDisplay
                 ? make_error("session-display-lost", "the task's display is gone")
                 : make_error("app-not-live", "the task's app is no longer running"));
        break;
      }
      SessionActionOutcome out = lease.execute(a, static_cast<int>(index));
      RanAction ran;
      ran.call = c;
      ran.type = to_string(a.type);
      ran.projection = a.projection();
      ran.status = out.status;
      ran.detail = out.detail;
      ran.input_events = out.input_event_count;
      ran.input = out.input_event_count > 0;
      // The model is shown the effect of its input, not a frame raced against the app's repaint:
      // after input the frame waits for the display to settle (task.begin `settle`; default the
      // §4 quiet time and default cap). With settle off the frame is taken at once ("off").
      if (!ran.input) ran.settle = "fixed";
      else if (!settle.enabled) ran.settle = "off";
      else ran.settle = lease.settle(settle.quiet_ms, settle.cap_ms);
      auto frame = lease.capture();
      Json res{{"index", index}, {"type", ran.type}, {"status", out.status}, {"detail", out.detail},
               {"settle", ran.settle}, {"frame_sha256", nullptr}};
      ++index;
      if (!frame) {
        call_result["actions"].push_back(std::move(res));
        fail(lease.display_alive() ? frame.error()
                                   : make_error("session-display-lost", "the task's display is gone"));
        break;
      }
      if (Status s = sink(*frame); !s) {
        call_result["actions"].push_back(std::move(res));
        fail(s.error());
        break;
      }
      ran.frame_sha256 = frame->sha256;
      res["frame_sha256"] = frame->sha256;
      call_result["actions"].push_back(std::move(res));
      run.last_frame = *frame;
      run.actions.push_back(std::move(ran));
      if (out.status == "failed") {
        fail(make_error("task-action-failed", "action " + std::to_string(index - 1) + " (" +
                                                  std::string(to_string(a.type)) + ") failed: " + out.detail));
        break;
      }
      if (a.type == ActionType::kZoom) {
        auto crop = agents::crop_png(frame->bytes, a.x, a.y, a.width, a.height);
        if (!crop) {
          fail(crop.error());
          break;
        }
        auto [w, h] = adapter.model_image_size(crop->width, crop->height);
        if (w != crop->width || h != crop->height) {
          auto scaled = agents::scale_png_for_model(crop->png, w, h);
          if (!scaled) {
            fail(scaled.error());
            break;
          }
          crop = std::move(scaled);
        }
        zoom = std::move(*crop);
      } else {
        zoom.reset();  // the call's image is its last action's
      }
    }
    const bool ran_all = !run.failure;
    // The failure (if any) happened in this call: earlier calls returned before it.
    run.call_status.push_back(ran_all ? agents::CallStatus::kOk : agents::CallStatus::kFailed);
    call_result["status"] = ran_all ? "ok" : "failed";
    run.results.push_back(std::move(call_result));
    if (zoom && ran_all) {
      run.call_images.push_back(std::move(*zoom));
    } else if (run.last_frame) {
      auto img = model_image_of(adapter, *run.last_frame);
      if (!img) {
        if (!run.failure) fail(img.error());
        run.call_images.emplace_back();
      } else {
        run.call_images.push_back(std::move(*img));
      }
    } else {
      run.call_images.emplace_back();
    }
  }
  // Every call is answered: ok with its image, failed with the frame after the failure,
  // not_run (the halt rule) with no image.
  std::vector<agents::CallOutcome> outcomes;
  for (std::size_t c = 0; c < turn.calls.size(); ++c) {
    agents::CallOutcome o;
    o.status = run.call_status[c];
    if (o.status == agents::CallStatus::kFailed && run.failure) o.detail = run.failure->message;
    if (c < run.call_images.size() && !run.call_images[c].png.empty()) {
      o.png = &run.call_images[c].png;
      o.image_width = run.call_images[c].width;
      o.image_height = run.call_images[c].height;
    }
    outcomes.push_back(std::move(o));
  }
  run.tool_results = adapter.tool_results(turn, outcomes);
  return run;
}

}  // namespace evident::task
