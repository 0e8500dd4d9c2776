// The broadcast strategy (kernels/strategies/broadcast/kernels.hpp, base3_kernels.hpp):
// row-interleaved layouts, 2-bit or base-3, whose strips give every row its own lane, read against
// broadcast activations so each lane accumulates its own row.
#pragma once

#include "common/error.hpp"
#include "kernels/strategies/broadcast/maddubs_lanes.hpp"
#include "kernels/strategies/broadcast/plan.hpp"
#include "kernels/strategies/strategy.hpp"

namespace ternlab::strategies {

template <class P>
concept BroadcastOps = IsaPolicy<P> && requires {
  typename LanePrograms<P>::Gemv;
  typename LanePrograms<P>::Gemm;
  typename LanePrograms<P>::Gemm4;
  typename P::LaneF;
  { P::kLanes } -> std::convertible_to<int>;
  { P::kGemmTokens } -> std::convertible_to<int>;
};

struct BroadcastStrategy {
  static constexpr Strategy id = Strategy::broadcast;
  static bool admits(const LayoutInfo& L) { return row_interleaved_why_not(L).empty(); }
  static std::string why_not(const LayoutInfo& L) {
    return admits(L) ? "" : cat("layout '", L.name, "' is not row-interleaved (strips in which each row owns a lane, every slot the same weights of every row): ", row_interleaved_why_not(L));
  }
  static std::string property(const LayoutInfo& L) {
    if (base3_strip_plan(L)) return "row-interleaved(base-3)";
    const StripPlan* p = strip_plan(L);
    return !p ? "" : p->lane_bytes == 4 ? "row-interleaved" : cat("row-interleaved(", p->lane_bytes, "-byte lanes)");
  }
  // The 2-bit build at every row count T::Policy's width holds (twice: with and without the gemv's
  // software prefetches), T's GFNI build where it has one; the base-3 build where T has one.
  template <class T>
  static void add(const LayoutInfo& L, std::vector<KernelVariant>& out, std::vector<KernelGap>* gaps);
};

}  // namespace ternlab::strategies
