// What the SSE4.1 / SSSE3 target exports besides its Target (kernels/targets/targets.def): the
// policy's software float steps, for the tests. Call only where isa_supported(Isa::sse41).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/catalog.hpp"

namespace ternlab::detail {

// The policy's software float steps, for the tests (they replace FMA and F16C, so each must be
// exact): y[i] = fma(a[i], b[i], c[i]) for i < 4, and 4 fp16 values at p to float. False where
// this build has no SSE4.1 code (not x86-64).
bool sse41_fma4(const float* a, const float* b, const float* c, float* y);
bool sse41_fp16x4(const std::uint8_t* p, float* y);

}  // namespace ternlab::detail
