// The NEON build of the record kernels (plain Armv8.0 NEON: every aarch64 core), at the baseline
// target.
#include "lattice/record_kernels.hpp"

#if defined(__aarch64__)
#include "kernels/isa/f32_lanes.hpp"
#include "lattice/record_kernel.hpp"

namespace ternlab::lattice::detail {
void record_matvec_neon(const RecordMatrix& m, const float* x, float* y, std::int64_t r0, std::int64_t r1) {
  RecordKernel<isa::F32Neon>::matvec(m, x, y, r0, r1);
}
bool record_neon_built() { return true; }
}  // namespace ternlab::lattice::detail

#else
namespace ternlab::lattice::detail {
void record_matvec_neon(const RecordMatrix&, const float*, float*, std::int64_t, std::int64_t) {}
bool record_neon_built() { return false; }
}  // namespace ternlab::lattice::detail
#endif
