// The AVX-512 build of the f16 matvec (AVX-512 F: vcvtph2ps at 512 bits); reached only after
// cpu.hpp confirmed the features.
#include <cstdint>

#include "kernels/dense/f16_matvec.hpp"

#if defined(__x86_64__)
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx512f,avx2,fma,f16c")
// GCC 12's AVX-512 intrinsics start some results from _mm512_undefined_*(), which -Wuninitialized
// misreads once they are inlined.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define TERNLAB_F32_AVX512 1
#include "kernels/isa/f32_lanes.hpp"
#include "kernels/dense/f16_matvec_kernel.hpp"

namespace ternlab::detail {
void f16_matvec_avx512(const F16Matrix& m, const float* x, float* y, std::int64_t r0, std::int64_t r1) {
  dense::F16Kernel<dense::HalfAvx512>::matvec(m, x, y, r0, r1);
}
bool f16_avx512_built() { return true; }
}  // namespace ternlab::detail
#pragma GCC diagnostic pop
#pragma GCC pop_options

#else
namespace ternlab::detail {
void f16_matvec_avx512(const F16Matrix&, const float*, float*, std::int64_t, std::int64_t) {}
bool f16_avx512_built() { return false; }
}  // namespace ternlab::detail
#endif
