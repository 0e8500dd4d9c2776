// Armv8.2 dotprod builds of the strategies. Compiled with -march=armv8.2-a+dotprod (CMakeLists.txt);
// called only where kernels/cpu.hpp reports HWCAP_ASIMDDP.
#include "kernels/neon/neon_kernels.hpp"
#include "kernels/neon/strategies.hpp"

#if !defined(__ARM_FEATURE_DOTPROD)
#error "kernels_dotprod.cpp must be compiled with dotprod enabled (-march=armv8.2-a+dotprod)"
#endif

namespace ternlab::neon {

void gemv_unpack_dotprod(const PackedMatrix& w, const BlockQ8K* x, float* y, std::int64_t g0, std::int64_t g1) {
  require_layout(*w.layout, NeonStrategy::unpack, "unpack/dotprod");
  gemv_unpack<Sdot>(w, x, y, g0, g1);
}
void gemv_base3_dotprod(const PackedMatrix& w, const BlockQ8K* x, float* y, std::int64_t g0, std::int64_t g1) {
  require_layout(*w.layout, NeonStrategy::base3, "base3/dotprod");
  gemv_base3<Sdot>(w, x, y, g0, g1);
}

}  // namespace ternlab::neon
