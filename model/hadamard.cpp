#include "model/hadamard.hpp"

#include <cmath>

#include "common/error.hpp"
#include "kernels/vector/vector_ops.hpp"

namespace ternlab::model {

const std::vector<float>& Rotation::signs_for(std::int64_t k) const {
  const auto it = signs.find(k);
  if (it == signs.end()) fail("prism.hadamard: no sign vector for input width ", k);
  // The loader refuses such widths; a config built in memory must not reach a partial block either.
  if (k % block != 0) fail("prism.hadamard: input width ", k, " is not a multiple of the block ", block);
  return it->second;
}

void Rotation::forward(float* x, std::int64_t k) const {
  if (identity) return;
  const auto& s = signs_for(k);
  for (std::int64_t b = 0; b * block < k; ++b) forward_block(x, s, b);
}

// The vector builds below repeat fwht's float operations element by element (vector_ops.hpp).
void Rotation::forward_block(float* x, const std::vector<float>& s, std::int64_t b) const {
  if (identity) return;
  const VectorOps& ops = vector_ops();
  const std::int64_t i0 = b * block;
  ops.multiply(x + i0, s.data() + i0, block);
  ops.fwht(x + i0, block);
}

void Rotation::inverse(float* x, std::int64_t k) const {
  if (identity) return;
  const auto& s = signs_for(k);
  const VectorOps& ops = vector_ops();
  for (std::int64_t b = 0; b < k; b += block) ops.fwht(x + b, block);
  ops.multiply(x, s.data(), k);
}

}  // namespace ternlab::model
