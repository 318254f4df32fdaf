#include "verify_cli.h"

#include "cli_common.h"

#include <cstdint>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>

#include "evident/core/error_json.h"
#include "evident/core/json.h"
#include "evident/core/status.h"
#include "evident/core/utf8.h"
#include "evident/evidence/signed_verify.h"
#include "evident/receipts/verify.h"

namespace evident {
namespace {

int usage_error(bool json, const std::string& message) {
  if (json) {
    std::cout << dump_json(error_response(make_error("usage", message)))
              << std::endl;
  } else {
    std::cerr << "evident: usage error: " << message << "\n(run: evident verify --help)" << std::endl;
  }
  return 2;
}

}  // namespace

int run_verify_program(int argc, const char* const* argv, bool json) {
  // --json shapes even a usage error, so it is looked for before parsing (not after "--").
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") break;
    if (a == "--json") json = true;
  }
  // Every argument must be valid UTF-8 (a path that cannot be carried in JSON output is refused,
  // never mangled). The argument is not echoed; its position is.
  for (int i = 1; i < argc; ++i) {
    if (!is_valid_utf8(argv[i])) {
      return usage_error(json, "argument " + std::to_string(i) + " is not valid UTF-8");
    }
  }

  CLI::App app{"verify a receipt offline", argc > 0 ? argv[0] : ""};
  std::string receipt;
  VerifyOptions vo;
  std::int64_t expect_uid = -1;
  AuthOptions auth;
  std::string socket;  // `evident`'s global option; accepted and unused (verify is local)
  app.add_flag("--json", json, "print exactly one JSON object");
  app.add_option("--socket", socket, "ignored: verify needs no daemon")->group("");
  app.add_option("RECEIPT", receipt)->required();
  app.add_option("--frames", vo.frames_dir, "the evidence directory with the frames");
  app.add_option("--png", vo.png_path, "a PNG that must be the observed frame");
  app.add_option("--expect-job", vo.expect_job_sha256,
                 "the expected job_sha256 (of a task receipt: its task_sha256)");
  app.add_option("--expect-uid", expect_uid, "the expected actor uid");
  app.add_option("--disclosure", vo.disclosure_path,
                 "a disclosure (evident disclose) to check against the receipt's commitment");
  app.add_option("--prior", vo.prior_path,
                 "the stage task receipt an attest task receipt names (lineage checks)");
  app.add_option("--key", auth.key_files,
                 "a trusted public key (SPKI PEM); authenticates with receipt.dsse.json (repeatable)");
  app.add_option("--trusted-keys", auth.trusted_keys_dir, "a directory of trusted *.pub/*.pem keys");
  app.add_option("--envelope", auth.envelope_path,
                 "the DSSE envelope (default: receipt.dsse.json beside the receipt)");
  if (auto done = parse_command_line(app, argc, argv, json, "evident verify --help")) return *done;
  if (expect_uid >= 0) vo.expect_uid = expect_uid;
  SignedVerifyExtension signed_checks(auth);
  return run_verify_command(receipt, vo, json, std::cout, &signed_checks);
}

}  // namespace evident
