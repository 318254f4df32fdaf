// Rendering an Evidence as one self-contained HTML page or a Markdown summary. Every string
// from the evidence directory is untrusted: HTML-escaped (or Markdown-escaped) before output,
// and geometry is drawn only from integers and known enum values of verified projections.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <filesystem>
#include <set>
#include <string_view>

#include "evident/core/markup.h"
#include "evident/report/report.h"
#include "report_internal.h"

namespace evident {
namespace {

using report_detail::int_member;
using report_detail::member;
using report_detail::string_member;

std::string base64(std::string_view in) {
  static const char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= in.size(); i += 3) {
    std::uint32_t v = (std::uint32_t{static_cast<unsigned char>(in[i])} << 16) |
                      (std::uint32_t{static_cast<unsigned char>(in[i + 1])} << 8) |
                      std::uint32_t{static_cast<unsigned char>(in[i + 2])};
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(kAlphabet[(v >> 6) & 63]);
    out.push_back(kAlphabet[v & 63]);
  }
  if (i + 1 == in.size()) {
    std::uint32_t v = std::uint32_t{static_cast<unsigned char>(in[i])} << 16;
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out += "==";
  } else if (i + 2 == in.size()) {
    std::uint32_t v = (std::uint32_t{static_cast<unsigned char>(in[i])} << 16) |
                      (std::uint32_t{static_cast<unsigned char>(in[i + 1])} << 8);
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(kAlphabet[(v >> 6) & 63]);
    out.push_back('=');
  }
  return out;
}


std::string pretty(const Json& v) {
  return v.dump(2, ' ', false, Json::error_handler_t::replace);
}

std::string num(std::int64_t v) { return std::to_string(v); }

std::string url_path(const std::string& path) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : path) {
    if (std::isalnum(c) || c == '/' || c == '.' || c == '-' || c == '_' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

// `path` relative to `base_dir` when it can be (else as is), as a URL path.
std::string relative_href(const std::string& path, const std::string& base_dir) {
  std::error_code ec;
  auto rel = std::filesystem::relative(std::filesystem::absolute(path, ec), std::filesystem::absolute(base_dir, ec), ec);
  return url_path(ec || rel.empty() ? path : rel.generic_string());
}

// Seconds into the video of an event at `event_ms` after begin (never before the video's start),
// with millisecond precision: "1.234".
std::string video_seconds(std::int64_t event_ms, std::int64_t start_offset_ms) {
  const std::int64_t t = std::max<std::int64_t>(0, event_ms - start_offset_ms);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%lld.%03lld", static_cast<long long>(t / 1000), static_cast<long long>(t % 1000));
  return buf;
}

std::string short_sha(const std::string& sha) { return sha.size() > 12 ? sha.substr(0, 12) : sha; }

std::optional<std::int64_t> geom(const Json& p, std::string_view key) {
  auto v = int_member(p, key);
  if (!v || *v < -1000000 || *v > 1000000) return std::nullopt;
  return v;
}

std::string known(const std::string& value, std::initializer_list<std::string_view> allowed) {
  for (auto a : allowed) {
    if (value == a) return value;
  }
  return value.empty() ? "" : "?";
}

std::string kind_label(const std::string& kind) {
  if (kind == "initial_frame") return "initial frame";
  if (kind == "app_exit") return "app exit";
  if (kind == "result") return "result (the policy's final answer)";
  return kind.empty() ? "(unknown event)" : kind;
}

std::string describe_action(const ReportEvent& e);

// Plain-text description of a task's turn event (escaped by the caller): "turn 2: 1 call
// (left_click)", or "turn 3: final answer".
std::string describe_turn(const ReportEvent& e) {
  std::string out = "turn " + (e.turn ? num(*e.turn) : std::string("?"));
  if (!e.call_count) return out;
  if (*e.call_count == 0) return out + ": final answer (no calls)";
  out += ": " + num(*e.call_count) + (*e.call_count == 1 ? " call" : " calls");
  if (!e.native_actions.empty()) {
    std::string names;
    for (const auto& n : e.native_actions) names += (names.empty() ? "" : ", ") + n;
    out += " (" + names + ")";
  }
  return out;
}

std::string describe_event(const ReportEvent& e) {
  if (e.kind == "action") return describe_action(e);
  if (e.kind == "turn") return describe_turn(e);
  return kind_label(e.kind);
}

// Plain-text description of an action event (escaped by the caller). Only verified projection
// values are used; secrets never reach a projection.
std::string describe_action(const ReportEvent& e) {
  const std::string type = e.action.empty() ? "(unknown action)" : e.action;
  if (e.projection_state != "ok") return type;
  const Json& p = e.projection;
  auto x = geom(p, "x"), y = geom(p, "y");
  std::string button = known(string_member(p, "button"), {"left", "right", "middle"});
  std::string at = (x && y) ? " at (" + num(*x) + ", " + num(*y) + ")" : "";
  if (type == "click" || type == "double_click" || type == "triple_click") {
    return type + at + (button.empty() ? "" : ", " + button + " button");
  }
  if (type == "move_mouse") return "move_mouse to" + (at.empty() ? std::string() : at.substr(3));
  if (type == "drag") {
    auto sx = geom(p, "start_x"), sy = geom(p, "start_y"), ex = geom(p, "end_x"), ey = geom(p, "end_y");
    if (sx && sy && ex && ey) {
      return "drag (" + num(*sx) + ", " + num(*sy) + ") \u2192 (" + num(*ex) + ", " + num(*ey) + ")" +
             (button.empty() ? "" : ", " + button + " button");
    }
    return type;
  }
  if (type == "scroll") {
    std::string dir = known(string_member(p, "direction"), {"up", "down", "left", "right"});
    auto amount = geom(p, "amount");
    return "scroll " + dir + (amount ? " \u00d7" + num(*amount) : "") + at;
  }
  if (type == "wait" || type == "hold_key") {
    auto ms = geom(p, "ms");
    return type + (ms ? " " + num(*ms) + " ms" : "") + (type == "hold_key" ? " (key not recorded)" : "");
  }
  if (type == "type") return "type (text not recorded)";
  if (type == "key") return "key (key name not recorded)";
  return type;
}

// SVG elements for a verified projection over a W x H frame ("" when it has no geometry).
std::string svg_geometry(const ReportEvent& e, std::int64_t w, std::int64_t h) {
  if (e.projection_state != "ok") return "";
  const Json& p = e.projection;
  const std::string& type = e.action;
  // Sizes in frame pixels, proportional to the frame (the page scales it to its column).
  const std::int64_t ri = std::max<std::int64_t>(4, std::max(w, h) / 50);
  const double r = static_cast<double>(ri);
  const std::int64_t font = std::max<std::int64_t>(6, std::max(w, h) / 45);
  const std::string fs = num(font);
  std::string out;
  auto stroke = [](const std::string& shape) {
    // A white halo under the colored stroke keeps the mark visible on any background.
    return "<g class=\"halo\">" + shape + "</g><g class=\"mark\">" + shape + "</g>";
  };
  auto label = [&](std::int64_t x, std::int64_t y) {
    // Above-right of the mark, or below it when that would leave the frame.
    std::int64_t ty = y - ri - 2 - font < 0 ? y + ri + 2 + font : y - ri - 2;
    return "<text x=\"" + num(x + ri + 2) + "\" y=\"" + num(ty) + "\" font-size=\"" + fs +
           "\">" + num(e.index) + "</text>";
  };
  auto ring = [&](std::int64_t x, std::int64_t y, std::int64_t radius) {
    return "<circle cx=\"" + num(x) + "\" cy=\"" + num(y) + "\" r=\"" + num(radius) + "\"/>";
  };
  auto line = [&](std::int64_t x1, std::int64_t y1, std::int64_t x2, std::int64_t y2) {
    return "<line x1=\"" + num(x1) + "\" y1=\"" + num(y1) + "\" x2=\"" + num(x2) + "\" y2=\"" +
           num(y2) + "\"/>";
  };
  auto arrow_head = [&](std::int64_t x1, std::int64_t y1, std::int64_t x2, std::int64_t y2) {
    double dx = static_cast<double>(x2 - x1), dy = static_cast<double>(y2 - y1);
    double len = std::sqrt(dx * dx + dy * dy);
    if (len < 1.0) return std::string();
    dx /= len;
    dy /= len;
    double bx = static_cast<double>(x2) - r * dx, by = static_cast<double>(y2) - r * dy;
    auto pt = [](double a, double b) {
      return num(static_cast<std::int64_t>(std::lround(a))) + "," + num(static_cast<std::int64_t>(std::lround(b)));
    };
    return "<polygon class=\"head\" points=\"" + pt(static_cast<double>(x2), static_cast<double>(y2)) + " " +
           pt(bx - dy * r / 2, by + dx * r / 2) + " " + pt(bx + dy * r / 2, by - dx * r / 2) + "\"/>";
  };
  auto x = geom(p, "x"), y = geom(p, "y");
  if ((type == "click" || type == "double_click" || type == "triple_click") && x && y) {
    int rings = type == "click" ? 1 : type == "double_click" ? 2 : 3;
    std::string shape;
    for (int i = 0; i < rings; ++i) shape += ring(*x, *y, ri - i * ri / 4);
    shape += line(*x - 2 * ri, *y, *x - ri / 2, *y) + line(*x + ri / 2, *y, *x + 2 * ri, *y) +
             line(*x, *y - 2 * ri, *x, *y - ri / 2) + line(*x, *y + ri / 2, *x, *y + 2 * ri);
    out = stroke(shape) + label(*x, *y);
  } else if (type == "move_mouse" && x && y) {
    out = stroke(ring(*x, *y, ri / 2) + line(*x - ri, *y, *x + ri, *y) + line(*x, *y - ri, *x, *y + ri)) +
          label(*x, *y);
  } else if (type == "drag") {
    auto sx = geom(p, "start_x"), sy = geom(p, "start_y"), ex = geom(p, "end_x"), ey = geom(p, "end_y");
    if (sx && sy && ex && ey) {
      out = stroke(ring(*sx, *sy, ri / 2) + line(*sx, *sy, *ex, *ey) + arrow_head(*sx, *sy, *ex, *ey)) +
            label(*sx, *sy);
    }
  } else if (type == "scroll" && x && y) {
    std::string dir = string_member(p, "direction");
    std::int64_t dx = dir == "left" ? -1 : dir == "right" ? 1 : 0;
    std::int64_t dy = dir == "up" ? -1 : dir == "down" ? 1 : 0;
    std::string shape = ring(*x, *y, ri / 2);
    if (dx != 0 || dy != 0) {
      std::int64_t ex = *x + dx * 3 * ri, ey = *y + dy * 3 * ri;
      shape += line(*x, *y, ex, ey) + arrow_head(*x, *y, ex, ey);
    }
    out = stroke(shape) + label(*x, *y);
  } else if (type == "zoom" && x && y) {
    auto zw = geom(p, "width"), zh = geom(p, "height");
    if (zw && zh) {
      out = stroke("<rect x=\"" + num(*x) + "\" y=\"" + num(*y) + "\" width=\"" + num(*zw) +
                   "\" height=\"" + num(*zh) + "\"/>") + label(*x, *y);
    }
  }
  if (out.empty()) return "";
  return "<g class=\"geom\" data-geometry=\"" + xml_escape(type) + "\">" + out + "</g>";
}

const ReportFrame* frame_of(const Evidence& ev, const std::string& sha) {
  auto it = ev.frames.find(sha);
  return it == ev.frames.end() ? nullptr : &it->second;
}

std::string figure(const Evidence& ev, const std::string& sha, const std::string& caption,
                   const ReportEvent* geometry_of) {
  const ReportFrame* f = sha.empty() ? nullptr : frame_of(ev, sha);
  std::string out = "<figure class=\"shot\">";
  if (f && f->matches) {
    out += "<div class=\"frame f-" + sha + "\" data-frame-sha256=\"" + sha + "\" style=\"aspect-ratio:" +
           num(f->width) + "/" + num(f->height) + "\" role=\"img\" aria-label=\"frame " + short_sha(sha) +
           "\">";
    std::string g = geometry_of ? svg_geometry(*geometry_of, f->width, f->height) : "";
    if (!g.empty()) {
      out += "<svg viewBox=\"0 0 " + num(f->width) + " " + num(f->height) +
             "\" preserveAspectRatio=\"none\">" + g + "</svg>";
    }
    out += "</div><figcaption>" + xml_escape(caption) + " \u00b7 <code>" + short_sha(sha) + "</code> \u00b7 " +
           num(f->width) + "\u00d7" + num(f->height) + "</figcaption>";
  } else {
    std::string why = sha.empty() ? "no frame named"
                      : !f || !f->present ? "frame missing from the evidence directory"
                                          : "frame does not match its digest (not shown)";
    out += "<div class=\"frame missing\" data-frame-sha256=\"" + xml_escape(sha) + "\">" + why +
           "</div><figcaption>" + xml_escape(caption) + (sha.empty() ? "" : " \u00b7 <code>" + short_sha(sha) + "</code>") +
           "</figcaption>";
  }
  return out + "</figure>";
}

std::string status_badge(const std::string& status) {
  std::string cls = status == "ok" ? "ok" : status == "injected" ? "injected" : "failed";
  std::string title = status == "ok"        ? "the intended effect was verified"
                      : status == "injected" ? "the events reached the X server; the effect is not verified"
                                             : "not ok";
  return "<span class=\"badge " + cls + "\" title=\"" + title + "\">" + xml_escape(status.empty() ? "?" : status) +
         "</span>";
}

std::string offset_text(const ReportEvent& e) {
  if (e.elapsed_ms) return "t+" + num(*e.elapsed_ms) + " ms";
  if (e.offset_ms) return "t+" + num(*e.offset_ms) + " ms";
  return "";
}

std::string settle_text(const Json& settle) {
  // A session action event records its outcome as a string (docs/receipts.md §13).
  if (settle.is_string()) {
    std::string outcome = known(settle.get<std::string>(), {"settled", "still_loading", "fixed", "off"});
    return "settle: " + (outcome.empty() ? std::string("?") : outcome);
  }
  if (!settle.is_object()) return "";
  std::string outcome = known(string_member(settle, "outcome"), {"settled", "still_loading", "fixed", "off"});
  auto ms = int_member(settle, "elapsed_ms");
  return "settle: " + (outcome.empty() ? std::string("?") : outcome) + (ms ? " after " + num(*ms) + " ms" : "");
}

constexpr std::string_view kCss = R"css(
:root{color-scheme:light;--ok:#1a7f37;--warn:#9a6700;--bad:#cf222e;--line:#d0d7de;--muted:#57606a}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1f2328;background:#f6f8fa}
main{max-width:1400px;margin:0 auto;padding:16px 24px 48px}
h1{font-size:22px;margin:8px 0}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid var(--line);padding-bottom:4px}
code,pre{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace}
pre{background:#fff;border:1px solid var(--line);padding:10px;overflow:auto;max-height:480px;white-space:pre-wrap;word-break:break-word}
.verdict{font-size:16px;font-weight:600;padding:10px 14px;border-radius:6px;color:#fff}
.verdict.ok{background:var(--ok)}.verdict.fail{background:var(--bad)}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px;margin:12px 0}
dl.meta dt{color:var(--muted)}dl.meta dd{margin:0;word-break:break-all}
table{border-collapse:collapse;background:#fff;width:100%}
td,th{border:1px solid var(--line);padding:4px 8px;text-align:left;vertical-align:top}
tr.check.fail td{background:#ffebe9}
.badge{display:inline-block;border-radius:10px;padding:0 8px;color:#fff;font-size:12px;font-weight:600}
.badge.ok{background:var(--ok)}.badge.injected{background:var(--warn)}.badge.failed{background:var(--bad)}
ol.timeline{list-style:none;padding:0;margin:0}
li.event{background:#fff;border:1px solid var(--line);border-radius:6px;margin:10px 0;padding:10px 12px}
li.event .head{display:flex;flex-wrap:wrap;gap:6px 14px;align-items:baseline;margin-bottom:8px}
li.event .idx{font-weight:700}li.event .kind{font-weight:600}li.event .time{color:var(--muted)}
li.event .note{color:var(--muted);font-size:12px}
li.event .note.bad{color:var(--bad);font-weight:600}
.pair{display:grid;grid-template-columns:1fr 1fr;gap:12px}
.single{max-width:50%}
.big{max-width:min(100%,1100px)}
figure.shot{margin:0}
figcaption{font-size:12px;color:var(--muted);margin-top:2px}
.frame{position:relative;width:100%;background-size:100% 100%;background-repeat:no-repeat;border:1px solid var(--line);image-rendering:pixelated}
.frame svg{position:absolute;inset:0;width:100%;height:100%;overflow:hidden}
.frame.missing{aspect-ratio:4/3;display:flex;align-items:center;justify-content:center;background:repeating-linear-gradient(45deg,#ffebe9,#ffebe9 10px,#fff 10px,#fff 20px);color:var(--bad);font-weight:600}
.geom .halo *{fill:none;stroke:#fff;stroke-width:7;vector-effect:non-scaling-stroke}
.geom .mark *{fill:none;stroke:#d3186b;stroke-width:3;vector-effect:non-scaling-stroke}
.geom .halo .head{fill:#fff}.geom .mark .head{fill:#d3186b}
.geom text{fill:#d3186b;stroke:#fff;stroke-width:0.15em;paint-order:stroke;font-weight:700;font-family:system-ui,sans-serif}
)css";

}  // namespace

std::string render_html(const Evidence& ev, const std::string& link_base_dir) {
  const Json& r = ev.receipt;
  // The video is linked, never embedded, and only when it hashes as the receipt binds it.
  const std::string video_href = ev.video && ev.video->verified ? relative_href(ev.video->path, link_base_dir) : "";
  // A task receipt is named by its task_id (docs/receipts.md §12).
  const std::string session_id = string_member(r, ev.task ? "task_id" : "session_id");
  std::string h;
  h.reserve(64 * 1024);
  h += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
       "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; "
       "style-src 'unsafe-inline'" + std::string(video_href.empty() ? "" : "; media-src 'self' file:") + "\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
       "<meta name=\"generator\" content=\"evident report\">\n<title>Evident evidence: " +
       xml_escape(session_id.empty() ? (ev.task ? "(no task id)" : "(no session id)") : session_id) + "</title>\n<style>";
  h += kCss;
  for (const auto& [sha, f] : ev.frames) {
    if (f.matches) h += ".f-" + sha + "{background-image:url(data:image/png;base64," + base64(f.bytes) + ")}\n";
  }
  h += "</style></head>\n<body><main>\n<h1>Evident evidence</h1>\n";

  // Verdict.
  std::vector<std::string> failed;
  for (const auto& c : ev.checks) {
    if (!c.ok) failed.push_back(c.name);
  }
  if (ev.ok) {
    h += "<p class=\"verdict ok\" id=\"verdict\" data-ok=\"true\">Verified: all " + num(static_cast<std::int64_t>(ev.checks.size())) +
         " checks passed (" + xml_escape(signature_phrase(ev)) + ")</p>\n";
  } else {
    std::string names;
    for (const auto& n : failed) names += (names.empty() ? "" : ", ") + n;
    h += "<p class=\"verdict fail\" id=\"verdict\" data-ok=\"false\">NOT verified: " +
         num(static_cast<std::int64_t>(failed.size())) + " of " + num(static_cast<std::int64_t>(ev.checks.size())) +
         " checks failed (" + xml_escape(names) + ")</p>\n";
  }

  // The binding and counters.
  const Json* binding = member(r, "binding");
  const Json* actor = member(r, "actor");
  auto row = [&](const std::string& name, const std::string& value) {
    h += "<dt>" + xml_escape(name) + "</dt><dd>" + value + "</dd>";
  };
  auto text_or_dash = [&](const std::string& s) { return s.empty() ? std::string("\u2014") : "<code>" + xml_escape(s) + "</code>"; };
  auto int_or_dash = [&](const Json* o, std::string_view k) {
    auto v = o ? int_member(*o, k) : std::nullopt;
    return v ? num(*v) : std::string("\u2014");
  };
  h += "<dl class=\"meta\">";
  row(ev.task ? "task" : "session", text_or_dash(session_id));
  row("receipt", text_or_dash(string_member(r, "receipt_id")));
  row("schema", text_or_dash(string_member(r, "schema")));
  if (const Json* engine = member(r, "engine")) {
    row("engine", xml_escape(string_member(*engine, "name") + " " + string_member(*engine, "version")));
    // v3 / tasks: the machine's id (docs/receipts.md §8), as the receipt states it.
    if (member(*engine, "host_id")) row("host", text_or_dash(string_member(*engine, "host_id")));
  }
  if (ev.task) {
    row("mode", text_or_dash(string_member(r, "mode")));
    if (const Json* policy = member(r, "policy")) {
      row("policy", "adapter " + text_or_dash(string_member(*policy, "adapter")) + " \u00b7 provider " +
                        text_or_dash(string_member(*policy, "provider")) + " \u00b7 model " +
                        text_or_dash(string_member(*policy, "model")) + " (declared by the caller)");
    }
    row("task sha256", text_or_dash(string_member(r, "task_sha256")));
    if (!string_member(r, "prior_receipt_id").empty()) {
      row("prior receipt", text_or_dash(string_member(r, "prior_receipt_id")));
    }
    row("turns", int_or_dash(&r, "turn_count") + " turns, " + int_or_dash(&r, "call_count") + " calls, " +
                     int_or_dash(&r, "invalid_result_count") + " invalid final answers");
  }
  if (binding) {
    row("display", xml_escape(string_member(*binding, "display_name")) + " (id " + int_or_dash(binding, "display_id") +
                       ", " + text_or_dash(string_member(*binding, "generation")) + ")");
    row("app", "pid " + int_or_dash(binding, "app_pid") + " \u00b7 " + text_or_dash(string_member(*binding, "app_id")) +
                   " \u00b7 argv sha256 " + text_or_dash(string_member(*binding, "app_argv_sha256")));
    row("attempt", text_or_dash(string_member(*binding, "attempt_id")));
    if (!ev.task) row("job sha256", text_or_dash(string_member(*binding, "job_sha256")));
  }
  // v3 sessions that bound a browser workspace (docs/receipts.md §15): what begin checked live.
  if (const Json* browser = member(r, "browser")) {
    const Json* viewport = member(*browser, "viewport");
    row("browser", text_or_dash(string_member(*browser, "workspace_id")) + " \u00b7 " +
                       xml_escape(string_member(*browser, "browser_version")) + " \u00b7 viewport " +
                       int_or_dash(viewport, "width") + "\u00d7" + int_or_dash(viewport, "height") +
                       " \u00b7 page target " + text_or_dash(string_member(*browser, "target_id")) +
                       " \u00b7 profile sha256 " + text_or_dash(string_member(*browser, "profile_sha256")));
  }
  if (actor) row("actor", "<code>" + xml_escape(actor->dump(-1, ' ', false, Json::error_handler_t::replace)) + "</code>");
  row("started", xml_escape(string_member(r, "started_at")));
  row("completed", xml_escape(string_member(r, "completed_at")) + " (" + int_or_dash(&r, "elapsed_ms") + " ms)");
  row("actions", int_or_dash(&r, "action_count") + " actions, " + int_or_dash(&r, "input_event_count") +
                     " input events, " + int_or_dash(&r, "post_observation_input_event_count") +
                     " after the observation");
  if (ev.video) {
    row("video", video_href.empty()
                     ? std::string("<span class=\"note bad\">bound by the receipt, but video.webm is missing or altered</span>")
                     : "<a href=\"" + video_href + "\">video.webm</a> (" + num(ev.video->byte_length) + " bytes, sha256 <code>" +
                           short_sha(ev.video->sha256) + "</code>; its start is t+" + num(ev.video->start_offset_ms) + " ms)");
  }
  h += "</dl>\n";

  // Checks.
  h += "<h2 id=\"checks\">Verification</h2>\n<table class=\"checks\"><thead><tr><th>result</th><th>check</th><th>detail</th></tr></thead><tbody>\n";
  for (const auto& c : ev.checks) {
    h += "<tr class=\"check " + std::string(c.ok ? "ok" : "fail") + "\" data-check=\"" + xml_escape(c.name) + "\" data-ok=\"" +
         (c.ok ? "true" : "false") + "\"><td>" + (c.ok ? "<span class=\"badge ok\">ok</span>" : "<span class=\"badge failed\">FAIL</span>") +
         "</td><td><code>" + xml_escape(c.name) + "</code></td><td>" + xml_escape(c.detail) + "</td></tr>\n";
  }
  h += "</tbody></table>\n";
  if (!ev.actions_file_present) {
    h += "<p class=\"note\">No actions.json in this evidence directory: actions are shown by kind only, without pointer geometry.</p>\n";
  }

  // Signature and run log.
  h += "<h2 id=\"signature\">Signature and run log</h2>\n<p data-signature=\"" + xml_escape(ev.signature_state) + "\">" +
       xml_escape(ev.signature_detail) + "</p>\n";

  // The video, with each timeline row linking to its moment.
  if (!video_href.empty()) {
    h += "<h2 id=\"video-section\">Video</h2>\n<video id=\"video\" controls preload=\"metadata\" src=\"" + video_href +
         "\" data-start-offset-ms=\"" + num(ev.video->start_offset_ms) + "\"></video>\n<p class=\"note\">The display from begin "
         "to finish (ffmpeg x11grab), bound by the receipt. Each timeline row's \u25b6 opens it at that row's moment "
         "(its time from begin, less the video's start).</p>\n";
  }

  // Observation and claims.
  std::string observed;
  if (const Json* obs = member(r, "observation")) observed = string_member(*obs, "sha256");
  if (ev.task) {
    // A task's "claims" are the policy's final answer (docs/receipts.md §12).
    h += "<h2 id=\"observation\">Observed frame and result</h2>\n<div class=\"big\" id=\"observed\">" +
         figure(ev, is_lower_hex(observed, 64) ? observed : "", "observed frame (captured after the final answer, input sealed)", nullptr) +
         "</div>\n<h3>Result</h3>\n<p class=\"note\">The policy's final answer, recorded as sent: evident does not judge it.</p>\n<pre class=\"claims\" id=\"claims\">";
    if (const Json* result = member(r, "result")) h += xml_escape(pretty(*result));
  } else {
    h += "<h2 id=\"observation\">Observed frame and claims</h2>\n<div class=\"big\" id=\"observed\">" +
         figure(ev, is_lower_hex(observed, 64) ? observed : "", "observed frame (captured by observe, after input ended)", nullptr) +
         "</div>\n<h3>Claims</h3>\n<p class=\"note\">The caller's claims about the observed frame, recorded as sent: evident does not judge them.</p>\n<pre class=\"claims\" id=\"claims\">";
    if (const Json* claims = member(r, "claims")) h += xml_escape(pretty(*claims));
  }
  h += "</pre>\n";

  // Timeline.
  h += "<h2 id=\"timeline\">Timeline</h2>\n<p class=\"note\">Each row is one transcript event. An action's frame was captured "
       "right after its input, or after the display settled where the event records a settle outcome; without "
       "settle it can predate the app's repaint, and only \"settled\" says the display was at rest. "
       "Times marked t+ are from begin; action times come from actions.json and are not bound by the receipt.</p>\n"
       "<ol class=\"timeline\">\n";
  std::string previous_frame;
  for (const auto& e : ev.events) {
    h += "<li class=\"event\" id=\"event-" + num(e.index) + "\" data-index=\"" + num(e.index) + "\" data-kind=\"" + xml_escape(e.kind) +
         "\" data-frame-sha256=\"" + xml_escape(e.frame_sha256) + "\"";
    if (e.kind == "action") {
      h += " data-action=\"" + xml_escape(e.action) + "\" data-status=\"" + xml_escape(e.status) + "\" data-projection=\"" +
           xml_escape(e.projection_state) + "\" data-before-sha256=\"" + xml_escape(previous_frame) + "\"";
    }
    h += "><div class=\"head\"><span class=\"idx\">#" + num(e.index) + "</span><span class=\"kind\">" +
         xml_escape(describe_event(e)) + "</span>";
    if (e.kind == "action") {
      h += status_badge(e.status);
      if (e.input) {
        h += std::string("<span class=\"note\">") + (*e.input ? "input sent" : "no input") +
             (e.input_events ? " (" + num(*e.input_events) + " X events)" : std::string()) + "</span>";
      }
      if (!e.commitment.empty()) {
        h += "<span class=\"commitment\" data-commitment=\"" + e.commitment +
             "\" title=\"H(evident/commitment/v1, {salt, value}): binds the typed text or key without "
             "revealing it; evident disclose reveals it\">salted commitment <code>" + short_sha(e.commitment) +
             "</code></span>";
      }
    }
    if (std::string s = settle_text(e.settle); !s.empty()) h += "<span class=\"settle\">" + xml_escape(s) + "</span>";
    if (std::string t = offset_text(e); !t.empty()) h += "<span class=\"time\">" + xml_escape(t) + "</span>";
    if (!video_href.empty()) {
      std::optional<std::int64_t> at = e.elapsed_ms ? e.elapsed_ms : e.offset_ms;
      if (at) {
        const std::string s = video_seconds(*at, ev.video->start_offset_ms);
        h += "<a class=\"vt\" data-video-t=\"" + s + "\" href=\"" + video_href + "#t=" + s + "\">\u25b6 video at " + s + " s</a>";
      }
    }
    if (!e.when.empty()) h += "<span class=\"time\">" + xml_escape(e.when) + "</span>";
    if (e.kind == "action" && e.projection_state == "mismatch") {
      h += "<span class=\"note bad\">projection does not hash to projection_sha256: geometry not shown</span>";
    }
    if (e.extra.is_object() && !e.extra.empty()) {
      h += "<code class=\"extra\">" + xml_escape(e.extra.dump(-1, ' ', false, Json::error_handler_t::replace)) + "</code>";
    }
    h += "</div>";
    if (e.kind == "action") {
      h += "<div class=\"pair\">" + figure(ev, previous_frame, "before (the frame of the event before)", &e) +
           figure(ev, e.frame_sha256, "after", &e) + "</div>";
      if (!e.frame_sha256.empty() && e.frame_sha256 == previous_frame) {
        h += "<p class=\"note\">The frame after this action is byte-identical to the one before: no change was captured "
             "(the app may not have repainted yet).</p>";
      }
    } else if (e.kind == "turn" && !e.model_image_sha256.empty() && e.model_image_sha256 != e.frame_sha256) {
      // The adapter scaled the display frame for the model: show both.
      h += "<div class=\"pair\">" + figure(ev, e.frame_sha256, "the display frame of this turn", nullptr) +
           figure(ev, e.model_image_sha256, "the image the model was shown", nullptr) + "</div>";
    } else if (!e.frame_sha256.empty()) {
      h += "<div class=\"single\">" +
           figure(ev, e.frame_sha256, e.kind == "turn" ? "the frame the model was shown" : kind_label(e.kind), nullptr) +
           "</div>";
    }
    h += "</li>\n";
    if (!e.frame_sha256.empty()) previous_frame = e.frame_sha256;
  }
  h += std::string("</ol>\n<p class=\"note\">Written by <code>evident report</code>. Self-contained: no scripts, no network") +
       (video_href.empty() ? "" : "; the video is the one file it links to") + ".</p>\n</main></body></html>\n";
  return h;
}

namespace {

// Markdown-safe text for a table cell or a line: HTML-significant characters as entities,
// Markdown punctuation backslash-escaped, line breaks as spaces.
std::string md(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '\n': case '\r': case '\t': out += ' '; break;
      case '\\': case '`': case '*': case '_': case '[': case ']': case '(': case ')': case '#':
      case '|': case '!': case '~': case '{': case '}':
        out.push_back('\\');
        out.push_back(c);
        break;
      default: out.push_back(c);
    }
  }
  return out;
}

}  // namespace

std::string render_markdown(const Evidence& ev, const std::string& link_base_dir) {
  const Json& r = ev.receipt;
  auto link = [&](const std::string& sha) -> std::string {
    if (sha.empty()) return "\u2014";
    const ReportFrame* f = frame_of(ev, sha);
    if (!f || !f->matches) return "`" + short_sha(sha) + "` (missing or altered)";
    std::error_code ec;
    auto rel = std::filesystem::relative(std::filesystem::absolute(f->path, ec), std::filesystem::absolute(link_base_dir, ec), ec);
    std::string target = ec || rel.empty() ? f->path : rel.generic_string();
    return "[`" + short_sha(sha) + "`](" + url_path(target) + ")";
  };
  std::vector<std::string> failed;
  for (const auto& c : ev.checks) {
    if (!c.ok) failed.push_back(c.name);
  }
  std::string m;
  if (ev.ok) {
    m += "### Evident evidence: verified (all " + std::to_string(ev.checks.size()) + " checks passed)\n\n";
  } else {
    std::string names;
    for (const auto& n : failed) names += (names.empty() ? "" : ", ") + md(n);
    m += "### Evident evidence: NOT verified (" + std::to_string(failed.size()) + " of " +
         std::to_string(ev.checks.size()) + " checks failed: " + names + ")\n\n";
  }
  const Json* binding = member(r, "binding");
  auto code = [](const std::string& s) { return s.empty() ? std::string("\u2014") : md(s); };
  if (ev.task) {
    m += "- task " + code(string_member(r, "task_id")) + " (" + md(string_member(r, "mode")) + "), receipt " +
         code(string_member(r, "receipt_id")) + "\n";
    if (const Json* policy = member(r, "policy")) {
      m += "- policy " + code(string_member(*policy, "adapter")) + " / " + code(string_member(*policy, "provider")) + " / " +
           code(string_member(*policy, "model")) + " (declared)\n";
    }
  } else {
    m += "- session " + code(string_member(r, "session_id")) + ", receipt " + code(string_member(r, "receipt_id")) + "\n";
  }
  if (const Json* engine = member(r, "engine"); engine && member(*engine, "host_id")) {
    m += "- host " + code(string_member(*engine, "host_id")) + "\n";
  }
  if (binding) {
    auto pid = int_member(*binding, "app_pid");
    m += "- app pid " + (pid ? std::to_string(*pid) : std::string("?")) + " on display " +
         md(string_member(*binding, "display_name")) + ", attempt " + code(string_member(*binding, "attempt_id")) + "\n";
  }
  if (const Json* browser = member(r, "browser")) {
    const Json* viewport = member(*browser, "viewport");
    auto w = viewport ? int_member(*viewport, "width") : std::nullopt;
    auto hgt = viewport ? int_member(*viewport, "height") : std::nullopt;
    m += "- browser workspace " + code(string_member(*browser, "workspace_id")) + " (" +
         md(string_member(*browser, "browser_version")) + ", viewport " + (w ? std::to_string(*w) : std::string("?")) +
         "x" + (hgt ? std::to_string(*hgt) : std::string("?")) + ", page target " +
         code(string_member(*browser, "target_id")) + ")\n";
  }
  auto actions = int_member(r, "action_count");
  auto events = int_member(r, "input_event_count");
  auto elapsed = int_member(r, "elapsed_ms");
  m += "- " + (actions ? std::to_string(*actions) : std::string("?")) + " actions, " +
       (events ? std::to_string(*events) : std::string("?")) + " input events, " +
       (elapsed ? std::to_string(*elapsed) : std::string("?")) + " ms; " + md(ev.signature_state == "absent" ? "not signed" : ev.signature_detail) + "\n";
  std::string observed;
  if (const Json* obs = member(r, "observation")) observed = string_member(*obs, "sha256");
  m += "- observed frame: " + link(is_lower_hex(observed, 64) ? observed : "") + "\n";
  if (ev.video) {
    m += ev.video->verified ? "- video: [video.webm](" + relative_href(ev.video->path, link_base_dir) + ") (" +
                                  std::to_string(ev.video->byte_length) + " bytes, starts t+" +
                                  std::to_string(ev.video->start_offset_ms) + " ms)\n"
                            : std::string("- video: bound by the receipt, but missing or altered\n");
  }
  m += "\n";

  m += "| # | event | status | time | frame |\n|---|---|---|---|---|\n";
  std::string previous;
  for (const auto& e : ev.events) {
    std::string what = describe_event(e);
    if (e.kind == "action" && e.projection_state == "mismatch") what += " (projection mismatch)";
    if (std::string s = settle_text(e.settle); !s.empty()) what += "; " + s;
    if (!e.commitment.empty()) what += "; salted commitment " + e.commitment.substr(0, 12);
    std::string frame = link(e.frame_sha256);
    if (e.kind == "action" && !e.frame_sha256.empty() && e.frame_sha256 == previous) frame += " (unchanged)";
    m += "| " + std::to_string(e.index) + " | " + md(what) + " | " + md(e.status) + " | " + md(offset_text(e)) + " | " + frame + " |\n";
    if (!e.frame_sha256.empty()) previous = e.frame_sha256;
  }
  m += "\n";
  if (const Json* claims = member(r, ev.task ? "result" : "claims")) {
    std::string text = pretty(*claims);
    // A fence longer than any run of backticks in the text, so nothing inside can close it.
    std::size_t longest = 0, run = 0;
    for (char c : text) {
      run = c == '`' ? run + 1 : 0;
      longest = std::max(longest, run);
    }
    std::string fence(std::max<std::size_t>(3, longest + 1), '`');
    m += std::string(ev.task ? "<details><summary>Result (the policy's final answer, recorded as sent)</summary>\n\n"
                             : "<details><summary>Claims (the caller's, recorded as sent)</summary>\n\n") +
         fence + "json\n" + text + "\n" + fence +
         "\n\n</details>\n\n";
  }
  m += "<details><summary>Checks</summary>\n\n";
  for (const auto& c : ev.checks) m += "- " + std::string(c.ok ? "ok" : "**FAIL**") + " " + md(c.name) + ": " + md(c.detail) + "\n";
  m += "\n</details>\n";
  return m;
}

}  // namespace evident
