// The AVX2 instantiations. Everything generic (standard library, project headers) is included
// first, so it keeps the baseline target; the strategy templates below the pragma are compiled for
// avx2,fma,f16c and only reached through kernels_for() after cpu.hpp confirmed the features.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "common/strings.hpp"
#include "kernels/kernel.hpp"
#include "kernels/kernel_plan.hpp"
#include "kernels/x86_kernels.hpp"

#if defined(__x86_64__)
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#include "kernels/isa/avx2.hpp"
#include "kernels/isa/dot_chains.hpp"
#include "kernels/isa/stream_sum.hpp"
#include "kernels/strategies/base3.hpp"
#include "kernels/strategies/broadcast.hpp"
#include "kernels/strategies/permute.hpp"
#include "kernels/strategies/slot_mask.hpp"
#include "kernels/strategies/unpack.hpp"

namespace ternlab::detail {
namespace {

using P = isa::Avx2;


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

void add_avx2_kernels(const LayoutInfo& L, std::vector<KernelVariant>& out, std::vector<KernelGap>* gaps) {
  KernelFns k;
  if (L.facts.row_interleaved) {
    // Built twice where it runs: with the software prefetches and without (Streaming; dispatch
    // ranks them).
    using enum strategies::Streaming;
    const std::string why = strategies::pick_broadcast<P, software_prefetch>(L, k);  // sets k
    if (!why.empty()) {
      add_or_note(out, gaps, Strategy::broadcast, P::kIsa, why, k);
    } else {
      KernelFns hw;
      strategies::pick_broadcast<P, hardware_prefetch>(L, hw);
      add_streaming_builds(out, P::kIsa, k, hw);
    }
  }
  if (L.facts.slot_vectorizable) {
    const std::string why = strategies::pick_slot_mask_any<P>(L, k);  // sets k
    add_or_note(out, gaps, Strategy::slot_mask, P::kIsa, why, k);
    // The same plan without the trick with 4 and 16, for experiments only (ranked last by dispatch).
    KernelFns widen;
    add_or_note(out, gaps, Strategy::slot_mask_widen, P::kIsa, strategies::pick_slot_mask_any<isa::Avx2WidenSlots>(L, widen), widen);
  }
  if (L.facts.natural_two_bit) {
    using PerColumn = strategies::Unpack<P, false>;
    add_or_note(out, gaps, strategies::Unpack<P>::kStrategy, P::kIsa, "", strategies::Unpack<P>::kFns);
    add_or_note(out, gaps, PerColumn::kStrategy, P::kIsa, "", PerColumn::kFns);
  }
  if (L.facts.digit_planar)
    add_or_note(out, gaps, Strategy::base3, P::kIsa, base3_plan(L).why_not, {&strategies::Base3<P>::gemv, &strategies::Base3<P>::gemm});
  // Every layout: the fallback, ranked below the strategies above by dispatch.
  KernelFns any;
  add_or_note(out, gaps, Strategy::permute, P::kIsa, strategies::pick_permute<P>(L, any), any);
}

std::int64_t avx2_maddubs_loop(std::int64_t iters) { return maddubs_loop(iters); }
std::vector<ReadLoop> avx2_read_loops() { return read_loops(); }

}  // namespace ternlab::detail

#else  // not x86-64: nothing to add
namespace ternlab::detail {
void add_avx2_kernels(const LayoutInfo&, std::vector<KernelVariant>&, std::vector<KernelGap>*) {}
std::int64_t avx2_maddubs_loop(std::int64_t) { return 0; }
std::vector<ReadLoop> avx2_read_loops() { return {}; }
}  // namespace ternlab::detail
#endif
