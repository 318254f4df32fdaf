// Files evident owns: private directories (0700) and files (0600), written atomically.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "evident/core/status.h"

namespace evident {

// An `fs-error` for a failed system call on `path`: "WHAT PATH: strerror", retryable when the same
// call can succeed later unchanged (fs_retryable_errno: ENOSPC, EDQUOT, EMFILE, ENFILE, ENOMEM,
// EAGAIN, EINTR), as protocol/evident.json declares for `fs-error`.
bool fs_retryable_errno(int err);
Error fs_error(const std::string& what, const std::string& path, int err);

// Creates `path` and missing parents with mode 0700; an existing final directory must be
// owned by us and is chmod'ed to 0700. Error id: "fs-error".
Status make_private_dir(const std::string& path);

// Writes `bytes` to a temp file beside `path` (0600), fsyncs it, renames it over `path`,
// and fsyncs the directory: a reader sees the old file or the whole new one. "fs-error".
Status write_file_atomic(const std::string& path, std::string_view bytes, unsigned mode = 0600);

// Reads at most `max_bytes`; larger files are refused ("fs-too-large"). "fs-error".
Result<std::string> read_file(const std::string& path, std::size_t max_bytes);

// Removes a directory tree we created. "fs-error".
Status remove_tree(const std::string& path);

// $XDG_RUNTIME_DIR/evident if set and usable, else /tmp/evident-<uid>.
std::string default_runtime_dir();
// $XDG_STATE_HOME/evident, else $HOME/.local/state/evident.
std::string default_state_dir();

}  // namespace evident
