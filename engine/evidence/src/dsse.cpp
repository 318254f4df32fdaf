#include "evident/evidence/dsse.h"

#include <array>
#include <set>

#include "evident/core/fs.h"
#include "evident/core/sha256.h"
#include "evident/receipts/jcs.h"
#include "evident/receipts/receipt.h"
#include "evident/receipts/task_receipt.h"

namespace evident {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// The value of each byte as a base64 digit, -1 for every byte outside the alphabet ('=' too).
constexpr std::array<signed char, 256> kDigitValue = [] {
  std::array<signed char, 256> t{};
  for (auto& v : t) v = -1;
  for (int i = 0; i < 64; ++i) t[static_cast<unsigned char>(kAlphabet[i])] = static_cast<signed char>(i);
  return t;
}();

}  // namespace

std::string dsse_pae(std::string_view payload_type, std::string_view payload) {
  std::string out = "DSSEv1 ";
  out += std::to_string(payload_type.size());
  out += ' ';
  out += payload_type;
  out += ' ';
  out += std::to_string(payload.size());
  out += ' ';
  out += payload;
  return out;
}

std::string base64_encode(std::string_view in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= in.size(); i += 3) {
    unsigned v = (static_cast<unsigned char>(in[i]) << 16) |
                 (static_cast<unsigned char>(in[i + 1]) << 8) | static_cast<unsigned char>(in[i + 2]);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  std::size_t rest = in.size() - i;
  if (rest == 1) {
    unsigned v = static_cast<unsigned char>(in[i]) << 16;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += "==";
  } else if (rest == 2) {
    unsigned v = (static_cast<unsigned char>(in[i]) << 16) | (static_cast<unsigned char>(in[i + 1]) << 8);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view in) {
  if (in.size() % 4 != 0) return std::nullopt;
  if (in.empty()) return std::string();
  // Every quad but the last has four digits; the last may end in "=" or "==" with zero pad bits.
  const std::size_t quads = in.size() / 4;
  const auto* p = reinterpret_cast<const unsigned char*>(in.data());
  std::string out(quads * 3, '\0');
  auto* o = reinterpret_cast<unsigned char*>(out.data());
  for (std::size_t q = 0; q + 1 < quads; ++q, p += 4, o += 3) {
    const int a = kDigitValue[p[0]], b = kDigitValue[p[1]], c = kDigitValue[p[2]], d = kDigitValue[p[3]];
    if ((a | b | c | d) < 0) return std::nullopt;
    const unsigned w = (static_cast<unsigned>(a) << 18) | (static_cast<unsigned>(b) << 12) |
                       (static_cast<unsigned>(c) << 6) | static_cast<unsigned>(d);
    o[0] = static_cast<unsigned char>(w >> 16);
    o[1] = static_cast<unsigned char>(w >> 8);
    o[2] = static_cast<unsigned char>(w);
  }
  const int pad = p[3] != '=' ? 0 : p[2] != '=' ? 1 : 2;
  const int a = kDigitValue[p[0]], b = kDigitValue[p[1]];
  const int c = pad == 2 ? 0 : kDigitValue[p[2]];
  const int d = pad >= 1 ? 0 : kDigitValue[p[3]];
  if ((a | b | c | d) < 0) return std::nullopt;
  const unsigned w = (static_cast<unsigned>(a) << 18) | (static_cast<unsigned>(b) << 12) |
                     (static_cast<unsigned>(c) << 6) | static_cast<unsigned>(d);
  if (pad == 2 && (w & 0xffff) != 0) return std::nullopt;  // non-zero pad bits
  if (pad == 1 && (w & 0xff) != 0) return std::nullopt;
  o[0] = static_cast<unsigned char>(w >> 16);
  o[1] = static_cast<unsigned char>(w >> 8);
  o[2] = static_cast<unsigned char>(w);
  out.resize(out.size() - static_cast<std::size_t>(pad));
  return out;
}

std::vector<std::string> receipt_frame_digests(const Json& receipt) {
  std::set<std::string> set;
  auto add = [&](const Json& v) {
    if (v.is_string() && is_lower_hex(v.get_ref<const std::string&>(), 64)) {
      set.insert(v.get<std::string>());
    }
  };
  if (receipt.is_object()) {
    if (auto t = receipt.find("transcript"); t != receipt.end() && t->is_array()) {
      for (const auto& e : *t) {
        if (!e.is_object()) continue;
        if (auto f = e.find("frame_sha256"); f != e.end()) add(*f);
      }
    }
    if (auto o = receipt.find("observation"); o != receipt.end() && o->is_object()) {
      if (auto s = o->find("sha256"); s != o->end()) add(*s);
    }
  }
  return {set.begin(), set.end()};
}

std::vector<std::pair<std::string, std::string>> receipt_subjects(const Json& receipt,
                                                                  const std::string& receipt_sha256) {
  std::vector<std::pair<std::string, std::string>> out;
  out.emplace_back(std::string(kReceiptFileName), receipt_sha256);
  for (const auto& h : receipt_frame_digests(receipt)) out.emplace_back(h + ".png", h);
  if (!receipt.is_object()) return out;
  auto a = receipt.find("artifacts");
  if (a == receipt.end() || !a->is_array()) return out;
  for (const auto& e : *a) {
    if (!e.is_object()) continue;
    auto name = e.find("name");
    auto sha = e.find("sha256");
    if (name == e.end() || sha == e.end() || !name->is_string() || !sha->is_string() ||
        !is_lower_hex(sha->get_ref<const std::string&>(), 64)) {
      continue;
    }
    out.emplace_back(name->get<std::string>(), sha->get<std::string>());
  }
  return out;
}

std::string_view predicate_type_for(const Json& receipt) {
  return is_task_receipt(receipt) ? kTaskReceiptPredicateType : kSessionPredicateType;
}

Json make_receipt_statement(std::string_view receipt_file_bytes, const Json& receipt,
                            const Json& log) {
  Json subjects = Json::array();
  for (const auto& [name, sha] : receipt_subjects(receipt, sha256_hex(receipt_file_bytes))) {
    subjects.push_back(Json{{"name", name}, {"digest", {{"sha256", sha}}}});
  }
  Json receipt_id = nullptr;
  if (receipt.is_object()) {
    if (auto r = receipt.find("receipt_id"); r != receipt.end()) receipt_id = *r;
  }
  return Json{{"_type", std::string(kStatementType)},
              {"subject", std::move(subjects)},
              {"predicateType", std::string(predicate_type_for(receipt))},
              {"predicate", {{"receipt_id", receipt_id}, {"log", log}}}};
}

Result<Json> sign_envelope(const Ed25519Key& key, std::string_view payload_type,
                           std::string_view payload) {
  auto sig = key.sign(dsse_pae(payload_type, payload));
  if (!sig.ok()) return sig.error();
  return Json{{"payload", base64_encode(payload)},
              {"payloadType", std::string(payload_type)},
              {"signatures", Json::array({Json{{"keyid", key.key_id()}, {"sig", base64_encode(*sig)}}})}};
}

Status write_receipt_envelope(const std::string& dir, std::string_view receipt_file_bytes,
                              const Json& receipt, const Json& log, const Ed25519Key& key) {
  auto payload = canonicalize(make_receipt_statement(receipt_file_bytes, receipt, log));
  if (!payload.ok()) return payload.error();
  auto envelope = sign_envelope(key, kDssePayloadType, *payload);
  if (!envelope.ok()) return envelope.error();
  auto bytes = canonicalize(*envelope);
  if (!bytes.ok()) return bytes.error();
  bytes->push_back('\n');
  return write_file_atomic(dir + "/" + std::string(kEnvelopeFileName), *bytes, 0600);
}

}  // namespace evident
