// evident._core: the in-process bridge from Python to evident::Engine. Deliberately tiny: one
// JSON-in/JSON-out call (the same envelope the daemon speaks), so Python and the daemon expose
// exactly the same operations, limits and error codes. The GIL is released for the whole call so
// other Python threads (and Ctrl-C handling in the main thread) keep running during long waits.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <unistd.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "evident/core/json.h"
#include "evident/display/display.h"
#include "evident/service/engine.h"
#ifdef EVIDENT_HAVE_RECEIPTS
#include "evident/receipts/verify.h"
#endif
#ifdef EVIDENT_HAVE_REPORT
#include <sstream>

#include "evident/report/report.h"
#endif

namespace py = pybind11;

namespace {

// Owns one evident::Engine. After close() every call answers `engine-closed` instead of crashing,
// so a Python object that outlives its `with` block fails politely.
class PyEngine {
 public:
  // `warm`: display sizes to keep one pre-started display each for, as [width, height] or
  // [width, height, depth] or [width, height, depth, dpi] (docs/displays.md, warm pool).
  PyEngine(const std::string& state_dir, const std::string& runtime_dir,
           const std::vector<std::vector<int>>& warm) {
    evident::EngineOptions options;
    options.state_dir = state_dir;
    options.runtime_dir = runtime_dir;
    for (const auto& w : warm) {
      if (w.size() < 2 || w.size() > 4) {
        throw py::value_error("warm entries are (width, height[, depth[, dpi]])");
      }
      evident::DisplayOptions d;
      d.width = w[0];
      d.height = w[1];
      if (w.size() > 2) d.depth = w[2];
      if (w.size() > 3) d.dpi = w[3];
      if (!evident::validate_display_options(d).ok()) {
        throw py::value_error("a warm entry is out of range: " +
                              evident::validate_display_options(d).error().message);
      }
      options.warm.push_back({d.width, d.height, d.depth, d.dpi});
    }
    engine_ = std::make_shared<evident::Engine>(std::move(options));
  }

  std::string call(const std::string& request_json) {
    std::shared_ptr<evident::Engine> engine = current();
    if (!engine) return closed_reply();
    return evident::dump_json(engine->call(actor(), std::string_view(request_json)));
  }

  // The reply when the request takes a short, bounded time (evident::Engine::call_inline), else
  // None and nothing ran: the caller then sends it with call() from a thread that can wait.
  std::optional<std::string> call_inline(const std::string& request_json) {
    std::shared_ptr<evident::Engine> engine = current();
    if (!engine) return closed_reply();
    std::optional<evident::Json> reply = engine->call_inline(actor(), std::string_view(request_json));
    if (!reply) return std::nullopt;
    return evident::dump_json(*reply);
  }

  std::shared_ptr<evident::Engine> current() {
    std::lock_guard<std::mutex> lock(mu_);
    return engine_;
  }
  static std::string closed_reply() {
    return evident::dump_json(evident::error_response(
        evident::make_error("engine-closed", "this Engine was closed; create a new one")));
  }
  // Resolved here, never taken from request fields (docs/protocol.md §1).
  static evident::Actor actor() {
    return evident::Actor{evident::Actor::Kind::kInProcess, static_cast<unsigned>(::getuid()),
                          static_cast<int>(::getpid())};
  }

  // Stops everything owned; idempotent. Waits for calls in flight (they hold a reference).
  void close() {
    std::shared_ptr<evident::Engine> engine;
    {
      std::lock_guard<std::mutex> lock(mu_);
      engine.swap(engine_);
    }
    if (engine) engine->shutdown();
  }

  // DisplayManager::wait_warm: true once every warm entry holds a ready display.
  bool wait_warm(std::int64_t timeout_ms) {
    std::shared_ptr<evident::Engine> engine;
    {
      std::lock_guard<std::mutex> lock(mu_);
      engine = engine_;
    }
    return engine && engine->displays().wait_warm(timeout_ms);
  }

  bool closed() {
    std::lock_guard<std::mutex> lock(mu_);
    return !engine_;
  }

 private:
  std::mutex mu_;
  std::shared_ptr<evident::Engine> engine_;
};

#ifdef EVIDENT_HAVE_RECEIPTS
// The C++ verifier (same checks as `evident verify`), result as the CLI's JSON.
std::string verify_receipt_file(const std::string& path, const std::string& frames_dir,
                                const std::string& png_path, const std::string& expect_job,
                                std::optional<std::int64_t> expect_uid) {
  evident::Json out;
  auto loaded = evident::load_receipt_file(path);
  if (!loaded.ok()) {
    return evident::dump_json(evident::error_response(loaded.error()));
  }
  evident::VerifyOptions options;
  options.frames_dir = frames_dir;
  options.png_path = png_path;
  options.expect_job_sha256 = expect_job;
  options.expect_uid = expect_uid;
  evident::VerifyReport report = evident::verify_receipt(*loaded, options);
  out["ok"] = report.ok;
  out["receipt_id"] = report.receipt_id;
  out["checks"] = evident::Json::array();
  for (const auto& check : report.checks) {
    out["checks"].push_back({{"name", check.name}, {"ok", check.ok}, {"detail", check.detail}});
  }
  return evident::dump_json(out);
}
#endif

#ifdef EVIDENT_HAVE_REPORT
// `evident report` in-process: the CLI's --json result as text (docs/evidence.md).
std::string write_report(const std::string& evidence_dir, const std::string& out_path,
                         const std::string& format, const std::string& frames_dir,
                         const std::string& key_path) {
  evident::ReportOptions o;
  o.evidence_dir = evidence_dir;
  o.out_path = out_path;
  o.frames_dir = frames_dir;
  o.key_path = key_path;
  o.format = format == "markdown" ? evident::ReportFormat::kMarkdown : evident::ReportFormat::kHtml;
  std::ostringstream out, err;
  (void)evident::run_report_command(o, true, out, err);
  return out.str();
}
#endif

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "Private bridge to the Evident C++ engine; use the `evident` package instead.";
  m.attr("version") = EVIDENT_PY_VERSION;
  m.attr("max_request_bytes") = evident::Engine::kMaxRequestBytes;

  py::class_<PyEngine>(m, "Engine")
      .def(py::init<const std::string&, const std::string&, const std::vector<std::vector<int>>&>(),
           py::arg("state_dir") = "", py::arg("runtime_dir") = "", py::kw_only(),
           py::arg("warm") = std::vector<std::vector<int>>{})
      .def("wait_warm", &PyEngine::wait_warm, py::arg("timeout_ms"),
           py::call_guard<py::gil_scoped_release>(),
           "True once every warm entry holds a ready display; false on timeout or after close.")
      .def("call", &PyEngine::call, py::arg("request_json"),
           py::call_guard<py::gil_scoped_release>(),
           "One request envelope {\"op\",\"args\"} as JSON text; returns the JSON reply text.")
      .def("call_inline", &PyEngine::call_inline, py::arg("request_json"),
           py::call_guard<py::gil_scoped_release>(),
           "Like call() when the request is short and bounded (ping, a cu.actions batch of bounded "
           "kinds without settle); otherwise None and nothing ran. Releases the GIL.")
      .def("close", &PyEngine::close, py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("closed", &PyEngine::closed);

#ifdef EVIDENT_HAVE_RECEIPTS
  m.def("verify_receipt_file", &verify_receipt_file, py::arg("path"), py::arg("frames_dir") = "",
        py::arg("png_path") = "", py::arg("expect_job_sha256") = "",
        py::arg("expect_uid") = std::nullopt, py::call_guard<py::gil_scoped_release>());
  m.attr("has_verify") = true;
#else
  m.attr("has_verify") = false;
#endif
#ifdef EVIDENT_HAVE_REPORT
  m.def("write_report", &write_report, py::arg("evidence_dir"), py::arg("out_path") = "",
        py::arg("format") = "html", py::arg("frames_dir") = "", py::arg("key_path") = "",
        py::call_guard<py::gil_scoped_release>());
#endif
}
