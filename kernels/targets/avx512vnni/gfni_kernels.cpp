// The broadcast kernels built for AVX-512 VNNI plus GFNI: the same strategy and policy as
// kernels/targets/avx512vnni/kernels.cpp, with the policy's 16-token gemm taking each slot in one
// gf2p8affineqb (Dot4LaneCodesGf2 over the policy's gf2_affine). A unit of its own because Cascade Lake has VNNI and
// no GFNI: only this unit is compiled for GFNI, and it is reached only where cpu.hpp reports it.
// TERNLAB_AVX512_GFNI gives the policy its own inline namespace, so no instantiation is shared
// with the unit built without GFNI.
//
// Its second build keeps this gemv and runs the gemm on AMX tiles (kernels/strategies/broadcast/
// tile_gemm.hpp), whose B rows are the same slot vectors: reached only where cpu.hpp reports the
// tiles granted (CpuFeatures::amx_int8), named "+gfni+amx". The tile instructions are inline
// assembly (kernels/targets/avx512vnni/amx_tiles.hpp), so the unit's target needs nothing more.
//
// Compiled a second time for the test suite with TERNLAB_AVX512_EMULATED (SIMDe provides the
// affine map too, isa::EmulatedTiles the tile unit in plain loops), exported as
// pick_broadcast_avx512gfni_emulated and pick_broadcast_avx512amx_emulated.
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
#include "kernels/targets/avx512vnni/amx_tiles.hpp"
#include "kernels/strategies/broadcast/tile_gemm.hpp"

namespace ternlab::detail {
namespace {
std::string pick(const LayoutInfo& L, KernelFns& k, bool without_software_prefetch) {
  using enum strategies::Streaming;
  return without_software_prefetch ? strategies::pick_broadcast<isa::Avx512Vnni, hardware_prefetch>(L, k)
                                   : strategies::pick_broadcast<isa::Avx512Vnni, software_prefetch>(L, k);
}

#if defined(TERNLAB_AVX512_EMULATED)
using Tiles = isa::EmulatedTiles;
#else
using Tiles = isa::AmxTiles;
#endif
// Four groups a pass: 64 tokens share one unpacking of the weights (16 and 32 measured slower at
// 64 tokens: docs/notebook/2026-12-06-xeon-amx.md).
constexpr int kGroupsPerPass = 4;

// The tile gemm for the layout's rows, or why none runs it.
template <strategies::Streaming S>
std::string pick_tile_gemm(const LayoutInfo& L, GemmFn& gemm) {
  using G16 = strategies::TileGemm<isa::Avx512Vnni, Tiles, 16, kGroupsPerPass, S>;
  using G32 = strategies::TileGemm<isa::Avx512Vnni, Tiles, 32, kGroupsPerPass, S>;
  const auto take = [&]<class G>() {
    std::string why = G::why_not(L);
    if (why.empty()) gemm = &G::gemm;
    return why;
  };
  return L.rows == 32 ? take.template operator()<G32>() : take.template operator()<G16>();
}

// This unit's gemv with the tile gemm.
std::string pick_with_tiles(const LayoutInfo& L, KernelFns& k, bool hw) {
  const std::string why = pick(L, k, hw);
  if (!why.empty()) return why;
  using enum strategies::Streaming;
  return hw ? pick_tile_gemm<hardware_prefetch>(L, k.gemm) : pick_tile_gemm<software_prefetch>(L, k.gemm);
}
}  // namespace
#pragma GCC diagnostic pop
#pragma GCC pop_options

#if defined(TERNLAB_AVX512_EMULATED)
std::string pick_broadcast_avx512gfni_emulated(const LayoutInfo& L, KernelFns& k, bool hardware_prefetch) {
  return pick(L, k, hardware_prefetch);
}
std::string pick_broadcast_avx512amx_emulated(const LayoutInfo& L, KernelFns& k, bool hardware_prefetch) {
  return pick_with_tiles(L, k, hardware_prefetch);
}
#else
std::string pick_broadcast_avx512gfni(const LayoutInfo& L, KernelFns& k, bool hardware_prefetch) {
  return pick(L, k, hardware_prefetch);
}
std::string pick_broadcast_avx512amx(const LayoutInfo& L, KernelFns& k, bool hardware_prefetch) {
  return pick_with_tiles(L, k, hardware_prefetch);
}

std::int64_t amx_tdpbusd_loop(std::int64_t iters) {
  // Four independent accumulators (C tiles 0-3) against A and B tiles of ones: the tile unit's
  // int8 rate with nothing loaded in the loop, as the vector ceilings keep to registers.
  using T = isa::AmxTiles;
  alignas(64) std::uint8_t ones[16][64];
  std::memset(ones, 1, sizeof ones);
  T::configure();
  T::zero<0>();
  T::zero<1>();
  T::zero<2>();
  T::zero<3>();
  T::load<4>(ones, 64);
  T::load<6>(ones, 64);
  for (std::int64_t i = 0; i < iters; ++i) {
    T::dot_su<0, 4, 6>();
    T::dot_su<1, 4, 6>();
    T::dot_su<2, 4, 6>();
    T::dot_su<3, 4, 6>();
  }
  alignas(64) std::int32_t c[16][16];
  T::store<0>(c, 64);
  T::release();
  return c[0][0];  // 64 iters: what the loop added, so nothing is elided
}
#endif
}  // namespace ternlab::detail

#else  // not x86-64: nothing to pick
namespace ternlab::detail {
std::string pick_broadcast_avx512gfni(const LayoutInfo&, KernelFns&, bool) { return "not an x86-64 build"; }
std::string pick_broadcast_avx512amx(const LayoutInfo&, KernelFns&, bool) { return "not an x86-64 build"; }
std::int64_t amx_tdpbusd_loop(std::int64_t) { return 0; }
}  // namespace ternlab::detail
#endif
