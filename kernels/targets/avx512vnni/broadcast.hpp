// What the broadcast strategy reads of the AVX-512 target besides its basic operations
// (BroadcastTraits, kernels/strategies/broadcast/strategy.hpp): how rows of lanes wider than a dword
// are gathered across the vector's four words, and the streams and tokens tuned on its cores.
// Include after the target's policy, in its compile units.
#pragma once

#include "kernels/strategies/broadcast/strategy.hpp"
#include "kernels/targets/avx512vnni/policy.hpp"

namespace ternlab::strategies {

template <>
struct BroadcastTraits<isa::Avx512Vnni> {
  using P = isa::Avx512Vnni;
  using V = P::V;
  // Row groups a gemv reads side by side, and how far ahead each is prefetched: fewer streams
  // read less, more or farther no more (measured: docs/notebook/2026-12-01-sapphire-rapids-kernels.md).
  static constexpr int kGemvPrefetch = 2048;
  static constexpr int kGemvStreams = 4;
  // Where other threads read the rest of the call at the same time (with_gemv_streams): one
  // stream a thread. A thread takes its share in consecutive 256 KB takes (SharedRanges), so one
  // stream runs on from take to take where two restart cold at every take; on the Zen 4 guest's
  // two threads one read the most in both bandwidth states (docs/notebook/2026-12-07-zen4-one-stream.md,
  // 2026-12-07-zen4-decode-streams.md).
  static constexpr int kGemvSharedStreams = 1;
  static constexpr int kGemmTokens = 16;  // tokens a gemm pass dots each weight vector with
  // A single tile (4 tokens): four row groups side by side, each token with two accumulators
  // (Dot4TwoChains; the in-place masks' four a token would need 64 registers). A 4-token gemm is
  // nearly memory-bound, and four streams read more than one stream with in-place masks (measured:
  // docs/notebook/2026-12-02-sapphire-rapids-kernels.md).
  static constexpr int kGemm4Streams = 4;

  // The sums of E rows (16: the lanes_fma vector; 8: Rows8's; 4: Rows8's 4-row one) with LB-byte
  // lanes (LB = 8 or 16), from the E * LB / 64 vectors of their int32 lanes (c[i]: rows 64 i / LB
  // ..): each row's LB / 4 lanes added by pair_add levels, then one permute puts the rows in order.
  template <int LB, int E>
  static auto lane_rows(const V* c) {
    static_assert((LB == 8 || LB == 16) && (E == 8 || E == 16 || (E == 4 && LB == 16)),
                  "8 or 16 rows with lanes of 8 or 16 bytes, or 4 rows of 16-byte lanes (one vector)");
    if constexpr (E == 16 && LB == 8) {
      // Word u: rows 2u, 2u + 1, 8 + 2u, 9 + 2u.
      return _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15),
                                      P::pair_add(c[0], c[1]));
    } else if constexpr (E == 16) {
      // Word u: rows u, 4 + u, 8 + u, 12 + u.
      return _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15),
                                      P::pair_add(P::pair_add(c[0], c[1]), P::pair_add(c[2], c[3])));
    } else if constexpr (E == 8 && LB == 8) {
      // Word u: rows 2u, 2u + 1 (twice).
      return P::low_half(_mm512_permutexvar_epi32(_mm512_setr_epi32(0, 1, 4, 5, 8, 9, 12, 13, 0, 0, 0, 0, 0, 0, 0, 0),
                                               P::pair_add(c[0], c[0])));
    } else if constexpr (E == 8) {
      // Word u: rows u, 4 + u (twice).
      const V h = P::pair_add(c[0], c[1]);
      return P::low_half(_mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 0, 0, 0, 0, 0, 0, 0, 0),
                                               P::pair_add(h, h)));
    } else {
      // Word u: row u (four times).
      const V h = P::pair_add(c[0], c[0]);
      return _mm512_castsi512_si128(
          _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), P::pair_add(h, h)));
    }
  }

};

}  // namespace ternlab::strategies
