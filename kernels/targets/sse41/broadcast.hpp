// What the broadcast strategy reads of the SSE4.1 target besides its basic operations
// (BroadcastTraits, kernels/strategies/broadcast/strategy.hpp): how 4 rows of lanes wider than a
// dword are gathered, and AVX2's streams and tokens on half the rows. Include after the target's
// policy, in its compile unit.
#pragma once

#include "kernels/strategies/broadcast/strategy.hpp"
#include "kernels/targets/sse41/policy.hpp"

namespace ternlab::strategies {

template <>
struct BroadcastTraits<isa::Sse41> {
  using P = isa::Sse41;
  using V = P::V;
  static constexpr int kGemvPrefetch = 2048;
  static constexpr int kGemvStreams = 1;
  static constexpr int kGemvSharedStreams = 1;
  static constexpr int kGemmTokens = 4;
  static constexpr int kGemm4Streams = 1;
  // The sums of 4 rows with LB-byte lanes (LB = 8 or 16), from the 4 * LB / 16 vectors of their
  // int32 lanes: each row's LB / 4 lanes added by phaddd, which leaves the rows in order.
  template <int LB, int E>
  static V lane_rows(const V* c) {
    static_assert(E == P::kLanes, "one 4-row vector");
    if constexpr (LB == 8) {
      return P::pair_add(c[0], c[1]);
    } else {
      static_assert(LB == 16, "lanes of 8 or 16 bytes");
      return P::pair_add(P::pair_add(c[0], c[1]), P::pair_add(c[2], c[3]));
    }
  }
};

}  // namespace ternlab::strategies
