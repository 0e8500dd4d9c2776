// The NEON policies: one policy per vector width, each in two dot4 builds. Dot4 is what differs
// between aarch64 feature levels; everything else is plain Armv8.0 NEON.
//
//   Neon<D>    16-byte vectors (one word): the slot-mask and permute strategies
//   NeonX2<D>  32-byte vectors as two q registers: the base-3 and unpack strategies, whose plans
//              are laid out for 32-weight vectors
//
// with D = Mull (Armv8.0: every aarch64 core, e.g. Cortex-A72) or Sdot (Armv8.2 dotprod; include
// kernels/targets/dotprod/policy.hpp, only from a translation unit compiled with +dotprod).
//
// Include only from an aarch64 ISA translation unit (kernels/targets/{neon,dotprod,i8mm}/kernels.cpp).
#pragma once

#include <arm_neon.h>

#include <cstdint>

#include "kernels/cpu.hpp"
#include "kernels/kernel_id.hpp"
#include "kernels/strategies/slot_mask/plan.hpp"
#include "kernels/strategies/unpack/plan.hpp"

namespace ternlab::isa {

// dot4 without dotprod: lane i gains the products of bytes 4i..4i+3, as sdot's lane does, from
// widening multiplies (int16 products), one pairwise add into int16 and one pairwise accumulate
// into int32. Exact while |a| <= 127 in every byte: a pair sum is then at most 2 * 127 * 128 <
// 2^15. Every strategy's weight operand is far smaller (codes 0..3, trits 0..2, slot values <= 48).
struct Mull {
  static constexpr const char* name = "neon";
  static constexpr Isa kIsa = Isa::neon;
  static int32x4_t dot4(int32x4_t acc, int8x16_t a, int8x16_t b) {
    const int16x8_t lo = vmull_s8(vget_low_s8(a), vget_low_s8(b));
    const int16x8_t hi = vmull_high_s8(a, b);
    return vpadalq_s16(acc, vpaddq_s16(lo, hi));
  }
};

// The 16-byte policy of the slot-mask and permute strategies. Its dot4 is signed on both sides:
// slot-mask runs its HornerSlots program over it (kernels/strategies/slot_mask/ops.hpp).
template <class D>
struct Neon {
  static constexpr const char* name = D::name;  // in messages; the identity is kIsa
  static constexpr Isa kIsa = D::kIsa;
  static constexpr int kBytes = 16;
  using V = int32x4_t;

  static uint8x16_t load(const void* p) { return vld1q_u8(static_cast<const std::uint8_t*>(p)); }
  static V add32(V a, V b) { return vaddq_s32(a, b); }
  template <int n>
  static V srai32(V a) { return vshrq_n_s32(a, n); }

  static V zero() { return vdupq_n_s32(0); }
  static void store(void* p, V v) { vst1q_s32(static_cast<std::int32_t*>(p), v); }
  // [a's int32 pairs (0,1), (2,3) summed | b's] (store_pair_sums in kernels/strategies/slot_mask/kernels.hpp).
  static V pair_add(V a, V b) { return vpaddq_s32(a, b); }

  // --- basic operations on bytes the permute strategy reads (permute/ops.hpp) ------------------
  static uint8x16_t and_(uint8x16_t a, uint8x16_t b) { return vandq_u8(a, b); }
  static uint8x16_t or_(uint8x16_t a, uint8x16_t b) { return vorrq_u8(a, b); }
  static uint8x16_t set1_u8(std::uint8_t v) { return vdupq_n_u8(v); }
  static uint8x16_t set1_i16(std::int16_t v) { return vreinterpretq_u8_s16(vdupq_n_s16(v)); }
  static uint8x16_t shuffle_bytes(uint8x16_t a, uint8x16_t idx) { return vqtbl1q_u8(a, idx); }  // >= 16: 0
  // 16-bit lanes shifted right (logical); callers mask the bytes.
  static uint8x16_t srli16(uint8x16_t a, int n) {
    return vreinterpretq_u8_u16(vshlq_u16(vreinterpretq_u16_u8(a), vdupq_n_s16(std::int16_t(-n))));
  }
  // Byte-wise product mod 256, multipliers as x86's 16-bit ones (byte 2i's in the low byte of
  // even[i], byte 2i+1's in the low byte of odd[i]): trn1 interleaves them.
  static uint8x16_t mul_u8(uint8x16_t x, uint8x16_t even, uint8x16_t odd) { return vmulq_u8(x, vtrn1q_u8(even, odd)); }
  // The top trit of each byte, floor(3 x / 256) = (x >= 86) + (x >= 171), as 0..2.
  static uint8x16_t top_trit(uint8x16_t x) {
    return vsubq_u8(vsubq_u8(vdupq_n_u8(0), vcgeq_u8(x, vdupq_n_u8(86))), vcgeq_u8(x, vdupq_n_u8(171)));
  }
  // acc + the dot of each 4 bytes of codes u (0..3) and activations y, per int32 lane.
  static V dot4(V acc, uint8x16_t u, uint8x16_t y) { return D::dot4(acc, vreinterpretq_s8_u8(u), vreinterpretq_s8_u8(y)); }

  // Always inlined: the scale loops call it per row and block, and out of line (GCC's choice for
  // some instantiations) every call was a call in a hot loop.
  [[gnu::always_inline]] static float fp16(const std::uint8_t* p) {
    __fp16 h;
    __builtin_memcpy(&h, p, 2);
    return float(h);
  }
};

// The 32-byte policy of the base-3 and unpack strategies: a vector is two q registers (lo: bytes
// 0-15, hi: 16-31), each 16-byte step the x86 policies take per 128-bit lane done once per half.
template <class D>
struct NeonX2 {
  static constexpr const char* name = D::name;
  static constexpr Isa kIsa = D::kIsa;
  static constexpr int kBytes = 32;
  struct V {
    uint8x16_t lo, hi;
  };

  static V load(const void* p) {
    const auto* b = static_cast<const std::uint8_t*>(p);
    return {vld1q_u8(b), vld1q_u8(b + 16)};
  }
  static V zero() { return {vdupq_n_u8(0), vdupq_n_u8(0)}; }
  static int32x4_t s32(uint8x16_t v) { return vreinterpretq_s32_u8(v); }
  static uint8x16_t u8(int32x4_t v) { return vreinterpretq_u8_s32(v); }
  static int8x16_t s8(uint8x16_t v) { return vreinterpretq_s8_u8(v); }

  // acc (int32 lanes) + dot4 of int8 a and b, per half.
  static V dot4(V acc, V a, V b) {
    return {u8(D::dot4(s32(acc.lo), s8(a.lo), s8(b.lo))), u8(D::dot4(s32(acc.hi), s8(a.hi), s8(b.hi)))};
  }
  static std::int32_t reduce_add(V v) { return vaddvq_s32(vaddq_s32(s32(v.lo), s32(v.hi))); }
  static void reduce_add4(V a, V b, V c, V d, std::int32_t* out) {
    out[0] = reduce_add(a), out[1] = reduce_add(b), out[2] = reduce_add(c), out[3] = reduce_add(d);
  }

  // --- natural 2-bit order (the unpack strategy, spec 6.2's decode) --------------------------------
  // The 8 code bytes of 32 weights in both 64-bit lanes of each half, lane j shifted right by 2j
  // (ushl by -2j), AND 3: byte 8j + b holds the code of weight 4b + j, the order the x86 policies
  // leave and prepare_natural_acts matches.
  static V unpack_natural(const std::uint8_t* codes) {
    const uint8x8_t c8 = vld1_u8(codes);
    const uint64x2_t c = vreinterpretq_u64_u8(vcombine_u8(c8, c8));
    const int64x2_t s01 = {0, -2}, s23 = {-4, -6};
    const uint8x16_t three = vdupq_n_u8(3);
    return {vandq_u8(vreinterpretq_u8_u64(vshlq_u64(c, s01)), three),
            vandq_u8(vreinterpretq_u8_u64(vshlq_u64(c, s23)), three)};
  }

  // --- base-3 (digit-planar) -----------------------------------------------------------------------
  static V windows(const std::uint8_t* lo, const std::uint8_t* hi) { return {vld1q_u8(lo), vld1q_u8(hi)}; }
  // Within each half, as pshufb per 128-bit lane (the plan's indices are 0..15).
  static V shuffle_bytes(V a, V idx) { return {vqtbl1q_u8(a.lo, idx.lo), vqtbl1q_u8(a.hi, idx.hi)}; }
  // Byte-wise product mod 256. The plan stores byte 2i's multiplier in the low byte of even[i] and
  // byte 2i+1's in the low byte of odd[i] (for x86's 16-bit multiplies): trn1 interleaves them.
  static V mul_u8(V x, V even, V odd) {
    return {vmulq_u8(x.lo, vtrn1q_u8(even.lo, odd.lo)), vmulq_u8(x.hi, vtrn1q_u8(even.hi, odd.hi))};
  }
  // The top trit of each byte, floor(3 x / 256) = (x >= 86) + (x >= 171), as 0..2.
  static uint8x16_t top_trit(uint8x16_t x) {
    return vsubq_u8(vsubq_u8(vdupq_n_u8(0), vcgeq_u8(x, vdupq_n_u8(86))), vcgeq_u8(x, vdupq_n_u8(171)));
  }
  static V top_trit(V x) { return {top_trit(x.lo), top_trit(x.hi)}; }

  static float fp16(const std::uint8_t* p) { return Neon<D>::fp16(p); }
};

}  // namespace ternlab::isa
