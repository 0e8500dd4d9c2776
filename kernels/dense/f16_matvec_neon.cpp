// The NEON build of the f16 matvec (fcvtl widens four weights).
#include <cstdint>

#include "kernels/dense/f16_matvec.hpp"

#if defined(__aarch64__)
#include "kernels/isa/f32_lanes.hpp"
#include "kernels/dense/f16_matvec_kernel.hpp"

namespace ternlab::detail {
void f16_matvec_neon(const F16Matrix& m, const float* x, float* y, std::int64_t r0, std::int64_t r1) {
  dense::F16Kernel<dense::HalfNeon>::matvec(m, x, y, r0, r1);
}
bool f16_neon_built() { return true; }
}  // namespace ternlab::detail

#else
namespace ternlab::detail {
void f16_matvec_neon(const F16Matrix&, const float*, float*, std::int64_t, std::int64_t) {}
bool f16_neon_built() { return false; }
}  // namespace ternlab::detail
#endif
