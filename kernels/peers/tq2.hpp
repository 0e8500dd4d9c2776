// ggml's TQ2_0, as a peer arm (how it stands to ggml's own builds: docs/kernels.md, "Peer ports and
// their originals"): its byte layout, its q8_K activations and its AVX2 dot
// product, driven as ggml's mul_mat drives it (../shared/docs/peer-formats-spec.md section 2):
//
//   layout      per row K/256 blocks of 66 bytes: 64 code bytes, then the block's fp16 scale d.
//               Byte 32h + m (h = 0, 1) holds weights 128h + m, +32, +64, +96 in bit pairs 1:0,
//               3:2, 5:4, 7:6; code u = w + 1
//   dot         per block and half: the 32 bytes shifted by 0, 2, 4, 6 and masked to codes, four
//               vpmaddubsw against the half's four 32-value activation runs, added in int16; the
//               q8_K partial sums removed (the +1 offset), widened to 8 int32 lanes, converted,
//               and one fma per block with q8.d * d; the 8 lanes summed at the end in ggml's order
//   driver      every output one independent dot over K; the rows x tokens plane cut into chunks
//               taken from an atomic counter and walked in 16 x 16 tiles (weights re-read per token)
//
// Without AVX2 (the aarch64 build) ggml's generic path runs instead: one int32 sum per block and a
// sequential float sum, which rounds differently; check_tq2 models whichever path ran.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "common/aligned.hpp"
#include "kernels/q8k.hpp"
#include "kernels/thread_pool.hpp"
#include "layouts/matrix.hpp"

namespace ternlab::peers {

inline constexpr int kTq2Block = 256;       // weights per block
inline constexpr int kTq2BlockBytes = 66;   // 64 code bytes, then the fp16 scale
inline constexpr int kTq2ScaleOffset = 64;

struct Tq2Matrix {
  std::string name;  // the tensor's name, for errors
  std::int64_t rows = 0, cols = 0;
  AlignedBytes bytes;  // rows * cols / 256 blocks
  std::int64_t blocks_per_row() const { return cols / kTq2Block; }
  const std::uint8_t* row(std::int64_t r) const { return bytes.data() + r * blocks_per_row() * kTq2BlockBytes; }
  float block_scale(std::int64_t r, std::int64_t b) const;
};

// The TQ2_0 bytes of a ternary matrix. TQ2_0 holds one scale per 256 weights, so the two 128-weight
// scales of every block must be equal (the transcoder is exact: it refuses to lose a scale), and
// the column count must be a whole number of 256-weight blocks.
Tq2Matrix pack_tq2(const TernaryMatrix& m, std::string name);
// Reads a tensor stored in TQ2_0: checks its size against rows x cols and every block's scale.
Tq2Matrix tq2_from_bytes(std::string name, std::int64_t rows, std::int64_t cols, std::span<const std::uint8_t> bytes);

// One row against one token's q8_K blocks, in the arithmetic of the path this CPU runs.
float tq2_dot(const std::uint8_t* w, const BlockQ8K* y, std::int64_t blocks);
// The AVX2 path's arithmetic, lane by lane in scalar code (spec 2.4: 8 int32 lanes per block,
// one fused multiply-add per lane and block, ggml's final horizontal sum).
float tq2_dot_avx2_model(const std::uint8_t* w, const BlockQ8K* y, std::int64_t blocks);
// The generic path (no AVX2): an int32 sum per block, sumf += float(sum) * d.
float tq2_dot_generic(const std::uint8_t* w, const BlockQ8K* y, std::int64_t blocks);

// y[t * ldy + row] for every token of x (gemv when x has one token), on the pool's threads.
void run_tq2_mul_mat(ThreadPool& pool, const Tq2Matrix& w, const Q8KBatch& x, float* y, std::int64_t ldy);

// Throws naming the tensor, row and token where an output differs in any bit from the model of
// the path that ran (checked on the first and last 8 rows of every token).
void check_tq2(const Tq2Matrix& w, const Q8KBatch& x, std::span<const float> y, std::int64_t ldy);

namespace detail {
float tq2_dot_avx2(const std::uint8_t* w, const BlockQ8K* y, std::int64_t blocks);  // kernels/targets/avx2/peer_tq2.cpp
}  // namespace detail

}  // namespace ternlab::peers
