#include "kernels/catalog.hpp"

namespace ternlab {

std::vector<KernelVariant> kernels_for(const LayoutInfo&) {
  return {KernelVariant{"reference", "scalar", &gemv_reference, &gemm_reference}};
}

}  // namespace ternlab
