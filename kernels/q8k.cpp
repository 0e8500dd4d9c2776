#include "kernels/q8k.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include "common/error.hpp"
#include "kernels/thread_pool.hpp"
#include "kernels/vector/vector_ops.hpp"

namespace ternlab {

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

namespace {
// Tile i of batch b from its (up to four) rows: 8-byte chunks of qs, 4-group runs of bsums.
void fill_tile(const BlockQ8K* const* rows, int n, BlockQ8Kx4& out) {
  std::memset(&out, 0, sizeof out);
  for (int t = 0; t < n; ++t) {
    out.d[t] = rows[t]->d;
    for (int c = 0; c < kQK / 8; ++c) std::memcpy(out.qs + x4_index(t, 8 * c), rows[t]->qs + 8 * c, 8);
    for (int g = 0; g < kQK / 16; g += 4) std::memcpy(out.bsums + x4_bsum_index(t, g), rows[t]->bsums + g, 8);
  }
}
}  // namespace

BlockQ8Kx4 interleave_x4(std::span<const BlockQ8K* const> rows) {
  if (rows.size() > 4) fail("interleave_x4: ", rows.size(), " rows given, at most 4 fit one q8_Kx4 block");
  BlockQ8Kx4 out;
  fill_tile(rows.data(), int(rows.size()), out);
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

namespace {
Q8KBatch empty_batch(std::int64_t tokens, std::int64_t cols, Q8KTiles tiles = Q8KTiles::build) {
  Q8KBatch b;
  b.tokens = tokens;
  b.cols = cols;
  if (cols <= 0 || cols % 128 != 0) fail("activations: inner size ", cols, " is not a positive multiple of 128");
  b.rows.resize(std::size_t(tokens * b.blocks()));
  if (tiles == Q8KTiles::build) b.tiles.resize(std::size_t(b.tiles_count() * b.blocks()));
  return b;
}
// Tiles [u0, u1) of the tiles x blocks grid, from the batch's rows.
void fill_tiles(Q8KBatch& b, std::int64_t u0, std::int64_t u1) {
  const std::int64_t nb = b.blocks();
  for (std::int64_t u = u0; u < u1; ++u) {
    const std::int64_t t = u / nb, i = u % nb;
    const BlockQ8K* group[4];
    int n = 0;
    for (std::int64_t r = 4 * t; r < std::min(b.tokens, 4 * t + 4); ++r) group[n++] = &b.rows[std::size_t(r * nb + i)];
    fill_tile(group, n, b.tiles[std::size_t(u)]);
  }
}
}  // namespace

Q8KBatch batch_from_rows(std::vector<BlockQ8K> rows, std::int64_t tokens, std::int64_t cols) {
  Q8KBatch b = empty_batch(tokens, cols);
  if (rows.size() != b.rows.size())
    fail("activations: ", rows.size(), " q8_K blocks given for ", tokens, " tokens x ", b.blocks(), " blocks");
  std::copy(rows.begin(), rows.end(), b.rows.begin());
  fill_tiles(b, 0, std::int64_t(b.tiles.size()));
  return b;
}

namespace {
// Blocks [u0, u1) of the tokens x blocks grid; a last block past `cols` (cols % 256 == 128) is
// quantised from a zero-padded copy.
void quantize_blocks(const float* x, std::int64_t cols, std::int64_t nb, std::int64_t u0, std::int64_t u1,
                     BlockQ8K* rows) {
  const VectorOps& ops = vector_ops();  // quantize_row_q8k's bits, vectorised
  for (std::int64_t u = u0; u < u1;) {
    const std::int64_t t = u / nb, b = u % nb;
    const float* src = x + t * cols + b * kQK;
    // The whole blocks of this token in [u, u1) in one call.
    const std::int64_t whole = std::min(u1 - u, std::min(nb, cols / kQK) - b);
    if (whole > 0) {
      ops.quantize_q8k(src, rows + u, whole);
      u += whole;
    } else {
      float padded[kQK] = {};
      std::copy(src, x + (t + 1) * cols, padded);
      ops.quantize_q8k(padded, rows + u, 1);
      ++u;
    }
  }
}
}  // namespace

Q8KBatch quantize_batch(const float* x, std::int64_t tokens, std::int64_t cols) {
  if (tokens <= 0) fail("activations: ", tokens, " tokens");
  Q8KBatch b = empty_batch(tokens, cols);
  quantize_blocks(x, cols, b.blocks(), 0, std::int64_t(b.rows.size()), b.rows.data());
  fill_tiles(b, 0, std::int64_t(b.tiles.size()));
  return b;
}

// Split by block column: each thread quantises its columns of every token, then builds the tiles
// of the same columns, which read only those rows, so one pass over the pool does both.
Q8KBatch quantize_batch(const float* x, std::int64_t tokens, std::int64_t cols, ThreadPool& pool, Q8KTiles tiles) {
  if (tokens <= 0) fail("activations: ", tokens, " tokens");
  Q8KBatch b = empty_batch(tokens, cols, tiles);
  const std::int64_t nb = b.blocks();
  // One token stays on the calling thread: a few microseconds of work, which a second core would
  // first have to pull the floats for and then hand the blocks back (measured slower).
  pool.run_split(nb, tokens == 1, [&](std::int64_t i0, std::int64_t i1) {
    for (std::int64_t t = 0; t < tokens; ++t) quantize_blocks(x, cols, nb, t * nb + i0, t * nb + i1, b.rows.data());
    if (!b.tiles.empty())
      for (std::int64_t t = 0; t < b.tiles_count(); ++t) fill_tiles(b, t * nb + i0, t * nb + i1);
  });
  return b;
}

Q8KBatch quantize_batch(float* x, std::int64_t tokens, std::int64_t cols, ThreadPool& pool, Q8KTiles tiles,
                        std::int64_t unit_cols, const UnitStep& prepare) {
  if (tokens <= 0) fail("activations: ", tokens, " tokens");
  if (unit_cols <= 0 || unit_cols % kQK != 0 || cols % unit_cols != 0)
    fail("activations: units of ", unit_cols, " columns are not whole 256-blocks that divide the inner size ", cols);
  Q8KBatch b = empty_batch(tokens, cols, tiles);
  const std::int64_t nb = b.blocks(), groups = cols / unit_cols, per = unit_cols / kQK;
  // One token stays on the calling thread, as above, unless it is wide (kOneTokenSplitCols).
  pool.run_split(b.tiles_count() * groups, tokens == 1 && cols < kOneTokenSplitCols, [&](std::int64_t u0, std::int64_t u1) {
    for (std::int64_t u = u0; u < u1; ++u) {
      const std::int64_t t = u / groups, i0 = (u % groups) * per, r1 = std::min(tokens, 4 * t + 4);
      prepare(4 * t, r1, i0 * kQK, (i0 + per) * kQK);
      for (std::int64_t r = 4 * t; r < r1; ++r) quantize_blocks(x, cols, nb, r * nb + i0, r * nb + i0 + per, b.rows.data());
      if (!b.tiles.empty()) fill_tiles(b, t * nb + i0, t * nb + i0 + per);
    }
  });
  return b;
}

}  // namespace ternlab
