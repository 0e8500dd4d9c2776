// ternlab's one error type: bad input (a shape, a file, a key) is reported by throwing it, with a
// message that names the thing at fault. The CLI prints it and exits non-zero; nothing crashes.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace ternlab {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// Concatenates its arguments with operator<< (g++ 12 has no <format>).
template <class... A>
std::string cat(const A&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}

template <class... A>
[[noreturn]] void fail(const A&... parts) {
  throw Error(cat(parts...));
}

}  // namespace ternlab
