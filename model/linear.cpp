#include "model/linear.hpp"

#include "common/error.hpp"
#include "common/strings.hpp"

namespace ternlab::model {

void TernaryLinear::apply(const Q8KBatch& x, float* y, ThreadPool& pool) const {
  if (x.cols != w.cols) fail(name, ": activation has ", x.cols, " columns, the weight ", w.cols);
  const std::int64_t groups = w.row_groups();
  const int n = int(std::min<std::int64_t>(pool.size(), groups));
  if (x.tokens == 1) {
    pool.run([&](int t) {
      if (t >= n) return;
      const auto [g0, g1] = ThreadPool::split(groups, t, n);
      if (g1 > g0) kernel.gemv(w, x.row(0), y, g0, g1);
    });
  } else {
    pool.run([&](int t) {
      if (t >= n) return;
      const auto [g0, g1] = ThreadPool::split(groups, t, n);
      if (g1 > g0) kernel.gemm(w, x, y, w.rows, g0, g1);
    });
  }
}

KernelVariant choose_kernel(const LayoutInfo& layout, const std::string& kernel) {
  const auto all = kernels_for(layout);
  if (all.empty()) fail("no kernel for layout ", layout.name);
  if (kernel.empty()) return all.back();
  std::vector<std::string> names;
  for (const auto& k : all) {
    if (k.name() == kernel || k.strategy == kernel) return k;
    names.push_back(k.name());
  }
  fail("kernel '", kernel, "' is not available for layout ", layout.name, " here (available: ", join(names), ")");
}

}  // namespace ternlab::model
