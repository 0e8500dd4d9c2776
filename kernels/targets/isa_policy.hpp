// What every ISA policy is (kernels/targets/<isa>/policy.hpp): a vector type and width, the ISA it
// is built for, and a load. The operations a particular strategy reads are named by that strategy's
// own concept beside its kernels (kernels/strategies/<name>/strategy.hpp), so a policy is checked
// against exactly what the strategies instantiated with it use.
#pragma once

#include <concepts>
#include <cstdint>

#include "kernels/cpu.hpp"

namespace ternlab {

template <class P>
concept IsaPolicy = requires(const std::uint8_t* bytes) {
  typename P::V;
  { P::name } -> std::convertible_to<const char*>;
  { P::kIsa } -> std::convertible_to<Isa>;
  { P::kBytes } -> std::convertible_to<int>;
  P::load(bytes);
} && (P::kBytes == 16 || P::kBytes == 32 || P::kBytes == 64);

}  // namespace ternlab
