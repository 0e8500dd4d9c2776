// The broadcast strategy's lane programs for targets whose int8 dot adds four u8 x s8 products
// into int32 lanes without saturating and can take its s8 side as one int32 broadcast from memory
// (AVX-512's vpdpbusd with a {1to16} operand), written once over their basic operations. As in
// maddubs_lanes.hpp, a program says how a weight vector becomes slots, how its dots accumulate and
// when a block's sums are final; the strategy's 32-register walk (kernels/strategies/broadcast/
// kernels.hpp) hands each program a whole vector's four slots and the activations' address.
//
//   Dot4LaneMasked   gemv: each slot masked in place (u * 4^s <= 192), so a vector costs four ANDs
//                    and no shift, into its own int32 accumulator; sums recombines them once a block
//                    as 64 S = (a0 << 6) + (a1 << 4) + (a2 << 2) + a3 (|64 S| <= 64 * 128 * 3 * 128
//                    < 2^31), and the final >> 6 rides in the float end (kShift).
//   Dot4LaneCodes    gemm, many tokens: every slot shifted down to its code (shared by all of a
//                    pass's tokens), one accumulator a token and no recombination, so the tokens'
//                    chains of dots cover the dot's latency. (Eight tokens with two accumulators
//                    each, the same chains, spent twice the extraction per product and read less:
//                    docs/notebook/2026-12-02-sapphire-rapids-kernels.md.)
//   Dot4LaneCodesGf2 the same codes, each slot brought down by one GF(2) affine map per byte (output
//                    bits 0 and 1 = input bits 2s and 2s + 1): four ops a vector instead of seven,
//                    where the target has the map (GFNI).
//   Dot4TwoChains    a last tile of four tokens: two accumulators a token (slots 0 and 2, slots 1
//                    and 3), added once a block. Four tokens with one accumulator each are four
//                    chains a stream, which the dot's latency leaves short of its port
//                    (docs/notebook/2026-12-04-zen4-kernels.md).
//
// Lanes of LB = 8 or 16 bytes: the slot's LB activation bytes are broadcast to every LB-byte lane
// by a load of their own (the dot embeds only a dword broadcast), shared by the strip's vectors.
#pragma once

#include <cstdint>

#include "kernels/strategies/slot_codes.hpp"
#include "kernels/targets/isa_policy.hpp"

namespace ternlab::strategies {

template <class P>
concept Dot4LaneOps = IsaPolicy<P> && requires(typename P::V v, const std::uint8_t* x) {
  P::zero();
  P::and_(v, v);
  P::set1_u8(std::uint8_t(3));
  P::srli16(v, 2);               // 16-bit lanes shifted right (logical); callers mask the bytes
  P::template slli32<2>(v);
  P::add32(v, v);
  P::dot4(v, v, v);              // acc + four u8 x s8 products per int32 lane, no saturation
  P::dot4_bcst(v, v, x);         // the same against the int32 at x in every lane
  P::template broadcast_lanes<8>(x);  // the 8 (or 16) bytes at x in every 8- (16-) byte lane
};

// acc + the dot of w's LB-byte lanes with the LB activation bytes at x, broadcast to each.
template <class P, int LB>
typename P::V dot_broadcast(typename P::V acc, typename P::V w, const std::uint8_t* x) {
  if constexpr (LB == 4) return P::dot4_bcst(acc, w, x);
  else return P::dot4(acc, w, P::template broadcast_lanes<LB>(x));
}

template <Dot4LaneOps P>
struct Dot4LaneMasked {
  using V = typename P::V;
  static constexpr int kShift = 6;
  struct Slots {
    V s[4];
  };
  struct Acc {
    V s[4];
  };
  static Slots slots(V w) {
    return {{P::and_(w, P::set1_u8(0x03)), P::and_(w, P::set1_u8(0x0c)), P::and_(w, P::set1_u8(0x30)),
             P::and_(w, P::set1_u8(0xc0))}};
  }
  static Acc zero() { return {{P::zero(), P::zero(), P::zero(), P::zero()}}; }
  // Slot s's codes against the LB activation bytes at x + LB s.
  template <int LB = 4>
  static void dot(Acc& acc, const Slots& w, const std::uint8_t* x) {
    for (int s = 0; s < 4; ++s) acc.s[s] = dot_broadcast<P, LB>(acc.s[s], w.s[s], x + LB * s);
  }
  // Codes taken whole (no slot factor) against the dword at x: base-3's top digit.
  static void dot_codes(Acc& acc, V codes, const std::uint8_t* x) { acc.s[0] = P::dot4_bcst(acc.s[0], codes, x); }
  static V sums(const Acc& a) {
    return P::add32(P::add32(P::template slli32<6>(a.s[0]), P::template slli32<4>(a.s[1])),
                    P::add32(P::template slli32<2>(a.s[2]), a.s[3]));
  }
};

template <Dot4LaneOps P>
struct Dot4LaneCodes {
  using V = typename P::V;
  static constexpr int kShift = 0;
  struct Slots {
    V s[4];
  };
  using Acc = V;
  static Slots slots(V w) { return shifted_codes<P, Slots>(w); }
  static Acc zero() { return P::zero(); }
  template <int LB = 4>
  static void dot(Acc& acc, const Slots& w, const std::uint8_t* x) {
    for (int s = 0; s < 4; ++s) acc = dot_broadcast<P, LB>(acc, w.s[s], x + LB * s);
  }
  static void dot_codes(Acc& acc, V codes, const std::uint8_t* x) { acc = P::dot4_bcst(acc, codes, x); }
  static V sums(Acc a) { return a; }
};

// A target's GF(2) affine map of every byte by one 8 x 8 bit matrix (GFNI's gf2p8affineqb).
template <class P>
concept Gf2AffineOps = requires(typename P::V v) { P::gf2_affine(v, std::uint64_t{0}); };

template <Dot4LaneOps P>
  requires Gf2AffineOps<P>
struct Dot4LaneCodesGf2 : Dot4LaneCodes<P> {
  using V = typename P::V;
  using Slots = typename Dot4LaneCodes<P>::Slots;
  // Output bit i of a byte is the parity of the input AND matrix byte 7 - i: bytes 7 and 6 pick
  // input bits 2s and 2s + 1, the others are zero.
  static V slot(V w, int s) {
    const std::uint64_t picks = (std::uint64_t{1} << (2 * s)) << 56 | (std::uint64_t{1} << (2 * s + 1)) << 48;
    return P::gf2_affine(w, picks);
  }
  static Slots slots(V w) { return {{slot(w, 0), slot(w, 1), slot(w, 2), slot(w, 3)}}; }
};

template <Dot4LaneOps P, class Codes>
struct Dot4TwoChains {
  using V = typename P::V;
  static constexpr int kShift = 0;
  using Slots = typename Codes::Slots;
  struct Acc {
    V even, odd;
  };
  static Slots slots(V w) { return Codes::slots(w); }
  static Acc zero() { return {P::zero(), P::zero()}; }
  template <int LB = 4>
  static void dot(Acc& acc, const Slots& w, const std::uint8_t* x) {
    acc.even = dot_broadcast<P, LB>(acc.even, w.s[0], x);
    acc.odd = dot_broadcast<P, LB>(acc.odd, w.s[1], x + LB);
    acc.even = dot_broadcast<P, LB>(acc.even, w.s[2], x + 2 * LB);
    acc.odd = dot_broadcast<P, LB>(acc.odd, w.s[3], x + 3 * LB);
  }
  static void dot_codes(Acc& acc, V codes, const std::uint8_t* x) { acc.even = P::dot4_bcst(acc.even, codes, x); }
  static V sums(const Acc& a) { return P::add32(a.even, a.odd); }
};

// The lane programs of a dot4 target: in-place masks for one token, codes for many (through the
// affine map where the target has one), two chains a token for a last tile of four.
template <class P>
struct Dot4GemmLanes {
  using type = Dot4LaneCodes<P>;
};
template <class P>
  requires Gf2AffineOps<P>
struct Dot4GemmLanes<P> {
  using type = Dot4LaneCodesGf2<P>;
};
template <Dot4LaneOps P>
struct Dot4LanePrograms {
  using Gemv = Dot4LaneMasked<P>;
  using Gemm = typename Dot4GemmLanes<P>::type;
  using Gemm4 = Dot4TwoChains<P, Gemm>;
};

}  // namespace ternlab::strategies
