// Process-wide Xlib set-up and per-connection error bookkeeping. X errors never kill the
// process: protocol errors are recorded per connection, and an I/O error (server gone) marks the
// connection dead through XSetIOErrorExitHandler (libX11 >= 1.7), whose handler returns.
#pragma once

#include <string>

#include "evident/core/status.h"
#include "evident/display/xauth.h"

typedef struct _XDisplay Display;  // Xlib

namespace evident {

// XInitThreads() and the process-wide error handlers, once. Safe to call from anywhere.
void ensure_xlib_initialized();

// Opens a connection to `name` (":N") authenticating with `cookie` (never reads XAUTHORITY:
// XSetAuthorization is process-global, so opens are serialised by one lock). The returned
// connection has the dead-on-I/O-error handler installed. Error: "x-connect-failed".
Result<::Display*> open_x_connection(const std::string& name, const Cookie& cookie);

// Closes a connection opened by open_x_connection and forgets its bookkeeping.
void close_x_connection(::Display* dpy);

// The server is gone (or going) and `dpy` must see no further request: its socket is closed
// without a word to the server and its bookkeeping forgotten; the Display structure (a few KB)
// is kept, reachable and never freed, as close_x_connection does for a dead connection. For any
// connection, opened by open_x_connection or not.
void abandon_x_connection(::Display* dpy);

// True once an I/O error was seen on `dpy` (the server went away), through Xlib or XCB.
// After that, make no further Xlib calls on `dpy` except close_x_connection: some extension
// libraries (XTest) crash on a broken connection.
bool x_connection_dead(::Display* dpy);

// Protocol errors seen on `dpy` since the last call (count), and the last error's text.
struct XErrorRecord {
  int count = 0;
  int last_error_code = 0;
  int last_request_code = 0;
};
XErrorRecord take_x_errors(::Display* dpy);

}  // namespace evident
