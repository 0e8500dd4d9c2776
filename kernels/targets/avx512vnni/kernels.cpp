// The AVX-512 VNNI target: every strategy of kernels/strategies/all.hpp instantiated with
// isa::Avx512Vnni. Everything generic (standard library, project headers) is
// included first, so it keeps the baseline target; the strategy templates below the pragma are
// compiled for AVX-512 F/BW/VL/VNNI and only reached through kernels_for() after cpu.hpp confirmed
// the features (this machine may lack them: the build must not).
//
// Compiled a second time, for the test suite only, with TERNLAB_AVX512_EMULATED: the same kernels
// through SIMDe (kernels/targets/avx512vnni/policy.hpp) for an AVX2 target, exported as
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
#include "kernels/targets/target.hpp"
#include "kernels/targets/x86.hpp"

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
#include "kernels/targets/avx512vnni/policy.hpp"
#include "kernels/targets/avx512vnni/slot_mask.hpp"
#include "kernels/targets/avx512vnni/broadcast.hpp"
#include "kernels/isa/dot_chains.hpp"
#include "kernels/isa/stream_sum.hpp"
#include "kernels/strategies/add_all.hpp"

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

// What the strategies read of this target (kernels/strategies/strategy.hpp), with the broadcast
// builds of its further units: kernels/targets/avx512vnni/gfni_kernels.cpp, whose gemm takes
// each slot with one gf2p8affineqb (dispatch ranks it against this unit's shift and AND,
// CpuFeatures::prefers_gfni_slots) and, where AMX tiles run, the same unit's gemm on them, and
// vbmi_kernels.cpp, the base-3 build, whose byte tables need VBMI. The SIMDe build checks them all on any CPU.
struct Avx512Target {
  static constexpr Isa kIsa = Isa::avx512vnni;
  using Policy = isa::Avx512Vnni;
  using SlotPolicy = strategies::ShiftedSlots<isa::Avx512Vnni>;  // slot-mask's program for vpdpbusd
#if defined(TERNLAB_AVX512_EMULATED)
  static bool has_gfni() { return true; }
  static std::string pick_gfni_broadcast(const LayoutInfo& L, KernelFns& k, bool hw) {
    return pick_broadcast_avx512gfni_emulated(L, k, hw);
  }
  static bool has_amx() { return true; }
  static std::string pick_amx_broadcast(const LayoutInfo& L, KernelFns& k, bool hw) {
    return pick_broadcast_avx512amx_emulated(L, k, hw);
  }
  static std::string base3_broadcast_why_not() { return ""; }
  static std::string pick_base3_broadcast(const LayoutInfo& L, KernelFns& k, bool hw) {
    return pick_broadcast_base3_avx512vbmi_emulated(L, k, hw);
  }
#else
  static bool has_gfni() { return cpu_features().gfni; }
  static std::string pick_gfni_broadcast(const LayoutInfo& L, KernelFns& k, bool hw) {
    return pick_broadcast_avx512gfni(L, k, hw);
  }
  static bool has_amx() { return cpu_features().amx_int8 && cpu_features().gfni; }
  static std::string pick_amx_broadcast(const LayoutInfo& L, KernelFns& k, bool hw) {
    return pick_broadcast_avx512amx(L, k, hw);
  }
  static std::string base3_broadcast_why_not() {
    return cpu_features().avx512vbmi ? "" : "its byte tables need AVX-512 VBMI (vpermi2b), which this CPU lacks";
  }
  static std::string pick_base3_broadcast(const LayoutInfo& L, KernelFns& k, bool hw) {
    return pick_broadcast_base3_avx512vbmi(L, k, hw);
  }
#endif
};

// What is built here (base-3 reads 32-byte vectors, which this target has no policy for): a
// policy that lost an operation must not turn into a quiet gap.
static_assert(strategies::SlotMaskOps<Avx512Target::SlotPolicy> && strategies::PermuteOps<isa::Avx512Vnni> &&
              strategies::UnpackOps<isa::Avx512Vnni> && strategies::BroadcastOps<isa::Avx512Vnni>);

void add_kernels(const LayoutInfo& L, std::vector<KernelVariant>& out, std::vector<KernelGap>* gaps) {
  strategies::add_strategies<Avx512Target>(L, out, gaps);
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
std::int64_t avx512_dpbusd_loop(std::int64_t iters) { return dpbusd_loop(iters); }
std::int64_t avx512_dpbusd_ymm_loop(std::int64_t iters) { return dpbusd_ymm_loop(iters); }
std::vector<ReadLoop> avx512_read_loops() { return read_loops(); }
#endif

}  // namespace ternlab::detail

#if !defined(TERNLAB_AVX512_EMULATED)
TERNLAB_DEFINE_TARGET(avx512vnni, {"avx512vnni", Isa::avx512vnni, [] { return isa_supported(Isa::avx512vnni); },
                                   &detail::add_kernels})
#endif

#else  // not x86-64: a target that never runs
TERNLAB_DEFINE_TARGET(avx512vnni, {"avx512vnni", Isa::avx512vnni, [] { return false; },
                                   [](const LayoutInfo&, std::vector<KernelVariant>&, std::vector<KernelGap>*) {}})
namespace ternlab::detail {
std::int64_t avx512_dpbusd_loop(std::int64_t) { return 0; }
std::int64_t avx512_dpbusd_ymm_loop(std::int64_t) { return 0; }
std::vector<ReadLoop> avx512_read_loops() { return {}; }
}  // namespace ternlab::detail
#endif
