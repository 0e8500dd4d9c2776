// Small string helpers shared by messages and listings.
#pragma once

#include <range/v3/range/conversion.hpp>
#include <range/v3/view/join.hpp>
#include <range/v3/view/transform.hpp>
#include <string>
#include <string_view>

namespace ternlab {

// "a, b, c" from any range of string-like parts.
template <class R>
std::string join(const R& parts, std::string_view sep = ", ") {
  return parts | ranges::views::transform([](const auto& p) { return std::string(p); }) |
         ranges::views::join(std::string(sep)) | ranges::to<std::string>();
}

}  // namespace ternlab
