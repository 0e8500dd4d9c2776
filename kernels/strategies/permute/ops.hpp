// The permute strategy's operations: a code (a 2-bit field, or a base-3 digit) taken from a vector
// of bytes, and the dot of codes with activations into an accumulator whose int32 lanes the
// epilogue reads. Written once here over the targets' basic operations, in two builds: int16
// accumulators where the int8 dot is maddubs (AVX2, SSE4.1), int32 where it is dot4 (AVX-512's
// vpdpbusd, NEON's sdot).
#pragma once

#include <concepts>
#include <cstdint>

#include "kernels/targets/isa_policy.hpp"

namespace ternlab::strategies {

template <class P>
struct PermuteProgram {};

// The basic operations both builds read: bytes (a policy's load; NEON's differ from its int32 V),
// the field mask, and the base-3 digit's multiply and top trit.
template <class P>
concept PermuteCodeOps = IsaPolicy<P> && requires(decltype(P::load(nullptr)) b) {
  P::and_(b, b);
  P::or_(b, b);
  P::shuffle_bytes(b, b);
  P::set1_u8(std::uint8_t(3));
  P::set1_i16(std::int16_t(1));
  P::srli16(b, 2);     // 16-bit lanes shifted right (logical); callers mask the bytes
  P::mul_u8(b, b, b);  // byte-wise product mod 256, even and odd bytes by their own multipliers
  P::top_trit(b);      // floor(3 x / 256) of each byte, 0..2
};

// The codes, written once: a 2-bit field, or base-3 digit n brought to the top trit by 3^n mod 256.
template <PermuteCodeOps P>
struct PermuteCodes {
  using V = decltype(P::load(nullptr));
  static V field(V v, int shift) { return P::and_(P::srli16(v, shift), P::set1_u8(3)); }
  static V trit(V v, int mul) {
    const V m = P::set1_i16(std::int16_t(mul));
    return P::top_trit(P::mul_u8(v, m, m));
  }
};

// Targets whose int8 dot adds into int32 lanes (AVX-512's vpdpbusd, NEON's sdot or its widening
// multiplies): codes are 0..3, so no narrow bound.
template <class P>
  requires(PermuteCodeOps<P> && !MaddubsOps<P> &&
           requires(typename P::V acc, decltype(P::load(nullptr)) b, std::int32_t* out) {
             { P::dot4(acc, b, b) } -> std::same_as<typename P::V>;
             P::store(out, acc);
             P::zero();
           })
struct PermuteProgram<P> : PermuteCodes<P> {
  using V = decltype(P::load(nullptr));
  using Acc = typename P::V;
  static constexpr int kAccItems = 1 << 20;
  static Acc zero() { return P::zero(); }
  static Acc dot(Acc acc, V codes, V acts) { return P::dot4(acc, codes, acts); }
  static void store(Acc acc, std::int32_t* lanes) { P::store(lanes, acc); }
  // The accumulator as int32 lanes in 8-lane pieces (the vector epilogue's input, Rows8 policies).
  template <class Piece>
    requires requires(Acc a) { P::low_half(a); P::high_half(a); }
  static void pieces(Acc acc, Piece* out) {
    out[0] = P::low_half(acc), out[1] = P::high_half(acc);
  }
};

// The basic operations the maddubs build reads: MaddubsOps, a store, and the base-3 digit's
// multiply and top trit.
template <class P>
concept MaddubsPermuteOps = MaddubsOps<P> && PermuteCodeOps<P> && requires(typename P::V v, std::int32_t* out) {
  P::store(out, v);
};

// int16 accumulators: codes are 0..3, so a maddubs pair sum is at most 2 * 3 * 128 = 768 and an
// accumulator takes 42 items before it must widen (the plan splits longer runs).
template <class P>
  requires MaddubsPermuteOps<P>
struct PermuteProgram<P> : PermuteCodes<P> {
  using V = typename P::V;
  using Acc = V;
  static constexpr int kAccItems = 42;
  static Acc zero() { return P::zero(); }
  static Acc dot(Acc acc, V codes, V acts) { return P::add16(acc, P::maddubs(codes, acts)); }
  static void store(Acc acc, std::int32_t* lanes) { P::store(lanes, P::widen16(acc)); }
  // One 8-lane piece per 32 bytes (the vector epilogue's input, Rows8 policies).
  template <class Piece>
    requires(P::kBytes == 32)
  static void pieces(Acc acc, Piece* out) {
    out[0] = P::widen16(acc);
  }
};

}  // namespace ternlab::strategies
