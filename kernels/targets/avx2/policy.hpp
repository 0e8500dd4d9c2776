// The AVX2 policy: 256-bit vectors (two 16-byte words). Include only from a translation unit whose
// code is compiled for avx2,fma,f16c (see kernels/targets/avx2/kernels.cpp).
//
// dot4 is maddubs (u8 x s8 -> saturating int16 pair sums) + madd (int16 -> int32).
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu.hpp"
#include "kernels/isa/rows8.hpp"
#include "kernels/kernel_id.hpp"

namespace ternlab::isa {

struct Avx2 : Rows8<Avx2> {
  static constexpr const char* name = "avx2";  // in messages; the identity is kIsa
  static constexpr Isa kIsa = Isa::avx2;
  static constexpr int kBytes = 32;
  using V = __m256i;

  static V load(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
  static V zero() { return _mm256_setzero_si256(); }
  static V and_(V a, V b) { return _mm256_and_si256(a, b); }
  static V set1_u8(std::uint8_t v) { return _mm256_set1_epi8(char(v)); }
  static V set1_i16(std::int16_t v) { return _mm256_set1_epi16(v); }
  static V add32(V a, V b) { return _mm256_add_epi32(a, b); }
  static V add64(V a, V b) { return _mm256_add_epi64(a, b); }
  static std::uint64_t sum64(V v) {
    alignas(32) std::uint64_t l[4];
    _mm256_store_si256(reinterpret_cast<__m256i*>(l), v);
    return l[0] + l[1] + l[2] + l[3];
  }
  static V sub32(V a, V b) { return _mm256_sub_epi32(a, b); }

  // acc + sum of 4 products u8 x s8 per int32 lane (no saturation for |u| <= 63: 2 * 63 * 128 fits).
  static V dot4(V acc, V u8, V s8) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u8, s8), _mm256_set1_epi16(1)));
  }


  // --- row lanes: 8 int32 lanes a vector, activation bytes broadcast to lanes of 4, 8 or 16
  // bytes, and the float end of 8 rows (what the broadcast strategy reads) ----------------------
  static constexpr int kRegisters = 16;  // vector registers the unrolling may plan with
  static constexpr int kLanes = 8;
  // The LB activation bytes at x in every LB-byte lane: a dword, qword or 16-byte broadcast.
  template <int LB>
  static V broadcast_lanes(const std::uint8_t* x) {
    if constexpr (LB == 4) {
      return _mm256_set1_epi32(load_u32(x));
    } else if constexpr (LB == 8) {
      std::int64_t v;
      __builtin_memcpy(&v, x, 8);
      return _mm256_set1_epi64x(v);
    } else {
      static_assert(LB == 16, "lanes of 4, 8 or 16 bytes");
      return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x)));
    }
  }
  // acc + p, kept in the accumulator's order: left free, GCC's reassociation summed a block's
  // products as a tree, computing them all first and spilling them to the stack.
  static V chain_add16(V acc, V p) {
    acc = _mm256_add_epi16(acc, p);
    __asm__("" : "+x"(acc));
    return acc;
  }
  // The basic operations the broadcast strategy's maddubs lane programs read
  // (kernels/strategies/broadcast/maddubs_lanes.hpp).
  static V srli16(V a, int n) { return _mm256_srli_epi16(a, n); }
  static V slli16(V a, int n) { return _mm256_slli_epi16(a, n); }
  static V srai16(V a, int n) { return _mm256_srai_epi16(a, n); }
  static V add16(V a, V b) { return _mm256_add_epi16(a, b); }
  static V maddubs(V u8, V s8) { return _mm256_maddubs_epi16(u8, s8); }
  static V widen16(V a) { return _mm256_madd_epi16(a, set1_i16(1)); }  // int16 pair sums -> int32 lanes
  // kLanes rows of float results: Rows8's vector.
  using LaneF = RowF;
  static LaneF lanes_zero() { return row_zero(); }
  static LaneF lanes_scales(const std::uint8_t* p) { return row_scales(p); }
  static LaneF lanes_load(const float* p) { return row_load(p); }
  template <int shift>
  static LaneF lanes_fma(V s, std::int32_t ysum, LaneF scales, float d, LaneF acc) {
    return row_fma<shift>(s, ysum, scales, d, acc);
  }
  static void lanes_store(float* y, LaneF v) { _mm256_storeu_ps(y, v); }

  // Per 128-bit word u: [a's int32 pairs (0,1), (2,3) summed | b's] (store_pair_sums in kernels/strategies/slot_mask/kernels.hpp).
  static V pair_add(V a, V b) { return _mm256_hadd_epi32(a, b); }

  // Horizontal sums of four vectors at once (three hadds, one lane fold).
  static void reduce_add4(V a, V b, V c, V d, std::int32_t* out) {
    const V h = _mm256_hadd_epi32(_mm256_hadd_epi32(a, b), _mm256_hadd_epi32(c, d));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out),
                     _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1)));
  }

  static std::int32_t reduce_add(V v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
  }

  // --- natural 2-bit order (the stock unpack strategy, spec 6.2 / 6.5) -------------------------
  // Broadcast 8 code bytes to the four 64-bit lanes, shift lane j by 2j, AND 3: byte 8j + b holds
  // the code of weight 4b + j.
  static V unpack_natural(const std::uint8_t* codes) {
    std::int64_t c;
    __builtin_memcpy(&c, codes, 8);
    const V b = _mm256_set1_epi64x(c);
    return and_(_mm256_srlv_epi64(b, _mm256_setr_epi64x(0, 2, 4, 6)), set1_u8(3));
  }

  // --- base-3 (digit-planar) -----------------------------------------------------------------
  // Two 16-byte windows, one per 128-bit lane, then a byte shuffle inside each lane.
  static V windows(const std::uint8_t* lo, const std::uint8_t* hi) {
    return _mm256_loadu2_m128i(reinterpret_cast<const __m128i*>(hi), reinterpret_cast<const __m128i*>(lo));
  }
  static V shuffle_bytes(V a, V idx) { return _mm256_shuffle_epi8(a, idx); }
  // Byte-wise product mod 256 with per-byte multipliers (even bytes' in `even`, odd bytes' in
  // `odd`, as 16-bit values): two 16-bit multiplies, each keeping the byte it got right.
  static V mul_u8(V x, V even, V odd) {
    const V lo = _mm256_mullo_epi16(x, even);
    const V hi = _mm256_mullo_epi16(_mm256_and_si256(x, _mm256_set1_epi16(std::int16_t(0xff00))), odd);
    return _mm256_blendv_epi8(lo, hi, _mm256_set1_epi16(std::int16_t(0xff00)));
  }
  // The top trit of each byte, floor(3 x / 256) = (x >= 86) + (x >= 171), as 0..2.
  static V top_trit(V x) {
    const V ge86 = _mm256_cmpeq_epi8(_mm256_max_epu8(x, set1_u8(86)), x);
    const V ge171 = _mm256_cmpeq_epi8(_mm256_max_epu8(x, set1_u8(171)), x);
    return _mm256_sub_epi8(_mm256_sub_epi8(zero(), ge86), ge171);
  }

  static V or_(V a, V b) { return _mm256_or_si256(a, b); }
  static void store(void* p, V v) { _mm256_storeu_si256(static_cast<__m256i*>(p), v); }

  // Always inlined: the scale loops call it per row and block, and out of line (GCC's choice for
  // some instantiations) every call was a call in a hot loop.
  [[gnu::always_inline]] static float fp16(const std::uint8_t* p) {
    std::uint16_t h;
    __builtin_memcpy(&h, p, 2);
    return _cvtsh_ss(h);
  }
};


}  // namespace ternlab::isa
