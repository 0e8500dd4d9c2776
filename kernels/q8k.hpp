// q8_K activations, bit-compatible with ggml: 256 int8 per block, a float scale, and 16 int16 sums
// of 16 values each (kernels use them to remove the weights' +1 code offset). q8_Kx4 interleaves
// four activation rows (tokens) in 8-byte chunks for 4-column matrix kernels.
#pragma once

#include <bit>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "common/aligned.hpp"

namespace ternlab {

class ThreadPool;

inline constexpr int kQK = 256;

struct BlockQ8K {
  float d;
  std::int8_t qs[kQK];
  std::int16_t bsums[kQK / 16];
};
static_assert(sizeof(BlockQ8K) == 292);

struct BlockQ8Kx4 {
  float d[4];
  std::int8_t qs[4 * kQK];       // qs[32 c + 8 r + j] = token r, element 8 c + j
  std::int16_t bsums[4 * kQK / 16];  // bsums[16 (g / 4) + 4 r + g % 4] = sum of token r's group g
};
static_assert(sizeof(BlockQ8Kx4) == 1168);

// ggml's nearest_int: round half to even through the 1.5 * 2^23 trick. Inline, so the vector
// builds of the quantiser (kernels/vector/) run this same step in their loops.
inline int nearest_int(float f) {
  const float v = f + 12582912.0f;
  return (std::bit_cast<std::int32_t>(v) & 0x007fffff) - 0x00400000;
}

// quantize_row_q8_K_ref. k must be a multiple of 256. Zero blocks get d = 0, qs = 0 and (unlike
// ggml, which leaves them unwritten) zero bsums.
void quantize_row_q8k(const float* x, BlockQ8K* y, std::int64_t k);

// Element index within a q8_Kx4 block.
constexpr int x4_index(int token, int element) { return 32 * (element / 8) + 8 * token + element % 8; }
constexpr int x4_bsum_index(int token, int group) { return 16 * (group / 4) + 4 * token + group % 4; }

// Interleaves up to four q8_K rows into one q8_Kx4 block; missing tokens are zero (d = 0).
BlockQ8Kx4 interleave_x4(std::span<const BlockQ8K* const> rows);
// The inverse, for one token: its q8_K row with bsums recomputed.
BlockQ8K deinterleave_x4(const BlockQ8Kx4& b, int token);

// Sum of the 128 activations of half `h` (0 or 1) of a block, from the partial sums.
inline int half_sum(const BlockQ8K& b, int h) {
  int s = 0;
  for (int g = 8 * h; g < 8 * h + 8; ++g) s += b.bsums[g];
  return s;
}
inline int half_sum_x4(const BlockQ8Kx4& b, int token, int h) {
  int s = 0;
  for (int g = 8 * h; g < 8 * h + 8; ++g) s += b.bsums[x4_bsum_index(token, g)];
  return s;
}

// A batch of activation rows (tokens) of inner size `cols`, quantised once, in both forms kernels
// read: plain rows (gemv, leftover columns) and zero-padded x4 tiles (gemm). A batch made with
// Q8KTiles::skip has rows only: it feeds gemv, and gemm refuses it.
// cols must be a multiple of 128; a trailing half block is zero-padded to 256.
enum class Q8KTiles { build, skip };
struct Q8KBatch {
  std::int64_t tokens = 0, cols = 0;
  // Written whole by whoever builds the batch, so not zeroed first.
  UninitialisedVector<BlockQ8K> rows;     // tokens * blocks()
  UninitialisedVector<BlockQ8Kx4> tiles;  // tiles() * blocks()
  std::int64_t blocks() const { return (cols + kQK - 1) / kQK; }
  std::int64_t tiles_count() const { return (tokens + 3) / 4; }
  const BlockQ8K* row(std::int64_t t) const { return rows.data() + t * blocks(); }
  const BlockQ8Kx4* tile(std::int64_t t) const { return tiles.data() + t * blocks(); }
  bool has_tiles() const { return std::int64_t(tiles.size()) == tiles_count() * blocks(); }
};

// x is tokens x cols, row-major.
Q8KBatch quantize_batch(const float* x, std::int64_t tokens, std::int64_t cols);
// The same, its 256-blocks split over the pool's threads (every block is independent: same bytes).
// A one-token batch that only feeds gemv skips the tiles: building them costs the model's decode
// twice the quantisation itself (a 1168-byte tile a block, zeroed and filled).
Q8KBatch quantize_batch(const float* x, std::int64_t tokens, std::int64_t cols, ThreadPool& pool,
                        Q8KTiles tiles = Q8KTiles::build);
// The same bytes, with each unit of the batch prepared in place just before it is quantised, on
// the thread that quantises it, while its floats are in that core's cache: a unit is one q8_Kx4
// tile's tokens [t0, t1) x `unit_cols` columns [c0, c1) (unit_cols a multiple of 256 that divides
// cols), and prepare(t0, t1, c0, c1) must make their final floats from nothing outside them (a
// rotation block, an elementwise product). One pass over the floats where preparing them first
// took a pass of its own.
// One token's units are shared among the pool's threads from this width up; below it they stay on
// the calling thread, where the handoff and the other core's pulls would cost about what they
// save. From here (an FFN's intermediate width, a 27B-shape DeltaNet's output) the calling thread
// alone takes several handoffs' time, and each thread's units read mostly the rows its own gemv
// share wrote (measured: docs/model.md, "Where a token's time goes").
inline constexpr std::int64_t kOneTokenSplitCols = 6144;
using UnitStep = std::function<void(std::int64_t t0, std::int64_t t1, std::int64_t c0, std::int64_t c1)>;
Q8KBatch quantize_batch(float* x, std::int64_t tokens, std::int64_t cols, ThreadPool& pool, Q8KTiles tiles,
                        std::int64_t unit_cols, const UnitStep& prepare);
// From already quantised rows (tests build exact integer activations this way).
Q8KBatch batch_from_rows(std::vector<BlockQ8K> rows, std::int64_t tokens, std::int64_t cols);

}  // namespace ternlab
