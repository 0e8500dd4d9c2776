// What each aarch64 ISA unit lists: the shared strategies instantiated with its NEON policies,
// P (16 bytes: slot-mask, permute), WidenP (P without the trick with 4 and 16: slot-mask-widen) and
// X2 (32 bytes: base-3, unpack), each where the layout has the
// property and the strategy's plan accepts it (otherwise a gap saying why); permute for every layout
// its plan accepts.
//
// Include only from an aarch64 ISA translation unit, after its target pragma.
#pragma once

#include <string>
#include <vector>

#include "kernels/catalog.hpp"
#include "kernels/kernel_plan.hpp"
#include "kernels/strategies/base3.hpp"
#include "kernels/strategies/permute.hpp"
#include "kernels/strategies/slot_mask.hpp"
#include "kernels/strategies/unpack.hpp"

namespace ternlab::strategies {
namespace {

template <class P, class X2, class WidenP>
void add_neon_strategies(const LayoutInfo& L, std::vector<KernelVariant>& out, std::vector<KernelGap>* gaps) {
  static_assert(P::kIsa == X2::kIsa, "one ISA level per unit");
  KernelFns k;
  if (L.facts.slot_vectorizable) {
    const std::string why = pick_slot_mask_any<P>(L, k);  // sets k
    detail::add_or_note(out, gaps, Strategy::slot_mask, P::kIsa, why, k);
    // The same plan without the trick with 4 and 16, for experiments only (ranked last by dispatch).
    KernelFns widen;
    detail::add_or_note(out, gaps, Strategy::slot_mask_widen, P::kIsa, pick_slot_mask_any<WidenP>(L, widen), widen);
  }
  if (L.facts.natural_two_bit) detail::add_or_note(out, gaps, Unpack<X2>::kStrategy, X2::kIsa, "", Unpack<X2>::kFns);
  if (L.facts.digit_planar)
    detail::add_or_note(out, gaps, Strategy::base3, X2::kIsa, base3_plan(L).why_not, {&Base3<X2>::gemv, &Base3<X2>::gemm});
  // Every layout: the fallback, ranked below the strategies above by dispatch.
  KernelFns any;
  detail::add_or_note(out, gaps, Strategy::permute, P::kIsa, pick_permute<P>(L, any), any);
}

}  // namespace
}  // namespace ternlab::strategies
