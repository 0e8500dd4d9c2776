// kernels/targets/avx512vnni/gfni_kernels.cpp built a second time through SIMDe (its GFNI affine map included) and
// with the tile unit emulated (isa::EmulatedTiles), so the oracle suites check the GFNI build of the
// broadcast kernels and its tile gemm (indices, strides, passes, partial groups) on any AVX2 CPU:
// the emulated AVX-512 catalog (add_avx512vnni_emulated_kernels) offers them beside the build
// without GFNI.
#define TERNLAB_AVX512_EMULATED 1
#include "kernels/targets/avx512vnni/gfni_kernels.cpp"
