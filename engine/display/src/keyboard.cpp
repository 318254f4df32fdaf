// Keyboard layouts (docs/displays.md, "Keyboard layout"): setxkbmap from x11-xkb-utils runs on a
// display right after it is ready, before anyone else sees it; the result is read back from the
// root window's _XKB_RULES_NAMES (which the server updates when a keymap is loaded by names).
#include <X11/Xatom.h>
#include <X11/Xlib.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>

#undef Status

#include "evident/display/display.h"
#include "evident/display/x11.h"
#include "display_internal.h"

namespace evident {

using namespace display_detail;

std::string read_keyboard_layout(::Display* dpy) {
  if (!dpy) return "";
  const Atom names = XInternAtom(dpy, "_XKB_RULES_NAMES", True);
  if (names == None) return "";
  Atom type = None;
  int format = 0;
  unsigned long count = 0, after = 0;
  unsigned char* data = nullptr;
  if (XGetWindowProperty(dpy, DefaultRootWindow(dpy), names, 0, 1024, False, XA_STRING, &type,
                         &format, &count, &after, &data) != Success || !data) {
    return "";
  }
  // rules \0 model \0 layout \0 variant \0 options
  std::string layout;
  if (format == 8) {
    const std::string all(reinterpret_cast<const char*>(data), count);
    std::size_t start = 0;
    for (int field = 0; field < 2 && start != std::string::npos; ++field) {
      start = all.find('\0', start);
      if (start != std::string::npos) ++start;
    }
    if (start != std::string::npos && start <= all.size()) {
      layout = all.substr(start, all.find('\0', start) - start);
    }
  }
  XFree(data);
  return layout;
}

Status DisplayManager::apply_keyboard_layout(OwnedDisplay& d, const std::string& layout) {
  const char* path_env = std::getenv("PATH");
  auto exe = resolve_executable("setxkbmap", path_env ? path_env : "/usr/bin:/bin");
  if (!exe.ok()) {
    return make_error("display-keyboard-layout",
                      "setxkbmap is not installed (Debian: x11-xkb-utils); the display was not kept");
  }
  Fd devnull(::open("/dev/null", O_RDWR | O_CLOEXEC));
  SpawnSpec spec;
  spec.path = *exe;
  spec.argv = {"setxkbmap", "-layout", layout};
  spec.env = environment_with({"DISPLAY=" + d.info().name, "XAUTHORITY=" + d.auth_file()});
  spec.stdin_fd = devnull.fd;
  spec.stdout_fd = devnull.fd;
  spec.stderr_fd = devnull.fd;
  auto child = spawner_.spawn(spec);
  if (!child.ok()) {
    return make_error("display-keyboard-layout", "setxkbmap could not be started; the display was not kept");
  }
  if (!(*child)->wait_exit(kKeyboardLayoutBoundMs)) {
    (*child)->stop(1000);
    return make_error("display-keyboard-layout",
                      "setxkbmap did not finish within " + std::to_string(kKeyboardLayoutBoundMs) +
                          " ms; the display was not kept");
  }
  const int status = (*child)->reap();
  if (status != 0) {
    return make_error("display-keyboard-layout",
                      "setxkbmap exited with status " + std::to_string(status) +
                          " (an unknown layout name?); the display was not kept");
  }
  std::string got;
  {
    std::lock_guard lock(d.x_mutex());
    got = read_keyboard_layout(d.dpy());
  }
  if (got != layout) {
    return make_error("display-keyboard-layout",
                      "after setxkbmap the server does not report the requested layout; the display was not kept");
  }
  return {};
}

}  // namespace evident
