// ggml's TQ2_0 x q8_K dot product on AVX2 (spec 2.4), compiled for avx2 and fma and reached only
// after cpu.hpp confirmed both.
#include <cstdint>

#include "common/fp16.hpp"
#include "kernels/targets/avx2/peer_ggml.hpp"
#include "kernels/peers/tq2.hpp"

#if defined(__x86_64__)
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx2,fma")

namespace ternlab::peers::detail {

float tq2_dot_avx2(const std::uint8_t* w, const BlockQ8K* y, std::int64_t blocks) {
  const __m256i mask = _mm256_set1_epi8(3), ones = _mm256_set1_epi16(1);
  __m256 acc = _mm256_setzero_ps();
  const float* fp16 = fp16_table();  // looked up once: a call inside the loop spills every register
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::uint8_t* qs = w + b * kTq2BlockBytes;
    const std::int8_t* q8 = y[b].qs;
    __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h) {
      const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * h));
      // 16-bit shifts, then a byte mask that drops the bits crossing from the neighbouring byte.
      const __m256i c0 = _mm256_and_si256(bytes, mask);
      const __m256i c1 = _mm256_and_si256(_mm256_srli_epi16(bytes, 2), mask);
      const __m256i c2 = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), mask);
      const __m256i c3 = _mm256_and_si256(_mm256_srli_epi16(bytes, 6), mask);
      const auto act = [&](int s) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q8 + 128 * h + 32 * s)); };
      const __m256i p0 = _mm256_maddubs_epi16(c0, act(0)), p1 = _mm256_maddubs_epi16(c1, act(1));
      const __m256i p2 = _mm256_maddubs_epi16(c2, act(2)), p3 = _mm256_maddubs_epi16(c3, act(3));
      s0 = _mm256_add_epi16(s0, _mm256_add_epi16(p0, p1));
      s1 = _mm256_add_epi16(s1, _mm256_add_epi16(p2, p3));
    }
    const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[b].bsums));
    const __m256i sums = _mm256_sub_epi16(_mm256_add_epi16(s0, s1), bsums);  // removes the +1 offset
    const __m256 lanes = _mm256_cvtepi32_ps(_mm256_madd_epi16(sums, ones));
    std::uint16_t d;
    __builtin_memcpy(&d, qs + 64, 2);
    const float scale = y[b].d * fp16[d];
    acc = _mm256_fmadd_ps(lanes, _mm256_set1_ps(scale), acc);
  }
  return ggml::hsum_float_8(acc);
}

}  // namespace ternlab::peers::detail

#pragma GCC pop_options

#else  // not x86-64: never called (the generic dot serves)
namespace ternlab::peers::detail {
float tq2_dot_avx2(const std::uint8_t*, const BlockQ8K*, std::int64_t) { return 0; }
}  // namespace ternlab::peers::detail
#endif
