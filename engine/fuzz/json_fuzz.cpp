// Fuzz target: the strict JSON parser (engine/core parse_json_strict), the only parser evident
// uses on outside input, and the JCS writer (engine/receipts canonicalize) over what it accepts.
// Invariants: an accepted document is within the nesting limit, agrees with nlohmann's own
// parser, and survives dump -> parse and JCS -> parse -> JCS unchanged; a refused one carries the
// caller's code with a valid UTF-8 message that does not echo the input.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "evident/receipts/jcs.h"
#include "fuzz_check.h"

using namespace evident;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  auto parsed = parse_json_strict(input, protocol::kRequestMaxBytes, "request-json");
  if (!parsed.ok()) {
    fuzz::require(parsed.error().code == "request-json", "parser returned another code", parsed.error().code);
    fuzz::require_good_error(parsed.error(), input);
    return 0;
  }
  const Json& v = *parsed;
  fuzz::require(json_depth(v) <= kMaxJsonDepth, "accepted a document deeper than the limit");
  // Strict acceptance implies plain JSON acceptance with the same value.
  Json loose = Json::parse(input.begin(), input.end(), nullptr, /*allow_exceptions=*/false);
  fuzz::require(!loose.is_discarded(), "strict parser accepted what nlohmann refuses");
  fuzz::require(loose == v, "strict and nlohmann parsers disagree on the value");
  fuzz::require_round_trip(v);
  // Everything the strict parser accepts is JCS content (no floats, safe integers, UTF-8).
  auto jcs = canonicalize(v);
  fuzz::require(jcs.ok(), "canonicalize refused a strictly parsed value", jcs.ok() ? "" : jcs.error().message);
  auto again = parse_json_strict(*jcs, jcs->size() + 1, "request-json");
  fuzz::require(again.ok(), "JCS output does not parse strictly");
  fuzz::require(*again == v, "parse(JCS(v)) != v");
  auto jcs2 = canonicalize(*again);
  fuzz::trace("accepted");
  fuzz::require(jcs2.ok() && *jcs2 == *jcs, "JCS is not idempotent");
  return 0;
}
