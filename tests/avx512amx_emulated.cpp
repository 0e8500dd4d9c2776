// kernels/targets/avx512vnni/amx_kernels.cpp built a second time, through SIMDe and the tile unit's
// emulation (isa::EmulatedTiles), so the oracle suites check the tile gemm's indices, strides and
// float end on any AVX2 CPU: the emulated AVX-512 catalog (add_avx512vnni_emulated_kernels) offers
// it beside the GFNI build.
#define TERNLAB_AVX512_EMULATED 1
#include "kernels/targets/avx512vnni/amx_kernels.cpp"
