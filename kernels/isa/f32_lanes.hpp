// The float-lane policies of the Leech-lattice record kernels (lattice/record_kernel.hpp): per ISA
// the handful of generic ops a lookup-based value select needs (spec §5.7), one struct each:
//
//   bits(w)         lane i = bit i of w (0 or 1)
//   shl<n>, or_     combine per-lane bits into a table index
//   lookup(t, i)    lane = t[i]: 8 floats a block (kTableBlocks blocks' tables side by side)
//   flip(v, s)      negate the lanes whose bit is 1
//   load, zero, fma, sum
//
// The scalar policy is always here; each SIMD one only where its unit's target pragma (or SIMDe)
// makes it compile: include this header after that pragma.
#pragma once

#include <bit>
#include <cstdint>

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

// One lane: the generic kernel's scalar build (the reference the SIMD policies are checked against
// besides the f64 decode).
struct F32Scalar {
  static constexpr const char* name = "scalar";
  static constexpr int kLanes = 1;
  static constexpr int kTableBlocks = 1;
  using F = float;
  using U = std::uint32_t;
  static U bits(std::uint32_t w) { return w & 1; }
  template <int n>
  static U shl(U a) { return a << n; }
  static U or_(U a, U b) { return a | b; }
  static F lookup(const float* t, U i) { return t[i]; }
  static F flip(F v, U s) { return std::bit_cast<float>(std::bit_cast<std::uint32_t>(v) ^ (s << 31)); }
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
  static U bits(std::uint32_t w) {
    return _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(int(w)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)),
                            _mm256_set1_epi32(1));
  }
  template <int n>
  static U shl(U a) { return _mm256_slli_epi32(a, n); }
  static U or_(U a, U b) { return _mm256_or_si256(a, b); }
  static F lookup(const float* t, U i) { return _mm256_permutevar8x32_ps(_mm256_loadu_ps(t), i); }
  static F flip(F v, U s) { return _mm256_castsi256_ps(_mm256_xor_si256(_mm256_castps_si256(v), _mm256_slli_epi32(s, 31))); }
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
  static U bits(std::uint32_t w) {
    const U iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    return _mm512_and_si512(_mm512_srlv_epi32(_mm512_set1_epi32(int(w)), iota), _mm512_set1_epi32(1));
  }
  template <int n>
  static U shl(U a) { return _mm512_slli_epi32(a, n); }
  static U or_(U a, U b) { return _mm512_or_si512(a, b); }
  static F lookup(const float* t, U i) { return _mm512_permutexvar_ps(i, _mm512_loadu_ps(t)); }
  static F flip(F v, U s) { return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(v), _mm512_slli_epi32(s, 31))); }
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
  static U bits(std::uint32_t w) {
    const int32x4_t down = {0, -1, -2, -3};
    return vandq_u32(vshlq_u32(vdupq_n_u32(w), down), vdupq_n_u32(1));
  }
  template <int n>
  static U shl(U a) { return vshlq_n_u32(a, n); }
  static U or_(U a, U b) { return vorrq_u32(a, b); }
  // Byte lookup: float i is bytes 4i .. 4i+3 of the table.
  static F lookup(const float* t, U i) {
    const uint8x16x2_t tab = {{vld1q_u8(reinterpret_cast<const std::uint8_t*>(t)),
                               vld1q_u8(reinterpret_cast<const std::uint8_t*>(t) + 16)}};
    const U bytes = vaddq_u32(vmulq_n_u32(i, 0x04040404u), vdupq_n_u32(0x03020100u));
    return vreinterpretq_f32_u8(vqtbl2q_u8(tab, vreinterpretq_u8_u32(bytes)));
  }
  static F flip(F v, U s) { return vreinterpretq_f32_u32(veorq_u32(vreinterpretq_u32_f32(v), vshlq_n_u32(s, 31))); }
  static F load(const float* p) { return vld1q_f32(p); }
  static F zero() { return vdupq_n_f32(0.0f); }
  static F fma(F a, F b, F c) { return vfmaq_f32(c, a, b); }
  static float sum(F v) { return (vgetq_lane_f32(v, 0) + vgetq_lane_f32(v, 1)) + (vgetq_lane_f32(v, 2) + vgetq_lane_f32(v, 3)); }
};
#endif

}  // namespace ternlab::isa
