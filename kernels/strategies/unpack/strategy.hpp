// The unpack strategy (kernels/strategies/unpack/kernels.hpp): layouts in natural 2-bit order (one
// row per block, weight k in byte k/4, field k%4), decoded as PrismML's x86 kernel does (spec 6.2);
// built tiled (unpack) and one vec_dot per (row, token) (unpack-vecdot).
#pragma once

#include <cstdint>

#include "common/error.hpp"
#include "kernels/strategies/strategy.hpp"
#include "kernels/strategies/unpack/plan.hpp"

namespace ternlab::strategies {

// What the unpack strategy reads: the target's spread of natural-order codes (kBytes / 4 code bytes
// to kBytes codes, byte 8j + b of each 32 holding weight 4b + j: the fork's shift-and-mask), an int8
// dot (maddubs with int16 sums and one widening, or dot4 into int32), horizontal sums.
template <class P>
concept Int16DotOps = requires(typename P::V v) {
  P::maddubs(v, v);
  P::add16(v, v);
  P::widen16(v);
};
template <class P>
concept UnpackOps = IsaPolicy<P> && P::kBytes >= 32 && requires(typename P::V v, const std::uint8_t* codes, std::int32_t* out) {
  { P::unpack_natural(codes) } -> std::same_as<typename P::V>;
  P::zero();
  P::reduce_add(v);
  P::reduce_add4(v, v, v, v, out);
} && (Int16DotOps<P> || requires(typename P::V v) { P::dot4(v, v, v); });

struct UnpackStrategy {
  static constexpr Strategy id = Strategy::unpack;
  static bool admits(const LayoutInfo& L) { return natural_two_bit(L); }
  static std::string why_not(const LayoutInfo& L) {
    return admits(L) ? "" : cat("layout '", L.name, "' is not in natural 2-bit order (one row a block, weight k in byte k/4, field k%4): ", natural_two_bit_why_not(L));
  }
  static std::string property(const LayoutInfo& L) { return admits(L) ? "natural-2bit" : ""; }
  template <class T>
  static void add(const LayoutInfo& L, std::vector<KernelVariant>& out, std::vector<KernelGap>* gaps);
};

}  // namespace ternlab::strategies
