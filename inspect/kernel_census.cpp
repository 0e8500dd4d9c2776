#include "inspect/kernel_census.hpp"

#include <numeric>
#include <vector>

#include "common/error.hpp"
#include "kernels/dispatch.hpp"
#include "kernels/q8k.hpp"
#include "kernels/testdata.hpp"
#include "layouts/matrix.hpp"

namespace ternlab::inspect {

const char* to_string(KernelOp op) { return op == KernelOp::gemv ? "gemv" : "gemm"; }

const void* kernel_entry(const KernelVariant& k, KernelOp op) {
  if (op == KernelOp::gemm) return reinterpret_cast<const void*>(k.gemm);
  return k.phases ? reinterpret_cast<const void*>(k.phases.rows) : reinterpret_cast<const void*>(k.gemv);
}

LoopCensus kernel_census(const LayoutInfo& L, const KernelVariant& k, KernelOp op) {
  const void* entry = kernel_entry(k, op);
  if (!entry) fail(k.name(), " has no ", to_string(op), " to take a census of");
  // Eight row groups: the 4-group tiles of a gemv run; at least eight 128-weight blocks a row: the
  // unrolled block loops run. Sixteen tokens: the widest gemm pass (16 tokens) runs.
  const std::int64_t rows = 8 * L.rows, cols = std::lcm<std::int64_t>(1024, L.k);
  const std::int64_t tokens = op == KernelOp::gemv ? 1 : 16;
  const PackedMatrix w = pack(make_weights(rows, cols, 1), L);
  const Q8KBatch x = quantize_batch(make_float_activations(tokens, cols, 2).data(), tokens, cols);
  std::vector<float> y(std::size_t(rows * tokens));
  if (op == KernelOp::gemm)
    return census_of(entry, [&] { k.gemm(w, x, y.data(), rows, 0, w.row_groups()); });
  const std::uint8_t* acts = prepare_gemv(k, w, x.row(0));
  return census_of(entry, [&] { gemv_rows(k, w, x.row(0), acts, y.data(), 0, w.row_groups()); });
}

}  // namespace ternlab::inspect
