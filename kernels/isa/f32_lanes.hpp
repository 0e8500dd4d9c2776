// The float-lane policies of the Leech-lattice record kernels (lattice/record_kernel.hpp): per ISA
// the handful of generic ops a lookup-based value select needs (spec §5.7), one struct each:
//
//   record(p), record(lo, hi)
//                   16 record bytes as an operand: loaded, or from two little-endian words (no
//                   store-then-load of words just computed: that cannot be forwarded)
//   gather_index(recs, g, s)
//                   lanes s … s + kLanes − 1 of a step's index (block b's record in recs[b]): lane i, slot j = (s + i) mod 24 of block b = (s + i) / 24, is
//                   Σ_k w_k · bit g.shift[j] of byte g.byte[j][k] (0x80: none) + 8 b, w = (1, 2, 4, −128)
//                   for (plane 0, plane 1, plane 2, sign): the level in bits 0-2, the block within
//                   the step in bit 3, the sign in bit 31
//   table(rows)     the lookup operand: kTableBlocks rows of 8 floats side by side
//   lookup(t, i)    lane = t[i mod 8 kTableBlocks]
//   flip(v, i)      negate the lanes whose bit 31 is set
//   load, zero, fma, sum
//
// The scalar policy is always here; each SIMD one only where its unit's target pragma (or SIMDe)
// makes it compile: include this header after that pragma.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#if defined(TERNLAB_AVX512_EMULATED)
#define SIMDE_X86_AVX_NATIVE
#define SIMDE_X86_AVX2_NATIVE
#define SIMDE_X86_FMA_NATIVE
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>
#else
#include <immintrin.h>
#endif
#endif
#if defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace ternlab::isa {

// Where each slot's index bits sit in a record whose sign mask and level planes share one bit
// offset mod 8 (lattice/record_kernel.hpp derives it from the declaration).
struct RecordBitGather {
  alignas(32) std::uint8_t byte[24][4];  // per slot: the bytes of plane 0, 1, 2 and sign (0x80: none)
  alignas(32) std::uint32_t shift[24];   // per slot: the bit within those bytes
};
// Index weights of (plane 0, plane 1, plane 2, sign) as little-endian int8 bytes (1, 2, 4, −128).
inline constexpr std::uint32_t kGatherWeights = 0x80040201u;

// One lane: the generic kernel's scalar build (the reference the SIMD policies are checked against
// besides the f64 decode).
struct F32Scalar {
  static constexpr const char* name = "scalar";
  static constexpr int kLanes = 1;
  static constexpr int kTableBlocks = 1;
  using F = float;
  using U = std::uint32_t;
  using T = const float*;
  struct R {
    std::uint8_t b[16];
  };
  static R record(const std::uint8_t* p) {
    R r;
    std::memcpy(r.b, p, 16);
    return r;
  }
  static R record(std::uint64_t lo, std::uint64_t hi) {
    R r;
    for (int i = 0; i < 8; ++i) r.b[i] = std::uint8_t(lo >> (8 * i)), r.b[8 + i] = std::uint8_t(hi >> (8 * i));
    return r;
  }
  static U gather_index(const R* recs, const RecordBitGather& g, int s) {
    const std::uint8_t* rec = recs[s / 24].b;
    const int j = s % 24;
    std::int32_t v = 8 * (s / 24);
    for (int k = 0; k < 4; ++k)
      if (g.byte[j][k] < 16)
        v += std::int32_t(std::int8_t(kGatherWeights >> (8 * k))) * std::int32_t(rec[g.byte[j][k]] >> g.shift[j] & 1);
    return U(v);
  }
  static T table(const float* const* rows) { return rows[0]; }
  static F lookup(T t, U i) { return t[i & 7]; }
  static F flip(F v, U i) { return std::bit_cast<float>(std::bit_cast<std::uint32_t>(v) ^ (i & 0x80000000u)); }
  static F load(const float* p) { return *p; }
  static F zero() { return 0.0f; }
  static F fma(F a, F b, F c) { return a * b + c; }
  static float sum(F v) { return v; }
};

#if defined(TERNLAB_F32_AVX2)
struct F32Avx2 {
  static constexpr const char* name = "avx2";
  static constexpr int kLanes = 8;
  static constexpr int kTableBlocks = 1;  // vpermps indexes 8 floats: one block's levels
  using F = __m256;
  using U = __m256i;
  using T = __m256;
  // 8 slots j … j + 7 of one record: byte shuffle, per-lane shift, mask, weighted byte sums.
  using R = __m128i;
  static R record(const std::uint8_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }
  static R record(std::uint64_t lo, std::uint64_t hi) { return _mm_set_epi64x(std::int64_t(hi), std::int64_t(lo)); }
  static U gather8(__m128i rec, const RecordBitGather& g, int j) {
    const __m256i r = _mm256_broadcastsi128_si256(rec);
    const __m256i b = _mm256_shuffle_epi8(r, _mm256_load_si256(reinterpret_cast<const __m256i*>(g.byte[j])));
    const __m256i sh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(&g.shift[j]));
    const __m256i bits = _mm256_and_si256(_mm256_srlv_epi32(b, sh), _mm256_set1_epi8(1));
    return _mm256_madd_epi16(_mm256_maddubs_epi16(bits, _mm256_set1_epi32(std::int32_t(kGatherWeights))), _mm256_set1_epi16(1));
  }
  static U gather_index(const R* recs, const RecordBitGather& g, int s) { return gather8(recs[0], g, s); }
  static T table(const float* const* rows) { return _mm256_loadu_ps(rows[0]); }
  static F lookup(T t, U i) { return _mm256_permutevar8x32_ps(t, i); }  // reads bits 0-2
  static F flip(F v, U i) {
    return _mm256_castsi256_ps(
        _mm256_xor_si256(_mm256_castps_si256(v), _mm256_and_si256(i, _mm256_set1_epi32(std::int32_t(0x80000000u)))));
  }
  static F load(const float* p) { return _mm256_loadu_ps(p); }
  static F zero() { return _mm256_setzero_ps(); }
  static F fma(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  static float sum(F v) {
    alignas(32) float l[8];
    _mm256_store_ps(l, v);
    return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
  }
};
#endif

#if defined(TERNLAB_F32_AVX512)
#if defined(TERNLAB_AVX512_EMULATED)
inline namespace emulated {
#else
inline namespace native {
#endif
struct F32Avx512 {
#if defined(TERNLAB_AVX512_EMULATED)
  static constexpr const char* name = "avx512-simde";
#else
  static constexpr const char* name = "avx512";
#endif
  static constexpr int kLanes = 16;
  // vpermps at 512 bits indexes 16 floats: two blocks' levels, so 48 slots are three full vectors.
  static constexpr int kTableBlocks = 2;
  using F = __m512;
  using U = __m512i;
  using T = __m512;
  // Per 8-lane half as in the AVX2 policy (byte shuffles at 512 bits need AVX-512 BW).
  using R = __m128i;
  static R record(const std::uint8_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }
  static R record(std::uint64_t lo, std::uint64_t hi) { return _mm_set_epi64x(std::int64_t(hi), std::int64_t(lo)); }
  static __m256i gather8(__m128i rec, const RecordBitGather& g, int j) {
    const __m256i r = _mm256_broadcastsi128_si256(rec);
    const __m256i b = _mm256_shuffle_epi8(r, _mm256_load_si256(reinterpret_cast<const __m256i*>(g.byte[j])));
    const __m256i sh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(&g.shift[j]));
    const __m256i bits = _mm256_and_si256(_mm256_srlv_epi32(b, sh), _mm256_set1_epi8(1));
    return _mm256_madd_epi16(_mm256_maddubs_epi16(bits, _mm256_set1_epi32(std::int32_t(kGatherWeights))), _mm256_set1_epi16(1));
  }
  static U gather_index(const R* recs, const RecordBitGather& g, int s) {
    __m256i lo = gather8(recs[s / 24], g, s % 24), hi = gather8(recs[(s + 8) / 24], g, (s + 8) % 24);
    if (s / 24 == 1) lo = _mm256_or_si256(lo, _mm256_set1_epi32(8));
    if ((s + 8) / 24 == 1) hi = _mm256_or_si256(hi, _mm256_set1_epi32(8));
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
  }
  static T table(const float* const* rows) {
    return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(_mm256_loadu_ps(rows[0]))),
                                               _mm256_castps_pd(_mm256_loadu_ps(rows[1])), 1));
  }
  static F lookup(T t, U i) { return _mm512_permutexvar_ps(i, t); }  // reads bits 0-3: level and block
  // v xor (i and sign bit) in one ternary-logic op: 0x78 = A xor (B and C) over the truth-table bytes A = 0xF0, B = 0xCC, C = 0xAA.
  static F flip(F v, U i) {
    return _mm512_castsi512_ps(
        _mm512_ternarylogic_epi32(_mm512_castps_si512(v), i, _mm512_set1_epi32(std::int32_t(0x80000000u)), 0x78));
  }
  static F load(const float* p) { return _mm512_loadu_ps(p); }
  static F zero() { return _mm512_setzero_ps(); }
  static F fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  static float sum(F v) {
    alignas(64) float l[16];
    _mm512_store_ps(l, v);
    float s = 0;
    for (int i = 0; i < 16; i += 4) s += (l[i] + l[i + 1]) + (l[i + 2] + l[i + 3]);
    return s;
  }
};
}  // namespace native / emulated
#endif

#if defined(__aarch64__)
struct F32Neon {
  static constexpr const char* name = "neon";
  static constexpr int kLanes = 4;
  static constexpr int kTableBlocks = 1;  // tbl over two q registers: 32 bytes = 8 floats
  using F = float32x4_t;
  using U = uint32x4_t;
  using T = uint8x16x2_t;
  using R = uint8x16_t;
  static R record(const std::uint8_t* p) { return vld1q_u8(p); }
  static R record(std::uint64_t lo, std::uint64_t hi) { return vcombine_u8(vcreate_u8(lo), vcreate_u8(hi)); }
  static U gather_index(const R* recs, const RecordBitGather& g, int s) {
    const int j = s % 24;
    const uint8x16_t b = vqtbl1q_u8(recs[0], vld1q_u8(g.byte[j]));  // indices ≥ 16 read 0
    const int32x4_t down = vnegq_s32(vreinterpretq_s32_u32(vld1q_u32(&g.shift[j])));
    const uint8x16_t bits = vandq_u8(vreinterpretq_u8_u32(vshlq_u32(vreinterpretq_u32_u8(b), down)), vdupq_n_u8(1));
    const int8x16_t w = vreinterpretq_s8_u32(vdupq_n_u32(kGatherWeights));
    return vreinterpretq_u32_s32(vpaddlq_s16(vpaddlq_s8(vmulq_s8(vreinterpretq_s8_u8(bits), w))));
  }
  static T table(const float* const* rows) {
    return {{vld1q_u8(reinterpret_cast<const std::uint8_t*>(rows[0])), vld1q_u8(reinterpret_cast<const std::uint8_t*>(rows[0]) + 16)}};
  }
  // Byte lookup: float k is bytes 4k .. 4k+3 of the table.
  static F lookup(T t, U i) {
    const U at = vaddq_u32(vmulq_n_u32(vandq_u32(i, vdupq_n_u32(7)), 0x04040404u), vdupq_n_u32(0x03020100u));
    return vreinterpretq_f32_u8(vqtbl2q_u8(t, vreinterpretq_u8_u32(at)));
  }
  static F flip(F v, U i) { return vreinterpretq_f32_u32(veorq_u32(vreinterpretq_u32_f32(v), vandq_u32(i, vdupq_n_u32(0x80000000u)))); }
  static F load(const float* p) { return vld1q_f32(p); }
  static F zero() { return vdupq_n_f32(0.0f); }
  static F fma(F a, F b, F c) { return vfmaq_f32(c, a, b); }
  static float sum(F v) { return (vgetq_lane_f32(v, 0) + vgetq_lane_f32(v, 1)) + (vgetq_lane_f32(v, 2) + vgetq_lane_f32(v, 3)); }
};
#endif

}  // namespace ternlab::isa
