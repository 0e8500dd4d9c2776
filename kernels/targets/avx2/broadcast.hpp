// What the broadcast strategy reads of the AVX2 target besides its basic operations
// (BroadcastTraits, kernels/strategies/broadcast/strategy.hpp): how rows of lanes wider than a dword
// are gathered from a vector of two 128-bit lanes, and the streams and tokens tuned on its cores.
// Include after the target's policy, in its compile unit.
#pragma once

#include <immintrin.h>

#include "kernels/strategies/broadcast/strategy.hpp"
#include "kernels/targets/avx2/policy.hpp"

namespace ternlab::strategies {

template <>
struct BroadcastTraits<isa::Avx2> {
  using P = isa::Avx2;
  using V = P::V;
  static constexpr int kGemvPrefetch = 2048;  // bytes ahead of each stream
  // Row groups a gemv reads side by side: one, as the slot-major loop holds every vector of a pass
  // in registers and two streams of 16 rows (four vectors) spilled them.
  static constexpr int kGemvStreams = 1;
  static constexpr int kGemvSharedStreams = 1;
  static constexpr int kGemmTokens = 4;   // tokens a gemm pass dots each weight vector with
  static constexpr int kGemm4Streams = 1;  // row groups a 4-token pass reads side by side
  // The sums of E = 8 or 4 rows with LB-byte lanes (LB = 8 or 16), from the E * LB / 32 vectors of
  // their int32 lanes (c[i]: rows 32 i / LB ..): each row's LB / 4 lanes added, the rows in order;
  // 8 rows in one vector, 4 in a 128-bit one (Rows8::row4_fma).
  template <int LB, int E>
  static auto lane_rows(const V* c) {
    static_assert(E == 8 || E == 4, "an 8-row or a 4-row vector");
    static_assert(LB == 8 || LB == 16, "lanes of 8 or 16 bytes");
    if constexpr (E == 8 && LB == 8) {
      // hadd: [rows 0 1 4 5 | 2 3 6 7]; the middle qwords swapped.
      return _mm256_permute4x64_epi64(P::pair_add(c[0], c[1]), 0xd8);
    } else if constexpr (E == 8) {
      // Two hadd levels: [rows 0 2 4 6 | 1 3 5 7].
      const V h = P::pair_add(P::pair_add(c[0], c[1]), P::pair_add(c[2], c[3]));
      return _mm256_permutevar8x32_epi32(h, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    } else if constexpr (LB == 8) {
      // c[0] = [rows 0 0 1 1 | 2 2 3 3]: one hadd of its halves.
      return _mm_hadd_epi32(_mm256_castsi256_si128(c[0]), _mm256_extracti128_si256(c[0], 1));
    } else {
      // c[0] = [row 0 x4 | row 1 x4], c[1] = [row 2 x4 | row 3 x4]: hadd gives [0 0 2 2 | 1 1 3 3],
      // the hadd of its halves [rows 0 2 1 3], and one shuffle the order.
      const V h = P::pair_add(c[0], c[1]);
      return _mm_shuffle_epi32(_mm_hadd_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1)), 0xd8);
    }
  }
};

}  // namespace ternlab::strategies
