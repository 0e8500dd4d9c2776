// kernels/targets/avx512vnni/kernels.cpp built a second time, through SIMDe's portable AVX-512 intrinsics
// (see kernels/targets/avx512vnni/policy.hpp), so the oracle suites run the AVX-512 VNNI kernels on CPUs
// without AVX-512: checked_kernels_for() (tests/support.cpp) adds them. Built on x86-64 only.
#define TERNLAB_AVX512_EMULATED 1
#include "kernels/targets/avx512vnni/kernels.cpp"

