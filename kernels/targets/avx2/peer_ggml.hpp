// A step ggml's TQ1_0 and TQ2_0 AVX2 dots share, for the peers' AVX2 compile units.
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>

namespace ternlab::peers::ggml {

// ggml's hsum_float_8: ((a0 + a4) + (a2 + a6)) + ((a1 + a5) + (a3 + a7)).
[[gnu::target("avx2")]] inline float hsum_float_8(__m256 acc) {
  __m128 r = _mm_add_ps(_mm256_extractf128_ps(acc, 1), _mm256_castps256_ps128(acc));
  r = _mm_add_ps(r, _mm_movehl_ps(r, r));
  r = _mm_add_ss(r, _mm_movehdup_ps(r));
  return _mm_cvtss_f32(r);
}

}  // namespace ternlab::peers::ggml
#endif
