// The gemm kind: a batch of `shape.tokens` activation rows (x4 tiles) through each arm, leftover
// rows as one padded tile pass or one gemv each; verified against the oracle, then timed.
#include <string>
#include <vector>

#include "experiments/matrix_kinds.hpp"

namespace ternlab::experiments {

using namespace kernel_kind;

namespace {
std::vector<KeySpec> gemm_keys() {
  std::vector<KeySpec> k = gemv_keys();
  k.push_back({"shape.tokens", Type::integer, true, "activation rows in the batch (default 4)"});
  k.push_back({"arm.leftover", Type::string, true, "rows past the last full 4-row tile: pad (one padded tile pass) or gemv (one gemv each)"});
  return k;
}

}  // namespace

void register_gemm_kind() {
  const std::vector<std::string> small_matrix = timed_small_overrides({"shape.rows=64", "shape.cols=256"});
  KindInfo gemm{"gemm", "a batch of activation rows (x4 tiles); leftover rows padded or one gemv each", gemm_keys(), {},
                [](const RunSpec& r) { validate_matrix_kind(r, true); },
                [](const RunSpec& r, RunContext& c) { return run_matrix_kind(r, c, true); }, matrix_units};
  gemm.small_overrides = small_matrix;
  gemm.compute_bound = true;
  register_kind(std::move(gemm));
}

}  // namespace ternlab::experiments
