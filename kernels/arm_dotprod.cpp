// The NEON dotprod instantiations of the shared slot-mask and permute strategies. Generic headers come first and
// keep the baseline target; the template below the pragma is compiled with +dotprod and reached
// only through kernels_for() after HWCAP reported asimddp.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "kernels/arm_kernels.hpp"
#include "kernels/kernel.hpp"
#include "kernels/kernel_plan.hpp"

#if defined(__aarch64__)
#include <arm_neon.h>

#pragma GCC push_options
#pragma GCC target("arch=armv8.2-a+dotprod")
#include "kernels/isa/neon_dotprod.hpp"
#include "kernels/strategies/permute.hpp"
#include "kernels/strategies/slot_mask.hpp"

namespace ternlab::detail {
namespace {

using P = isa::NeonDotprod;

}  // namespace
}  // namespace ternlab::detail
#pragma GCC pop_options

namespace ternlab::detail {
void add_dotprod_kernels(const LayoutInfo& L, std::vector<KernelVariant>& out, std::vector<KernelGap>* gaps) {
  if (L.facts.slot_vectorizable) {
    KernelFns k;
    const std::string why = strategies::pick_slot_mask_any<P>(L, k);  // sets k
    add_or_note(out, gaps, "slot-mask", "dotprod", why, k);
  }
  // Every layout: the fallback, ranked below the strategies above by dispatch.
  KernelFns any;
  add_or_note(out, gaps, "permute", "dotprod", strategies::pick_permute<P>(L, any), any);
}
}  // namespace ternlab::detail

#else  // not aarch64
namespace ternlab::detail {
void add_dotprod_kernels(const LayoutInfo&, std::vector<KernelVariant>&, std::vector<KernelGap>*) {}
}  // namespace ternlab::detail
#endif
