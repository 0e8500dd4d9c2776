// The permute strategy's operations: a code (a 2-bit field, or a base-3 digit) taken from a vector
// of bytes, and the dot of codes with activations into an accumulator whose int32 lanes the
// epilogue reads. Written once here over the basic operations of the targets whose int8 dot is
// maddubs (AVX2, SSE4.1); a policy with a dot of its own (AVX-512's vpdpbusd, NEON's sdot) declares
// PermAcc and its perm_* operations instead, and they are used as they stand.
#pragma once

#include <cstdint>

#include "kernels/targets/isa_policy.hpp"

namespace ternlab::strategies {

template <class P>
struct PermuteProgram {};

// The policy's own.
template <class P>
  requires requires { typename P::PermAcc; }
struct PermuteProgram<P> {
  using V = decltype(P::load(nullptr));  // a vector of bytes (NEON's differs from its P::V)
  using Acc = typename P::PermAcc;
  static constexpr int kAccItems = P::kPermAccItems;
  static V field(V v, int shift) { return P::field(v, shift); }
  static V trit(V v, int mul) { return P::trit(v, mul); }
  static Acc zero() { return P::perm_zero(); }
  static Acc dot(Acc acc, V codes, V acts) { return P::perm_dot(acc, codes, acts); }
  static void store(Acc acc, std::int32_t* lanes) { P::perm_store(acc, lanes); }
  template <class Piece>
  static void pieces(Acc acc, Piece* out) {
    P::perm_pieces(acc, out);
  }
};

// The basic operations the maddubs build reads: MaddubsOps, a store, and the base-3 digit's
// multiply and top trit.
template <class P>
concept MaddubsPermuteOps = MaddubsOps<P> && requires(typename P::V v, std::int32_t* out) {
  P::store(out, v);
  P::mul_u8(v, v, v);  // byte-wise product mod 256, even and odd bytes by their own multipliers
  P::top_trit(v);      // floor(3 x / 256) of each byte, 0..2
  P::set1_i16(std::int16_t(1));
};

// int16 accumulators: codes are 0..3, so a maddubs pair sum is at most 2 * 3 * 128 = 768 and an
// accumulator takes 42 items before it must widen (the plan splits longer runs).
template <class P>
  requires(!requires { typename P::PermAcc; } && MaddubsPermuteOps<P>)
struct PermuteProgram<P> {
  using V = typename P::V;
  using Acc = V;
  static constexpr int kAccItems = 42;
  static V field(V v, int shift) { return P::and_(P::srli16(v, shift), P::set1_u8(3)); }
  // 3^n mod 256 brings digit n to the top trit.
  static V trit(V v, int mul) {
    const V m = P::set1_i16(std::int16_t(mul));
    return P::top_trit(P::mul_u8(v, m, m));
  }
  static Acc zero() { return P::zero(); }
  static Acc dot(Acc acc, V codes, V acts) { return P::add16(acc, P::maddubs(codes, acts)); }
  static void store(Acc acc, std::int32_t* lanes) { P::store(lanes, P::slot_widen(acc)); }
  // One 8-lane piece per 32 bytes (the vector epilogue's input, Rows8 policies).
  template <class Piece>
    requires(P::kBytes == 32)
  static void pieces(Acc acc, Piece* out) {
    out[0] = P::slot_widen(acc);
  }
};

}  // namespace ternlab::strategies
