#include <algorithm>
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

// The reference kernels walk each block in chunks of 128 weights (one q8_K half, one fma per chunk
// as the oracle does), or of the scale group where that is narrower.
namespace {
int chunk_of(const LayoutInfo& L) { return std::min(L.scale_group(), kBlockK); }
}  // namespace

void gemv_reference(const PackedMatrix& w, const BlockQ8K* x, float* y, std::int64_t g0, std::int64_t g1) {
  const LayoutInfo& L = *w.layout;
  const int chunk = chunk_of(L);
  std::vector<std::uint8_t> codes(std::size_t(L.rows * L.k));
  std::vector<std::uint16_t> scales(std::size_t(L.rows * std::max(1, L.scales_per_row())));
  for (std::int64_t g = g0; g < g1; ++g) {
    std::vector<float> acc(std::size_t(L.rows), 0.0f);
    for (std::int64_t i = 0; i < w.blocks_per_row(); ++i) {
      decode_block(L, w.block(g, i), codes.data(), scales.data());
      for (int c0 = 0; c0 < L.k; c0 += chunk) {
        const std::int64_t kk = i * L.k + c0;
        const BlockQ8K& xb = x[kk / 256];
        const std::int8_t* q = xb.qs + kk % 256;
        std::int32_t ysum = 0;
        if (chunk == kBlockK)
          ysum = half_sum(xb, int(kk % 256 / 128));
        else
          for (int k = 0; k < chunk; ++k) ysum += q[k];
        for (int r = 0; r < L.rows; ++r) {
          std::int32_t su = 0;  // sum of u * y; the offset u = w + 1 comes out through ysum
          for (int k = 0; k < chunk; ++k) su += std::int32_t(codes[std::size_t(r * L.k + c0 + k)]) * q[k];
          acc[std::size_t(r)] =
              std::fma(float(su - ysum), w.scale(g, i, r, c0 / L.scale_group()) * xb.d, acc[std::size_t(r)]);
        }
      }
    }
    for (int r = 0; r < L.rows; ++r) y[g * L.rows + r] = acc[std::size_t(r)];
  }
}

void gemm_reference(const PackedMatrix& w, const Q8KBatch& x, float* y, std::int64_t ldy, std::int64_t g0,
                    std::int64_t g1) {
  const LayoutInfo& L = *w.layout;
  const int chunk = chunk_of(L);
  std::vector<std::uint8_t> codes(std::size_t(L.rows * L.k));
  std::vector<std::uint16_t> scales(std::size_t(L.rows * std::max(1, L.scales_per_row())));
  // One tile = 4 tokens; leftover tokens ride in a zero-padded tile (never one gemv per token).
  for (std::int64_t t = 0; t < x.tiles_count(); ++t) {
    const BlockQ8Kx4* tile = x.tile(t);
    const int live = int(std::min<std::int64_t>(4, x.tokens - 4 * t));
    for (std::int64_t g = g0; g < g1; ++g) {
      std::vector<float> acc(std::size_t(L.rows * 4), 0.0f);
      for (std::int64_t i = 0; i < w.blocks_per_row(); ++i) {
        decode_block(L, w.block(g, i), codes.data(), scales.data());
        for (int c0 = 0; c0 < L.k; c0 += chunk) {
          const std::int64_t kk = i * L.k + c0;
          const BlockQ8Kx4& xb = tile[kk / 256];
          const int off = int(kk % 256);
          for (int m = 0; m < 4; ++m) {
            std::int32_t ysum = 0;
            if (chunk == kBlockK)
              ysum = half_sum_x4(xb, m, off / 128);
            else
              for (int k = 0; k < chunk; ++k) ysum += xb.qs[x4_index(m, off + k)];
            for (int r = 0; r < L.rows; ++r) {
              std::int32_t su = 0;
              for (int k = 0; k < chunk; ++k)
                su += std::int32_t(codes[std::size_t(r * L.k + c0 + k)]) * xb.qs[x4_index(m, off + k)];
              float& a = acc[std::size_t(r * 4 + m)];
              a = std::fma(float(su - ysum), w.scale(g, i, r, c0 / L.scale_group()) * xb.d[m], a);
            }
          }
        }
      }
      for (int m = 0; m < live; ++m)
        for (int r = 0; r < L.rows; ++r) y[(4 * t + m) * ldy + g * L.rows + r] = acc[std::size_t(r * 4 + m)];
    }
  }
}

}  // namespace ternlab
