// The per-ISA policy the NEON strategies are written against: one int8 "dot4-accumulate" in two
// builds. Everything here has internal linkage: each ISA's translation unit is compiled with its own
// -march flags, and no inline function may be shared (and picked by the linker) across them.
#pragma once

#if !defined(__aarch64__)
#error "kernels/neon is aarch64-only"
#endif

#include <arm_neon.h>

#include <cstdint>
#include <cstring>

namespace ternlab::neon {
namespace {

// Plain Armv8.0 NEON (cortex-a72 and every aarch64 core): widening multiplies into int16, then
// pairwise accumulation into int32. int16 never overflows: a lane adds two products of a weight
// operand <= 48 (slot 2 masked in place, code 3) and an activation >= -128, |2 * 48 * 128| < 32768.
struct Mull {
  static constexpr const char* name = "neon";
  // Only the sum of the four lanes is meaningful (3 instructions per 16 bytes).
  static int32x4_t dot(int32x4_t acc, int8x16_t a, int8x16_t b) {
    return vpadalq_s16(acc, vmlal_high_s8(vmull_s8(vget_low_s8(a), vget_low_s8(b)), a, b));
  }
  // Lanes 0-1 gain the products of bytes 0-7 and lanes 2-3 those of bytes 8-15, as sdot's do:
  // what a row-pair word needs (4 instructions per 16 bytes).
  static int32x4_t dot_halves(int32x4_t acc, int8x16_t a, int8x16_t b) {
    const int16x8_t lo = vmull_s8(vget_low_s8(a), vget_low_s8(b));
    const int16x8_t hi = vmull_high_s8(a, b);
    return vpadalq_s16(acc, vpaddq_s16(lo, hi));
  }
};

#if defined(__ARM_FEATURE_DOTPROD)
// Armv8.2 dotprod: sdot, lane i += bytes 4i..4i+3 (1 instruction per 16 bytes).
struct Sdot {
  static constexpr const char* name = "dotprod";
  static int32x4_t dot(int32x4_t acc, int8x16_t a, int8x16_t b) { return vdotq_s32(acc, a, b); }
  static int32x4_t dot_halves(int32x4_t acc, int8x16_t a, int8x16_t b) { return vdotq_s32(acc, a, b); }
};
#endif

// fp16 scale at p (any alignment) to float; the hardware conversion is exact, as the table is.
inline float load_half(const std::uint8_t* p) {
  __fp16 h;
  std::memcpy(&h, p, sizeof h);
  return float(h);
}

// Sum of the 128 activations of half h of a q8_K block, from its eight 16-sums.
inline int half_sum(const std::int16_t* bsums, int h) { return vaddlvq_s16(vld1q_s16(bsums + 8 * h)); }

// 8 activations duplicated into both halves: the dup8 operand of a row-pair word.
inline int8x16_t dup8(const std::int8_t* q) {
  const int8x8_t h = vld1_s8(q);
  return vcombine_s8(h, h);
}

// Slot s of a 2-bit word, masked in place (4^s u for s = 0..2); slot 3 is shifted down instead,
// since 64 u would read as negative int8 for u >= 2.
template <int S>
inline int8x16_t slot(uint8x16_t v) {
  if constexpr (S == 3)
    return vreinterpretq_s8_u8(vshrq_n_u8(v, 6));
  else
    return vreinterpretq_s8_u8(vandq_u8(v, vdupq_n_u8(std::uint8_t(3u << (2 * S)))));
}

// a2 + 4 a1 + 16 (a0 + a3) = 16 (u . y): the slot accumulators recombined once per block.
inline int32x4_t recombine(int32x4_t a0, int32x4_t a1, int32x4_t a2, int32x4_t a3) {
  return vaddq_s32(vaddq_s32(a2, vshlq_n_s32(a1, 2)), vshlq_n_s32(vaddq_s32(a0, a3), 4));
}

}  // namespace
}  // namespace ternlab::neon
