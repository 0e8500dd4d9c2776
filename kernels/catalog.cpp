#include "kernels/catalog.hpp"

#include "kernels/arm_kernels.hpp"
#include "kernels/cpu.hpp"
#include "kernels/x86_kernels.hpp"
#if defined(__aarch64__)
#include "kernels/neon/neon_kernels.hpp"
#endif

namespace ternlab {

namespace {
std::vector<KernelVariant> collect(const LayoutInfo& layout, std::vector<KernelGap>* gaps) {
  std::vector<KernelVariant> v{KernelVariant{"reference", "scalar", &gemv_reference, &gemm_reference}};
  // x86 strategies (broadcast, slot-mask, unpack, base3) per ISA the CPU runs; each adds only what
  // the layout's properties and plan admit.
  if (isa_supported(Isa::avx2)) detail::add_avx2_kernels(layout, v, gaps);
  if (isa_supported(Isa::avx512vnni)) detail::add_avx512vnni_kernels(layout, v, gaps);
  // The shared slot-mask template on NEON dotprod (the 16-byte policy).
  if (isa_supported(Isa::dotprod)) detail::add_dotprod_kernels(layout, v, gaps);
#if defined(__aarch64__)
  // NEON-specific paths: stock unpack, base-3, plain-NEON slot-mask, smmla gemm.
  neon::add_neon_kernels(layout, v);
#endif
  return v;
}
}  // namespace

std::vector<KernelVariant> kernels_for(const LayoutInfo& layout) { return collect(layout, nullptr); }

std::vector<KernelGap> kernel_gaps(const LayoutInfo& layout) {
  std::vector<KernelGap> gaps;
  collect(layout, &gaps);
  return gaps;
}

}  // namespace ternlab
