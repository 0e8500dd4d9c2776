// The gemv kind: one activation row through each arm's layout x kernel x threads (or a peer's
// format), verified against the oracle, then timed interleaved with the read ceiling beside it.
#include <string>
#include <vector>

#include "experiments/matrix_kinds.hpp"

namespace ternlab::experiments {

using namespace kernel_kind;

void register_gemv_kind() {
  const std::vector<std::string> small_matrix = timed_small_overrides({"shape.rows=64", "shape.cols=256"});
  KindInfo gemv{"gemv", "one activation row through each arm's layout x kernel x threads", gemv_keys(), {},
                [](const RunSpec& r) { validate_matrix_kind(r, false); },
                [](const RunSpec& r, RunContext& c) { return run_matrix_kind(r, c, false); }, matrix_units};
  gemv.small_overrides = small_matrix;
  register_kind(std::move(gemv));
}

}  // namespace ternlab::experiments
