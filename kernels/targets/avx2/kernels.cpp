// The AVX2 target: every strategy of kernels/strategies/all.hpp instantiated with isa::Avx2.
// Everything generic (standard library, project headers) is included first, so it keeps the
// baseline target; the strategy templates below the pragma are compiled for avx2,fma,f16c and only
// reached through kernels_for() after the target's runs_here() confirmed the features.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "common/strings.hpp"
#include "kernels/kernel.hpp"
#include "kernels/kernel_plan.hpp"
#include "kernels/targets/target.hpp"
#include "kernels/targets/x86.hpp"

#if defined(__x86_64__)
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#include "kernels/targets/avx2/policy.hpp"
#include "kernels/targets/avx2/slot_mask.hpp"
#include "kernels/targets/avx2/broadcast.hpp"
#include "kernels/isa/dot_chains.hpp"
#include "kernels/isa/stream_sum.hpp"
#include "kernels/strategies/add_all.hpp"

namespace ternlab::detail {
namespace {

using P = isa::Avx2;

// What the strategies read of this target (kernels/strategies/strategy.hpp).
struct Avx2Target {
  static constexpr Isa kIsa = Isa::avx2;
  using Policy = isa::Avx2;
  using SlotPolicy = strategies::InPlaceSlots<isa::Avx2>;  // slot-mask's program for a maddubs dot
  using WidenSlots = strategies::WidenedSlots<isa::Avx2>;
};
// Every strategy is built here: a policy that lost an operation must not turn into a quiet gap.
static_assert(strategies::SlotMaskOps<Avx2Target::SlotPolicy> && strategies::SlotMaskOps<Avx2Target::WidenSlots> &&
              strategies::PermuteOps<isa::Avx2> && strategies::UnpackOps<isa::Avx2> && strategies::Base3Ops<isa::Avx2> &&
              strategies::BroadcastOps<isa::Avx2>);

void add_kernels(const LayoutInfo& L, std::vector<KernelVariant>& out, std::vector<KernelGap>* gaps) {
  strategies::add_strategies<Avx2Target>(L, out, gaps);
}


// kDotChains chains, each feeding its own result back in as the unsigned operand (see
// kernels/isa/dot_chains.hpp for why this is asm).
#define TERNLAB_MADDUBS(k) "vpmaddubsw %12, %" #k ", %" #k "\n\t"
std::int64_t maddubs_loop(std::int64_t iters) {
  static_assert(kDotChains == 12, "TERNLAB_CHAINS12 names twelve accumulators");
  __m256i a0 = _mm256_set1_epi8(1), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0, a8 = a0,
          a9 = a0, a10 = a0, a11 = a0;
  const __m256i b = _mm256_set1_epi8(-1);
  for (std::int64_t i = 0; i < iters; ++i)
    __asm__(TERNLAB_CHAINS12(TERNLAB_MADDUBS) : TERNLAB_ACCUMULATORS12("+x", a) : "x"(b));
  std::int64_t s = 0;
  for (const __m256i v : {a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11}) s += P::reduce_add(v);
  return s;
}
#undef TERNLAB_MADDUBS

std::vector<ReadLoop> read_loops() {
  return {{"avx2 ymm, 1 stream", &isa::stream_sum<P, 1, 0>},
          {"avx2 ymm, 2 streams", &isa::stream_sum<P, 2, 0>},
          {"avx2 ymm, 4 streams", &isa::stream_sum<P, 4, 0>},
          {"avx2 ymm, 2 streams, prefetch 2 KiB", &isa::stream_sum<P, 2, 2048>},
          {"avx2 ymm, 4 streams, prefetch 2 KiB", &isa::stream_sum<P, 4, 2048>},
          {"avx2 ymm, 1 stream, prefetch 2 KiB", &isa::stream_sum<P, 1, 2048>}};
}

}  // namespace
}  // namespace ternlab::detail
#pragma GCC pop_options

namespace ternlab::detail {

std::int64_t avx2_maddubs_loop(std::int64_t iters) { return maddubs_loop(iters); }
std::vector<ReadLoop> avx2_read_loops() { return read_loops(); }

}  // namespace ternlab::detail

TERNLAB_DEFINE_TARGET(avx2, {"avx2", Isa::avx2, [] { return isa_supported(Isa::avx2); }, &detail::add_kernels})

#else  // not x86-64: a target that never runs
TERNLAB_DEFINE_TARGET(avx2, {"avx2", Isa::avx2, [] { return false; }, [](const LayoutInfo&, std::vector<KernelVariant>&, std::vector<KernelGap>*) {}})
namespace ternlab::detail {
std::int64_t avx2_maddubs_loop(std::int64_t) { return 0; }
std::vector<ReadLoop> avx2_read_loops() { return {}; }
}  // namespace ternlab::detail
#endif
