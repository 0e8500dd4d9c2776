#include "common/fp16.hpp"

#include <Eigen/Core>
#include <array>
#include <bit>
#include <memory>

namespace ternlab {

float fp16_to_float_slow(std::uint16_t h) {
  return static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(h));
}

std::uint16_t float_to_fp16(float f) { return Eigen::numext::bit_cast<std::uint16_t>(Eigen::half(f)); }

const float* fp16_table() {
  static const auto table = [] {
    auto t = std::make_unique<std::array<float, 65536>>();
    for (std::uint32_t h = 0; h < 65536; ++h) (*t)[h] = fp16_to_float_slow(static_cast<std::uint16_t>(h));
    return t;
  }();
  return table->data();
}

}  // namespace ternlab
