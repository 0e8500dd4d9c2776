// The slot-mask strategy (kernels/strategies/slot_mask/kernels.hpp): slot-vectorizable layouts,
// whose weight bytes after the scales form 16-byte words in which every 2-bit slot holds 16
// consecutive weights of one row (or 8 of a row pair). One AND per slot, dot4, recombine.
#pragma once

#include <cstdint>

#include "common/error.hpp"
#include "kernels/strategies/slot_mask/plan.hpp"
#include "kernels/strategies/strategy.hpp"

namespace ternlab::strategies {

// The operations slot-mask reads from a policy besides IsaPolicy's.
template <class P>
concept SlotMaskOps = IsaPolicy<P> && requires(const std::uint8_t* bytes, typename P::V v, std::int32_t* out) {
  typename P::Slots;
  { P::kSlotShift } -> std::convertible_to<int>;
  { P::kGroupVectors } -> std::convertible_to<int>;
  P::extract(P::load(bytes));
  P::slot_widen(v);
  // pair sums (store_pair_sums): int32 lane pairs added per 16-byte word, or the policy's own store
  requires requires { P::pair_add(v, v); P::store(out, v); } || requires { P::template store_pair_sums<1>(&v, out); };
};

// A target's gather of a block's lane-pair sums into rows kept in one register, which depends on
// its vector's shape (a 128-bit-lane permute on AVX2, a cross-lane one on AVX-512): declared per
// target in kernels/targets/<isa>/slot_mask.hpp as a specialization for its policy, as CuTe's
// mma_traits declare what an MMA atom accepts. It offers
//   rows_from_pairs<G, E>(c, plan)   the rows of G group accumulators (E lane pairs a row), in the
//                                    lanes of the policy's row vector (RowF);
// and, for a 4 x 4 tile of results (plans of two row pairs; the policy's TileF):
//   tile_rows(c, plan), tile_fits(plan), kTileGemv (whether a gemv's four row groups fit the
//   register file as well as a gemm's four tokens).
// A target without one ends each block through stored pair sums (store_pair_sums), which reads no
// shape of its own.
template <class Policy>
struct SlotMaskRows {};

// The target policy a slot program (strategies/slot_mask/ops.hpp) derives from, or the policy
// itself where it is its own program (the portable one).
template <class P>
struct SlotProgramBase {
  using type = P;
};
template <class P>
  requires requires { typename P::Policy; }
struct SlotProgramBase<P> {
  using type = typename P::Policy;
};
template <class P>
using SlotRowsOf = SlotMaskRows<typename SlotProgramBase<P>::type>;

struct SlotMaskStrategy {
  static constexpr Strategy id = Strategy::slot_mask;
  static bool admits(const LayoutInfo& L) { return slot_words(L).why_not.empty(); }
  static std::string why_not(const LayoutInfo& L) {
    return admits(L) ? "" : cat("layout '", L.name, "' is not slot-vectorizable (16-byte words whose 2-bit slots each hold 16 consecutive weights of one row or 8 of a row pair): ", slot_words(L).why_not);
  }
  static std::string property(const LayoutInfo& L) {
    return !admits(L) ? "" : slot_words(L).pairs_rows ? "slot-vectorizable(row-pairs)" : "slot-vectorizable(rows)";
  }
  // slot-mask on SlotPolicyOf<T>, and slot-mask-widen where T declares WidenSlots.
  template <class T>
  static void add(const LayoutInfo& L, std::vector<KernelVariant>& out, std::vector<KernelGap>* gaps);
};

}  // namespace ternlab::strategies
