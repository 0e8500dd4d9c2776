// Entry points of the SSE4.1 / SSSE3 target (kernels/targets/sse41/kernels.cpp). Call only where
// isa_supported(Isa::sse41): the code inside uses those instructions.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/catalog.hpp"

namespace ternlab::detail {

// Appends the SSE4.1 kernels that can run `layout`; notes in `gaps` the strategies whose plan
// refuses it at this width.
void add_sse41_kernels(const LayoutInfo& layout, std::vector<KernelVariant>& out, std::vector<KernelGap>* gaps = nullptr);

// The policy's software float steps, for the tests (they replace FMA and F16C, so each must be
// exact): y[i] = fma(a[i], b[i], c[i]) for i < 4, and 4 fp16 values at p to float. False where
// this build has no SSE4.1 code (not x86-64).
bool sse41_fma4(const float* a, const float* b, const float* c, float* y);
bool sse41_fp16x4(const std::uint8_t* p, float* y);

}  // namespace ternlab::detail
