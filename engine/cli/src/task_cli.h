// Human output of `evident task` (docs/cli.md): a task snapshot summarised for a person. The
// provider-native tool results carry every frame as base64 PNG (up to megabytes per turn); the
// human form never prints base64: each image is shown as its size, byte length and SHA-256
// (the digests match the frame files in the evidence directory). `--json` prints the reply as is.
#pragma once

#include <ostream>

#include "evident/core/json.h"

namespace evident {

// `v` with every string that holds a base64 image (a `data:` URL, or a strict base64 string of a
// PNG or of more than 96 characters) replaced by "<image/png WxH, N bytes, sha256 H>" (or
// "<base64, N bytes, sha256 H>" when it is not a PNG). Bounded: at most 64 levels deep.
Json summarize_base64(const Json& v);

// Writes the summary of a task reply (begin/turn/abort/status snapshot) to `out`. Never throws
// on an unexpected shape: a member that is missing or of another type is left out.
void print_task_human(std::ostream& out, const Json& r);

}  // namespace evident
