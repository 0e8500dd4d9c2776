// Entry points of the two compiles of the portable kernel (kernels/portable/portable_kernel.inl):
// scalar_build.cpp, built without auto-vectorisation, runs on any CPU; autovec_build.cpp, built
// with it for kPortableAutovecIsa, only where the CPU has that ISA (check isa_supported first).
#pragma once

#include <vector>

#include "kernels/catalog.hpp"

namespace ternlab::detail {

#if defined(__aarch64__)
inline constexpr Isa kPortableAutovecIsa = Isa::neon;
#else
inline constexpr Isa kPortableAutovecIsa = Isa::avx2;
#endif

void add_portable_scalar_kernels(const LayoutInfo& layout, std::vector<KernelVariant>& out,
                                 std::vector<KernelGap>* gaps = nullptr);
void add_portable_autovec_kernels(const LayoutInfo& layout, std::vector<KernelVariant>& out,
                                  std::vector<KernelGap>* gaps = nullptr);

}  // namespace ternlab::detail
