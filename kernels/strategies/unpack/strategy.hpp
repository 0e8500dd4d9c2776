// The unpack strategy (kernels/strategies/unpack/kernels.hpp): layouts in natural 2-bit order (one
// row per block, weight k in byte k/4, field k%4), decoded as PrismML's x86 kernel does (spec 6.2);
// built tiled (unpack) and one vec_dot per (row, token) (unpack-vecdot).
#pragma once

#include <cstdint>

#include "common/error.hpp"
#include "kernels/strategies/strategy.hpp"
#include "kernels/strategies/unpack/plan.hpp"

namespace ternlab::strategies {

template <class P>
concept UnpackOps = IsaPolicy<P> && P::kBytes >= 32 && requires(typename P::V v, const std::uint8_t* codes,
                                                                 const std::uint8_t* const* y, typename P::V* out) {
  P::template natural_block<1>(codes, y, out);
  P::reduce_add(v);
};

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
