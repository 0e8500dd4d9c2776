#include <cmath>
#include <vector>

#include "common/error.hpp"
#include "kernels/kernel.hpp"

namespace ternlab {

void check_gemv_args(const PackedMatrix& w, const BlockQ8K* x, std::int64_t x_cols, const float* y,
                     std::int64_t y_len) {
  if (!w.layout) fail("gemv: the weight matrix has no layout");
  if (!x || !y) fail("gemv: null activation or output buffer");
  if (x_cols != w.cols)
    fail("gemv: activations have ", x_cols, " elements but the weights (", w.rows, " x ", w.cols, ", ",
         w.layout->name, ") need ", w.cols);
  if (y_len < w.rows) fail("gemv: output holds ", y_len, " floats, need ", w.rows);
  if (reinterpret_cast<std::uintptr_t>(x) % alignof(BlockQ8K) != 0)
    fail("gemv: activation buffer is misaligned (", alignof(BlockQ8K), "-byte alignment required)");
  if (reinterpret_cast<std::uintptr_t>(y) % alignof(float) != 0) fail("gemv: output buffer is misaligned");
}

void check_gemm_args(const PackedMatrix& w, const Q8KBatch& x, const float* y, std::int64_t ldy, std::int64_t y_len) {
  if (!w.layout) fail("gemm: the weight matrix has no layout");
  if (!y) fail("gemm: null output buffer");
  if (x.cols != w.cols)
    fail("gemm: activations have inner size ", x.cols, " but the weights (", w.rows, " x ", w.cols, ", ",
         w.layout->name, ") need ", w.cols);
  if (ldy < w.rows) fail("gemm: output row stride ", ldy, " is smaller than the ", w.rows, " weight rows");
  if (x.tokens > 0 && y_len < (x.tokens - 1) * ldy + w.rows)
    fail("gemm: output holds ", y_len, " floats, need ", (x.tokens - 1) * ldy + w.rows);
  if (reinterpret_cast<std::uintptr_t>(y) % alignof(float) != 0) fail("gemm: output buffer is misaligned");
}

void gemv_reference(const PackedMatrix& w, const BlockQ8K* x, float* y, std::int64_t g0, std::int64_t g1) {
  const LayoutInfo& L = *w.layout;
  std::vector<std::uint8_t> codes(std::size_t(L.rows * L.k));
  std::vector<std::uint16_t> scales(std::size_t(L.rows));
  for (std::int64_t g = g0; g < g1; ++g) {
    std::vector<float> acc(std::size_t(L.rows), 0.0f);
    for (std::int64_t i = 0; i < w.blocks_per_row(); ++i) {
      decode_block(L, w.block(g, i), codes.data(), scales.data());
      const BlockQ8K& xb = x[i / 2];
      const std::int8_t* q = xb.qs + 128 * (i % 2);
      const int ysum = half_sum(xb, int(i % 2));
      for (int r = 0; r < L.rows; ++r) {
        std::int32_t su = 0;  // sum of u * y; the offset u = w + 1 comes out through ysum
        for (int k = 0; k < L.k; ++k) su += std::int32_t(codes[std::size_t(r * L.k + k)]) * q[k];
        acc[std::size_t(r)] = std::fma(float(su - ysum), L.scale(w.block(g, i), r) * xb.d, acc[std::size_t(r)]);
      }
    }
    for (int r = 0; r < L.rows; ++r) y[g * L.rows + r] = acc[std::size_t(r)];
  }
}

void gemm_reference(const PackedMatrix& w, const Q8KBatch& x, float* y, std::int64_t ldy, std::int64_t g0,
                    std::int64_t g1) {
  const LayoutInfo& L = *w.layout;
  std::vector<std::uint8_t> codes(std::size_t(L.rows * L.k));
  std::vector<std::uint16_t> scales(std::size_t(L.rows));
  // One tile = 4 tokens; leftover tokens ride in a zero-padded tile (never one gemv per token).
  for (std::int64_t t = 0; t < x.tiles_count(); ++t) {
    const BlockQ8Kx4* tile = x.tile(t);
    const int live = int(std::min<std::int64_t>(4, x.tokens - 4 * t));
    for (std::int64_t g = g0; g < g1; ++g) {
      std::vector<float> acc(std::size_t(L.rows * 4), 0.0f);
      for (std::int64_t i = 0; i < w.blocks_per_row(); ++i) {
        decode_block(L, w.block(g, i), codes.data(), scales.data());
        const BlockQ8Kx4& xb = tile[i / 2];
        const int h = int(i % 2);
        for (int r = 0; r < L.rows; ++r)
          for (int m = 0; m < 4; ++m) {
            std::int32_t su = 0;
            for (int k = 0; k < L.k; ++k)
              su += std::int32_t(codes[std::size_t(r * L.k + k)]) * xb.qs[x4_index(m, 128 * h + k)];
            float& a = acc[std::size_t(r * 4 + m)];
            a = std::fma(float(su - half_sum_x4(xb, m, h)), L.scale(w.block(g, i), r) * xb.d[m], a);
          }
      }
      for (int m = 0; m < live; ++m)
        for (int r = 0; r < L.rows; ++r) y[(4 * t + m) * ldy + g * L.rows + r] = acc[std::size_t(r * 4 + m)];
    }
  }
}

}  // namespace ternlab
