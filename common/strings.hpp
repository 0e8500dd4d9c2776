// Small string helpers shared by messages and listings.
#pragma once

#include <string>
#include <string_view>

namespace ternlab {

// "a, b, c" from any range of string-like parts. A plain loop: this header is included almost
// everywhere, and range-v3's views cost about 2.5 s of compile time in every file that includes them.
template <class R>
std::string join(const R& parts, std::string_view sep = ", ") {
  std::string out;
  bool first = true;
  for (const auto& p : parts) {
    if (!first) out += sep;
    out += std::string_view(p);
    first = false;
  }
  return out;
}

}  // namespace ternlab
