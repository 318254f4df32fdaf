// Escaping text for XML and HTML (the report's page, the accessibility bus's D-Bus config).
#pragma once

#include <string>
#include <string_view>

namespace evident {

// &, <, >, " and ' as character references (&#39; for the apostrophe: valid in XML and in
// HTML 4 and 5 alike), so the result is safe inside element text and in either quoted attribute.
inline std::string xml_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 16);
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

}  // namespace evident
