// One source of the f16 matvec for every ISA: a float-lane policy (kernels/isa/f32_lanes.hpp) plus
// one op, load_half (kLanes binary16 values widened to f32). Include after the unit's target pragma
// and after f32_lanes.hpp.
#pragma once
#include <cstdint>

#include "common/fp16.hpp"
#include "kernels/dense/f16_matvec.hpp"

namespace ternlab::dense {

struct HalfScalar : isa::F32Scalar {
  static F load_half(const std::uint16_t* p) { return fp16_to_float(*p); }
};

#if defined(TERNLAB_F32_AVX2)
struct HalfAvx2 : isa::F32Avx2 {
  static F load_half(const std::uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
};
#endif

#if defined(TERNLAB_F32_AVX512)
struct HalfAvx512 : isa::F32Avx512 {
  static F load_half(const std::uint16_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
};
#endif

#if defined(__aarch64__)
struct HalfNeon : isa::F32Neon {
  static F load_half(const std::uint16_t* p) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p))); }
};
#endif

template <class P>
struct F16Kernel {
  // Four accumulator chains (the loads and fmas of one chain overlap the others'), summed
  // ((a0 + a1) + (a2 + a3)), then the columns past the last full vector one by one.
  static void matvec(const F16Matrix& m, const float* x, float* y, std::int64_t r0, std::int64_t r1) {
    constexpr std::int64_t N = P::kLanes;
    const std::int64_t cols = m.cols;
    for (std::int64_t r = r0; r < r1; ++r) {
      const std::uint16_t* w = m.w.data() + r * cols;
      typename P::F a0 = P::zero(), a1 = P::zero(), a2 = P::zero(), a3 = P::zero();
      std::int64_t c = 0;
      for (; c + 4 * N <= cols; c += 4 * N) {
        a0 = P::fma(P::load_half(w + c), P::load(x + c), a0);
        a1 = P::fma(P::load_half(w + c + N), P::load(x + c + N), a1);
        a2 = P::fma(P::load_half(w + c + 2 * N), P::load(x + c + 2 * N), a2);
        a3 = P::fma(P::load_half(w + c + 3 * N), P::load(x + c + 3 * N), a3);
      }
      for (; c + N <= cols; c += N) a0 = P::fma(P::load_half(w + c), P::load(x + c), a0);
      float s = (P::sum(a0) + P::sum(a1)) + (P::sum(a2) + P::sum(a3));
      for (; c < cols; ++c) s += fp16_to_float(w[c]) * x[c];
      y[r] = s;
    }
  }
};

}  // namespace ternlab::dense
