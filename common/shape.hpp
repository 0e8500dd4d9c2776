// "ROWSxCOLS" on the command line (`ternlab bench --gemv`, `ternlab kernels --shape`,
// ternlab_gbench): one parser, one message.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "common/error.hpp"

namespace ternlab {

// Throws ternlab::Error naming `what` (the flag) unless `text` is two positive integers around an 'x'.
inline std::pair<std::int64_t, std::int64_t> parse_shape(const std::string& text, const std::string& what) {
  const auto x = text.find('x');
  try {
    std::size_t n1 = 0, n2 = 0;
    if (x != std::string::npos) {
      const std::string a = text.substr(0, x), b = text.substr(x + 1);
      const std::int64_t rows = std::stoll(a, &n1), cols = std::stoll(b, &n2);
      if (n1 == a.size() && n2 == b.size() && rows > 0 && cols > 0) return {rows, cols};
    }
  } catch (const std::exception&) {
  }
  fail(what, ": shape '", text, "' must read ROWSxCOLS, e.g. 32768x8192");
}

}  // namespace ternlab
