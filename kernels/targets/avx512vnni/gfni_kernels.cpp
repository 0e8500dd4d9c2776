// The broadcast kernels built for AVX-512 VNNI plus GFNI: the same strategy and policy as
// kernels/targets/avx512vnni/kernels.cpp, with the policy's 16-token gemm taking each slot in one
// gf2p8affineqb (Dot4LaneCodesGf2 over the policy's gf2_affine). A unit of its own because Cascade Lake has VNNI and
// no GFNI: only this unit is compiled for GFNI, and it is reached only where cpu.hpp reports it.
// TERNLAB_AVX512_GFNI gives the policy its own inline namespace, so no instantiation is shared
// with the unit built without GFNI.
//
// Compiled a second time for the test suite with TERNLAB_AVX512_EMULATED (SIMDe provides the
// affine map too), exported as pick_broadcast_avx512gfni_emulated.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "common/error.hpp"
#include "common/strings.hpp"
#include "kernels/kernel.hpp"
#include "kernels/kernel_id.hpp"
#include "kernels/kernel_plan.hpp"
#include "kernels/targets/x86.hpp"

#if defined(__x86_64__)
#include <immintrin.h>

#define TERNLAB_AVX512_GFNI 1
#pragma GCC push_options
#if defined(TERNLAB_AVX512_EMULATED)
#pragma GCC target("avx2,fma,f16c")
#else
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512vnni,gfni,avx2,fma,f16c")
#endif
// As in kernels/targets/avx512vnni/kernels.cpp: GCC 12's own AVX-512 headers trip -Wuninitialized once inlined.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "kernels/targets/avx512vnni/policy.hpp"
#include "kernels/targets/avx512vnni/broadcast.hpp"
#include "kernels/strategies/broadcast/kernels.hpp"

namespace ternlab::detail {
namespace {
std::string pick(const LayoutInfo& L, KernelFns& k, bool without_software_prefetch) {
  using enum strategies::Streaming;
  return without_software_prefetch ? strategies::pick_broadcast<isa::Avx512Vnni, hardware_prefetch>(L, k)
                                   : strategies::pick_broadcast<isa::Avx512Vnni, software_prefetch>(L, k);
}
}  // namespace
#pragma GCC diagnostic pop
#pragma GCC pop_options

#if defined(TERNLAB_AVX512_EMULATED)
std::string pick_broadcast_avx512gfni_emulated(const LayoutInfo& L, KernelFns& k, bool hardware_prefetch) {
  return pick(L, k, hardware_prefetch);
}
#else
std::string pick_broadcast_avx512gfni(const LayoutInfo& L, KernelFns& k, bool hardware_prefetch) {
  return pick(L, k, hardware_prefetch);
}
#endif
}  // namespace ternlab::detail

#else  // not x86-64: nothing to pick
namespace ternlab::detail {
std::string pick_broadcast_avx512gfni(const LayoutInfo&, KernelFns&, bool) { return "not an x86-64 build"; }
}  // namespace ternlab::detail
#endif
