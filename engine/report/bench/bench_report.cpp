// evident-bench-report: load + verify + render of an evidence directory in-process (target:
// `evident report` of the 64-action golden <= 1 s).
//   evident-bench-report --dir DIR [--frames DIR] [--runs N] [--format html|markdown]
// Prints one JSON object: runs, median_us, p90_us, byte_length, checks_ok, ok (median within
// the target).
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "evident/core/clock.h"
#include "evident/report/report.h"

int main(int argc, char** argv) {
  evident::ReportOptions o;
  int runs = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i], v = argv[i + 1];
    if (a == "--dir") o.evidence_dir = v;
    else if (a == "--frames") o.frames_dir = v;
    else if (a == "--runs") runs = std::max(1, std::atoi(v.c_str()));
    else if (a == "--format") o.format = v == "markdown" ? evident::ReportFormat::kMarkdown : evident::ReportFormat::kHtml;
    else { std::cerr << "usage: evident-bench-report --dir DIR [--frames DIR] [--runs N] [--format html|markdown]\n"; return 2; }
  }
  if (o.evidence_dir.empty()) { std::cerr << "--dir is required\n"; return 2; }
  std::vector<std::int64_t> us;
  std::size_t bytes = 0;
  bool checks_ok = true;
  for (int i = 0; i < runs; ++i) {
    std::int64_t t0 = evident::steady_us();
    auto ev = evident::load_evidence(o);
    if (!ev.ok()) { std::cerr << ev.error().code << ": " << ev.error().message << "\n"; return 1; }
    std::string doc = o.format == evident::ReportFormat::kHtml ? evident::render_html(*ev)
                                                               : evident::render_markdown(*ev, ".");
    us.push_back(evident::steady_us() - t0);
    bytes = doc.size();
    checks_ok = checks_ok && ev->ok;
  }
  std::sort(us.begin(), us.end());
  std::int64_t median = us[us.size() / 2], p90 = us[std::min(us.size() - 1, us.size() * 9 / 10)];
  bool ok = median <= 1000000;
  std::cout << "{\"runs\":" << runs << ",\"median_us\":" << median << ",\"p90_us\":" << p90
            << ",\"byte_length\":" << bytes
            << ",\"checks_ok\":" << (checks_ok ? "true" : "false") << ",\"ok\":" << (ok ? "true" : "false") << "}\n";
  return ok ? 0 : 1;
}
