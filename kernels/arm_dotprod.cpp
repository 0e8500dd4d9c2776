// The NEON dotprod instantiation of the shared slot-mask strategy. Generic headers come first and
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
#include "kernels/strategies/slot_mask.hpp"

namespace ternlab::detail {
namespace {

using P = isa::NeonDotprod;
using strategies::pick_slot_mask;

// Block shapes (groups x vectors per group, rows): t2p 2 x 4 (a row pair's four words), t2x4 4 x 2
// (a row's two words), t2p8 4 x 4.
bool pick_any_slot_mask(const SlotVectorPlan& p, GemvFn& gemv, GemmFn& gemm) {
  return pick_slot_mask<P, 2, 4, 4>(p, gemv, gemm) || pick_slot_mask<P, 4, 2, 4>(p, gemv, gemm) ||
         pick_slot_mask<P, 4, 4, 8>(p, gemv, gemm);
}

}  // namespace
}  // namespace ternlab::detail
#pragma GCC pop_options

namespace ternlab::detail {
void add_dotprod_kernels(const LayoutInfo& L, std::vector<KernelVariant>& out) {
  if (!L.facts.slot_vectorizable) return;
  GemvFn gemv = nullptr;
  GemmFn gemm = nullptr;
  if (pick_any_slot_mask(slot_vector_plan(L, P::kBytes, &P::pair_position), gemv, gemm))
    out.push_back({"slot-mask", "dotprod", gemv, gemm});
}
}  // namespace ternlab::detail

#else  // not aarch64
namespace ternlab::detail {
void add_dotprod_kernels(const LayoutInfo&, std::vector<KernelVariant>&) {}
}  // namespace ternlab::detail
#endif
