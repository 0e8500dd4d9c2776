// The NEON dotprod target: every strategy of kernels/strategies/all.hpp on sdot, and PrismML's
// stock kernel. Generic headers come first and keep the baseline target; the
// policies, strategy templates and the stock kernel below the pragma are compiled with +dotprod
// and reached only through kernels_for() after HWCAP reported asimddp.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "kernels/targets/target.hpp"
#include "kernels/kernel.hpp"
#include "kernels/kernel_id.hpp"
#include "kernels/strategies/unpack/plan.hpp"

#if defined(__aarch64__)
#include <arm_neon.h>

#pragma GCC push_options
#pragma GCC target("arch=armv8.2-a+dotprod")
#include "kernels/targets/dotprod/policy.hpp"
#include "kernels/targets/dotprod/prism_neon.hpp"
#include "kernels/strategies/add_all.hpp"

namespace ternlab::detail {
namespace {

// What the strategies read of this target (kernels/strategies/strategy.hpp), as NeonTarget with sdot.
struct DotprodTarget {
  static constexpr Isa kIsa = Isa::dotprod;
  using Policy = isa::NeonDotprod;
  using Wide = isa::NeonDotprodX2;
  using SlotPolicy = strategies::HornerSlots<isa::NeonDotprod>;  // slot-mask's program for a signed dot
  using WidenSlots = strategies::ShiftedSlots<isa::NeonDotprod, Strategy::slot_mask_widen>;
};
static_assert(strategies::SlotMaskOps<DotprodTarget::SlotPolicy> && strategies::SlotMaskOps<DotprodTarget::WidenSlots> &&
              strategies::PermuteOps<DotprodTarget::Policy> && strategies::UnpackOps<DotprodTarget::Wide> &&
              strategies::Base3Ops<DotprodTarget::Wide>);

void add_kernels(const LayoutInfo& L, std::vector<KernelVariant>& out, std::vector<KernelGap>* gaps) {
  strategies::add_strategies<DotprodTarget>(L, out, gaps);
  // PrismML's stock NEON kernel: a faithful baseline arm of this target, not a strategy over policies.
  if (natural_two_bit(L))
    add_or_note(out, gaps, Strategy::prism_neon, Isa::dotprod,
                L.scale_format() == ScaleFormat::fp16 ? "" : "PrismML's kernel reads fp16 scales", baselines::PrismNeon::kFns);
}

}  // namespace
}  // namespace ternlab::detail
#pragma GCC pop_options

TERNLAB_DEFINE_TARGET(dotprod, {"dotprod", Isa::dotprod, [] { return isa_supported(Isa::dotprod); }, &detail::add_kernels})

#else  // not aarch64: a target that never runs
TERNLAB_DEFINE_TARGET(dotprod, {"dotprod", Isa::dotprod, [] { return false; },
                                [](const LayoutInfo&, std::vector<KernelVariant>&, std::vector<KernelGap>*) {}})
#endif
