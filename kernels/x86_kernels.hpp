// Entry points of the per-ISA x86 translation units. Each appends the kernels its ISA can run on
// `layout`; callers must first check isa_supported() - the code inside uses that ISA's instructions.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/catalog.hpp"

namespace ternlab::detail {

void add_avx2_kernels(const LayoutInfo& layout, std::vector<KernelVariant>& out);
void add_avx512vnni_kernels(const LayoutInfo& layout, std::vector<KernelVariant>& out);
// The same AVX-512 kernels through SIMDe's portable intrinsics, runnable on any AVX2 CPU; built
// into the test suite only (tests/CMakeLists.txt), to check them against the oracle everywhere.
void add_avx512vnni_emulated_kernels(const LayoutInfo& layout, std::vector<KernelVariant>& out);

// Register-only loops of the widest int8 dot instruction: `iters` iterations of `kDotChains`
// independent instructions. Return a value derived from the accumulators (so nothing is elided).
inline constexpr int kDotChains = 12;
std::int64_t avx2_maddubs_loop(std::int64_t iters);    // vpmaddubsw ymm: 32 int8 MACs each
std::int64_t avx512_dpbusd_loop(std::int64_t iters);   // vpdpbusd zmm: 64 int8 MACs each


// Sum of n 64-bit words (n a multiple of 16 after the vector loop; the rest added one by one), with
// 256-bit loads and four independent accumulators: the memory ceiling's streaming pass.
std::uint64_t avx2_stream_sum(const std::uint64_t* p, std::int64_t n);

}  // namespace ternlab::detail
