// The broadcast strategy (kernels/strategies/broadcast/kernels.hpp, base3_kernels.hpp):
// row-interleaved layouts, 2-bit or base-3, whose strips give every row its own lane, read against
// broadcast activations so each lane accumulates its own row.
#pragma once

#include "common/error.hpp"
#include "kernels/strategies/broadcast/dot4_lanes.hpp"
#include "kernels/strategies/broadcast/maddubs_lanes.hpp"
#include "kernels/strategies/broadcast/plan.hpp"
#include "kernels/strategies/strategy.hpp"

namespace ternlab::strategies {

// The lane programs the broadcast strategy runs on P: maddubs_lanes.hpp's for a maddubs dot,
// dot4_lanes.hpp's for a dot into int32 lanes with a broadcast operand; none (an empty struct, so
// BroadcastOps is false) otherwise.
template <class P>
struct LanePrograms {};
template <class P>
  requires MaddubsLaneOps<P>
struct LanePrograms<P> : MaddubsLanePrograms<P> {};
template <class P>
  requires(!MaddubsLaneOps<P> && Dot4LaneOps<P>)
struct LanePrograms<P> : Dot4LanePrograms<P> {};

// What the broadcast strategy reads of a target besides its basic operations, which depends on
// its vector's shape and was tuned on its cores: declared per target in
// kernels/targets/<isa>/broadcast.hpp as a specialization for its policy (as SlotMaskRows):
//   lane_rows<LB, E>(c)           the sums of E rows whose lanes are LB = 8 or 16 bytes, from their
//                                 E * LB / kBytes vectors of int32 lanes: each row's LB / 4 lanes
//                                 added and the rows put in order, in the float end's row vector;
//   kGemvStreams, kGemvPrefetch   row groups a gemv reads side by side, and the bytes ahead of each
//                                 stream its prefetches reach;
//   kGemvSharedStreams            row groups side by side where the thread reads one share of a call
//                                 that other threads read at the same time (with_gemv_streams);
//   kGemmTokens, kGemm4Streams    tokens a gemm pass dots each weight vector with, and row groups a
//                                 last tile of four tokens reads side by side.
template <class Policy>
struct BroadcastTraits {};

template <class P>
concept BroadcastOps = IsaPolicy<P> && requires {
  typename LanePrograms<P>::Gemv;
  typename LanePrograms<P>::Gemm;
  typename LanePrograms<P>::Gemm4;
  typename P::LaneF;
  { P::kLanes } -> std::convertible_to<int>;
  { P::kRegisters } -> std::convertible_to<int>;
  { BroadcastTraits<P>::kGemvStreams } -> std::convertible_to<int>;
  { BroadcastTraits<P>::kGemvSharedStreams } -> std::convertible_to<int>;
  { BroadcastTraits<P>::kGemvPrefetch } -> std::convertible_to<int>;
  { BroadcastTraits<P>::kGemmTokens } -> std::convertible_to<int>;
  { BroadcastTraits<P>::kGemm4Streams } -> std::convertible_to<int>;
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
