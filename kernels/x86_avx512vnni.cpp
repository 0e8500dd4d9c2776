// The AVX-512 VNNI instantiations. Everything generic (standard library, project headers) is
// included first, so it keeps the baseline target; the strategy templates below the pragma are
// compiled for AVX-512 F/BW/VL/VNNI and only reached through kernels_for() after cpu.hpp confirmed
// the features (this machine may lack them: the build must not).
//
// Compiled a second time, for the test suite only, with TERNLAB_AVX512_EMULATED: the same kernels
// through SIMDe (kernels/isa/avx512vnni.hpp) for an AVX2 target, exported as
// add_avx512vnni_emulated_kernels, so their exactness is checked on CPUs without AVX-512 too.
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
#if defined(TERNLAB_AVX512_EMULATED)
#pragma GCC target("avx2,fma,f16c")
#else
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")
#endif
// GCC 12's AVX-512 intrinsics start some results from _mm512_undefined_*(), which -Wuninitialized
// misreads once they are inlined (a known false positive of the compiler's own headers).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "kernels/isa/avx512vnni.hpp"
#include "kernels/isa/dot_chains.hpp"
#include "kernels/isa/stream_sum.hpp"
#include "kernels/strategies/broadcast.hpp"
#include "kernels/strategies/permute.hpp"
#include "kernels/strategies/slot_mask.hpp"
#include "kernels/strategies/unpack.hpp"

namespace ternlab::detail {
namespace {

using P = isa::Avx512Vnni;


#if !defined(TERNLAB_AVX512_EMULATED)
// As the AVX2 loop: kDotChains register-resident chains (kernels/isa/dot_chains.hpp), at 512 bits
// and at 256 (AVX512VL: where 512-bit ops run as two halves or lower the clock, the narrower loop
// can deliver more MACs a second).
#define TERNLAB_DPBUSD(k) "vpdpbusd %13, %12, %" #k "\n\t"
template <class V>
std::int64_t dpbusd_chains(std::int64_t iters, V u, V v) {
  static_assert(kDotChains == 12, "TERNLAB_CHAINS12 names twelve accumulators");
  V a0{}, a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0, a8 = a0, a9 = a0, a10 = a0, a11 = a0;
  for (std::int64_t i = 0; i < iters; ++i)
    __asm__(TERNLAB_CHAINS12(TERNLAB_DPBUSD) : TERNLAB_ACCUMULATORS12("+v", a) : "v"(u), "v"(v));
  std::int64_t s = 0;
  for (const V& acc : {a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11}) {
    std::int32_t lanes[sizeof(V) / 4];
    std::memcpy(lanes, &acc, sizeof(V));
    for (std::int32_t x : lanes) s += x;
  }
  return s;
}
#undef TERNLAB_DPBUSD

std::int64_t dpbusd_loop(std::int64_t iters) {
  return dpbusd_chains(iters, _mm512_set1_epi8(1), _mm512_set1_epi8(-1));
}
std::int64_t dpbusd_ymm_loop(std::int64_t iters) {
  return dpbusd_chains(iters, _mm256_set1_epi8(1), _mm256_set1_epi8(-1));
}

std::vector<ReadLoop> read_loops() {
  return {{"avx512 zmm, 1 stream", &isa::stream_sum<P, 1, 0>},
          {"avx512 zmm, 2 streams", &isa::stream_sum<P, 2, 0>},
          {"avx512 zmm, 4 streams", &isa::stream_sum<P, 4, 0>},
          {"avx512 zmm, 2 streams, prefetch 2 KiB", &isa::stream_sum<P, 2, 2048>},
          {"avx512 zmm, 4 streams, prefetch 2 KiB", &isa::stream_sum<P, 4, 2048>},
          {"avx512 zmm, 1 stream, prefetch 2 KiB", &isa::stream_sum<P, 1, 2048>}};
}
#endif

void add_kernels(const LayoutInfo& L, std::vector<KernelVariant>& out, std::vector<KernelGap>* gaps) {
  KernelFns k;
  if (L.facts.row_interleaved) {
    // Two builds of the strategy: this unit's, whose gemm takes each slot with a shift and an AND,
    // and, where the CPU has GFNI, kernels/x86_avx512gfni.cpp's, which takes it with one
    // gf2p8affineqb; each twice, with the gemv's software prefetches and without (Streaming).
    // Dispatch ranks the four (CpuFeatures::prefers_gfni_slots, prefers_hardware_prefetch); the
    // SIMDe suite checks them all on any CPU.
#if defined(TERNLAB_AVX512_EMULATED)
    const bool gfni = true;
    const auto pick_gfni = &pick_broadcast_avx512gfni_emulated;
#else
    const bool gfni = cpu_features().gfni;
    const auto pick_gfni = &pick_broadcast_avx512gfni;
#endif
    using enum strategies::Streaming;
    const std::string why = strategies::pick_broadcast<P, software_prefetch>(L, k);  // sets k
    if (!why.empty()) {
      add_or_note(out, gaps, Strategy::broadcast, P::kIsa, why, k);  // the GFNI build would say the same
    } else {
      KernelFns hw;
      strategies::pick_broadcast<P, hardware_prefetch>(L, hw);
      add_streaming_builds(out, P::kIsa, k, hw);
      if (gfni) {
        KernelFns g, g_hw;
        pick_gfni(L, g, false);
        pick_gfni(L, g_hw, true);
        add_streaming_builds(out, P::kIsa, g, g_hw, true);
      }
    }
  }
  if (L.facts.row_interleaved_base3) {
    // The base-3 build (kernels/x86_avx512vbmi.cpp), twice as above; its byte tables need VBMI.
#if defined(TERNLAB_AVX512_EMULATED)
    const bool vbmi = true;
    const auto pick_vbmi = &pick_broadcast_base3_avx512vbmi_emulated;
#else
    const bool vbmi = cpu_features().avx512vbmi;
    const auto pick_vbmi = &pick_broadcast_base3_avx512vbmi;
#endif
    KernelFns b, b_hw;
    const std::string why = vbmi ? pick_vbmi(L, b, false) : "its byte tables need AVX-512 VBMI (vpermi2b), which this CPU lacks";
    if (!why.empty()) {
      add_or_note(out, gaps, Strategy::broadcast, P::kIsa, why, b);
    } else {
      pick_vbmi(L, b_hw, true);
      add_streaming_builds(out, P::kIsa, b, b_hw);
    }
  }
  if (L.facts.slot_vectorizable) {
    const std::string why = strategies::pick_slot_mask_any<P>(L, k);  // sets k
    add_or_note(out, gaps, Strategy::slot_mask, P::kIsa, why, k);
  }
  if (L.facts.natural_two_bit) {
    using PerColumn = strategies::Unpack<P, false>;
    add_or_note(out, gaps, strategies::Unpack<P>::kStrategy, P::kIsa, "", strategies::Unpack<P>::kFns);
    add_or_note(out, gaps, PerColumn::kStrategy, P::kIsa, "", PerColumn::kFns);
  }
  // Every layout: the fallback, ranked below the strategies above by dispatch.
  KernelFns any;
  add_or_note(out, gaps, Strategy::permute, P::kIsa, strategies::pick_permute<P>(L, any), any);
}

}  // namespace
}  // namespace ternlab::detail
#pragma GCC diagnostic pop
#pragma GCC pop_options

namespace ternlab::detail {

#if defined(TERNLAB_AVX512_EMULATED)
void add_avx512vnni_emulated_kernels(const LayoutInfo& L, std::vector<KernelVariant>& out, std::vector<KernelGap>* gaps) {
  const std::size_t first = out.size();
  add_kernels(L, out, gaps);
  for (std::size_t i = first; i < out.size(); ++i) out[i].emulated = true;
}
#else
void add_avx512vnni_kernels(const LayoutInfo& L, std::vector<KernelVariant>& out, std::vector<KernelGap>* gaps) {
  add_kernels(L, out, gaps);
}
std::int64_t avx512_dpbusd_loop(std::int64_t iters) { return dpbusd_loop(iters); }
std::int64_t avx512_dpbusd_ymm_loop(std::int64_t iters) { return dpbusd_ymm_loop(iters); }
std::vector<ReadLoop> avx512_read_loops() { return read_loops(); }
#endif

}  // namespace ternlab::detail

#else  // not x86-64: nothing to add
namespace ternlab::detail {
void add_avx512vnni_kernels(const LayoutInfo&, std::vector<KernelVariant>&, std::vector<KernelGap>*) {}
std::int64_t avx512_dpbusd_loop(std::int64_t) { return 0; }
std::int64_t avx512_dpbusd_ymm_loop(std::int64_t) { return 0; }
std::vector<ReadLoop> avx512_read_loops() { return {}; }
}  // namespace ternlab::detail
#endif
