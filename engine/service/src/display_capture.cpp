#include "evident/service/display_capture.h"

#include <string>
#include <utility>

namespace evident {
namespace {

class CaptureExtension final : public DisplayExtension {
 public:
  // Destroyed in reverse order: the watcher before the capturer, as before.
  std::unique_ptr<Capturer> capturer;
  std::unique_ptr<ChangeWatcher> watcher;
};

class CaptureReadiness final : public DisplayReadiness {
 public:
  // While Xvfb starts (~100 ms, on the other core), make and populate the capturer's shared
  // segment: the first frame then costs ~9 ms instead of 12-16 ms. 4 bytes per pixel covers
  // both depths. Without it (shmget refused) the capturer makes its own.
  std::shared_ptr<void> prepare(const DisplayOptions& o) override {
    auto seg = ShmSegment::create(static_cast<std::size_t>(o.width) * o.height * 4, true);
    if (!seg.ok()) return nullptr;
    return std::make_shared<ShmSegment>(std::move(*seg));
  }

  Result<std::unique_ptr<DisplayExtension>> attach(::Display* dpy,
                                                   std::shared_ptr<void> prepared) override {
    CaptureOptions capture_options;
    capture_options.shm = static_cast<ShmSegment*>(prepared.get());
    capture_options.probe = false;  // the first frame, below, is the proof
    auto capturer = Capturer::create(dpy, capture_options);
    if (!capturer.ok()) return capturer.error();
    // The first frame: the whole framebuffer read into the capturer's own buffer (its MIT-SHM
    // segment: the path every later frame takes). Converting it to RGB (grab) would prove
    // nothing more about the display and cost as much again: fresh pages fault at ~5 us each.
    if (auto st = (*capturer)->fetch_frame(); !st.ok()) {
      return make_error("capture-unavailable", "the root window cannot be read: " + st.error().message);
    }
    auto watcher = ChangeWatcher::create(dpy);
    if (!watcher.ok()) return watcher.error();
    auto ext = std::make_unique<CaptureExtension>();
    ext->capturer = std::move(*capturer);
    ext->watcher = std::move(*watcher);
    return std::unique_ptr<DisplayExtension>(std::move(ext));
  }

  StatusLayer probe(DisplayExtension& extension, const std::string& fix) override {
    auto* ext = dynamic_cast<CaptureExtension*>(&extension);
    if (!ext || !ext->capturer) return {"capture", "blocked", "no capturer", fix};
    auto img = ext->capturer->grab();
    if (!img.ok()) return {"capture", "blocked", img.error().message, fix};
    return {"capture", "ready",
            std::string(ext->capturer->using_shm() ? "MIT-SHM" : "XGetImage") + " capture of " +
                std::to_string(img->width) + "x" + std::to_string(img->height),
            ""};
  }
};

CaptureExtension* capture_of(OwnedDisplay& display) {
  return dynamic_cast<CaptureExtension*>(display.extension());
}

}  // namespace

std::shared_ptr<DisplayReadiness> capture_readiness() { return std::make_shared<CaptureReadiness>(); }

Capturer* display_capturer(OwnedDisplay& display) {
  CaptureExtension* c = capture_of(display);
  return c ? c->capturer.get() : nullptr;
}

ChangeWatcher* display_change_watcher(OwnedDisplay& display) {
  CaptureExtension* c = capture_of(display);
  return c ? c->watcher.get() : nullptr;
}

}  // namespace evident
