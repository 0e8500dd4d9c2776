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
  if (!x.has_tiles())
    fail("gemm: the activation batch was quantised without its 4-token tiles (Q8KTiles::skip, for gemv only)");
  if (ldy < w.rows) fail("gemm: output row stride ", ldy, " is smaller than the ", w.rows, " weight rows");
  if (x.tokens > 0 && y_len < (x.tokens - 1) * ldy + w.rows)
    fail("gemm: output holds ", y_len, " floats, need ", (x.tokens - 1) * ldy + w.rows);
  if (reinterpret_cast<std::uintptr_t>(y) % alignof(float) != 0) fail("gemm: output buffer is misaligned");
}

// The reference kernels walk each block in chunks of 128 weights (one q8_K half), one fma per
// chunk with its scale, as the oracle does; a chunk holding two 64-weight scale groups of
// different scales takes one fma per group (the layout-free form, and so the oracle, cannot hold
// such a matrix; where the two are equal the result is the oracle's bits).
namespace {

struct Chunk {
  std::int32_t su = 0, ysum = 0;
};

// Sum of u * y and of y over weights [c0, c0 + n) of row r, against activations q.
template <bool kYsum, class Y>
Chunk chunk_sums(const std::uint8_t* codes, int k, int r, int c0, int n, Y y) {
  Chunk c;
  for (int j = 0; j < n; ++j) {
    c.su += std::int32_t(codes[std::size_t(r * k + c0 + j)]) * y(j);
    if constexpr (kYsum) c.ysum += y(j);
  }
  return c;
}

// acc += row r's weights [c0, c0 + 128) of block (g, i) against y, scaled by d: Y(j) is the
// activation of weight c0 + j, half_ysum the sum of those 128 activations.
template <class Y>
void add_chunk(const PackedMatrix& w, const std::uint8_t* codes, std::int64_t g, std::int64_t i, int r, int c0,
               float d, Y y, std::int32_t half_ysum, float& acc) {
  const LayoutInfo& L = *w.layout;
  const int group = L.scale_group();
  const float s0 = w.scale(g, i, r, c0 / group);
  bool one_scale = group >= kBlockK;
  if (!one_scale) {
    one_scale = true;
    for (int c = c0 + group; c < c0 + kBlockK; c += group) one_scale = one_scale && w.scale(g, i, r, c / group) == s0;
  }
  if (one_scale) {
    const Chunk c = chunk_sums<false>(codes, L.k, r, c0, kBlockK, y);
    acc = std::fma(float(c.su - half_ysum), s0 * d, acc);  // the offset u = w + 1 comes out through ysum
    return;
  }
  for (int c1 = c0; c1 < c0 + kBlockK; c1 += group) {
    const Chunk c = chunk_sums<true>(codes, L.k, r, c1, group, [&](int j) { return y(c1 - c0 + j); });
    acc = std::fma(float(c.su - c.ysum), w.scale(g, i, r, c1 / group) * d, acc);
  }
}

}  // namespace

void gemv_reference(const PackedMatrix& w, const BlockQ8K* x, float* y, std::int64_t g0, std::int64_t g1) {
  const LayoutInfo& L = *w.layout;
  std::vector<std::uint8_t> codes(std::size_t(L.rows * L.k));
  std::vector<std::uint16_t> scales(std::size_t(L.rows * std::max(1, L.scales_per_row())));
  for (std::int64_t g = g0; g < g1; ++g) {
    std::vector<float> acc(std::size_t(L.rows), 0.0f);
    for (std::int64_t i = 0; i < w.blocks_per_row(); ++i) {
      decode_block(L, w.block(g, i), codes.data(), scales.data());
      for (int c0 = 0; c0 < L.k; c0 += kBlockK) {
        const std::int64_t kk = i * L.k + c0;
        const BlockQ8K& xb = x[kk / 256];
        const std::int8_t* q = xb.qs + kk % 256;
        const std::int32_t ysum = half_sum(xb, int(kk % 256 / 128));
        for (int r = 0; r < L.rows; ++r)
          add_chunk(w, codes.data(), g, i, r, c0, xb.d, [&](int j) { return std::int32_t(q[j]); }, ysum,
                    acc[std::size_t(r)]);
      }
    }
    for (int r = 0; r < L.rows; ++r) y[g * L.rows + r] = acc[std::size_t(r)];
  }
}

void gemm_reference(const PackedMatrix& w, const Q8KBatch& x, float* y, std::int64_t ldy, std::int64_t g0,
                    std::int64_t g1) {
  const LayoutInfo& L = *w.layout;
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
        for (int c0 = 0; c0 < L.k; c0 += kBlockK) {
          const std::int64_t kk = i * L.k + c0;
          const BlockQ8Kx4& xb = tile[kk / 256];
          const int off = int(kk % 256);
          for (int r = 0; r < L.rows; ++r)
            for (int m = 0; m < 4; ++m)
              add_chunk(w, codes.data(), g, i, r, c0, xb.d[m],
                        [&](int j) { return std::int32_t(xb.qs[x4_index(m, off + j)]); }, half_sum_x4(xb, m, off / 128),
                        acc[std::size_t(r * 4 + m)]);
        }
      }
      for (int m = 0; m < live; ++m)
        for (int r = 0; r < L.rows; ++r) y[(4 * t + m) * ldy + g * L.rows + r] = acc[std::size_t(r * 4 + m)];
    }
  }
}

}  // namespace ternlab
