#include "task_cli.h"

#include <cstdint>
#include <string>
#include <string_view>

#include "evident/core/sha256.h"
#include "evident/evidence/dsse.h"

namespace evident {
namespace {

constexpr int kMaxDepth = 64;
constexpr std::size_t kMinPlainBase64 = 96;  // shorter strings are text unless they decode to a PNG
constexpr std::string_view kPngSignature{"\x89PNG\r\n\x1a\n", 8};

std::uint32_t be32(std::string_view b, std::size_t at) {
  return (static_cast<std::uint32_t>(static_cast<unsigned char>(b[at])) << 24) |
         (static_cast<std::uint32_t>(static_cast<unsigned char>(b[at + 1])) << 16) |
         (static_cast<std::uint32_t>(static_cast<unsigned char>(b[at + 2])) << 8) |
         static_cast<std::uint32_t>(static_cast<unsigned char>(b[at + 3]));
}

// The summary of a string that carries base64 (nullopt: it is text, kept as it is).
std::optional<std::string> summary_of(const std::string& s) {
  std::string_view text = s;
  bool data_url = false;
  if (text.starts_with("data:")) {
    auto comma = text.find(',');
    if (comma == std::string_view::npos || text.substr(0, comma).find(";base64") == std::string_view::npos) {
      return std::nullopt;
    }
    text = text.substr(comma + 1);
    data_url = true;
  }
  if (text.size() < 8) return std::nullopt;
  auto bytes = base64_decode(text);
  if (!bytes) {
    // Not strict base64. A data URL that claims base64 is still never printed.
    if (data_url) return "<data URL, " + std::to_string(text.size()) + " characters>";
    return std::nullopt;
  }
  const bool png = bytes->size() >= 24 && std::string_view(*bytes).starts_with(kPngSignature) &&
                   std::string_view(*bytes).substr(12, 4) == "IHDR";
  if (!png && !data_url && s.size() < kMinPlainBase64) return std::nullopt;
  const std::string size = std::to_string(bytes->size()) + " bytes, sha256 " + sha256_hex(*bytes);
  if (png) {
    return "<image/png " + std::to_string(be32(*bytes, 16)) + "x" + std::to_string(be32(*bytes, 20)) + ", " +
           size + ">";
  }
  return "<base64, " + size + ">";
}

Json summarize(const Json& v, int depth) {
  if (depth > kMaxDepth) return "<nested too deep>";
  if (v.is_string()) {
    auto s = summary_of(v.get_ref<const std::string&>());
    return s ? Json(*s) : v;
  }
  if (v.is_array()) {
    Json out = Json::array();
    for (const Json& x : v) out.push_back(summarize(x, depth + 1));
    return out;
  }
  if (v.is_object()) {
    Json out = Json::object();
    for (auto it = v.begin(); it != v.end(); ++it) out[it.key()] = summarize(it.value(), depth + 1);
    return out;
  }
  return v;
}

const Json* member(const Json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}
std::string str(const Json& j, const char* key, const std::string& fallback = "?") {
  const Json* m = member(j, key);
  return m && m->is_string() ? m->get<std::string>() : fallback;
}
std::string num(const Json& j, const char* key, const std::string& fallback = "?") {
  const Json* m = member(j, key);
  return m && m->is_number_integer() ? std::to_string(m->get<std::int64_t>()) : fallback;
}

void print_image(std::ostream& out, const char* label, const Json& f) {
  if (!f.is_object()) return;
  out << "  " << label << num(f, "width") << "x" << num(f, "height") << "  " << num(f, "byte_length")
      << " bytes  sha256 " << str(f, "sha256");
  if (const Json* p = member(f, "path"); p && p->is_string()) out << "  " << p->get<std::string>();
  out << "\n";
}

}  // namespace

Json summarize_base64(const Json& v) { return summarize(v, 0); }

void print_task_human(std::ostream& out, const Json& r) {
  out << "task " << str(r, "task_id") << "  " << str(r, "phase") << "  " << str(r, "mode") << "  sequence "
      << num(r, "sequence") << "\n";
  if (const Json* p = member(r, "policy"); p && p->is_object()) {
    out << "  policy   " << str(*p, "adapter") << " (provider " << str(*p, "provider") << ", model "
        << str(*p, "model") << ", declared)\n";
  }
  out << "  turns    " << num(r, "turn_count") << " used, " << num(r, "turns_left") << " left;  actions "
      << num(r, "action_count") << " run, " << num(r, "actions_left") << " left";
  if (const Json* d = member(r, "deadline_ms_left"); d && d->is_number_integer()) {
    out << ";  deadline in " << d->get<std::int64_t>() << " ms";
  }
  out << "\n";
  if (const Json* s = member(r, "settle")) {
    if (s->is_boolean() && !s->get<bool>()) out << "  settle   off\n";
    else if (s->is_object()) out << "  settle   quiet " << num(*s, "quiet_ms") << " ms, cap " << num(*s, "cap_ms") << " ms\n";
  }
  if (const Json* f = member(r, "frame")) print_image(out, "frame    ", *f);
  const Json* f = member(r, "frame");
  const Json* d = member(r, "display_frame");
  if (f && d && d->is_object() && str(*f, "sha256", "") != str(*d, "sha256", "")) print_image(out, "display  ", *d);
  if (const Json* res = member(r, "results"); res && res->is_array()) {
    for (const Json& c : *res) {
      out << "  call " << num(c, "call") << "   " << str(c, "status");
      if (const Json* n = member(c, "native_actions"); n && n->is_array()) {
        out << "  [";
        bool first = true;
        for (const Json& name : *n) {
          out << (first ? "" : ", ") << (name.is_string() ? name.get<std::string>() : "?");
          first = false;
        }
        out << "]";
      }
      out << "\n";
      if (const Json* acts = member(c, "actions"); acts && acts->is_array()) {
        for (const Json& a : *acts) {
          out << "    action " << num(a, "index") << "  " << str(a, "type") << "  " << str(a, "status")
              << "  settle " << str(a, "settle") << "  frame " << str(a, "frame_sha256", "-");
          const std::string detail = str(a, "detail", "");
          if (!detail.empty()) out << "  (" << detail << ")";
          out << "\n";
        }
      }
    }
  }
  if (const Json* t = member(r, "tool_results"); t && !t->is_null()) {
    out << "  tool results (provider-native; images summarised, `--json` has them in full):\n    "
        << dump_json(summarize_base64(*t)) << "\n";
  }
  if (const Json* e = member(r, "result_error"); e && e->is_object()) {
    out << "  result error  " << str(*e, "code") << ": " << str(*e, "message", "") << "\n";
  }
  if (const Json* p = member(r, "retry_prompt"); p && !p->is_null()) {
    out << "  retry prompt  " << dump_json(summarize_base64(*p)) << "\n";
  }
  if (const Json* rc = member(r, "receipt"); rc && rc->is_object()) {
    out << "  receipt  " << str(r, "receipt_id") << "  " << str(r, "receipt_path", "(not written)") << "\n";
    if (const Json* res = member(*rc, "result")) out << "  result   " << dump_json(summarize_base64(*res)) << "\n";
  }
  if (const Json* e = member(r, "ended"); e && e->is_object()) {
    out << "  ended    " << str(*e, "reason");
    if (const Json* err = member(*e, "error"); err && err->is_object()) {
      out << "  " << str(*err, "code") << ": " << str(*err, "message", "");
    }
    if (const Json* ce = member(*e, "cleanup_error"); ce && ce->is_object()) {
      out << "  (cleanup: " << str(*ce, "code") << ")";
    }
    out << "\n";
  }
  if (const Json* dir = member(r, "evidence_dir"); dir && dir->is_string()) {
    out << "  evidence " << dir->get<std::string>() << "\n";
  }
}

}  // namespace evident
