// Fuzz target: the DSSE envelope parser and checks of `evident verify --key` (engine/evidence
// verify_receipt_envelope), given a receipt.dsse.json beside a fixed, valid v3 receipt
// (receipts/golden/v3-three-actions), and the same bytes through the command
// (run_verify_command with the SignedVerifyExtension, --json).
// The trusted keys are the fuzz-only test key engine/fuzz/keys/fuzz-signing.pub (the seeds are
// signed with its private half by make_seeds.py) and a fresh key that signs nothing.
// Invariants: never fails, only reports the six checks in order, each detail valid UTF-8 with no
// echo of the envelope; authenticated exactly when every check passes, and then (checked here
// without the verifier) the payload is a statement whose first subject is the SHA-256 of the
// receipt's bytes, whose signature verifies over the PAE with the test key, and the key_id is the
// test key's; deterministic; the command exits 0 exactly when authenticated and prints one strict
// JSON object that says so.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "evident/core/fs.h"
#include "evident/core/sha256.h"
#include "evident/evidence/dsse.h"
#include "evident/evidence/signed_verify.h"
#include "fuzz_check.h"
#include "fuzz_files.h"

using namespace evident;

namespace {
std::string g_dir;
std::string g_receipt_path;
std::string g_envelope_path;
std::string g_pub_path;
std::string g_receipt_bytes;
Json g_receipt;
std::vector<Ed25519Key> g_keys;


std::string read_or_fail(const std::string& path) {
  auto t = read_file(path, 8 * 1024 * 1024);
  if (!t.ok()) fuzz::fail("cannot read a fixture", path);
  return *t;
}

// A detail with the engine's own names blanked: the constants it checks against (payload and
// statement types, predicate types, file names) and the trusted keys' ids, which a detail may
// name and a valid envelope also holds.
std::string without_own_names(std::string detail) {
  std::vector<std::string> names = {std::string(kDssePayloadType), std::string(kStatementType),
                                    std::string(kSessionPredicateType), "urn:evident:task-receipt:v1",
                                    "receipt.json", "receipt.dsse.json"};
  for (const auto& k : g_keys) names.push_back(k.key_id());
  for (const auto& n : names) {
    for (auto at = detail.find(n); at != std::string::npos; at = detail.find(n, at)) detail.replace(at, n.size(), "#");
  }
  return detail;
}

const char* const kCheckNames[] = {"envelope", "payload_type", "signature", "statement", "subjects", "log_inclusion"};
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const std::string src = EVIDENT_FUZZ_SOURCE_DIR;
  g_dir = fuzz::scratch_dir("dsse");
  g_receipt_bytes = read_or_fail(src + "/receipts/golden/v3-three-actions/receipt.json");
  auto r = parse_json_strict(g_receipt_bytes, g_receipt_bytes.size() + 1, "receipt-json");
  if (!r.ok()) fuzz::fail("the golden receipt does not parse");
  g_receipt = *r;
  g_receipt_path = g_dir + "/receipt.json";
  g_envelope_path = g_dir + "/receipt.dsse.json";
  fuzz::write_bytes(g_receipt_path, g_receipt_bytes);
  g_pub_path = src + "/engine/fuzz/keys/fuzz-signing.pub";
  auto test_key = load_public_key_file(g_pub_path);
  auto other = Ed25519Key::generate();
  if (!test_key.ok() || !other.ok()) fuzz::fail("cannot load the fuzz keys");
  g_keys = {*other, *test_key};
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  fuzz::write_bytes(g_envelope_path, input);
  AuthResult a = verify_receipt_envelope(g_receipt_bytes, g_receipt, g_envelope_path, g_keys);
  fuzz::require(a.checks.size() == 6, "not six envelope checks");
  bool all = true;
  for (std::size_t i = 0; i < 6; ++i) {
    fuzz::require(a.checks[i].name == kCheckNames[i], "envelope checks out of order", a.checks[i].name);
    fuzz::require(is_valid_utf8(a.checks[i].detail), "check detail is not valid UTF-8", a.checks[i].name);
    fuzz::require(!a.checks[i].detail.empty(), "empty check detail", a.checks[i].name);
    fuzz::require_no_echo(input, without_own_names(a.checks[i].detail));
    all = all && a.checks[i].ok;
  }
  fuzz::require(a.authenticated == all, "authenticated disagrees with the checks");
  fuzz::trace(a.authenticated ? "authenticated" : "not authenticated");
  if (a.authenticated) {
    // Independently of the verifier: what an authenticated envelope must be.
    auto env = parse_json_strict(input, input.size() + 1, "internal");
    fuzz::require(env.ok() && env->is_object(), "authenticated an envelope that is not a JSON object");
    auto payload = base64_decode((*env)["payload"].get<std::string>());
    fuzz::require(payload.has_value(), "authenticated a payload that is not base64");
    auto statement = parse_json_strict(*payload, payload->size() + 1, "internal");
    fuzz::require(statement.ok(), "authenticated a statement that is not JSON");
    const Json& subject0 = (*statement)["subject"][0];
    fuzz::require(subject0["name"] == "receipt.json" &&
                      subject0["digest"]["sha256"] == sha256_hex(g_receipt_bytes),
                  "authenticated a statement about other bytes");
    auto sig = base64_decode((*env)["signatures"][0]["sig"].get<std::string>());
    fuzz::require(sig.has_value() && g_keys[1].verify(dsse_pae((*env)["payloadType"].get<std::string>(), *payload), *sig),
                  "authenticated a signature the test key did not make");
    fuzz::require(a.key_id == g_keys[1].key_id(), "authenticated with the wrong key_id");
  }
  AuthResult again = verify_receipt_envelope(g_receipt_bytes, g_receipt, g_envelope_path, g_keys);
  fuzz::require(again.authenticated == a.authenticated && again.checks.size() == a.checks.size(),
                "envelope verification is not deterministic");
  for (std::size_t i = 0; i < a.checks.size(); ++i) {
    fuzz::require(again.checks[i].ok == a.checks[i].ok && again.checks[i].detail == a.checks[i].detail,
                  "envelope verification is not deterministic", a.checks[i].name);
  }

  // `evident verify --json --key fuzz-signing.pub receipt.json` (the receipt's own checks pass).
  AuthOptions options;
  options.key_files = {g_pub_path};
  SignedVerifyExtension ext(options);
  std::ostringstream out;
  const int status = run_verify_command(g_receipt_path, VerifyOptions{}, /*json=*/true, out, &ext);
  fuzz::require(status == (a.authenticated ? 0 : 1), "verify --key exit status disagrees with the checks");
  const std::string text = out.str();
  fuzz::require(is_valid_utf8(text) && !text.empty() && text.back() == '\n', "verify --json output is not one line");
  auto printed = parse_json_strict(std::string_view(text).substr(0, text.size() - 1), text.size(), "internal",
                                   kMaxResponseJsonDepth);
  fuzz::require(printed.ok() && printed->is_object(), "verify --json output is not a strict JSON object");
  fuzz::require(printed->value("authenticated", !a.authenticated) == a.authenticated,
                "verify --json authenticated disagrees");
  return 0;
}
