// `evident-verify`: `evident verify` as its own small executable that links no X library, for a
// reviewer's machine without an X stack (docs/receipts.md, "Verifying without X").
#include "verify_cli.h"

int main(int argc, char** argv) { return evident::run_verify_program(argc, argv, false); }
