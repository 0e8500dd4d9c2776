// kernels/targets/avx512vnni/vbmi_kernels.cpp built a second time through SIMDe (its byte lookups included), so the
// oracle suites check the base-3 broadcast kernels on any AVX2 CPU: the emulated AVX-512 catalog
// (add_avx512vnni_emulated_kernels) offers them for base-3 row-interleaved layouts.
#define TERNLAB_AVX512_EMULATED 1
#include "kernels/targets/avx512vnni/vbmi_kernels.cpp"
