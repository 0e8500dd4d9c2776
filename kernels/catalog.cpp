#include "kernels/catalog.hpp"

#if defined(__aarch64__)
#include "kernels/neon/neon_kernels.hpp"
#endif

namespace ternlab {

std::vector<KernelVariant> kernels_for(const LayoutInfo& layout) {
  std::vector<KernelVariant> v{KernelVariant{"reference", "scalar", &gemv_reference, &gemm_reference}};
#if defined(__aarch64__)
  neon::add_neon_kernels(layout, v);
#else
  (void)layout;
#endif
  return v;
}

}  // namespace ternlab
