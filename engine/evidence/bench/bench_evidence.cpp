// evident-bench-evidence [--entries N] [--receipt DIR] [--only sign|verify|append]: the costs of
// signed evidence, printed as one JSON object (--only measures one part; the bench rows sign_close,
// verify_signed and log_append each run one) (docs/receipts.md §8–§9, docs/performance.md):
//   sign_us           statement + JCS + Ed25519 over the PAE of a 64-action receipt (no file)
//   envelope_write_us the same plus the atomic, fsync'ed receipt.dsse.json write
//   verify_us         strict parse + every receipt check + every envelope check (signature and
//                     inclusion proof) of that receipt, in-process, files read each time (median);
//                     verify_per_second = 10^6 / verify_us (judged on the median, like every bench
//                     row), verify_throughput_per_second the wall-clock rate of the 2 s loop,
//                     envelope_verify_us the envelope checks alone
//   append_us         RunLog::append (fsync'ed) on a synthetic log of N entries (default 10^6),
//                     append_nosync_us the same without fsync (all integers)
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "evident/core/clock.h"
#include "evident/core/fs.h"
#include "evident/core/json.h"
#include "evident/evidence/dsse.h"
#include "evident/evidence/runlog.h"
#include "evident/evidence/session_evidence.h"
#include "evident/evidence/signed_verify.h"
#include "evident/receipts/jcs.h"
#include "evident/receipts/verify.h"

using namespace evident;

namespace {

// Integer microseconds: no floats in evident's JSON.
std::int64_t median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : static_cast<std::int64_t>(v[v.size() / 2] + 0.5);
}

Json entry(std::uint64_t i) {
  char id[40];
  std::snprintf(id, sizeof id, "ses-%032llx", static_cast<unsigned long long>(i));
  return Json{{"kind", "session"}, {"id", id}, {"attempt_id", "bench"}, {"job_sha256", std::string(64, 'a')},
              {"outcome", "aborted"}, {"receipt_id", nullptr}, {"ended_at", "2026-12-01T20:00:00.000Z"}};
}

// Writes a log of n entries in RunLog's file format without n signatures.
void synthesize(const std::string& state, std::uint64_t n, const Ed25519Key& key) {
  std::string dir = state + "/log";
  (void)make_private_dir(dir);
  std::FILE* e = std::fopen((dir + "/entries.jsonl").c_str(), "wb");
  std::FILE* l = std::fopen((dir + "/leaves.bin").c_str(), "wb");
  CompactRange range;
  std::uint64_t bytes = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    std::string line = *canonicalize(entry(i));
    Hash32 h = merkle_leaf_hash(line);
    line += "\n";
    std::fwrite(line.data(), 1, line.size(), e);
    std::fwrite(h.data(), 1, 32, l);
    bytes += line.size();
    (void)range.append(h);
  }
  std::fclose(e);
  std::fclose(l);
  Json compact = Json::array();
  for (const auto& h : range.nodes) compact.push_back(hash_hex(h));
  Json state_json{{"tree_size", n}, {"entries_bytes", bytes}, {"compact", compact},
                  {"head", *sign_tree_head(key, n, range.root(), "2026-12-01T20:00:00.000Z")}};
  (void)write_file_atomic(dir + "/state.json", dump_json(state_json) + "\n", 0600);
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t entries = 1000000;
  std::string only;
  std::string receipt_dir = std::string(EVIDENT_SOURCE_DIR) + "/receipts/golden/sixty-four-actions";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--entries") entries = std::stoull(argv[i + 1]);
    else if (a == "--receipt") receipt_dir = argv[i + 1];
    else if (a == "--only") only = argv[i + 1];
  }
  auto part = [&](const char* name) { return only.empty() || only == name; };
  namespace fs = std::filesystem;
  std::string tmp = (fs::temp_directory_path() / ("evident-bench-evidence-" + std::to_string(::getpid()))).string();
  std::string evidence = tmp + "/evidence";
  (void)make_private_dir(evidence);
  fs::copy_file(receipt_dir + "/receipt.json", evidence + "/receipt.json");
  std::string bytes = *read_receipt_bytes(evidence + "/receipt.json");
  Json receipt = *parse_json_strict(bytes, kMaxReceiptFileBytes, "x");

  SessionEvidence ev(tmp + "/state");
  Ed25519Key key = *ev.key();
  (void)ev.seal_closed(evidence, receipt, 1767225600000);
  Json log = *parse_json_strict(*base64_decode((*parse_json_strict(*read_file(evidence + "/receipt.dsse.json", 1 << 20), 1 << 20, "x"))["payload"].get<std::string>()), 1 << 20, "x");
  Json log_member = log["predicate"]["log"];

  std::vector<double> sign, write;
  for (int i = 0; i < (part("sign") ? 300 : 0); ++i) {
    std::int64_t t0 = steady_us();
    auto payload = *canonicalize(make_receipt_statement(bytes, receipt, log_member));
    auto env = sign_envelope(key, kDssePayloadType, payload);
    std::int64_t t1 = steady_us();
    sign.push_back(static_cast<double>(t1 - t0));
    if (i < 50) {
      std::int64_t w0 = steady_us();
      (void)write_receipt_envelope(evidence, bytes, receipt, log_member, key);
      write.push_back(static_cast<double>(steady_us() - w0));
    }
  }
  // The envelope on disk now carries the real log member again.
  std::vector<Ed25519Key> keys{key};
  int verified = 0;
  bool all_ok = true;
  std::vector<double> verify_us, envelope_us;
  std::int64_t v0 = steady_us();
  while (part("verify") && (steady_us() - v0 < 2000000 || verified < 50)) {
    std::int64_t t0 = steady_us();
    auto b = read_receipt_bytes(evidence + "/receipt.json");
    auto r = parse_json_strict(*b, kMaxReceiptFileBytes, "receipt-json");
    VerifyReport rep = verify_receipt(*r, VerifyOptions{});
    std::int64_t t1 = steady_us();
    AuthResult auth = verify_receipt_envelope(*b, *r, evidence + "/receipt.dsse.json", keys);
    std::int64_t t2 = steady_us();
    verify_us.push_back(static_cast<double>(t2 - t0));
    envelope_us.push_back(static_cast<double>(t2 - t1));
    all_ok = all_ok && rep.ok && auth.authenticated;
    ++verified;
  }
  double verify_per_second = verified ? verified / ((steady_us() - v0) / 1e6) : 0;
  std::int64_t verify_median = median(verify_us);

  std::string big = tmp + "/big";
  std::vector<double> append, append_nosync;
  double synth_s = 0;
  bool log_ok = true;
  if (part("append")) {
    std::int64_t s0 = steady_us();
    synthesize(big, entries, key);
    synth_s = (steady_us() - s0) / 1e6;
    RunLog runlog(big);
    for (int i = 0; i < 200; ++i) {
      std::int64_t t0 = steady_us();
      auto r = runlog.append(entry(entries + i), key, /*sync=*/i % 2 == 0);
      double us = static_cast<double>(steady_us() - t0);
      all_ok = all_ok && r.ok();
      (i % 2 == 0 ? append : append_nosync).push_back(us);
    }
    Json checks = runlog.verify(key);
    log_ok = std::all_of(checks.begin(), checks.end(), [](const Json& c) { return c["ok"].get<bool>(); });
  }
  (void)remove_tree(tmp);
  Json out{{"sign_us", median(sign)},
           {"envelope_write_us", median(write)},
           {"verify_throughput_per_second", static_cast<std::int64_t>(verify_per_second)},
           {"verify_us", verify_median},
           {"verify_per_second", verify_median > 0 ? 1000000 / verify_median : 0},
           {"envelope_verify_us", median(envelope_us)},
           {"log_entries", entries},
           {"synthesize_ms", static_cast<std::int64_t>(synth_s * 1000)},
           {"append_us", median(append)},
           {"append_nosync_us", median(append_nosync)},
           {"log_verify_ok", log_ok},
           {"ok", all_ok}};
  std::cout << out.dump() << std::endl;
  return all_ok && log_ok ? 0 : 1;
}
