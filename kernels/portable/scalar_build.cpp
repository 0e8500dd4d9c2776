// The portable kernel compiled without auto-vectorisation (-fno-tree-vectorize, set for this file
// in CMakeLists.txt) for the baseline target: what the plain C++ loops cost one element at a time.
#define TERNLAB_PORTABLE_ISA scalar
#define TERNLAB_PORTABLE_NAME "scalar"
#define TERNLAB_PORTABLE_LIST add_portable_scalar_kernels
#include "kernels/portable/portable.hpp"
#include "kernels/portable/portable_kernel.inl"
