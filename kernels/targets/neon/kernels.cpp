// The plain Armv8.0 NEON target (no dotprod: what Cortex-A72-class cores run): every strategy of
// kernels/strategies/all.hpp instantiated with the NEON policies, whose dot4 is emulated (Mull).
// Compiled for the baseline target, so it needs no pragma.
#include <string>
#include <vector>

#include "kernels/kernel.hpp"
#include "kernels/kernel_plan.hpp"
#include "kernels/targets/target.hpp"

#if defined(__aarch64__)
#include <arm_neon.h>

#include "kernels/strategies/add_all.hpp"
#include "kernels/targets/neon/policy.hpp"

namespace ternlab::detail {
namespace {

// What the strategies read of this target (kernels/strategies/strategy.hpp): 16-byte vectors, and
// register pairs for the strategies that read 32 bytes.
struct NeonTarget {
  static constexpr Isa kIsa = Isa::neon;
  using Policy = isa::Neon<isa::Mull>;
  using Wide = isa::NeonX2<isa::Mull>;
  using SlotPolicy = strategies::HornerSlots<isa::Neon<isa::Mull>>;  // slot-mask's program for a signed dot
  using WidenSlots = strategies::ShiftedSlots<isa::Neon<isa::Mull>, Strategy::slot_mask_widen>;
};
// What is built here (no broadcast lane programs on NEON): a policy that lost an operation must
// not turn into a quiet gap.
static_assert(strategies::SlotMaskOps<NeonTarget::SlotPolicy> && strategies::SlotMaskOps<NeonTarget::WidenSlots> &&
              strategies::PermuteOps<NeonTarget::Policy> && strategies::UnpackOps<NeonTarget::Wide> &&
              strategies::Base3Ops<NeonTarget::Wide>);

void add_kernels(const LayoutInfo& L, std::vector<KernelVariant>& out, std::vector<KernelGap>* gaps) {
  strategies::add_strategies<NeonTarget>(L, out, gaps);
}

}  // namespace
}  // namespace ternlab::detail

TERNLAB_DEFINE_TARGET(neon, {"neon", Isa::neon, [] { return isa_supported(Isa::neon); }, &detail::add_kernels})

#else  // not aarch64: a target that never runs
TERNLAB_DEFINE_TARGET(neon, {"neon", Isa::neon, [] { return false; },
                             [](const LayoutInfo&, std::vector<KernelVariant>&, std::vector<KernelGap>*) {}})
#endif
