// evident-bench-verify: in-process receipt verification throughput (target >= 2000 receipts/s for a
// 64-action receipt, without frames). Each iteration parses the receipt bytes strictly and runs
// every check, as `evident verify` does minus process start-up ("receipts_per_second");
// "verify_only_per_second" is verify_receipt() alone on a parsed receipt.
//   evident-bench-verify [--receipt FILE] [--seconds S]
// Without --receipt it builds a synthetic 64-action receipt in memory. Prints one JSON object.
#include <time.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "evident/core/clock.h"
#include "evident/core/fs.h"
#include "evident/core/sha256.h"
#include "evident/receipts/receipt.h"
#include "evident/receipts/verify.h"

namespace {

// CPU time of this thread: on a shared, loaded machine it shows what the work costs, while the
// wall-clock rate also shows what the scheduler allowed.
std::int64_t thread_cpu_us() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

std::string hex64(int seed) { return evident::sha256_hex(std::to_string(seed)); }

std::string synthetic_receipt() {
  evident::ReceiptInput in;
  in.session_id = "ses-" + hex64(1).substr(0, 32);
  in.host_id = "hst-" + hex64(6).substr(0, 32);
  in.binding = {7, ":7", "gen-" + hex64(2).substr(0, 32), "app-" + hex64(3).substr(0, 32), 4242,
                hex64(4), "bench-attempt", hex64(5)};
  in.actor = {{"kind", "local_user"}, {"uid", 1000}};
  in.started_wall_ms = 1767225600000;
  in.frozen_wall_ms = in.started_wall_ms + 5000;
  in.observed_wall_ms = in.frozen_wall_ms + 40;
  in.completed_wall_ms = in.observed_wall_ms + 60;
  in.elapsed_ms = 5100;
  in.initial_frame_sha256 = hex64(10);
  for (int i = 0; i < 64; ++i) {
    evident::ActionRecord a;
    a.type = "click";
    a.projection = {{"type", "click"}, {"x", i}, {"y", 2 * i}};
    a.status = "injected";
    a.input = true;
    a.frame_sha256 = hex64(100 + i);
    a.input_events = 3;
    in.actions.push_back(std::move(a));
  }
  in.freeze_frame_sha256 = hex64(163);
  in.input_event_count = 64 * 3;
  in.pre_observation_sha256 = hex64(200);
  in.observation = {hex64(201), 123456, 1280, 800};
  in.claims = {{"summary", "bench"}, {"ok", true}};
  auto receipt = evident::build_receipt(in);
  if (!receipt.ok()) {
    std::cerr << receipt.error().message << "\n";
    std::exit(1);
  }
  return *evident::receipt_file_bytes(*receipt);
}

}  // namespace

int main(int argc, char** argv) {
  std::string path;
  double seconds = 1.0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--receipt" && i + 1 < argc) {
      path = argv[++i];
    } else if (a == "--seconds" && i + 1 < argc) {
      seconds = std::atof(argv[++i]);
    } else {
      std::cerr << "usage: evident-bench-verify [--receipt FILE] [--seconds S]\n";
      return 2;
    }
  }
  std::string bytes;
  if (path.empty()) {
    bytes = synthetic_receipt();
  } else {
    auto text = evident::read_file(path, evident::kMaxReceiptFileBytes);
    if (!text.ok()) {
      std::cout << evident::dump_json({{"ok", false},
                                       {"error", {{"code", text.error().code},
                                                  {"message", text.error().message},
                                                  {"retryable", false}}}})
                << "\n";
      return 1;
    }
    bytes = *text;
  }
  std::vector<std::int64_t> samples;
  bool all_ok = true;
  std::int64_t action_count = -1;
  const std::int64_t start = evident::steady_us();
  const std::int64_t cpu_start = thread_cpu_us();
  const auto budget = static_cast<std::int64_t>(seconds * 1e6);
  do {
    const std::int64_t t0 = evident::steady_us();
    auto receipt = evident::parse_json_strict(bytes, evident::kMaxReceiptFileBytes, "receipt-json");
    bool ok = receipt.ok();
    if (ok) {
      ok = evident::verify_receipt(*receipt, evident::VerifyOptions{}).ok;
      if (action_count < 0 && (*receipt)["action_count"].is_number_integer()) {
        action_count = (*receipt)["action_count"].get<std::int64_t>();
      }
    }
    all_ok = all_ok && ok;
    samples.push_back(evident::steady_us() - t0);
  } while (evident::steady_us() - start < budget || samples.size() < 10);
  const std::int64_t total = evident::steady_us() - start;
  const std::int64_t cpu_total = thread_cpu_us() - cpu_start;
  // Verification alone, on an already parsed receipt (what in-process callers holding a Json pay).
  std::int64_t verify_runs = 0;
  std::int64_t verify_us = 0;
  if (auto parsed = evident::parse_json_strict(bytes, evident::kMaxReceiptFileBytes, "receipt-json");
      parsed.ok()) {
    const std::int64_t v0 = evident::steady_us();
    do {
      all_ok = evident::verify_receipt(*parsed, evident::VerifyOptions{}).ok && all_ok;
      ++verify_runs;
      verify_us = evident::steady_us() - v0;
    } while (verify_us < budget / 2 || verify_runs < 10);
  }
  std::sort(samples.begin(), samples.end());
  const double median = static_cast<double>(samples[samples.size() / 2]);
  const auto rps = static_cast<std::int64_t>(static_cast<double>(samples.size()) * 1e6 /
                                             static_cast<double>(total));
  evident::Json out{{"ok", all_ok},
                    {"runs", static_cast<std::int64_t>(samples.size())},
                    {"action_count", action_count},
                    {"receipt_bytes", static_cast<std::int64_t>(bytes.size())},
                    {"receipts_per_second", rps},
                    {"us_per_receipt", static_cast<std::int64_t>(median)},
                    {"us_p90", samples[samples.size() * 9 / 10]},
                    {"elapsed_ms", total / 1000},
                    {"receipts_per_cpu_second",
                     cpu_total > 0 ? static_cast<std::int64_t>(static_cast<double>(samples.size()) *
                                                               1e6 / static_cast<double>(cpu_total))
                                   : 0},
                    {"verify_only_per_second",
                     verify_us > 0 ? static_cast<std::int64_t>(static_cast<double>(verify_runs) *
                                                               1e6 / static_cast<double>(verify_us))
                                   : 0}};
  std::cout << evident::dump_json(out) << "\n";
  return all_ok ? 0 : 1;
}
