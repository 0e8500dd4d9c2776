// The base-3 strategy (kernels/strategies/base3/kernels.hpp): digit-planar base-3 layouts (one row a
// block, every piece bytes whose digit n holds consecutive weights), read 32 weights a vector.
#pragma once

#include <cstdint>

#include "common/error.hpp"
#include "kernels/strategies/base3/plan.hpp"
#include "kernels/strategies/strategy.hpp"

namespace ternlab::strategies {

template <class P>
concept Base3Ops = IsaPolicy<P> && P::kBytes == 32 && requires(typename P::V v) {
  P::top_trit(v);
  P::reduce_add(v);
  P::zero();
};

struct Base3Strategy {
  static constexpr Strategy id = Strategy::base3;
  static bool admits(const LayoutInfo& L) { return digit_planar_why_not(L).empty(); }
  static std::string why_not(const LayoutInfo& L) {
    return admits(L) ? "" : cat("layout '", L.name, "' is not digit-planar base-3 (one row a block, each byte's digit n holding consecutive weights): ", digit_planar_why_not(L));
  }
  static std::string property(const LayoutInfo& L) { return admits(L) ? "digit-planar" : ""; }
  template <class T>
  static void add(const LayoutInfo& L, std::vector<KernelVariant>& out, std::vector<KernelGap>* gaps);
};

}  // namespace ternlab::strategies
