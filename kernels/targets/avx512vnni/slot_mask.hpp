// What the slot-mask strategy reads of the AVX-512 target's vector shape (SlotMaskRows,
// kernels/strategies/slot_mask/strategy.hpp): a 512-bit vector is four 16-byte words, which
// cross-lane permutes (vpermt2q) move freely, so a block's pair sums become rows by folding words,
// and a 4 x 4 tile by transposing them. Include after the target's policy, in its compile units.
#pragma once

#include "kernels/strategies/slot_mask/plan.hpp"
#include "kernels/strategies/slot_mask/strategy.hpp"
#include "kernels/targets/avx512vnni/policy.hpp"

namespace ternlab::strategies {

template <>
struct SlotMaskRows<isa::Avx512Vnni> {
  using P = isa::Avx512Vnni;
  using V = P::V;

  template <int G, int E, class Plan>
  static __m256i rows_from_pairs(const V* c, const Plan& p) {
    constexpr int K = (G + 1) / 2;
    V h[K];
    for (int k = 0; k < K; ++k) h[k] = P::pair_add(c[2 * k], 2 * k + 1 < G ? c[2 * k + 1] : P::zero());
    // The plan's shortcut (t2p, t2p8): every word of a pair_add holds the same four rows.
    if constexpr (E == 4 && (G == 2 || G == 4))
      if (p.fold_words) {
        if constexpr (G == 2) return P::fold_words(h[0]);
        return _mm256_permute2x128_si256(P::fold_words(h[0]), P::fold_words(h[1]), 0x20);
      }
    __m256i pieces[2 * K];
    for (int k = 0; k < K; ++k) pieces[2 * k] = P::low_half(h[k]), pieces[2 * k + 1] = P::high_half(h[k]);
    return P::template gather_rows<2 * K, E>(pieces, p);
  }

  // A fold_pair_words plan's accumulators a and b: words 0-1 hold a's rows 0-3, words 2-3 b's.
  static V pair_words_added(V a, V b, const SlotVectorPlan& p) {
    const V rows01 = _mm512_permutex2var_epi64(a, P::load(p.pair_word_gather[0]), b);
    const V rows23 = _mm512_permutex2var_epi64(a, P::load(p.pair_word_gather[1]), b);
    return P::pair_add(rows01, rows23);
  }

  // --- a 4 x 4 tile (Rows8::Tile16) of a plan with two row pairs that folds words (t2p, t2p-split)
  static bool tile_fits(const SlotVectorPlan& p) { return p.fold_words || p.fold_pair_words; }
  static constexpr bool kTileGemv = true;  // gemv's four row groups fit the 32 registers
  static V transpose_add(V a, V b) {
    const V even = _mm512_setr_epi64(0, 1, 4, 5, 8, 9, 12, 13), odd = _mm512_setr_epi64(2, 3, 6, 7, 10, 11, 14, 15);
    return P::add32(_mm512_permutex2var_epi64(a, even, b), _mm512_permutex2var_epi64(a, odd, b));
  }
  // c[q][a]: row pair a's accumulator of token (or row group) q (fold_words). After pair_add,
  // word u of x[q] holds rows 0..3 over word u's weights; two levels of "words 0, 2 of a and b"
  // plus "words 1, 3 of a and b" transpose the words and add as they go, leaving q's row sums in
  // word q.
  static P::Tile16 tile_rows(const V (*c)[2], const SlotVectorPlan&) {
    V x[4];
    for (int q = 0; q < 4; ++q) x[q] = P::pair_add(c[q][0], c[q][1]);
    const V r = transpose_add(transpose_add(x[0], x[1]), transpose_add(x[2], x[3]));
    return {P::low_half(r), P::high_half(r)};
  }
  // c[q][0]: the one accumulator of token (or row group) q (fold_pair_words). Two q's rows fill one
  // vector (q in words 0-1, q + 1 in words 2-3), so one transpose level leaves q's sums in word q.
  static P::Tile16 tile_rows(const V (*c)[1], const SlotVectorPlan& p) {
    const V r = transpose_add(pair_words_added(c[0][0], c[1][0], p), pair_words_added(c[2][0], c[3][0], p));
    return {P::low_half(r), P::high_half(r)};
  }
};

}  // namespace ternlab::strategies
