// What the x86 target units export besides their Targets (kernels/targets/targets.def): the
// further AVX-512 broadcast builds, the SIMDe build the tests run, and the ceiling loops. Callers
// first check the CPU has the ISA: the code inside uses its instructions.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/catalog.hpp"

namespace ternlab::detail {

// The same AVX-512 kernels through SIMDe's portable intrinsics, runnable on any AVX2 CPU; built
// into the test suite only (tests/CMakeLists.txt), to check them against the oracle everywhere.
void add_avx512vnni_emulated_kernels(const LayoutInfo& layout, std::vector<KernelVariant>& out,
                      std::vector<KernelGap>* gaps = nullptr);

// The broadcast kernels of kernels/targets/avx512vnni/gfni_kernels.cpp (AVX-512 VNNI plus GFNI), bound to the
// layout: sets k and returns "" where they run it, else says why not. The native build is called
// only where the CPU reports GFNI; the SIMDe build (tests only) anywhere AVX2 runs. With
// hardware_prefetch, the build that leaves the weight streams to the hardware prefetcher.
std::string pick_broadcast_avx512gfni(const LayoutInfo& layout, KernelFns& k, bool hardware_prefetch);
std::string pick_broadcast_avx512gfni_emulated(const LayoutInfo& layout, KernelFns& k, bool hardware_prefetch);
// The second broadcast build of kernels/targets/avx512vnni/gfni_kernels.cpp: the GFNI build's gemv and a
// gemm on AMX tiles, for 2-bit row-interleaved layouts with dword lanes. The native build is called
// only where the CPU reports AMX-INT8 granted (CpuFeatures::amx_int8); the SIMDe build with the
// tile unit emulated (tests only) anywhere AVX2 runs.
std::string pick_broadcast_avx512amx(const LayoutInfo& layout, KernelFns& k, bool hardware_prefetch);
std::string pick_broadcast_avx512amx_emulated(const LayoutInfo& layout, KernelFns& k, bool hardware_prefetch);
// The base-3 broadcast kernels of kernels/targets/avx512vnni/vbmi_kernels.cpp (AVX-512 VNNI plus VBMI), likewise:
// the native build only where the CPU reports VBMI, the SIMDe build (tests only) anywhere.
std::string pick_broadcast_base3_avx512vbmi(const LayoutInfo& layout, KernelFns& k, bool hardware_prefetch);
std::string pick_broadcast_base3_avx512vbmi_emulated(const LayoutInfo& layout, KernelFns& k, bool hardware_prefetch);

// Register-only loops of the widest int8 dot instruction: `iters` iterations of `kDotChains`
// independent instructions. Return a value derived from the accumulators (so nothing is elided).
inline constexpr int kDotChains = 12;
std::int64_t avx2_maddubs_loop(std::int64_t iters);    // vpmaddubsw ymm: 32 int8 MACs each
std::int64_t avx512_dpbusd_loop(std::int64_t iters);   // vpdpbusd zmm: 64 int8 MACs each
std::int64_t avx512_dpbusd_ymm_loop(std::int64_t iters);  // vpdpbusd ymm: 32 int8 MACs each
// The tile unit's: `iters` iterations of four independent tdpbusd (16 x 16 x 64 = 16384 int8 MACs
// each), only where CpuFeatures::amx_int8.
inline constexpr int kTileDots = 4;
std::int64_t amx_tdpbusd_loop(std::int64_t iters);


// The memory ceiling's read loops (kernels/isa/stream_sum.hpp): each sums n 64-bit words at the
// ISA's width, with one or several streams and with or without software prefetch.
struct ReadLoop {
  const char* name;
  std::uint64_t (*sum)(const std::uint64_t* p, std::int64_t n);
};
std::vector<ReadLoop> avx2_read_loops();
std::vector<ReadLoop> avx512_read_loops();

}  // namespace ternlab::detail
