// The broadcast strategy's lane programs for the targets whose int8 dot is maddubs (u8 x s8 ->
// saturating int16 pair sums: AVX2, SSE4.1), written once over their basic operations. A lane
// program says how a strip's vector becomes slot codes, how the activations are broadcast, how the
// dots accumulate and when a block's sums are final; the strategy's loops
// (kernels/strategies/broadcast/kernels.hpp) run it. Targets whose dot adds into int32 lanes with
// a broadcast operand (AVX-512's vpdpbusd) run dot4_lanes.hpp's instead.
#pragma once

#include <cstdint>

#include "kernels/targets/isa_policy.hpp"

namespace ternlab::strategies {

// The basic operations the maddubs lane programs read from a policy: MaddubsOps
// (kernels/targets/isa_policy.hpp), an ordered add and the activation broadcast.
template <class P>
concept MaddubsLaneOps = MaddubsOps<P> && requires(typename P::V v, const std::uint8_t* x) {
  P::chain_add16(v, v);  // acc + p, kept in the accumulator's order
  P::template broadcast_lanes<4>(x);
};

// Each slot shifted down to its code u, so a maddubs pair sum is at most 2 * 3 * 128 and a
// block's 32 of them per int16 lane (4 slots x 8 strips) at most 24576: the block accumulates in
// int16 and widens once (sums). Through the strategy's slot-major loop (no broadcast operand: a
// broadcast is a register, shared by a pass's vectors).
template <class P>
struct MaddubsLaneCodes {
  using V = typename P::V;
  static constexpr int kShift = 0;
  using Acc = V;
  static Acc zero() { return P::zero(); }
  // Slot s of every byte of w, brought down to its code.
  static V code(V w, int s) { return P::and_(s == 0 ? w : P::srli16(w, 2 * s), P::set1_u8(0x03)); }
  // The LB activation bytes at x in every LB-byte lane.
  template <int LB = 4>
  static V broadcast(const std::uint8_t* x) { return P::template broadcast_lanes<LB>(x); }
  static void dot(Acc& acc, V codes, V x, int) { acc = P::chain_add16(acc, P::maddubs(codes, x)); }
  template <int kStrips = 8>
  static void strip_done(Acc&, int) {}
  static V sums(const Acc& acc) { return P::widen16(acc); }
};

// One shift a vector instead of three: each nibble's two slots are masked where they stand, so
// slots 0 and 2 give u and slots 1 and 3 give 4u, and the two kinds add into separate int16
// accumulators. 4u's pair sums (at most 2 * 12 * 128 = 3072, two a strip) would pass 32767 in
// a block's eight strips, so every fourth strip and the block's last (two or four strips with
// wider lanes) bring them down into u's: they are multiples of 4, the arithmetic shift is
// exact, and u's accumulator ends the block at the 24576 of MaddubsLaneCodes. Zen 3 runs two
// shifts a cycle against four ANDs.
template <class P>
struct MaddubsLaneNibbles {
  using V = typename P::V;
  static constexpr int kShift = 0;
  struct Acc {
    V u, u4;
  };
  static Acc zero() { return {P::zero(), P::zero()}; }
  static V code(V w, int s) { return P::and_(s < 2 ? w : P::srli16(w, 4), P::set1_u8(s % 2 ? 0x0c : 0x03)); }
  template <int LB = 4>
  static V broadcast(const std::uint8_t* x) { return P::template broadcast_lanes<LB>(x); }
  static void dot(Acc& acc, V codes, V x, int s) {
    V& a = s % 2 ? acc.u4 : acc.u;
    a = P::chain_add16(a, P::maddubs(codes, x));
  }
  template <int kStrips = 8>
  static void strip_done(Acc& acc, int t) {
    if (t % 4 == 3 || t == kStrips - 1) acc = {P::add16(acc.u, P::srai16(acc.u4, 2)), P::zero()};
  }
  static V sums(const Acc& acc) { return P::widen16(acc.u); }  // u4 folded by the last strip_done
};

template <MaddubsLaneOps P>
struct MaddubsLanePrograms {
  using Gemv = MaddubsLaneNibbles<P>;
  using Gemm = MaddubsLaneCodes<P>;
  using Gemm4 = MaddubsLaneCodes<P>;
};

}  // namespace ternlab::strategies
