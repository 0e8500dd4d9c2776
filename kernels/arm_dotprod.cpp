// The NEON dotprod instantiations. Generic headers come first and keep the baseline target; the
// policies, strategy templates and the stock kernel below the pragma are compiled with +dotprod
// and reached only through kernels_for() after HWCAP reported asimddp.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "kernels/arm_kernels.hpp"
#include "kernels/kernel.hpp"
#include "kernels/kernel_id.hpp"
#include "kernels/kernel_plan.hpp"

#if defined(__aarch64__)
#include <arm_neon.h>

#pragma GCC push_options
#pragma GCC target("arch=armv8.2-a+dotprod")
#include "kernels/isa/neon_dotprod.hpp"
#include "kernels/neon/prism_neon.hpp"
#include "kernels/strategies/neon_list.hpp"

namespace ternlab::detail {
namespace {

void add_kernels(const LayoutInfo& L, std::vector<KernelVariant>& out, std::vector<KernelGap>* gaps) {
  strategies::add_neon_strategies<isa::NeonDotprod, isa::NeonDotprodX2, isa::NeonWidenSlots<isa::Sdot>>(L, out, gaps);
  if (L.facts.natural_two_bit)
    add_or_note(out, gaps, Strategy::prism_neon, Isa::dotprod,
                L.scale_format() == ScaleFormat::fp16 ? "" : "PrismML's kernel reads fp16 scales", baselines::PrismNeon::kFns);
}

}  // namespace
}  // namespace ternlab::detail
#pragma GCC pop_options

namespace ternlab::detail {
void add_dotprod_kernels(const LayoutInfo& L, std::vector<KernelVariant>& out, std::vector<KernelGap>* gaps) {
  add_kernels(L, out, gaps);
}
}  // namespace ternlab::detail

#else  // not aarch64
namespace ternlab::detail {
void add_dotprod_kernels(const LayoutInfo&, std::vector<KernelVariant>&, std::vector<KernelGap>*) {}
}  // namespace ternlab::detail
#endif
