// The slot-mask strategy's slot programs: how one weight vector's four 2-bit slots are taken apart
// and dotted with the activation expansion. Each is written once here over a target family's basic
// operations and derives from the target's policy; a target names the one its int8 dot suits in
// its Target (SlotPolicy, and WidenSlots for the experiment arm). What differs between them is
// only what the dot instruction can hold:
//
//   InPlaceSlots   maddubs (u8 x s8 -> saturating int16 pairs: AVX2, SSE4.1): slots 0 and 1 masked
//                  where they sit (u, 4u), slots 2 and 3 the same after one shift by 4; the in-place
//                  16u and 64u would saturate (2 * 192 * 128 > 32767), so after the shift every
//                  product is at most 4 * 3 * 128 per byte pair. They recombine in int16 as
//                  4 (m0 + m2) + (m1 + m3) = 4 * sum(u * y): |lane| <= 12288 a vector, so a group of
//                  two vectors still fits, and the multiplies (these ISAs' scarce port) widen to
//                  int32 once per group instead of once per slot.
//   WidenedSlots   the same targets without the trick with 4 and 16 (slot-mask-widen): every slot
//                  shifted down to its code 0..3 and its dot widened on its own.
//   ShiftedSlots   dot4 into int32 lanes (AVX-512's vpdpbusd): every slot shifted down to its code,
//                  all four dots into one accumulator, no recombination and no widening (the
//                  in-place masks would need a recombination after every vector: three shifts per
//                  vector per token instead of three per vector).
//   HornerSlots    a dot signed on both sides (NEON's sdot and its widening multiplies): slots 0-2
//                  stay in place (u, 4u, 16u <= 48 are positive int8) and slot 3 is shifted down
//                  (in place, 64u would read as negative); one accumulator, Horner-style: 16u2
//                  first, then >> 2 and add 4u1, >> 2 and add u0 and u3 (every shift is exact: the
//                  lane is a multiple of 4 when shifted).
//
// Exactness of all four: every product fits the dot's intermediate as stated above, group sums are
// int32, and a block's sum stays far below 2^31.
#pragma once

#include <concepts>
#include <cstdint>

#include "kernels/kernel_id.hpp"
#include "kernels/strategies/slot_codes.hpp"
#include "kernels/strategies/slot_mask/plan.hpp"
#include "kernels/targets/isa_policy.hpp"

namespace ternlab::strategies {

template <class P>
  requires MaddubsOps<P> && requires(typename P::V v) { P::slli16(v, 2); }
struct InPlaceSlots : P {
  using Policy = P;  // whose SlotMaskRows the epilogue reads
  using V = typename P::V;
  static constexpr Strategy kSlotStrategy = Strategy::slot_mask;
  static constexpr int kSlotShift = 2;
  static constexpr int kGroupVectors = 2;
  struct Slots {
    V s[4];
  };
  static Slots extract(V v) {
    const V hi = P::srli16(v, 4);
    const V low = P::set1_u8(0x03), high = P::set1_u8(0x0c);
    return {{P::and_(v, low), P::and_(v, high), P::and_(hi, low), P::and_(hi, high)}};
  }
  // int16 lanes: 4 * sum over slots of u * y (pairs of products per lane); slot s's activations at
  // x + s * kBytes.
  static V slot_dot(const Slots& w, const std::uint8_t* x) {
    constexpr int B = P::kBytes;
    const V m02 = P::add16(P::maddubs(w.s[0], P::load(x)), P::maddubs(w.s[2], P::load(x + 2 * B)));
    const V m13 = P::add16(P::maddubs(w.s[1], P::load(x + B)), P::maddubs(w.s[3], P::load(x + 3 * B)));
    return P::add16(P::slli16(m02, 2), m13);
  }
  static V slot_add(V a, V b) { return P::add16(a, b); }
  static V slot_widen(V a) { return P::widen16(a); }
};

template <class P>
  requires MaddubsOps<P> && requires(typename P::V v) { P::add32(v, v); }
struct WidenedSlots : P {
  using Policy = P;  // whose SlotMaskRows the epilogue reads
  using V = typename P::V;
  static constexpr Strategy kSlotStrategy = Strategy::slot_mask_widen;
  static constexpr int kSlotShift = 0;
  static constexpr int kGroupVectors = 2;  // InPlaceSlots' plan, so the two arms differ only in the slots
  struct Slots {
    V s[4];
  };
  static Slots extract(V v) { return shifted_codes<P, Slots>(v); }
  // int32 lanes: sum over slots of u * y, each slot widened separately.
  static V slot_dot(const Slots& w, const std::uint8_t* x) {
    V s = P::widen16(P::maddubs(w.s[0], P::load(x)));
    for (int k = 1; k < 4; ++k) s = P::add32(s, P::widen16(P::maddubs(w.s[k], P::load(x + P::kBytes * k))));
    return s;
  }
  static V slot_add(V a, V b) { return P::add32(a, b); }
  static V slot_widen(V a) { return a; }
};

// The basic operations of a target whose int8 dot adds four byte products into int32 lanes.
template <class P>
concept Dot4SlotOps = IsaPolicy<P> && requires(typename P::V acc, SlotBytes<P> b) {
  P::zero();
  P::and_(b, b);
  P::set1_u8(std::uint8_t(3));
  P::srli16(b, 2);  // 16-bit lanes shifted right (logical); callers mask the bytes
  { P::dot4(acc, b, b) } -> std::same_as<typename P::V>;
};

template <Dot4SlotOps P, Strategy kAs = Strategy::slot_mask>
struct ShiftedSlots : P {
  using Policy = P;  // whose SlotMaskRows the epilogue reads
  using V = typename P::V;
  using B = SlotBytes<P>;
  static constexpr Strategy kSlotStrategy = kAs;
  static constexpr int kSlotShift = 0;
  static constexpr int kGroupVectors = kNeonGroupVectors;  // int32 group sums: no narrow limit
  struct Slots {
    B s[4];
  };
  static Slots extract(B v) { return shifted_codes<P, Slots>(v); }
  // acc + sum over slots of u * y (|u * y| <= 3 * 128).
  static V slot_dot_into(V acc, const Slots& w, const std::uint8_t* x) {
    for (int s = 0; s < 4; ++s) acc = P::dot4(acc, w.s[s], P::load(x + P::kBytes * s));
    return acc;
  }
  static V slot_widen(V a) { return a; }
};

template <class P>
  requires Dot4SlotOps<P> && requires(typename P::V v) { P::template srai32<2>(v); P::add32(v, v); }
struct HornerSlots : P {
  using Policy = P;  // whose SlotMaskRows the epilogue reads
  using V = typename P::V;
  using B = SlotBytes<P>;
  static constexpr Strategy kSlotStrategy = Strategy::slot_mask;
  static constexpr int kSlotShift = 0;
  static constexpr int kGroupVectors = kNeonGroupVectors;  // int32 group sums: no narrow limit
  struct Slots {
    B s[4];
  };
  static Slots extract(B v) {
    return {{P::and_(v, P::set1_u8(0x03)), P::and_(v, P::set1_u8(0x0c)), P::and_(v, P::set1_u8(0x30)),
             P::and_(P::srli16(v, 6), P::set1_u8(0x03))}};
  }
  static V slot_dot(const Slots& w, const std::uint8_t* x) {
    constexpr int K = P::kBytes;
    V acc = P::dot4(P::zero(), w.s[2], P::load(x + 2 * K));
    acc = P::dot4(P::template srai32<2>(acc), w.s[1], P::load(x + K));
    acc = P::dot4(P::template srai32<2>(acc), w.s[0], P::load(x));
    return P::dot4(acc, w.s[3], P::load(x + 3 * K));
  }
  static V slot_add(V a, V b) { return P::add32(a, b); }
  static V slot_widen(V a) { return a; }
};

}  // namespace ternlab::strategies
