#include "kernels/dense/f16_matvec.hpp"

#include "common/error.hpp"
#include "kernels/cpu.hpp"
#include "kernels/isa/f32_lanes.hpp"
#include "kernels/dense/f16_matvec_kernel.hpp"

namespace ternlab {

namespace {
void f16_matvec_scalar(const F16Matrix& m, const float* x, float* y, std::int64_t r0, std::int64_t r1) {
  dense::F16Kernel<dense::HalfScalar>::matvec(m, x, y, r0, r1);
}
}  // namespace

std::vector<F16KernelVariant> f16_kernels() {
  std::vector<F16KernelVariant> out{{"scalar", &f16_matvec_scalar}};
  const CpuFeatures& f = cpu_features();
  if (detail::f16_avx2_built() && f.avx2 && f.fma && f.f16c) out.push_back({"avx2", &detail::f16_matvec_avx2});
  if (detail::f16_avx512_built() && f.avx512f && f.avx2 && f.fma) out.push_back({"avx512", &detail::f16_matvec_avx512});
  if (detail::f16_neon_built() && f.neon) out.push_back({"neon", &detail::f16_matvec_neon});
  return out;
}

const F16KernelVariant& best_f16_kernel() {
  static const std::vector<F16KernelVariant> all = f16_kernels();
  return all.back();
}

void f16_matvec(const F16Matrix& m, std::span<const float> x, std::span<float> y, const F16KernelVariant& k, std::int64_t row_begin,
                std::int64_t row_end) {
  if (row_end < 0) row_end = m.rows;
  if (m.w.size() != std::size_t(m.rows * m.cols))
    fail("tensor '", m.name, "': ", m.w.size(), " f16 weights for ", m.rows, " x ", m.cols);
  if (x.size() != std::size_t(m.cols)) fail("tensor '", m.name, "': x has ", x.size(), " values for ", m.cols, " columns");
  if (y.size() != std::size_t(m.rows)) fail("tensor '", m.name, "': y has ", y.size(), " values for ", m.rows, " rows");
  if (row_begin < 0 || row_begin > row_end || row_end > m.rows)
    fail("tensor '", m.name, "': row range ", row_begin, "…", row_end, " outside 0…", m.rows);
  k.fn(m, x.data(), y.data(), row_begin, row_end);
}

}  // namespace ternlab
