// The NEON dotprod policy: 128-bit vectors (one 16-byte word), dot4 = sdot (s8 x s8 into int32).
// Include only from a translation unit compiled with +dotprod (see kernels/arm_dotprod.cpp).
//
// sdot is signed on both sides, so slot 3 is shifted down (in place it would be 64u, read as
// negative for u >= 2); slots 0-2 stay in place (u, 4u, 16u <= 48 are positive int8). The
// recombination runs Horner-style in one accumulator: 16u2 first, then >> 2 and add 4u1, >> 2 and
// add u0 and u3 (every shift is exact: the lane is a multiple of 4 when shifted).
#pragma once

#include <arm_neon.h>

#include <cstdint>

namespace ternlab::isa {

struct NeonDotprod {
  static constexpr const char* name = "dotprod";
  static constexpr int kBytes = 16;
  using V = int32x4_t;

  static uint8x16_t load(const void* p) { return vld1q_u8(static_cast<const std::uint8_t*>(p)); }
  static V add32(V a, V b) { return vaddq_s32(a, b); }

  static constexpr int kSlotShift = 0;
  static constexpr int kGroupVectors = 8;  // int32 group sums: no narrow limit
  struct Slots {
    int8x16_t s[4];
  };
  static Slots extract(uint8x16_t v) {
    const auto mask = [&](std::uint8_t m) { return vreinterpretq_s8_u8(vandq_u8(v, vdupq_n_u8(m))); };
    return {{mask(0x03), mask(0x0c), mask(0x30), vreinterpretq_s8_u8(vshrq_n_u8(v, 6))}};
  }
  static V slot_dot(const Slots& w, const std::uint8_t* x) {
    const auto acts = [&](int s) { return vld1q_s8(reinterpret_cast<const std::int8_t*>(x + 16 * s)); };
    V acc = vdotq_s32(vdupq_n_s32(0), w.s[2], acts(2));
    acc = vdotq_s32(vshrq_n_s32(acc, 2), w.s[1], acts(1));
    acc = vdotq_s32(vshrq_n_s32(acc, 2), w.s[0], acts(0));
    return vdotq_s32(acc, w.s[3], acts(3));
  }

  static V slot_add(V a, V b) { return vaddq_s32(a, b); }
  static V slot_widen(V a) { return a; }

  template <int G>
  static void store_pair_sums(const V* c, std::int32_t* out) {
    for (int a = 0; a < G; a += 2) vst1q_s32(out + 2 * a, vpaddq_s32(c[a], a + 1 < G ? c[a + 1] : vdupq_n_s32(0)));
  }
  // vpaddq(c_a, c_a+1) = [c_a pairs 0,1 | c_a+1 pairs 0,1].
  static int pair_position(int a, int /*u*/, int h) { return 4 * (a / 2) + 2 * (a % 2) + h; }

  // --- permute (any layout): codes gathered by byte shuffles, one 2-bit field or digit an op ----
  static constexpr int kPermAccItems = 1 << 20;  // int32 accumulator: no narrow bound
  using PermAcc = V;
  static uint8x16_t or_(uint8x16_t a, uint8x16_t b) { return vorrq_u8(a, b); }
  static uint8x16_t shuffle_bytes(uint8x16_t a, uint8x16_t idx) { return vqtbl1q_u8(a, idx); }  // >= 16: 0
  static uint8x16_t field(uint8x16_t v, int shift) {
    return vandq_u8(vshlq_u8(v, vdupq_n_s8(std::int8_t(-shift))), vdupq_n_u8(3));
  }
  // Digit n of each byte: t = v * 3^n mod 256, then the top trit (t >= 86) + (t >= 171).
  static uint8x16_t trit(uint8x16_t v, int mul) {
    const uint8x16_t t = vmulq_u8(v, vdupq_n_u8(std::uint8_t(mul)));
    return vaddq_u8(vshrq_n_u8(vcgeq_u8(t, vdupq_n_u8(86)), 7), vshrq_n_u8(vcgeq_u8(t, vdupq_n_u8(171)), 7));
  }
  static PermAcc perm_zero() { return vdupq_n_s32(0); }
  static PermAcc perm_dot(PermAcc acc, uint8x16_t u, uint8x16_t y) {
    return vdotq_s32(acc, vreinterpretq_s8_u8(u), vreinterpretq_s8_u8(y));
  }
  static void perm_store(PermAcc acc, std::int32_t* lanes) { vst1q_s32(lanes, acc); }

  static float fp16(const std::uint8_t* p) {
    __fp16 h;
    __builtin_memcpy(&h, p, 2);
    return float(h);
  }
};

}  // namespace ternlab::isa
