// One ternary matmul: the weight repacked into the chosen layout, the kernel chosen from
// kernels/dispatch.hpp (best_kernel, or by name), run with run_gemv/run_gemm on the thread pool.
// Activations are q8_K; one token goes through gemv, a batch through gemm.
#pragma once

#include <string>

#include "kernels/catalog.hpp"
#include "kernels/thread_pool.hpp"
#include "layouts/matrix.hpp"

namespace ternlab::model {

struct TernaryLinear {
  std::string name;
  PackedMatrix w;
  KernelVariant kernel;
  std::int64_t in() const { return w.cols; }
  std::int64_t out() const { return w.rows; }
  // y is tokens x out(), row-major.
  void apply(const Q8KBatch& x, float* y, ThreadPool& pool) const;
  std::size_t bytes() const { return w.bytes.size(); }
};

// The kernel for `layout`: the one named `kernel` ("strategy/isa" or just "strategy") if given,
// otherwise best_kernel(layout) (kernels/dispatch.hpp: the richest ISA under the ceiling).
KernelVariant choose_kernel(const LayoutInfo& layout, const std::string& kernel = "");

}  // namespace ternlab::model
