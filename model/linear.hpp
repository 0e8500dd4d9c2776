// One ternary matmul: the weight repacked into the chosen layout, the kernel chosen from
// kernels_for() (best listed, or by name), and the row groups split over the thread pool.
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
// otherwise the last entry of kernels_for() (the catalog lists the reference kernel first and the
// most specialised last).
KernelVariant choose_kernel(const LayoutInfo& layout, const std::string& kernel = "");

}  // namespace ternlab::model
