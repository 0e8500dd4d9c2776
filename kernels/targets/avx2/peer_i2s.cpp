// BitNet's I2_S kernels on AVX2 (ggml_vec_dot_i2_i8_s 1x1 and Nx1, spec 4.5) and the loops that
// drive them (its gemv over rows, its ACT_PARALLEL gemm, spec 4.7), compiled for avx2 and reached
// only after cpu.hpp confirmed it. The driving loops sit in this unit with the dots, so a thread
// runs its rows' whole loop here with the dots inlined, as BitNet's compiled gemm runs its own;
// how the port's speed stands to BitNet's builds: docs/kernels.md, "Peer ports and their originals".
#include <cstdint>

#include "kernels/peers/i2s.hpp"

#if defined(__x86_64__)
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx2")

namespace ternlab::peers::detail {
namespace {

inline __m256i load(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

inline int hsum(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  return _mm_cvtsi128_si32(s);
}

// One 128-weight group: its four codes vectors (bits 7:6, 5:4, 3:2, 1:0 of the 32 bytes).
struct Codes {
  __m256i c[4];
};
inline Codes unpack(const std::uint8_t* w) {
  const __m256i b = load(w), m = _mm256_set1_epi8(3);
  return {{_mm256_and_si256(_mm256_srli_epi16(b, 6), m), _mm256_and_si256(_mm256_srli_epi16(b, 4), m),
           _mm256_and_si256(_mm256_srli_epi16(b, 2), m), _mm256_and_si256(b, m)}};
}
// The group's four products added in int16, in BitNet's order: (c0 y0 + c1 y1) + (c2 y2 + c3 y3).
inline __m256i group_dot(const Codes& c, const std::int8_t* y) {
  const __m256i p01 = _mm256_add_epi16(_mm256_maddubs_epi16(c.c[0], load(y)), _mm256_maddubs_epi16(c.c[1], load(y + 32)));
  const __m256i p23 = _mm256_add_epi16(_mm256_maddubs_epi16(c.c[2], load(y + 64)), _mm256_maddubs_epi16(c.c[3], load(y + 96)));
  return _mm256_add_epi16(p01, p23);
}

// 1x1: one row against one token; int16 per span of 32 groups, widened once a span.
inline float dot_1x1(const std::uint8_t* w, const std::int8_t* y, std::int64_t k) {
  const std::int64_t groups = k / kI2sGroup;
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i acc32 = _mm256_setzero_si256();
  for (std::int64_t g0 = 0; g0 < groups; g0 += kI2sSpan) {
    const std::int64_t g1 = g0 + kI2sSpan < groups ? g0 + kI2sSpan : groups;
    __m256i acc16 = _mm256_setzero_si256();
    for (std::int64_t g = g0; g < g1; ++g) acc16 = _mm256_add_epi16(acc16, group_dot(unpack(w + 32 * g), y + kI2sGroup * g));
    acc32 = _mm256_add_epi32(acc32, _mm256_madd_epi16(acc16, ones));
  }
  return float(hsum(acc32));
}

// One int16 span of the Nx1 dot (below): Groups groups, or `groups` where Groups is 0, added into
// the four tokens' int32 sums. BitNet writes the span as K / 4096 full spans of exactly 32 groups
// and one span of what is left; the full span's constant count is what clang (BitNet's build
// compiler) unrolls four times. GCC does not unroll it unasked, and that alone left the port at
// 0.80-0.87x BitNet's clang build at 4 tokens of 4096 x 4096 (docs/kernels.md, "Peer ports and
// their originals"), so the full span is unrolled here as clang unrolls it.
template <int Groups>
inline void span_4x1(const std::uint8_t* w, const std::int8_t* y, std::int64_t ldy, std::int64_t groups, __m256i* acc32) {
  __m256i acc16[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256()};
  const std::int64_t n = Groups ? Groups : groups;
  _Pragma("GCC unroll 4") for (std::int64_t g = 0; g < n; ++g) {
    const Codes c = unpack(w + 32 * g);  // each weight byte unpacked once for the four tokens
    for (int i = 0; i < 4; ++i) acc16[i] = _mm256_add_epi16(acc16[i], group_dot(c, y + i * ldy + kI2sGroup * g));
  }
  const __m256i ones = _mm256_set1_epi16(1);
  for (int i = 0; i < 4; ++i) acc32[i] = _mm256_add_epi32(acc32[i], _mm256_madd_epi16(acc16[i], ones));
}

// Nx1 with BitNet's PARALLEL_SIZE of 4: one row against the tokens y, y + ldy, y + 2 ldy,
// y + 3 ldy (its activations at a stride, as its gemm passes them); the sums to s[0], s[lds],
// s[2 lds], s[3 lds].
inline void dot_4x1(const std::uint8_t* w, const std::int8_t* y, std::int64_t ldy, std::int64_t k, float* s, std::int64_t lds) {
  const std::int64_t groups = k / kI2sGroup, full = groups / kI2sSpan, tail = groups % kI2sSpan;
  constexpr std::int64_t span_bytes = 32 * kI2sSpan, span_acts = std::int64_t(kI2sGroup) * kI2sSpan;
  __m256i acc32[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256()};
  for (std::int64_t i = 0; i < full; ++i) span_4x1<kI2sSpan>(w + span_bytes * i, y + span_acts * i, ldy, kI2sSpan, acc32);
  if (tail) span_4x1<0>(w + span_bytes * full, y + span_acts * full, ldy, tail, acc32);
  for (int i = 0; i < 4; ++i) s[i * lds] = float(hsum(acc32[i]));
}

}  // namespace

void i2s_gemv_rows_avx2(const std::uint8_t* w, std::int64_t k, const std::int8_t* y, std::int64_t r0, std::int64_t r1, float* s) {
  const std::int64_t row_bytes = k / 4;
  for (std::int64_t r = r0; r < r1; ++r) s[r] = dot_1x1(w + r * row_bytes, y, k);
}

void i2s_gemm_rows_avx2(const std::uint8_t* w, std::int64_t k, const std::int8_t* y, std::int64_t tokens, std::int64_t r0, std::int64_t r1,
                        float* s, std::int64_t lds) {
  const std::int64_t row_bytes = k / 4;
  for (std::int64_t c0 = r0; c0 < r1; c0 += kI2sRowBlock) {  // COL_BLOCK_SIZE rows, streamed once per 4 tokens
    const std::int64_t c1 = c0 + kI2sRowBlock < r1 ? c0 + kI2sRowBlock : r1;
    std::int64_t m = 0;
    for (; m + 4 <= tokens; m += 4)  // ROW_BLOCK_SIZE = PARALLEL_SIZE = 4 tokens: Nx1
      for (std::int64_t r = c0; r < c1; ++r) dot_4x1(w + r * row_bytes, y + m * k, k, k, s + m * lds + r, lds);
    for (; m < tokens; ++m)  // fewer than 4 left: 1x1 per token
      for (std::int64_t r = c0; r < c1; ++r) s[m * lds + r] = dot_1x1(w + r * row_bytes, y + m * k, k);
  }
}

}  // namespace ternlab::peers::detail

#pragma GCC pop_options

#else  // not x86-64: never called (the portable loops serve)
namespace ternlab::peers::detail {
void i2s_gemv_rows_avx2(const std::uint8_t*, std::int64_t, const std::int8_t*, std::int64_t, std::int64_t, float*) {}
void i2s_gemm_rows_avx2(const std::uint8_t*, std::int64_t, const std::int8_t*, std::int64_t, std::int64_t, std::int64_t, float*, std::int64_t) {}
}  // namespace ternlab::peers::detail
#endif
