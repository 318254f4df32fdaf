// evident._core: the in-process bridge from Python to evident::Engine. Deliberately tiny: one
// JSON-in/JSON-out call (the same envelope the daemon speaks), so Python and the daemon expose
// exactly the same operations, limits and error codes. The GIL is released for the whole call so
// other Python threads (and Ctrl-C handling in the main thread) keep running during long waits.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <unistd.h>

#include <cmath>
#include <cstdint>
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

// The object path (docs/python.md "The GIL and Ctrl-C", docs/performance.md "The per-call
// cost"): a request envelope given as Python objects becomes the engine's Json directly, and the
// reply becomes Python objects, with no JSON text on either side. It must give exactly what the
// text path gives: evident.engine encodes the envelope with json (compact separators,
// ensure_ascii=False, allow_nan=False), the engine parses that text strictly within
// kMaxRequestBytes, and the reply's dump_json text is decoded by json. So EnvelopeValue takes
// only values whose text the strict parser would accept unchanged and builds the same Json:
// exact dict (str keys) / list / tuple / str (valid UTF-8) / int within ±(2^53−1) / bool / None,
// nesting within kMaxJsonDepth, and a text of at most kMaxRequestBytes (counted as json would
// write it). Anything else (floats, other key types, subclasses, surrogates, deeper, larger,
// other types, cycles) makes it give up before the engine sees anything; the caller then sends
// the text, and the strict parser (or json's encoder) judges it with the text path's own codes
// and messages.
class EnvelopeValue {
 public:
  bool convert(PyObject* o, evident::Json* out) { return value(o, out, 0); }

 private:
  static constexpr std::size_t kLimit = evident::Engine::kMaxRequestBytes;

  bool add(std::size_t n) {
    bytes_ += n;
    return bytes_ <= kLimit;
  }

  // A str as json writes it (ensure_ascii=False): UTF-8, with '"' and '\\' and the control
  // characters escaped (\b \f \n \r \t as two characters, the others as \u00XX).
  bool string(PyObject* o, std::string* out) {
    Py_ssize_t n = 0;
    const char* s = PyUnicode_AsUTF8AndSize(o, &n);
    if (s == nullptr) {  // lone surrogates: the text path's caster raises
      PyErr_Clear();
      return false;
    }
    std::size_t text = static_cast<std::size_t>(n) + 2;
    for (Py_ssize_t i = 0; i < n; ++i) {
      const auto c = static_cast<unsigned char>(s[i]);
      if (c < 0x20) {
        text += (c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t') ? 1 : 5;
      } else if (c == '"' || c == '\\') {
        text += 1;
      }
    }
    if (!add(text)) return false;
    out->assign(s, static_cast<std::size_t>(n));
    return true;
  }

  bool value(PyObject* o, evident::Json* out, int depth) {
    if (o == Py_None) {
      *out = nullptr;
      return add(4);
    }
    if (o == Py_True || o == Py_False) {
      *out = o == Py_True;
      return add(o == Py_True ? 4 : 5);
    }
    if (PyLong_CheckExact(o)) {
      int overflow = 0;
      const long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
      if (overflow != 0 || v > evident::kMaxSafeInteger || v < -evident::kMaxSafeInteger) {
        PyErr_Clear();
        return false;
      }
      // The parser's number types: non-negative unsigned, negative signed.
      unsigned long long magnitude = v < 0 ? static_cast<unsigned long long>(-v)
                                           : static_cast<unsigned long long>(v);
      std::size_t digits = 1;
      while (magnitude >= 10) {
        magnitude /= 10;
        ++digits;
      }
      if (v < 0) {
        *out = static_cast<std::int64_t>(v);
        return add(digits + 1);
      }
      *out = static_cast<std::uint64_t>(v);
      return add(digits);
    }
    if (PyUnicode_CheckExact(o)) {
      std::string s;
      if (!string(o, &s)) return false;
      *out = std::move(s);
      return true;
    }
    const bool list = PyList_CheckExact(o);
    if (list || PyTuple_CheckExact(o)) {
      if (depth >= evident::kMaxJsonDepth) return false;  // the parser's check as it opens
      const Py_ssize_t n = list ? PyList_GET_SIZE(o) : PyTuple_GET_SIZE(o);
      if (!add(n == 0 ? 2 : static_cast<std::size_t>(n) + 1)) return false;  // [ , , ]
      *out = evident::Json::array();
      auto& items = out->get_ref<evident::Json::array_t&>();
      items.reserve(static_cast<std::size_t>(n));
      // Nothing below runs Python code, so the list cannot change while it is read.
      for (Py_ssize_t i = 0; i < n; ++i) {
        items.emplace_back();
        if (!value(list ? PyList_GET_ITEM(o, i) : PyTuple_GET_ITEM(o, i), &items.back(),
                   depth + 1)) {
          return false;
        }
      }
      return true;
    }
    if (PyDict_CheckExact(o)) {
      if (depth >= evident::kMaxJsonDepth) return false;
      const Py_ssize_t n = PyDict_GET_SIZE(o);
      if (!add(n == 0 ? 2 : 2 * static_cast<std::size_t>(n) + 1)) return false;  // { : , : }
      *out = evident::Json::object();
      auto& members = out->get_ref<evident::Json::object_t&>();
      Py_ssize_t pos = 0;
      PyObject* key = nullptr;
      PyObject* item = nullptr;
      while (PyDict_Next(o, &pos, &key, &item)) {
        if (!PyUnicode_CheckExact(key)) return false;  // json would turn it into a string
        std::string k;
        if (!string(key, &k)) return false;
        auto [it, inserted] = members.try_emplace(std::move(k));
        if (!inserted || !value(item, &it->second, depth + 1)) return false;
      }
      return true;
    }
    return false;  // floats, subclasses and every other type: the text path
  }

  std::size_t bytes_ = 0;
};

// The reply as the objects json.loads(dump_json(reply)) gives (same values, types and key
// order: nlohmann keeps object members sorted and dump writes them in that order). False when
// the reply holds what dump_json writes with a substitution (a string that is not valid UTF-8,
// a non-finite number, a binary value): the caller then answers with dump_json's text.
bool reply_string(const std::string& s, py::object* out) {
  PyObject* str = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), nullptr);
  if (str == nullptr) {
    if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) throw py::error_already_set();
    PyErr_Clear();
    return false;
  }
  *out = py::reinterpret_steal<py::object>(str);
  return true;
}

bool reply_object(const evident::Json& v, py::object* out) {
  using T = evident::Json::value_t;
  switch (v.type()) {
    case T::null:
      *out = py::none();
      return true;
    case T::boolean:
      *out = py::bool_(v.get<bool>());
      return true;
    case T::number_integer:
      *out = py::reinterpret_steal<py::object>(PyLong_FromLongLong(v.get<std::int64_t>()));
      break;
    case T::number_unsigned:
      *out = py::reinterpret_steal<py::object>(PyLong_FromUnsignedLongLong(v.get<std::uint64_t>()));
      break;
    case T::number_float: {
      const double d = v.get<double>();
      if (!std::isfinite(d)) return false;
      *out = py::reinterpret_steal<py::object>(PyFloat_FromDouble(d));
      break;
    }
    case T::string:
      return reply_string(v.get_ref<const std::string&>(), out);
    case T::array: {
      const auto& items = v.get_ref<const evident::Json::array_t&>();
      py::list list(items.size());
      for (std::size_t i = 0; i < items.size(); ++i) {
        py::object item;
        if (!reply_object(items[i], &item)) return false;
        PyList_SET_ITEM(list.ptr(), static_cast<Py_ssize_t>(i), item.release().ptr());
      }
      *out = std::move(list);
      return true;
    }
    case T::object: {
      py::dict dict;
      for (const auto& [key, member] : v.get_ref<const evident::Json::object_t&>()) {
        py::object k, item;
        if (!reply_string(key, &k) || !reply_object(member, &item)) return false;
        if (PyDict_SetItem(dict.ptr(), k.ptr(), item.ptr()) != 0) throw py::error_already_set();
      }
      *out = std::move(dict);
      return true;
    }
    default:  // binary, discarded: never in a reply
      return false;
  }
  if (!*out) throw py::error_already_set();
  return true;
}

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

  // The object path of call_inline (EnvelopeValue above): the envelope {"op","args"} as
  // Python objects. Returns the reply as Python objects (or as text when it holds a value json
  // would decode differently from the Json), None when the request is not one that runs inline
  // (nothing ran: send its text with call()), or False when the envelope must go as text
  // (nothing ran: call_inline with its text answers exactly, refusals included). The GIL is
  // held while converting and released while the engine runs.
  py::object call_inline_object(const py::object& envelope) {
    evident::Json request;
    if (!EnvelopeValue().convert(envelope.ptr(), &request)) return py::bool_(false);
    std::optional<evident::Json> reply;
    {
      py::gil_scoped_release release;
      std::shared_ptr<evident::Engine> engine = current();
      if (!engine) {
        reply = closed_error();
      } else {
        reply = engine->call_inline_value(actor(), request);
      }
    }
    if (!reply) return py::none();
    py::object out;
    if (reply_object(*reply, &out)) return out;
    return py::str(evident::dump_json(*reply));
  }

  std::shared_ptr<evident::Engine> current() {
    std::lock_guard<std::mutex> lock(mu_);
    return engine_;
  }
  static evident::Json closed_error() {
    return evident::error_response(
        evident::make_error("engine-closed", "this Engine was closed; create a new one"));
  }
  static std::string closed_reply() { return evident::dump_json(closed_error()); }
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
      .def("call_inline_object", &PyEngine::call_inline_object, py::arg("envelope"),
           "call_inline without JSON text: the envelope {\"op\",\"args\"} as Python objects. "
           "The reply as Python objects (or its JSON text), None when the request does not run "
           "inline, False when the envelope must be sent as text (floats, non-str keys, "
           "subclasses, too deep or large...); nothing ran in either case. Releases the GIL "
           "while the engine runs.")
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
