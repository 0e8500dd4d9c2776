// The SSE4.1 / SSSE3 policies: 128-bit vectors for x86 CPUs without AVX2 (no AVX, FMA or F16C).
// Include only from a translation unit whose code is compiled for sse4.1,ssse3 (see
// kernels/targets/sse41/kernels.cpp).
//
//   Sse41    16-byte vectors: the slot-mask, permute and broadcast strategies (broadcast with 4 row
//            lanes a vector, so a strip of 8 rows is two vectors)
//   Sse41X2  32-byte vectors as two xmm registers: the base-3 and unpack strategies, whose plans
//            are laid out for 32-weight vectors (as NeonX2 does on aarch64)
//
// dot4 is AVX2's: pmaddubsw (u8 x s8 -> saturating int16 pair sums) + pmaddwd (int16 -> int32),
// on one 128-bit lane. Every per-lane bound the AVX2 policy states holds here unchanged.
//
// Float epilogues: without FMA each lane's fma is emulated exactly (Sse41Float::fma: round to odd
// in double); fp16 scales are converted by integer ops (no F16C); the shared strategies' scalar
// fmas take Sse41Float::fmaf, the same steps inline (strategies::scalar_fma).
#pragma once

#include <nmmintrin.h>  // SSE4.1 and below
#include <tmmintrin.h>  // SSSE3: pshufb, pmaddubsw, phaddd

#include <cstdint>

#include "kernels/cpu.hpp"
#include "kernels/kernel_id.hpp"
#include "kernels/kernel_plan.hpp"

namespace ternlab::isa {

struct Sse41Float {
  // IEEE binary16 to float, exactly (the bit trick of ggml / Giesen's half_to_float):
  // normals rebias the exponent, inf/NaN get the float's top exponent, subnormals and zero are
  // renormalised by one exact float subtraction.
  static __m128 fp16_lanes(__m128i h) {  // h: one binary16 per 32-bit lane, zero-extended
    const __m128i sign = _mm_slli_epi32(_mm_and_si128(h, _mm_set1_epi32(0x8000)), 16);
    __m128i o = _mm_slli_epi32(_mm_and_si128(h, _mm_set1_epi32(0x7fff)), 13);
    const __m128i exp_mask = _mm_set1_epi32(0x7c00 << 13);
    const __m128i exp = _mm_and_si128(o, exp_mask);
    o = _mm_add_epi32(o, _mm_set1_epi32((127 - 15) << 23));
    o = _mm_add_epi32(o, _mm_and_si128(_mm_cmpeq_epi32(exp, exp_mask), _mm_set1_epi32((128 - 16) << 23)));
    const __m128 sub = _mm_sub_ps(_mm_castsi128_ps(_mm_add_epi32(o, _mm_set1_epi32(1 << 23))),
                                  _mm_castsi128_ps(_mm_set1_epi32(113 << 23)));
    const __m128 v = _mm_blendv_ps(_mm_castsi128_ps(o), sub, _mm_castsi128_ps(_mm_cmpeq_epi32(exp, _mm_setzero_si128())));
    return _mm_or_ps(v, _mm_castsi128_ps(sign));
  }
  // Four consecutive fp16 values (8 bytes) to float.
  static __m128 fp16x4(const std::uint8_t* p) {
    return fp16_lanes(_mm_cvtepu16_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  }

  // fma(a, b, c) of two float lanes held as doubles, rounded once: a * b is exact in double (24 +
  // 24 bits), the sum is rounded to odd (TwoSum gives its exact error e; an even, inexact s moves
  // one ulp towards e), and a double rounded to odd at 53 >= 24 + 2 bits rounds to the float the
  // exact sum rounds to. s is never 0 while e is not: both addends are multiples of 2^-298.
  // inf/NaN make e NaN, which no compare below takes for inexact.
  static __m128d fma2(__m128d a, __m128d b, __m128d c) {
    const __m128d p = _mm_mul_pd(a, b);
    const __m128d s = _mm_add_pd(p, c);
    const __m128d v = _mm_sub_pd(s, p);
    const __m128d e = _mm_add_pd(_mm_sub_pd(p, _mm_sub_pd(s, v)), _mm_sub_pd(c, v));
    const __m128d z = _mm_setzero_pd();
    const __m128i inexact = _mm_castpd_si128(_mm_or_pd(_mm_cmplt_pd(e, z), _mm_cmpgt_pd(e, z)));
    const __m128i bits = _mm_castpd_si128(s);
    const __m128i even = _mm_cmpeq_epi64(_mm_and_si128(bits, _mm_set1_epi64x(1)), _mm_setzero_si128());
    // -1 where e's sign differs from s's (the exact sum is nearer zero), else +1.
    const __m128i differ = _mm_srai_epi32(_mm_shuffle_epi32(_mm_xor_si128(bits, _mm_castpd_si128(e)), 0xf5), 31);
    const __m128i step = _mm_or_si128(differ, _mm_set1_epi64x(1));
    return _mm_castsi128_pd(_mm_add_epi64(bits, _mm_and_si128(step, _mm_and_si128(inexact, even))));
  }
  // One float fma by the same steps, inline: the shared strategies' scalar epilogues call it
  // through strategies::scalar_fma (without FMA, __builtin_fmaf is a libm call in the loop).
  [[gnu::always_inline]] static float fmaf(float a, float b, float c) {
    return _mm_cvtss_f32(_mm_cvtpd_ps(fma2(_mm_set_sd(double(a)), _mm_set_sd(double(b)), _mm_set_sd(double(c)))));
  }
  // Four lanes of fma(a, b, c), each bit-identical to std::fma on floats.
  static __m128 fma(__m128 a, __m128 b, __m128 c) {
    const __m128d lo = fma2(_mm_cvtps_pd(a), _mm_cvtps_pd(b), _mm_cvtps_pd(c));
    const __m128d hi = fma2(_mm_cvtps_pd(_mm_movehl_ps(a, a)), _mm_cvtps_pd(_mm_movehl_ps(b, b)),
                            _mm_cvtps_pd(_mm_movehl_ps(c, c)));
    return _mm_movelh_ps(_mm_cvtpd_ps(lo), _mm_cvtpd_ps(hi));
  }

  // One fp16 value, by the same integer steps (reads its 2 bytes only). Always inlined: the scale
  // loops call it per row and block.
  [[gnu::always_inline]] static float fp16(const std::uint8_t* p) {
    std::uint16_t h;
    __builtin_memcpy(&h, p, 2);
    return _mm_cvtss_f32(fp16_lanes(_mm_cvtsi32_si128(h)));
  }
};

struct Sse41 : Sse41Float {
  static constexpr const char* name = "sse41";  // in messages; the identity is kIsa
  static constexpr Isa kIsa = Isa::sse41;
  static constexpr int kBytes = 16;
  using V = __m128i;

  static V load(const void* p) { return _mm_loadu_si128(static_cast<const __m128i*>(p)); }
  static V zero() { return _mm_setzero_si128(); }
  static V and_(V a, V b) { return _mm_and_si128(a, b); }
  static V set1_u8(std::uint8_t v) { return _mm_set1_epi8(char(v)); }
  static V set1_i16(std::int16_t v) { return _mm_set1_epi16(v); }
  static V add32(V a, V b) { return _mm_add_epi32(a, b); }
  static std::int32_t load_u32(const void* p) {
    std::int32_t v;
    __builtin_memcpy(&v, p, 4);
    return v;
  }

  // [a's int32 pairs (0,1), (2,3) summed | b's] (store_pair_sums in kernels/strategies/slot_mask/kernels.hpp).
  static V pair_add(V a, V b) { return _mm_hadd_epi32(a, b); }

  // --- broadcast (row-interleaved layouts): 4 rows per vector, one per 32-bit lane, or with
  // lanes of LB = 8 or 16 bytes 16 / LB rows, each over LB / 4 32-bit lanes ----------------------
  // AVX2's lane programs on half the rows; the same bounds (int16 block sums at most 24576).
  static constexpr int kRegisters = 16;
  static constexpr int kLanes = 4;
  // The LB activation bytes at x in every LB-byte lane: a dword, qword or the whole vector.
  template <int LB>
  static V broadcast_lanes(const std::uint8_t* x) {
    if constexpr (LB == 4) {
      return _mm_set1_epi32(load_u32(x));
    } else if constexpr (LB == 8) {
      std::int64_t v;
      __builtin_memcpy(&v, x, 8);
      return _mm_set1_epi64x(v);
    } else {
      static_assert(LB == 16, "lanes of 4, 8 or 16 bytes");
      return load(x);
    }
  }
  // acc + p in the accumulator's order (as AVX2: GCC's reassociation otherwise trees the sums).
  static V chain_add16(V acc, V p) {
    acc = _mm_add_epi16(acc, p);
    __asm__("" : "+x"(acc));
    return acc;
  }
  // The basic operations the broadcast strategy's maddubs lane programs read
  // (kernels/strategies/broadcast/maddubs_lanes.hpp).
  static V srli16(V a, int n) { return _mm_srli_epi16(a, n); }
  static V slli16(V a, int n) { return _mm_slli_epi16(a, n); }
  static V srai16(V a, int n) { return _mm_srai_epi16(a, n); }
  static V add16(V a, V b) { return _mm_add_epi16(a, b); }
  static V maddubs(V u8, V s8) { return _mm_maddubs_epi16(u8, s8); }
  static V widen16(V a) { return _mm_madd_epi16(a, set1_i16(1)); }  // int16 pair sums -> int32 lanes
  using LaneF = __m128;
  static LaneF lanes_zero() { return _mm_setzero_ps(); }
  static LaneF lanes_scales(const std::uint8_t* p) { return fp16x4(p); }
  static LaneF lanes_load(const float* p) { return _mm_loadu_ps(p); }
  // acc + float((s >> shift) - ysum) * (scales * d) per row: the reference's one fma per block.
  template <int shift>
  static LaneF lanes_fma(V s, std::int32_t ysum, LaneF scales, float d, LaneF acc) {
    if constexpr (shift > 0) s = _mm_srai_epi32(s, shift);
    const __m128 sf = _mm_cvtepi32_ps(_mm_sub_epi32(s, _mm_set1_epi32(ysum)));
    return fma(sf, _mm_mul_ps(scales, _mm_set1_ps(d)), acc);
  }
  static void lanes_store(float* y, LaneF v) { _mm_storeu_ps(y, v); }

  // --- basic operations the permute strategy's maddubs build reads (permute/ops.hpp) -----------
  static V or_(V a, V b) { return _mm_or_si128(a, b); }
  static V shuffle_bytes(V a, V idx) { return _mm_shuffle_epi8(a, idx); }  // index bit 7: zero
  static void store(void* p, V v) { _mm_storeu_si128(static_cast<__m128i*>(p), v); }
  // Byte-wise product mod 256 with per-byte multipliers, as Avx2::mul_u8.
  static V mul_u8(V x, V even, V odd) {
    const V lo = _mm_mullo_epi16(x, even);
    const V hi = _mm_mullo_epi16(_mm_and_si128(x, _mm_set1_epi16(std::int16_t(0xff00))), odd);
    return _mm_blendv_epi8(lo, hi, _mm_set1_epi16(std::int16_t(0xff00)));
  }
  // The top trit of each byte, floor(3 x / 256) = (x >= 86) + (x >= 171), as 0..2.
  static V top_trit(V x) {
    const V ge86 = _mm_cmpeq_epi8(_mm_max_epu8(x, set1_u8(86)), x);
    const V ge171 = _mm_cmpeq_epi8(_mm_max_epu8(x, set1_u8(171)), x);
    return _mm_sub_epi8(_mm_sub_epi8(zero(), ge86), ge171);
  }
};

// The 32-byte policy of the base-3 and unpack strategies: a vector is two xmm registers (lo: bytes
// 0-15, hi: 16-31), each one what AVX2 does in one 128-bit lane.
struct Sse41X2 : Sse41Float {
  static constexpr const char* name = "sse41";
  static constexpr Isa kIsa = Isa::sse41;
  static constexpr int kBytes = 32;
  struct V {
    __m128i lo, hi;
  };
  using S = Sse41;

  static V load(const void* p) {
    const auto* b = static_cast<const std::uint8_t*>(p);
    return {S::load(b), S::load(b + 16)};
  }
  static V zero() { return {S::zero(), S::zero()}; }
  // acc (int32 lanes) + dot4 of u8 a and s8 b, per half.
  static __m128i dot4(__m128i acc, __m128i a, __m128i b) {
    return _mm_add_epi32(acc, _mm_madd_epi16(_mm_maddubs_epi16(a, b), S::set1_i16(1)));
  }
  static V dot4(V acc, V a, V b) { return {dot4(acc.lo, a.lo, b.lo), dot4(acc.hi, a.hi, b.hi)}; }
  // maddubs's int16 pair sums, added and widened per half (the unpack strategy's block sum).
  static V maddubs(V u8, V s8) { return {_mm_maddubs_epi16(u8.lo, s8.lo), _mm_maddubs_epi16(u8.hi, s8.hi)}; }
  static V add16(V a, V b) { return {_mm_add_epi16(a.lo, b.lo), _mm_add_epi16(a.hi, b.hi)}; }
  static V widen16(V a) { return {S::widen16(a.lo), S::widen16(a.hi)}; }
  static std::int32_t reduce_add(V v) {
    __m128i s = _mm_add_epi32(v.lo, v.hi);
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
  }
  static void reduce_add4(V a, V b, V c, V d, std::int32_t* out) {
    const __m128i h = _mm_hadd_epi32(_mm_hadd_epi32(_mm_add_epi32(a.lo, a.hi), _mm_add_epi32(b.lo, b.hi)),
                                     _mm_hadd_epi32(_mm_add_epi32(c.lo, c.hi), _mm_add_epi32(d.lo, d.hi)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), h);
  }

  // --- natural 2-bit order (unpack) ---------------------------------------------------------------
  // The 8 code bytes in each 64-bit lane, lane j shifted right by 2j, AND 3: byte 8j + b holds the
  // code of weight 4b + j, Avx2::unpack_natural's order.
  static V unpack_natural(const std::uint8_t* codes) {
    std::int64_t c;
    __builtin_memcpy(&c, codes, 8);
    const __m128i b = _mm_set1_epi64x(c);
    const __m128i three = S::set1_u8(3);
    return {_mm_and_si128(_mm_unpacklo_epi64(b, _mm_srli_epi64(b, 2)), three),
            _mm_and_si128(_mm_unpacklo_epi64(_mm_srli_epi64(b, 4), _mm_srli_epi64(b, 6)), three)};
  }

  // --- base-3 (digit-planar) ----------------------------------------------------------------------
  static V windows(const std::uint8_t* lo, const std::uint8_t* hi) { return {S::load(lo), S::load(hi)}; }
  static V shuffle_bytes(V a, V idx) { return {_mm_shuffle_epi8(a.lo, idx.lo), _mm_shuffle_epi8(a.hi, idx.hi)}; }
  static V mul_u8(V x, V even, V odd) { return {S::mul_u8(x.lo, even.lo, odd.lo), S::mul_u8(x.hi, even.hi, odd.hi)}; }
  static V top_trit(V x) { return {S::top_trit(x.lo), S::top_trit(x.hi)}; }
};

}  // namespace ternlab::isa
