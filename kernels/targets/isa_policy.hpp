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

// The basic operations of a target whose int8 dot is maddubs (u8 x s8 -> saturating int16 pair
// sums: AVX2, SSE4.1), which the strategies' maddubs programs are written over once
// (kernels/strategies/broadcast/maddubs_lanes.hpp, kernels/strategies/permute/ops.hpp).
template <class P>
concept MaddubsOps = IsaPolicy<P> && requires(typename P::V v) {
  P::zero();
  P::and_(v, v);
  P::set1_u8(std::uint8_t(3));
  P::srli16(v, 2);   // 16-bit lanes shifted right (logical); callers mask the bytes
  P::srai16(v, 2);   // 16-bit lanes shifted right (arithmetic)
  P::add16(v, v);
  P::maddubs(v, v);  // u8 x s8 -> saturating int16 pair sums
  P::widen16(v);     // int16 pair sums -> int32 lanes (adjacent pairs added)
};

}  // namespace ternlab
