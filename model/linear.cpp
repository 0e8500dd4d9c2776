#include "model/linear.hpp"

#include "common/error.hpp"
#include "common/strings.hpp"
#include "kernels/dispatch.hpp"


namespace ternlab::model {

void TernaryLinear::apply(const Q8KBatch& x, float* y, ThreadPool& pool) const {
  if (x.cols != w.cols) fail(name, ": activation has ", x.cols, " columns, the weight ", w.cols);
  const std::span<float> out(y, std::size_t(x.tokens * w.rows));
  if (x.tokens == 1)
    run_gemv(pool, kernel, w, x, out);
  else
    run_gemm(pool, kernel, w, x, out, w.rows);
}

KernelVariant choose_kernel(const LayoutInfo& layout, const std::string& kernel) {
  return select_kernel(layout, kernel);  // the same selector as everywhere else, under the ISA ceiling
}

}  // namespace ternlab::model
