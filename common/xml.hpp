// Escaping text for XML output (SVG figures, HTML pages).
#pragma once

#include <string>
#include <string_view>

namespace ternlab {

// The text with XML's five special characters replaced by their entities.
inline std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace ternlab
