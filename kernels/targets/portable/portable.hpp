// The two compiles of the portable kernel (portable_kernel.inl), two targets of targets.def:
// scalar_build.cpp (portable_scalar), built without auto-vectorisation, runs on any CPU;
// autovec_build.cpp (portable_autovec), built with it for kPortableAutovecIsa, where the CPU has it.
#pragma once

#include "kernels/catalog.hpp"

namespace ternlab::detail {

#if defined(__aarch64__)
inline constexpr Isa kPortableAutovecIsa = Isa::neon;
#else
inline constexpr Isa kPortableAutovecIsa = Isa::avx2;
#endif

}  // namespace ternlab::detail
