// The `evident report` command: load, render, write, print the outcome.
#include <filesystem>

#include "evident/core/error_json.h"
#include "evident/core/fs.h"
#include "evident/core/sha256.h"
#include "evident/report/report.h"

namespace evident {

int run_report_command(const ReportOptions& options, bool json, std::ostream& out,
                       std::ostream& err) {
  auto fail = [&](const Error& e, int status) {
    if (json) {
      out << dump_json(error_response(e))
          << "\n";
    } else {
      err << "evident: error [" << e.code << "]: " << e.message << "\n";
    }
    return status;
  };
  const bool to_stdout = options.out_path == "-";
  if (to_stdout && json) {
    return fail(make_error("report-usage", "-o - writes the report to stdout, which --json needs for its result"), 2);
  }
  auto loaded = load_evidence(options);
  if (!loaded.ok()) return fail(loaded.error(), 1);
  const Evidence& ev = *loaded;
  const bool html = options.format == ReportFormat::kHtml;
  std::string path = options.out_path;
  if (path.empty()) path = options.evidence_dir + (html ? "/report.html" : "/report.md");
  std::string link_base = ".";
  if (!to_stdout) {
    std::error_code ec;
    auto parent = std::filesystem::absolute(path, ec).parent_path();
    if (!ec) link_base = parent.string();
  }
  const std::string doc = html ? render_html(ev, link_base) : render_markdown(ev, link_base);
  if (to_stdout) {
    out << doc;
  } else if (auto st = write_file_atomic(path, doc, 0600); !st) {
    return fail(st.error(), 1);
  }

  Json checks = Json::array();
  std::string failed;
  for (const auto& c : ev.checks) {
    checks.push_back(Json{{"name", c.name}, {"ok", c.ok}, {"detail", c.detail}});
    if (!c.ok) failed += (failed.empty() ? "" : ", ") + c.name;
  }
  if (json) {
    Json result{{"ok", ev.ok},
                {"report", {{"path", path},
                            {"format", html ? "html" : "markdown"},
                            {"byte_length", static_cast<std::int64_t>(doc.size())},
                            {"sha256", sha256_hex(doc)}}},
                {"receipt_id", ev.verify.receipt_id},
                {"signature", ev.signature_state},
                {"authenticated", ev.signature_state == "authenticated"},
                {"key_id", ev.key_id},
                {"checks", checks}};
    if (!ev.ok) {
      result["error"] = Json{{"code", "verify-failed"}, {"message", "failed checks: " + failed}, {"retryable", false}};
    }
    out << dump_json(result) << "\n";
  } else {
    std::ostream& o = to_stdout ? err : out;
    if (!to_stdout) o << "wrote " << path << " (" << doc.size() << " bytes)\n";
    if (ev.ok) {
      o << "verified: all " << ev.checks.size() << " checks passed ("
        << signature_phrase(ev) << ")\n";
    } else {
      o << "NOT verified: failed checks: " << failed << "\n";
    }
  }
  return ev.ok ? 0 : 1;
}

}  // namespace evident
