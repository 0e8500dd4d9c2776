// The AVX2 build of the record kernels. Generic headers first, at the baseline target; the kernel
// template below the pragma is compiled for avx2,fma and reached only after cpu.hpp confirmed them.
#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>

#include "lattice/golay.hpp"
#include "lattice/record_kernels.hpp"
#include "lattice/records.hpp"

#if defined(__x86_64__)
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx2,fma")
#define TERNLAB_F32_AVX2 1
#include "kernels/isa/f32_lanes.hpp"
#include "lattice/record_kernel.hpp"

namespace ternlab::lattice::detail {
void record_matvec_avx2(const RecordMatrix& m, const float* x, float* y, std::int64_t r0, std::int64_t r1) {
  RecordKernel<isa::F32Avx2>::matvec(m, x, y, r0, r1);
}
bool record_avx2_built() { return true; }
}  // namespace ternlab::lattice::detail
#pragma GCC pop_options

#else
namespace ternlab::lattice::detail {
void record_matvec_avx2(const RecordMatrix&, const float*, float*, std::int64_t, std::int64_t) {}
bool record_avx2_built() { return false; }
}  // namespace ternlab::lattice::detail
#endif
