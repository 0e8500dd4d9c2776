// Entry points of the aarch64 ISA translation units, one per feature level, each instantiating the
// shared strategies (kernels/strategies/*.hpp) with its NEON policies (kernels/isa/neon.hpp). Each
// appends the kernels its ISA can run on `layout`; callers first check isa_supported(). Off
// aarch64 they append nothing.
#pragma once

#include <vector>

#include "kernels/catalog.hpp"

namespace ternlab::detail {

// Plain Armv8.0 NEON (kernels/arm_neon.cpp): slot-mask, unpack, base3.
void add_neon_kernels(const LayoutInfo& layout, std::vector<KernelVariant>& out, std::vector<KernelGap>* gaps = nullptr);
// Armv8.2 dotprod (kernels/arm_dotprod.cpp): the same strategies on sdot, and PrismML's stock
// NEON kernel as the prism-neon baseline arm.
void add_dotprod_kernels(const LayoutInfo& layout, std::vector<KernelVariant>& out,
                         std::vector<KernelGap>* gaps = nullptr);
// i8mm (kernels/arm_i8mm.cpp): slot-mask/i8mm, the smmla gemm paired with slot-mask/dotprod's
// gemv, which `out` must already hold (add_dotprod_kernels first).
void add_i8mm_kernels(const LayoutInfo& layout, std::vector<KernelVariant>& out, std::vector<KernelGap>* gaps = nullptr);

}  // namespace ternlab::detail
