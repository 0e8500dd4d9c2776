// The portable kernel compiled without auto-vectorisation (-fno-tree-vectorize, set for this file
// in CMakeLists.txt) for the baseline target: what the plain C++ loops cost one element at a time.
#define TERNLAB_PORTABLE_ISA scalar
#define TERNLAB_PORTABLE_NAME "scalar"
#include "kernels/targets/portable/portable.hpp"
#include "kernels/targets/portable/portable_kernel.inl"

// Outside any target pragma: runs_here runs on every CPU.
TERNLAB_DEFINE_TARGET(portable_scalar, {"portable", detail::Portable::kIsa, [] { return isa_supported(detail::Portable::kIsa); },
                           &detail::add_kernels})
