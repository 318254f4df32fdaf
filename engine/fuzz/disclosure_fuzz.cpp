// Fuzz target: disclosures (receipt v3 salted commitments), against a fixed, valid v3 receipt
// (receipts/golden/v3-three-actions: a click, a committed `type`, a committed `key`).
// Byte 0 picks the input's role, the rest is the file:
//   even: a disclosure file, as `evident verify --disclosure FILE` reads it (load_disclosure_file,
//         check_disclosure, run_verify_command);
//   odd:  the private commitments record <state>/commitments/<session_id>.json, as
//         `evident disclose RECEIPT --action N` reads it (disclose_action, N = -1..4).
// Invariants: refusals carry their documented codes with good messages, which never contain a
// secret value of the record; a disclosure passes exactly when (checked here without the
// verifier) it names this receipt and an action whose commitment is H(salt, value) of the same
// action kind; `evident verify --disclosure` exits 0 exactly then; disclose_action returns only
// a disclosure that passes those checks, for the action asked.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <sstream>
#include <string>
#include <string_view>

#include "evident/core/fs.h"
#include "evident/evidence/commitments.h"
#include "evident/receipts/commitment.h"
#include "evident/receipts/jcs.h"
#include "evident/receipts/verify.h"
#include "fuzz_check.h"
#include "fuzz_files.h"

using namespace evident;

namespace {
std::string g_dir;
std::string g_state;
std::string g_receipt_path;
std::string g_disclosure_path;
std::string g_record_path;
Json g_receipt;



// The action-th action event of the receipt, or null.
const Json* action_event(std::int64_t index) {
  std::int64_t seen = 0;
  for (const Json& e : g_receipt["transcript"]) {
    if (e.value("kind", "") == "action" && seen++ == index) return &e;
  }
  return nullptr;
}

// What a valid disclosure of this receipt is, without check_disclosure.
bool discloses(const Json& d) {
  if (!d.is_object() || d.size() != 6 || d.value("schema", "") != kDisclosureSchema) return false;
  if (d["receipt_id"] != g_receipt["receipt_id"] || !d["action_index"].is_number_integer()) return false;
  const Json* e = action_event(d["action_index"].get<std::int64_t>());
  if (e == nullptr || !e->contains("commitment") || (*e)["action"] != d["action"]) return false;
  if (!d["salt"].is_string() || !d["value"].is_string()) return false;
  auto c = commitment_digest(d["salt"].get<std::string>(), d["value"].get<std::string>());
  return c.ok() && (*e)["commitment"] == *c;
}

// The string values of a parsed record (the secrets a message must not carry). A value the
// fuzzer copied from the engine's own message text (e.g. "ceipt (it ha") is found in the
// message without being carried by it: the leak test is that the message changes when the
// record's values are blanked. `again(blanked)` answers the same request for the blanked record.
void require_no_record_values(const Json& record, const std::string& message,
                              const std::function<std::string(const Json&)>& again) {
  if (!record.is_object() || !record.contains("actions") || !record["actions"].is_array()) return;
  bool found = false;
  for (const Json& a : record["actions"]) {
    if (!a.is_object()) continue;
    auto v = a.find("value");
    if (v == a.end() || !v->is_string() || v->get_ref<const std::string&>().size() < 4) continue;
    found = found || message.find(v->get_ref<const std::string&>()) != std::string::npos;
  }
  if (!found) return;
  Json blanked = record;
  for (Json& a : blanked["actions"]) {
    if (a.is_object() && a.contains("value") && a["value"].is_string()) a["value"] = "";
  }
  fuzz::require(again(blanked) == message, "a message carries a secret value of the record");
}
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const std::string src = EVIDENT_FUZZ_SOURCE_DIR;
  g_dir = fuzz::scratch_dir("disclosure");
  auto bytes = read_file(src + "/receipts/golden/v3-three-actions/receipt.json", 8 * 1024 * 1024);
  if (!bytes.ok()) fuzz::fail("cannot read the golden receipt");
  auto r = parse_json_strict(*bytes, bytes->size() + 1, "receipt-json");
  if (!r.ok() || !verify_receipt(*r, VerifyOptions{}).ok) fuzz::fail("the golden receipt does not verify");
  g_receipt = *r;
  g_receipt_path = g_dir + "/receipt.json";
  fuzz::write_bytes(g_receipt_path, *bytes);
  g_disclosure_path = g_dir + "/disclosure.json";
  g_state = g_dir + "/state";
  g_record_path = commitments_path(g_state, g_receipt["session_id"].get<std::string>());
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(g_record_path).parent_path(), ec);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const bool record_mode = (data[0] & 1) != 0;
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);

  if (!record_mode) {
    fuzz::write_bytes(g_disclosure_path, input);
    auto d = load_disclosure_file(g_disclosure_path);
    bool expect_ok = false;
    if (!d.ok()) {
      fuzz::require_good_error(d.error(), input, {"disclosure-unreadable", "disclosure-invalid"});
    } else {
      fuzz::require(disclosure_shape_problem(*d).empty(), "loaded a disclosure of the wrong shape");
      auto checks = check_disclosure(g_receipt, *d);
      fuzz::require(checks.size() == 3, "not three disclosure checks");
      bool all = true;
      for (const auto& c : checks) {
        fuzz::require(is_valid_utf8(c.detail) && !c.detail.empty(), "bad disclosure check detail", c.name);
        fuzz::require(c.detail.find(d->value("value", std::string())) == std::string::npos ||
                          d->value("value", std::string()).size() < 4,
                      "a check detail carries the disclosed value", c.name);
        all = all && c.ok;
      }
      expect_ok = discloses(*d);
      fuzz::require(all == expect_ok, "the disclosure checks disagree with the commitment");
      fuzz::trace(all ? "disclosed" : "disclosure refused");
    }
    VerifyOptions o;
    o.disclosure_path = g_disclosure_path;
    std::ostringstream out;
    const int status = run_verify_command(g_receipt_path, o, /*json=*/true, out);
    fuzz::require(status == (expect_ok ? 0 : 1),
                  "verify --disclosure exit status disagrees");
    const std::string text = out.str();
    fuzz::require(is_valid_utf8(text) && !text.empty(), "verify --disclosure printed nothing or invalid UTF-8");
    return 0;
  }

  fuzz::write_bytes(g_record_path, input);
  auto record = parse_json_strict(input, input.size() + 1, "internal");
  for (std::int64_t n = -1; n <= 4; ++n) {
    auto d = disclose_action(g_state, g_receipt, n);
    if (!d.ok()) {
      fuzz::require_good_error(d.error(), input, {"disclosure-action", "disclosure-unavailable"});
      if (record.ok()) {
        require_no_record_values(*record, d.error().message, [&](const Json& blanked) {
          auto bytes = canonicalize(blanked);
          if (!bytes.ok()) return std::string();
          fuzz::write_bytes(g_record_path, *bytes);
          auto r = disclose_action(g_state, g_receipt, n);
          fuzz::write_bytes(g_record_path, input);
          return r.ok() ? std::string() : r.error().message;
        });
      }
      continue;
    }
    fuzz::trace("disclosed", std::to_string(n));
    fuzz::require(disclosure_shape_problem(*d).empty(), "disclose_action wrote a malformed disclosure");
    fuzz::require((*d)["action_index"] == n, "disclose_action disclosed another action");
    fuzz::require(discloses(*d), "disclose_action wrote a disclosure that does not open the commitment");
    fuzz::require_round_trip(*d);
  }
  return 0;
}
