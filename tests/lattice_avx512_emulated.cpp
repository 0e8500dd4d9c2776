// lattice/record_kernels_avx512.cpp built a second time, through SIMDe's portable AVX-512
// intrinsics, so the lattice suite checks the AVX-512 record kernels on CPUs without AVX-512
// (tests/test_lattice_records.cpp). A small unit of its own: tests/avx512_emulated.cpp is the
// longest compile already. Built on x86-64 only.
#define TERNLAB_AVX512_EMULATED 1
#include "lattice/record_kernels_avx512.cpp"
