// The `verify` command line, the one implementation behind both `evident verify` and the X-free
// `evident-verify` executable (docs/cli.md, docs/receipts.md): same arguments, same output, same
// exit status. It links only receipts, evidence and core (no X library; checked by the
// `evident_front_links_no_x` test).
#pragma once

namespace evident {

// `argv[0]` names the program (for --help: "evident verify" or "evident-verify"); the rest are
// the arguments after it. `json`: a --json already seen before the word `verify`. Returns the
// exit status: 0 every check passed, 1 a failure (verify-failed, receipt-unreadable, ...), 2 a
// usage error. Output goes to stdout (stderr for human usage errors).
int run_verify_program(int argc, const char* const* argv, bool json);

}  // namespace evident
