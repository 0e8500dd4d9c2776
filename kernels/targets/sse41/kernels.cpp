// The SSE4.1 / SSSE3 target, for x86-64 CPUs without AVX2: every strategy of
// kernels/strategies/all.hpp instantiated with its policies. Everything generic (standard
// library, project headers) is included first, so it keeps the baseline target; the strategy
// templates below the pragma are compiled for sse4.1,ssse3 and only reached through kernels_for()
// after the target's runs_here() confirmed the features.
#include <string>
#include <vector>

#include "common/error.hpp"
#include "common/strings.hpp"
#include "kernels/kernel.hpp"
#include "kernels/kernel_plan.hpp"
#include "kernels/targets/sse41/kernels.hpp"
#include "kernels/targets/target.hpp"

#if defined(__x86_64__)
#include <nmmintrin.h>
#include <tmmintrin.h>

#pragma GCC push_options
#pragma GCC target("sse4.1,ssse3")
#include "kernels/strategies/add_all.hpp"
#include "kernels/targets/sse41/policy.hpp"
#include "kernels/targets/sse41/broadcast.hpp"

namespace ternlab::detail {
namespace {

// What the strategies read of this target (kernels/strategies/strategy.hpp): 16-byte vectors, and
// xmm pairs for the strategies that read 32 bytes. Its policies' fmaf replaces the FMA instruction
// in the strategies' scalar epilogues (strategies::scalar_fma).
struct Sse41Target {
  static constexpr Isa kIsa = Isa::sse41;
  using Policy = isa::Sse41;
  using Wide = isa::Sse41X2;
  using SlotPolicy = strategies::InPlaceSlots<isa::Sse41>;  // slot-mask's program for a maddubs dot
  using WidenSlots = strategies::WidenedSlots<isa::Sse41>;
};
// Every strategy is built here: a policy that lost an operation must not turn into a quiet gap.
static_assert(strategies::SlotMaskOps<Sse41Target::SlotPolicy> && strategies::SlotMaskOps<Sse41Target::WidenSlots> &&
              strategies::PermuteOps<isa::Sse41> && strategies::BroadcastOps<isa::Sse41> &&
              strategies::UnpackOps<isa::Sse41X2> && strategies::Base3Ops<isa::Sse41X2>);

using P = isa::Sse41;

void add_kernels(const LayoutInfo& L, std::vector<KernelVariant>& out, std::vector<KernelGap>* gaps) {
  strategies::add_strategies<Sse41Target>(L, out, gaps);
}

}  // namespace

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

TERNLAB_DEFINE_TARGET(sse41, {"sse41", Isa::sse41, [] { return isa_supported(Isa::sse41); }, &detail::add_kernels})

#else  // not x86-64: a target that never runs
TERNLAB_DEFINE_TARGET(sse41, {"sse41", Isa::sse41, [] { return false; },
                              [](const LayoutInfo&, std::vector<KernelVariant>&, std::vector<KernelGap>*) {}})
namespace ternlab::detail {
bool sse41_fma4(const float*, const float*, const float*, float*) { return false; }
bool sse41_fp16x4(const std::uint8_t*, float*) { return false; }
}  // namespace ternlab::detail
#endif
