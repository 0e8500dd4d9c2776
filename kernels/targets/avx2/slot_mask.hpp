// What the slot-mask strategy reads of the AVX2 target's vector shape (SlotMaskRows,
// kernels/strategies/slot_mask/strategy.hpp): a 256-bit vector is two 128-bit lanes, which hadd
// and permute2x128 treat apart, so a block's pair sums become rows by one or two hadd levels and a
// fold of the two halves. Include after the target's policy, in its compile unit.
#pragma once

#include <immintrin.h>

#include "kernels/strategies/slot_mask/plan.hpp"
#include "kernels/strategies/slot_mask/strategy.hpp"
#include "kernels/targets/avx2/policy.hpp"

namespace ternlab::strategies {

template <>
struct SlotMaskRows<isa::Avx2> {
  using P = isa::Avx2;
  using V = P::V;

  // The pair sums of G accumulators gathered into [row 0 .. row ROWS-1]; no round trip through
  // memory.
  static V fold_halves(V h) { return _mm256_add_epi32(h, _mm256_permute2x128_si256(h, h, 1)); }
  template <int G, int E, class Plan>
  static V rows_from_pairs(const V* c, const Plan& p) {
    // The plan's shortcuts: one or two hadd levels, then the two halves folded (lanes 0-3 hold
    // the rows; 4-7 repeat them and are never stored).
    if constexpr (G == 2 && E == 2)
      if (p.fold_halves) return fold_halves(P::pair_add(c[0], c[1]));
    if constexpr (G == 4 && E == 4)
      if (p.group_per_row)
        return fold_halves(P::pair_add(P::pair_add(c[0], c[1]), P::pair_add(c[2], c[3])));
    V pieces[(G + 1) / 2];
    for (int k = 0; k < (G + 1) / 2; ++k) pieces[k] = P::pair_add(c[2 * k], 2 * k + 1 < G ? c[2 * k + 1] : P::zero());
    return P::template gather_rows<(G + 1) / 2, E>(pieces, p);
  }

  // --- a 4 x 4 tile (Rows8::Tile16) of a fold_halves plan with two row pairs (t2p) ------------
  static bool tile_fits(const SlotVectorPlan& p) { return p.fold_halves; }
  // Not for gemv: four row groups' eight accumulators exceed the 16 registers (llvm-mca: 81 stack
  // references, no faster than one group at a time); a gemm tile reuses each weight vector instead.
  static constexpr bool kTileGemv = false;
  // c[q][a]: row pair a's accumulator of token (or row group) q. After one hadd, each 128-bit
  // half of h[q] holds rows 0..3; q's two halves are summed into half q % 2 of lo (q < 2) or hi.
  static P::Tile16 tile_rows(const V (*c)[2], const SlotVectorPlan&) {
    V h[4];
    for (int q = 0; q < 4; ++q) h[q] = P::pair_add(c[q][0], c[q][1]);
    return {P::fold_pair(h[0], h[1]), P::fold_pair(h[2], h[3])};
  }
};

}  // namespace ternlab::strategies
