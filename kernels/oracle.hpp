// The integer oracle: a plain scalar loop over int8 weights and int8 activations, sharing nothing
// with the kernels (no layouts, no q8_K partial sums, no offset tricks). Kernels must match it
// exactly when every scale is 1; the float oracle pins the exact float association kernels use.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/q8k.hpp"
#include "layouts/matrix.hpp"

namespace ternlab {

// out[t * rows + n] = sum_k w[n][k] * a[t][k]; a is tokens x cols int8, row-major.
std::vector<std::int64_t> oracle_int(const TernaryMatrix& w, const std::vector<std::int8_t>& a, std::int64_t tokens);

// Per row and token: for each 128-weight block in order, acc = fma(S_block, d_w * d_y, acc), with
// S_block the exact integer dot of int8 weights and the quantised activations.
std::vector<float> oracle_float(const TernaryMatrix& w, const Q8KBatch& x);

}  // namespace ternlab
