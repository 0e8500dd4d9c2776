// ggml's TQ1_0 x q8_K dot product on AVX2 (spec 3.5), compiled for avx2 and fma and reached only
// after cpu.hpp confirmed both.
#include <cstdint>
#include <cstring>

#include "common/fp16.hpp"
#include "kernels/targets/avx2/peer_ggml.hpp"
#include "kernels/peers/tq1.hpp"

#if defined(__x86_64__)
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx2,fma")

namespace ternlab::peers::detail {

namespace {

// Bytewise b * 9 mod 256: b << 3 in 16-bit lanes, the bits crossing from the lower byte masked off, plus b.
__m256i times9(__m256i b) { return _mm256_add_epi8(_mm256_and_si256(_mm256_slli_epi16(b, 3), _mm256_set1_epi8(-8)), b); }
__m128i times9(__m128i b) { return _mm_add_epi8(_mm_and_si128(_mm_slli_epi16(b, 3), _mm_set1_epi8(-8)), b); }
__m128i times3(__m128i b) { return _mm_add_epi8(_mm_add_epi8(b, b), b); }

// (3u) >> 8 of every byte u (its top base-3 digit) without an 8-bit multiply: a = u -sat 1, then
// avg(a, avg(a, 0)) = ceil((a + ceil(a / 2)) / 2), whose bits 7:6 are the digit.
__m256i top_digit(__m256i u) {
  const __m256i a = _mm256_subs_epu8(u, _mm256_set1_epi8(1));
  const __m256i v = _mm256_avg_epu8(a, _mm256_avg_epu8(a, _mm256_setzero_si256()));
  return _mm256_and_si256(_mm256_srli_epi16(v, 6), _mm256_set1_epi8(3));
}

}  // namespace

float tq1_dot_avx2(const std::uint8_t* w, const BlockQ8K* y, std::int64_t blocks) {
  const __m256i ones = _mm256_set1_epi16(1);
  // qh's four digit planes: 16-bit lane 4l + j holds qh[j], multiplied by 3^l.
  const __m256i qh_pow3 = _mm256_setr_epi16(1, 1, 1, 1, 3, 3, 3, 3, 9, 9, 9, 9, 27, 27, 27, 27);
  const __m256i low_byte = _mm256_set1_epi16(0xff);
  __m256 acc = _mm256_setzero_ps();
  const float* fp16 = fp16_table();  // looked up once: a call inside the loop spills every register
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::uint8_t* block = w + b * kTq1BlockBytes;
    const std::int8_t* q8 = y[b].qs;
    const auto act = [&](int at) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q8 + at)); };

    // qs[0..31]: weights 32 n + m are the top digits of b * 3^n, against activations 32 n + m.
    const __m256i m0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block));
    const __m256i m1 = _mm256_add_epi8(_mm256_add_epi8(m0, m0), m0);
    const __m256i m2 = times9(m0), m3 = times9(m1), m4 = times9(m2);
    const __m256i p0 = _mm256_maddubs_epi16(top_digit(m0), act(0));
    const __m256i p1 = _mm256_maddubs_epi16(top_digit(m1), act(32));
    const __m256i p2 = _mm256_maddubs_epi16(top_digit(m2), act(64));
    const __m256i p3 = _mm256_maddubs_epi16(top_digit(m3), act(96));
    const __m256i p4 = _mm256_maddubs_epi16(top_digit(m4), act(128));
    __m256i s0 = _mm256_add_epi16(p0, p1), s1 = _mm256_add_epi16(p2, p3), s2 = p4;

    // qs[32..47]: weights 160 + 16 n + m; qh: weights 240 + 4 l + j. Paired into three 32-byte runs.
    const __m128i n0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 32));
    const __m128i n1 = times3(n0), n2 = times9(n0), n3 = times9(n1), n4 = times9(n2);
    std::uint32_t qh;
    std::memcpy(&qh, block + 48, 4);
    const __m256i spread = _mm256_cvtepu8_epi16(_mm_set1_epi32(std::int32_t(qh)));
    const __m256i qh16 = _mm256_and_si256(_mm256_mullo_epi16(spread, qh_pow3), low_byte);
    const __m128i qh_planes = _mm_packus_epi16(_mm256_castsi256_si128(qh16), _mm256_extracti128_si256(qh16, 1));
    const __m256i d01 = _mm256_set_m128i(n1, n0), d23 = _mm256_set_m128i(n3, n2), d4h = _mm256_set_m128i(qh_planes, n4);
    s0 = _mm256_add_epi16(s0, _mm256_maddubs_epi16(top_digit(d01), act(160)));
    s1 = _mm256_add_epi16(s1, _mm256_maddubs_epi16(top_digit(d23), act(192)));
    s2 = _mm256_add_epi16(s2, _mm256_maddubs_epi16(top_digit(d4h), act(224)));

    const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[b].bsums));
    const __m256i sums = _mm256_add_epi16(_mm256_sub_epi16(s0, bsums), _mm256_add_epi16(s1, s2));  // removes the +1 offset
    const __m256 lanes = _mm256_cvtepi32_ps(_mm256_madd_epi16(sums, ones));
    std::uint16_t d;
    std::memcpy(&d, block + kTq1ScaleOffset, 2);
    const float scale = y[b].d * fp16[d];
    acc = _mm256_fmadd_ps(lanes, _mm256_set1_ps(scale), acc);
  }
  return ggml::hsum_float_8(acc);
}

}  // namespace ternlab::peers::detail

#pragma GCC pop_options

#else  // not x86-64: never called (the generic dot serves)
namespace ternlab::peers::detail {
float tq1_dot_avx2(const std::uint8_t*, const BlockQ8K*, std::int64_t) { return 0; }
}  // namespace ternlab::peers::detail
#endif
