// Fuzz target: the offline receipt verifier (engine/receipts), given a receipt document: the
// strict parse `evident verify` does, verify_receipt, and run_verify_command's JSON and human
// output for the same bytes (written to a private temporary file).
// Invariants: the verifier never fails, only reports checks (named, with valid UTF-8 details,
// deterministic, ok exactly when every check is); `evident verify` exits 0 or 1 and prints valid
// UTF-8, its --json output one strict JSON object whose "ok" matches the exit status.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <string_view>

#include "evident/receipts/jcs.h"
#include "evident/receipts/verify.h"
#include "fuzz_check.h"

using namespace evident;

namespace {
std::string g_dir;
std::string g_path;

void cleanup() {
  if (!g_dir.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(g_dir, ec);
  }
}

bool snake_name(const std::string& s) {
  if (s.empty()) return false;
  for (unsigned char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/evident-fuzz-verify-XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr) evident::fuzz::fail("mkdtemp failed");
  g_dir = templ;
  g_path = g_dir + "/receipt.json";
  std::atexit(cleanup);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  auto receipt = parse_json_strict(input, kMaxReceiptFileBytes, "receipt-json");
  bool parsed_ok = receipt.ok();
  bool report_ok = false;
  if (!receipt.ok()) {
    fuzz::require(receipt.error().code == "receipt-json", "receipt parse returned another code");
    fuzz::require_good_error(receipt.error(), input);
  } else {
    VerifyReport report = verify_receipt(*receipt, VerifyOptions{});
    fuzz::require(!report.checks.empty(), "no checks reported");
    std::set<std::string> names;
    bool all = true;
    for (const auto& c : report.checks) {
      fuzz::require(snake_name(c.name), "check name is not snake_case", c.name);
      fuzz::require(names.insert(c.name).second, "check reported twice", c.name);
      fuzz::require(is_valid_utf8(c.detail), "check detail is not valid UTF-8", c.name);
      all = all && c.ok;
    }
    fuzz::require(report.ok == all, "report.ok disagrees with its checks");
    fuzz::require(report.receipt_id.is_string() || report.receipt_id.is_null(), "receipt_id neither string nor null");
    VerifyReport again = verify_receipt(*receipt, VerifyOptions{});
    fuzz::require(again.ok == report.ok && again.checks.size() == report.checks.size(), "verification is not deterministic");
    for (std::size_t i = 0; i < again.checks.size(); ++i) {
      fuzz::require(again.checks[i].name == report.checks[i].name && again.checks[i].ok == report.checks[i].ok &&
                        again.checks[i].detail == report.checks[i].detail,
                    "verification is not deterministic", report.checks[i].name);
    }
    if (report.ok) {
      fuzz::require(report.receipt_id.is_string(), "a verified receipt without a receipt_id");
      fuzz::require(canonicalize(*receipt).ok(), "a verified receipt does not canonicalize");
    }
    report_ok = report.ok;
    fuzz::trace(report.ok ? "verified" : "failed checks");
  }

  // The command, as `evident verify [--json] FILE` runs it.
  {
    std::ofstream f(g_path, std::ios::binary | std::ios::trunc);
    f.write(input.data(), static_cast<std::streamsize>(input.size()));
  }
  std::ostringstream json_out;
  const int status = run_verify_command(g_path, VerifyOptions{}, /*json=*/true, json_out);
  fuzz::require(status == 0 || status == 1, "verify exit status not 0 or 1");
  fuzz::require(status == ((parsed_ok && report_ok) ? 0 : 1), "verify exit status disagrees with the report");
  const std::string text = json_out.str();
  fuzz::require(is_valid_utf8(text), "verify --json printed invalid UTF-8");
  fuzz::require(!text.empty() && text.back() == '\n', "verify --json output is not one line");
  auto printed = parse_json_strict(std::string_view(text).substr(0, text.size() - 1), text.size(),
                                   "internal", kMaxResponseJsonDepth);
  fuzz::require(printed.ok(), "verify --json output is not strict JSON",
                printed.ok() ? "" : printed.error().message);
  fuzz::require(printed->is_object() && printed->value("ok", !report_ok) == (status == 0),
                "verify --json ok disagrees with the exit status");
  if (status != 0) {
    const Json& e = (*printed)["error"];
    fuzz::require(e.is_object() && e["code"].is_string() &&
                      protocol::find_error_code(e["code"].get<std::string>()) != nullptr,
                  "verify --json error code not declared");
  }
  std::ostringstream human_out;
  const int status2 = run_verify_command(g_path, VerifyOptions{}, /*json=*/false, human_out);
  fuzz::require(status2 == status, "verify exit status differs between --json and text");
  fuzz::require(is_valid_utf8(human_out.str()), "verify printed invalid UTF-8");
  return 0;
}
