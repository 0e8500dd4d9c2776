#include "kernels/q8k.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include "common/error.hpp"
#include "kernels/thread_pool.hpp"

namespace ternlab {

int nearest_int(float f) {
  const float v = f + 12582912.0f;
  const std::int32_t i = std::bit_cast<std::int32_t>(v);
  return (i & 0x007fffff) - 0x00400000;
}

void quantize_row_q8k(const float* x, BlockQ8K* y, std::int64_t k) {
  if (k % kQK != 0) fail("q8_K quantisation: ", k, " values is not a whole number of 256-blocks");
  for (std::int64_t b = 0; b < k / kQK; ++b, x += kQK) {
    BlockQ8K& out = y[b];
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kQK; ++j) {
      const float ax = std::fabs(x[j]);
      if (ax > amax) {
        amax = ax;
        max = x[j];
      }
    }
    if (amax == 0.0f) {
      std::memset(&out, 0, sizeof out);
      continue;
    }
    const float iscale = -127.0f / max;
    for (int j = 0; j < kQK; ++j) out.qs[j] = std::int8_t(std::min(127, nearest_int(iscale * x[j])));
    for (int g = 0; g < kQK / 16; ++g) {
      int s = 0;
      for (int i = 0; i < 16; ++i) s += out.qs[16 * g + i];
      out.bsums[g] = std::int16_t(s);
    }
    out.d = 1.0f / iscale;
  }
}

BlockQ8Kx4 interleave_x4(std::span<const BlockQ8K* const> rows) {
  if (rows.size() > 4) fail("interleave_x4: ", rows.size(), " rows given, at most 4 fit one q8_Kx4 block");
  BlockQ8Kx4 out;
  std::memset(&out, 0, sizeof out);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const int t = int(r);
    out.d[t] = rows[r]->d;
    for (int e = 0; e < kQK; ++e) out.qs[x4_index(t, e)] = rows[r]->qs[e];
    for (int g = 0; g < kQK / 16; ++g) out.bsums[x4_bsum_index(t, g)] = rows[r]->bsums[g];
  }
  return out;
}

BlockQ8K deinterleave_x4(const BlockQ8Kx4& b, int token) {
  BlockQ8K out;
  out.d = b.d[token];
  for (int e = 0; e < kQK; ++e) out.qs[e] = b.qs[x4_index(token, e)];
  for (int g = 0; g < kQK / 16; ++g) {
    int s = 0;
    for (int i = 0; i < 16; ++i) s += out.qs[16 * g + i];
    out.bsums[g] = std::int16_t(s);
  }
  return out;
}

Q8KBatch batch_from_rows(std::vector<BlockQ8K> rows, std::int64_t tokens, std::int64_t cols) {
  Q8KBatch b;
  b.tokens = tokens;
  b.cols = cols;
  if (cols <= 0 || cols % 128 != 0) fail("activations: inner size ", cols, " is not a positive multiple of 128");
  if (rows.size() != std::size_t(tokens * b.blocks()))
    fail("activations: ", rows.size(), " q8_K blocks given for ", tokens, " tokens x ", b.blocks(), " blocks");
  b.rows.assign(rows.begin(), rows.end());
  b.tiles.resize(std::size_t(b.tiles_count() * b.blocks()));
  for (std::int64_t t = 0; t < b.tiles_count(); ++t)
    for (std::int64_t i = 0; i < b.blocks(); ++i) {
      std::vector<const BlockQ8K*> group;
      for (std::int64_t r = 4 * t; r < std::min(tokens, 4 * t + 4); ++r) group.push_back(&b.rows[std::size_t(r * b.blocks() + i)]);
      b.tiles[std::size_t(t * b.blocks() + i)] = interleave_x4(group);
    }
  return b;
}

namespace {
// Blocks [u0, u1) of the tokens x blocks grid; a last block past `cols` (cols % 256 == 128) is
// quantised from a zero-padded copy.
void quantize_blocks(const float* x, std::int64_t cols, std::int64_t nb, std::int64_t u0, std::int64_t u1,
                     BlockQ8K* rows) {
  for (std::int64_t u = u0; u < u1; ++u) {
    const std::int64_t t = u / nb, b = u % nb;
    const float* src = x + t * cols + b * kQK;
    if ((b + 1) * kQK <= cols) {
      quantize_row_q8k(src, rows + u, kQK);
    } else {
      float padded[kQK] = {};
      std::copy(src, x + (t + 1) * cols, padded);
      quantize_row_q8k(padded, rows + u, kQK);
    }
  }
}

std::int64_t checked_blocks(std::int64_t tokens, std::int64_t cols) {
  if (tokens <= 0) fail("activations: ", tokens, " tokens");
  if (cols <= 0 || cols % 128 != 0) fail("activations: inner size ", cols, " is not a positive multiple of 128");
  return (cols + kQK - 1) / kQK;
}
}  // namespace

Q8KBatch quantize_batch(const float* x, std::int64_t tokens, std::int64_t cols) {
  const std::int64_t nb = checked_blocks(tokens, cols);
  std::vector<BlockQ8K> rows(std::size_t(tokens * nb));
  quantize_blocks(x, cols, nb, 0, tokens * nb, rows.data());
  return batch_from_rows(std::move(rows), tokens, cols);
}

Q8KBatch quantize_batch(const float* x, std::int64_t tokens, std::int64_t cols, ThreadPool& pool) {
  const std::int64_t nb = checked_blocks(tokens, cols);
  std::vector<BlockQ8K> rows(std::size_t(tokens * nb));
  pool.run([&](int th) {
    const auto [u0, u1] = ThreadPool::split(tokens * nb, th, pool.size());
    quantize_blocks(x, cols, nb, u0, u1, rows.data());
  });
  return batch_from_rows(std::move(rows), tokens, cols);
}

}  // namespace ternlab
