#include "kernels/oracle.hpp"

#include <cmath>

#include "common/error.hpp"
#include "common/fp16.hpp"

namespace ternlab {

std::vector<std::int64_t> oracle_int(const TernaryMatrix& w, const std::vector<std::int8_t>& a, std::int64_t tokens) {
  if (a.size() != std::size_t(tokens * w.cols)) fail("oracle: ", a.size(), " activations for ", tokens, " x ", w.cols);
  const std::vector<std::int8_t> wi = w.weights_int8();
  std::vector<std::int64_t> out(std::size_t(tokens * w.rows), 0);
  for (std::int64_t t = 0; t < tokens; ++t)
    for (std::int64_t n = 0; n < w.rows; ++n) {
      std::int64_t s = 0;
      for (std::int64_t k = 0; k < w.cols; ++k) s += std::int64_t(wi[std::size_t(n * w.cols + k)]) * a[std::size_t(t * w.cols + k)];
      out[std::size_t(t * w.rows + n)] = s;
    }
  return out;
}

std::vector<float> oracle_float(const TernaryMatrix& w, const Q8KBatch& x) {
  if (x.cols != w.cols) fail("oracle: activations of inner size ", x.cols, " for weights with ", w.cols, " columns");
  const std::vector<std::int8_t> wi = w.weights_int8();
  std::vector<float> out(std::size_t(x.tokens * w.rows), 0.0f);
  for (std::int64_t t = 0; t < x.tokens; ++t)
    for (std::int64_t n = 0; n < w.rows; ++n) {
      float acc = 0.0f;
      for (std::int64_t b = 0; b < w.blocks_per_row(); ++b) {
        const BlockQ8K& xb = x.row(t)[b / 2];
        std::int32_t s = 0;
        for (int j = 0; j < kBlockK; ++j)
          s += wi[std::size_t(n * w.cols + b * kBlockK + j)] * xb.qs[(b % 2) * 128 + j];
        acc = std::fma(float(s), fp16_to_float(w.scale_bits(n, b)) * xb.d, acc);
      }
      out[std::size_t(t * w.rows + n)] = acc;
    }
  return out;
}

}  // namespace ternlab
