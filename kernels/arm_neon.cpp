// The plain Armv8.0 NEON instantiations (no dotprod: what Cortex-A72-class cores run). This unit
// is compiled for the baseline target, so it needs no pragma; the policies emulate dot4 (Mull).
#include <string>
#include <vector>

#include "kernels/arm_kernels.hpp"
#include "kernels/kernel.hpp"
#include "kernels/kernel_plan.hpp"

#if defined(__aarch64__)
#include <arm_neon.h>

#include "kernels/isa/neon.hpp"
#include "kernels/strategies/neon_list.hpp"

namespace ternlab::detail {
void add_neon_kernels(const LayoutInfo& L, std::vector<KernelVariant>& out, std::vector<KernelGap>* gaps) {
  strategies::add_neon_strategies<isa::Neon<isa::Mull>, isa::NeonX2<isa::Mull>, isa::NeonWidenSlots<isa::Mull>>(L, out, gaps);
}
}  // namespace ternlab::detail

#else  // not aarch64
namespace ternlab::detail {
void add_neon_kernels(const LayoutInfo&, std::vector<KernelVariant>&, std::vector<KernelGap>*) {}
}  // namespace ternlab::detail
#endif
