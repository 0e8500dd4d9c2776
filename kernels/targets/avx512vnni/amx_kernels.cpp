// The broadcast build whose gemm runs on AMX tiles (kernels/strategies/broadcast/tile_gemm.hpp),
// for row-interleaved 2-bit layouts with dword lanes: its gemv is the GFNI build's
// (kernels/targets/avx512vnni/gfni_kernels.cpp), its gemm takes the same slot vectors as B tiles of
// the tile unit. A unit of its own because only Sapphire Rapids and later have the tiles, and it is
// reached only where cpu.hpp reports them granted (CpuFeatures::amx_int8). Named "+gfni+amx".
//
// Compiled a second time for the test suite with TERNLAB_AVX512_EMULATED (SIMDe's AVX-512 and GFNI,
// the tile unit in plain loops: isa::EmulatedTiles), exported as pick_broadcast_avx512amx_emulated.
#include <cstdint>
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
#include "kernels/targets/avx512vnni/amx_tiles.hpp"
#include "kernels/strategies/broadcast/tile_gemm.hpp"

namespace ternlab::detail {
namespace {
#if defined(TERNLAB_AVX512_EMULATED)
using Tiles = isa::EmulatedTiles;
#else
using Tiles = isa::AmxTiles;
#endif
// Four groups a pass: 64 tokens share one unpacking of the weights.
constexpr int kGroupsPerPass = 4;

// The tile gemm for the layout's rows, or why none runs it.
template <strategies::Streaming S>
std::string pick_tile_gemm(const LayoutInfo& L, GemmFn& gemm) {
  using G16 = strategies::TileGemm<isa::Avx512Vnni, Tiles, 16, kGroupsPerPass, S>;
  using G32 = strategies::TileGemm<isa::Avx512Vnni, Tiles, 32, kGroupsPerPass, S>;
  if (L.rows == 32) {
    std::string why = G32::why_not(L);
    if (why.empty()) gemm = &G32::gemm;
    return why;
  }
  std::string why = G16::why_not(L);
  if (why.empty()) gemm = &G16::gemm;
  return why;
}

// The GFNI build's gemv (pick_gfni) with the tile gemm.
std::string pick(const LayoutInfo& L, KernelFns& k, bool hw, std::string (*pick_gfni)(const LayoutInfo&, KernelFns&, bool)) {
  const std::string why = pick_gfni(L, k, hw);
  if (!why.empty()) return why;
  using enum strategies::Streaming;
  return hw ? pick_tile_gemm<hardware_prefetch>(L, k.gemm) : pick_tile_gemm<software_prefetch>(L, k.gemm);
}
}  // namespace
#pragma GCC diagnostic pop
#pragma GCC pop_options

#if defined(TERNLAB_AVX512_EMULATED)
std::string pick_broadcast_avx512amx_emulated(const LayoutInfo& L, KernelFns& k, bool hardware_prefetch) {
  return pick(L, k, hardware_prefetch, &pick_broadcast_avx512gfni_emulated);
}
#else
std::string pick_broadcast_avx512amx(const LayoutInfo& L, KernelFns& k, bool hardware_prefetch) {
  return pick(L, k, hardware_prefetch, &pick_broadcast_avx512gfni);
}

std::int64_t amx_tdpbusd_loop(std::int64_t iters) {
  // Four independent accumulators (C tiles 0-3) against A and B tiles of ones: the tile unit's
  // int8 rate with nothing loaded in the loop, as the vector ceilings keep to registers.
  using Tiles = isa::AmxTiles;
  alignas(64) static const std::uint8_t ones[16][64] = {
#define TERNLAB_ONES64 {1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1}
      TERNLAB_ONES64, TERNLAB_ONES64, TERNLAB_ONES64, TERNLAB_ONES64, TERNLAB_ONES64, TERNLAB_ONES64, TERNLAB_ONES64, TERNLAB_ONES64,
      TERNLAB_ONES64, TERNLAB_ONES64, TERNLAB_ONES64, TERNLAB_ONES64, TERNLAB_ONES64, TERNLAB_ONES64, TERNLAB_ONES64, TERNLAB_ONES64};
#undef TERNLAB_ONES64
  Tiles::configure();
  Tiles::zero<0>();
  Tiles::zero<1>();
  Tiles::zero<2>();
  Tiles::zero<3>();
  Tiles::load<4>(ones, 64);
  Tiles::load<6>(ones, 64);
  for (std::int64_t i = 0; i < iters; ++i) {
    Tiles::dot_su<0, 4, 6>();
    Tiles::dot_su<1, 4, 6>();
    Tiles::dot_su<2, 4, 6>();
    Tiles::dot_su<3, 4, 6>();
  }
  alignas(64) std::int32_t c[16][16];
  Tiles::store<0>(c, 64);
  Tiles::release();
  return c[0][0];  // 64 iters: what the loop added, so nothing is elided
}
#endif
}  // namespace ternlab::detail

#else  // not x86-64: nothing to pick
namespace ternlab::detail {
std::string pick_broadcast_avx512amx(const LayoutInfo&, KernelFns&, bool) { return "not an x86-64 build"; }
std::int64_t amx_tdpbusd_loop(std::int64_t) { return 0; }
}  // namespace ternlab::detail
#endif
