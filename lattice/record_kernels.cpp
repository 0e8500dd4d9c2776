#include "lattice/record_kernels.hpp"

#include "common/error.hpp"
#include "kernels/cpu.hpp"
#include "kernels/isa/f32_lanes.hpp"
#include "lattice/record_kernel.hpp"

namespace ternlab::lattice {

namespace detail {
void record_matvec_scalar(const RecordMatrix& m, const float* x, float* y, std::int64_t r0, std::int64_t r1) {
  RecordKernel<isa::F32Scalar>::matvec(m, x, y, r0, r1);
}
}  // namespace detail

std::vector<RecordKernelVariant> record_kernels() {
  std::vector<RecordKernelVariant> out{{"scalar", &detail::record_matvec_scalar}};
  const CpuFeatures& f = cpu_features();
  if (detail::record_avx2_built() && f.avx2 && f.fma) out.push_back({"avx2", &detail::record_matvec_avx2});
  if (detail::record_avx512_built() && f.avx512f && f.avx2 && f.fma) out.push_back({"avx512", &detail::record_matvec_avx512});
  if (detail::record_neon_built() && f.neon) out.push_back({"neon", &detail::record_matvec_neon});
  return out;
}

const RecordKernelVariant& best_record_kernel() {
  static const std::vector<RecordKernelVariant> all = record_kernels();
  return all.back();
}

void record_matvec(const RecordMatrix& m, std::span<const float> x, std::span<float> y, const RecordKernelVariant& k,
                   std::int64_t row_begin, std::int64_t row_end) {
  if (m.layout == nullptr) fail("tensor '", m.name, "': no record layout");
  if (row_end < 0) row_end = m.rows;
  if (x.size() != std::size_t(m.cols)) fail("tensor '", m.name, "': x has ", x.size(), " values for ", m.cols, " columns");
  if (y.size() != std::size_t(m.rows)) fail("tensor '", m.name, "': y has ", y.size(), " values for ", m.rows, " rows");
  if (row_begin < 0 || row_begin > row_end || row_end > m.rows)
    fail("tensor '", m.name, "': row range ", row_begin, "…", row_end, " outside 0…", m.rows);
  if (m.row_scale.size() != std::size_t(m.rows) || m.tail_values.size() != std::size_t(m.rows * m.tail) ||
      (m.cols - m.tail) % 24 != 0 || m.stream.size() < std::size_t(kRecordPadBytes) ||
      m.exc_data.size() < m.exc_index.size() * kExceptionRecordBytes + kRecordPadBytes ||
      (m.layout->addressing == records::Addressing::grouped32 && m.base.size() != (m.blocks() + 31) / 32 + 1))
    fail("tensor '", m.name, "': side data do not match its shape (", m.rows, " x ", m.cols, ", tail ", m.tail, ")");
  k.fn(m, x.data(), y.data(), row_begin, row_end);
}

}  // namespace ternlab::lattice
