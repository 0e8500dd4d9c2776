// The portable kernel compiled with auto-vectorisation (-O3, set for this file in CMakeLists.txt):
// on x86-64 for avx2,fma,f16c (the kernel below the pragma is reached only through kernels_for()
// after cpu.hpp confirmed the features), on aarch64 for the baseline NEON.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "common/error.hpp"
#include "common/fp16.hpp"
#include "kernels/catalog.hpp"
#include "kernels/kernel.hpp"
#include "kernels/strategies/slot_mask/plan.hpp"
#include "kernels/targets/portable/portable.hpp"

#if defined(__x86_64__)
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#define TERNLAB_PORTABLE_ISA avx2
#define TERNLAB_PORTABLE_NAME "avx2"
#else
#define TERNLAB_PORTABLE_ISA neon
#define TERNLAB_PORTABLE_NAME "neon"
#endif
#include "kernels/targets/portable/portable_kernel.inl"
#if defined(__x86_64__)
#pragma GCC pop_options
#endif

// Outside any target pragma: runs_here runs on every CPU.
TERNLAB_DEFINE_TARGET(portable_autovec, {"portable", detail::Portable::kIsa, [] { return isa_supported(detail::Portable::kIsa); },
                           &detail::add_kernels})
