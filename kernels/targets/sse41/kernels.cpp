// The SSE4.1 / SSSE3 instantiations, for x86-64 CPUs without AVX2. Everything generic (standard
// library, project headers) is included first, so it keeps the baseline target; the strategy
// templates below the pragma are compiled for sse4.1,ssse3 and only reached through kernels_for()
// after cpu.hpp confirmed the features.
#include <string>
#include <vector>

#include "common/error.hpp"
#include "common/strings.hpp"
#include "kernels/kernel.hpp"
#include "kernels/kernel_plan.hpp"
#include "kernels/targets/sse41/kernels.hpp"
#include "kernels/x86_kernels.hpp"

#if defined(__x86_64__)
#include <nmmintrin.h>
#include <tmmintrin.h>

#pragma GCC push_options
#pragma GCC target("sse4.1,ssse3")
#include "kernels/targets/sse41/policy.hpp"
// The shared strategies' scalar epilogues write __builtin_fmaf; without FMA it is a call to libm's
// fmaf in their hot loops. In this unit it is the policy's inline exact fma instead (same bits).
#define __builtin_fmaf(a, b, c) ::ternlab::isa::Sse41Float::fmaf(a, b, c)
#include "kernels/strategies/base3.hpp"
#include "kernels/strategies/broadcast.hpp"
#include "kernels/strategies/permute.hpp"
#include "kernels/strategies/slot_mask.hpp"
#include "kernels/strategies/unpack.hpp"
#undef __builtin_fmaf

namespace ternlab::detail {
namespace {
using P = isa::Sse41;     // 16 bytes: slot-mask, permute, broadcast
using X2 = isa::Sse41X2;  // 32 bytes: base-3, unpack
}  // namespace

void add_sse41_kernels(const LayoutInfo& L, std::vector<KernelVariant>& out, std::vector<KernelGap>* gaps) {
  static_assert(P::kIsa == X2::kIsa, "one ISA level per unit");
  KernelFns k;
  if (L.facts.row_interleaved) {
    // Built with the software prefetches and without, as on AVX2 (dispatch ranks them).
    using enum strategies::Streaming;
    const auto pick = [&]<strategies::Streaming S>(KernelFns& fns) {
      std::string why = strategies::pick_broadcast<P, 8, S>(L, fns);
      if (!why.empty()) why = strategies::pick_broadcast<P, 16, S>(L, fns);
      return why;
    };
    const std::string why = pick.template operator()<software_prefetch>(k);
    if (!why.empty()) {
      add_or_note(out, gaps, Strategy::broadcast, P::kIsa, why, k);
    } else {
      KernelFns hw;
      pick.template operator()<hardware_prefetch>(hw);
      add_streaming_builds(out, P::kIsa, k, hw);
    }
  }
  if (L.facts.slot_vectorizable) {
    const std::string why = strategies::pick_slot_mask_any<P>(L, k);  // sets k
    add_or_note(out, gaps, Strategy::slot_mask, P::kIsa, why, k);
    // The same plan without the trick with 4 and 16, for experiments only (ranked last by dispatch).
    KernelFns widen;
    add_or_note(out, gaps, Strategy::slot_mask_widen, P::kIsa, strategies::pick_slot_mask_any<isa::Sse41WidenSlots>(L, widen), widen);
  }
  if (L.facts.natural_two_bit) {
    using PerColumn = strategies::Unpack<X2, false>;
    add_or_note(out, gaps, strategies::Unpack<X2>::kStrategy, X2::kIsa, "", strategies::Unpack<X2>::kFns);
    add_or_note(out, gaps, PerColumn::kStrategy, X2::kIsa, "", PerColumn::kFns);
  }
  if (L.facts.digit_planar)
    add_or_note(out, gaps, Strategy::base3, X2::kIsa, base3_plan(L).why_not, {&strategies::Base3<X2>::gemv, &strategies::Base3<X2>::gemm});
  // Every layout: the fallback, ranked below the strategies above by dispatch.
  KernelFns any;
  add_or_note(out, gaps, Strategy::permute, P::kIsa, strategies::pick_permute<P>(L, any), any);
}

bool sse41_fma4(const float* a, const float* b, const float* c, float* y) {
  _mm_storeu_ps(y, P::fma(_mm_loadu_ps(a), _mm_loadu_ps(b), _mm_loadu_ps(c)));
  return true;
}
bool sse41_fp16x4(const std::uint8_t* p, float* y) {
  _mm_storeu_ps(y, P::fp16x4(p));
  return true;
}

}  // namespace ternlab::detail
#pragma GCC pop_options

#else  // not x86-64: nothing to add
namespace ternlab::detail {
void add_sse41_kernels(const LayoutInfo&, std::vector<KernelVariant>&, std::vector<KernelGap>*) {}
bool sse41_fma4(const float*, const float*, const float*, float*) { return false; }
bool sse41_fp16x4(const std::uint8_t*, float*) { return false; }
}  // namespace ternlab::detail
#endif
