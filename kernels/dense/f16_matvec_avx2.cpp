// The AVX2 build of the f16 matvec (F16C widens the weights); reached only after cpu.hpp confirmed
// avx2, fma and f16c.
#include <cstdint>

#include "kernels/dense/f16_matvec.hpp"

#if defined(__x86_64__)
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#define TERNLAB_F32_AVX2 1
#include "kernels/isa/f32_lanes.hpp"
#include "kernels/dense/f16_matvec_kernel.hpp"

namespace ternlab::detail {
void f16_matvec_avx2(const F16Matrix& m, const float* x, float* y, std::int64_t r0, std::int64_t r1) {
  dense::F16Kernel<dense::HalfAvx2>::matvec(m, x, y, r0, r1);
}
bool f16_avx2_built() { return true; }
}  // namespace ternlab::detail
#pragma GCC pop_options

#else
namespace ternlab::detail {
void f16_matvec_avx2(const F16Matrix&, const float*, float*, std::int64_t, std::int64_t) {}
bool f16_avx2_built() { return false; }
}  // namespace ternlab::detail
#endif
