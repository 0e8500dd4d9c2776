// The AVX-512 build of the record kernels (AVX-512 F at 512 bits; two blocks a step). Generic
// headers first, at the baseline target; the kernel template below the pragma is reached only after
// cpu.hpp confirmed the features.
//
// Built a second time for the tests with TERNLAB_AVX512_EMULATED (tests/lattice_avx512_emulated.cpp):
// the same kernel through SIMDe for an AVX2 target, exported as record_matvec_avx512_emulated.
#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>

#include "lattice/golay.hpp"
#include "lattice/record_kernels.hpp"
#include "lattice/records.hpp"

#if defined(__x86_64__)
#pragma GCC push_options
#if defined(TERNLAB_AVX512_EMULATED)
#pragma GCC target("avx2,fma")
#else
#include <immintrin.h>
#pragma GCC target("avx512f,avx2,fma")
#endif
// GCC 12's AVX-512 intrinsics start some results from _mm512_undefined_*(), which -Wuninitialized
// misreads once they are inlined.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define TERNLAB_F32_AVX512 1
#include "kernels/isa/f32_lanes.hpp"
#include "lattice/record_kernel.hpp"

namespace ternlab::lattice::detail {
#if defined(TERNLAB_AVX512_EMULATED)
void record_matvec_avx512_emulated(const RecordMatrix& m, const float* x, float* y, std::int64_t r0, std::int64_t r1) {
  RecordKernel<isa::F32Avx512>::matvec(m, x, y, r0, r1);
}
#else
void record_matvec_avx512(const RecordMatrix& m, const float* x, float* y, std::int64_t r0, std::int64_t r1) {
  RecordKernel<isa::F32Avx512>::matvec(m, x, y, r0, r1);
}
bool record_avx512_built() { return true; }
#endif
}  // namespace ternlab::lattice::detail
#pragma GCC diagnostic pop
#pragma GCC pop_options

#elif !defined(TERNLAB_AVX512_EMULATED)
namespace ternlab::lattice::detail {
void record_matvec_avx512(const RecordMatrix&, const float*, float*, std::int64_t, std::int64_t) {}
bool record_avx512_built() { return false; }
}  // namespace ternlab::lattice::detail
#endif
