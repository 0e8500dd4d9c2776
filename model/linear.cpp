#include "model/linear.hpp"

#include "common/error.hpp"
#include "common/strings.hpp"
#include "kernels/dispatch.hpp"

#include <optional>

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
  if (kernel.empty()) return best_kernel(layout).variant;  // the same selector as everywhere else
  if (kernel.find('/') != std::string::npos) return find_kernel(layout, kernel);
  // A bare strategy: its richest ISA here (kernels_for lists ISAs plainest first).
  std::optional<KernelVariant> found;
  for (const auto& k : kernels_for(layout))
    if (k.strategy == kernel) found = k;
  if (!found) return find_kernel(layout, kernel);  // throws, listing what is available
  return *found;
}

}  // namespace ternlab::model
