// ggml's TQ1_0, as a peer arm (how it stands to ggml's own builds: docs/kernels.md, "Peer ports and
// their originals"): its base-3 byte layout, its q8_K activations and its AVX2
// dot product, driven as ggml's mul_mat drives it (../shared/docs/peer-formats-spec.md section 3):
//
//   layout      per row K/256 blocks of 54 bytes: 48 qs bytes of five trits, 4 qh bytes of four,
//               then the block's fp16 scale d. Trit t = w + 1, digit 0 the most significant, byte
//               = ceil(256 q / 243). Digit n of qs[m] is weight 32 n + m (m < 32), of qs[32 + m]
//               weight 160 + 16 n + m (m < 16), of qh[j] weight 240 + 4 n + j
//   dot         per block: the byte multiples b, 3b, 9b, 27b, 81b (mod 256, built from adds and
//               masked 16-bit shifts), each one's top digit (3u >> 8) read with a saturating
//               subtract and two vpavgb, then vpmaddubsw against the matching 32-value activation
//               run, added in int16: five runs from qs[0..31], three more that pair the 16 bytes
//               qs[32..47]'s digits and qh's (spread by a 16-bit multiply and a pack); the q8_K
//               partial sums removed (the +1 offset), widened to 8 int32 lanes, converted, and
//               one fma per block with q8.d * d; the 8 lanes summed at the end in ggml's order
//   driver      ggml's mul_mat, as for TQ2_0 (kernels/peers/ggml_mul_mat.hpp)
//
// Without AVX2 (the aarch64 build) ggml's generic path runs instead: digits by an 8-bit multiply,
// one int32 sum per block and a sequential float sum, which rounds differently; check_tq1 models
// whichever path ran.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "common/aligned.hpp"
#include "kernels/q8k.hpp"
#include "kernels/thread_pool.hpp"
#include "layouts/matrix.hpp"

namespace ternlab::peers {

inline constexpr int kTq1Block = 256;       // weights per block
inline constexpr int kTq1BlockBytes = 54;   // 48 qs bytes, 4 qh bytes, then the fp16 scale
inline constexpr int kTq1ScaleOffset = 52;

struct Tq1Matrix {
  std::string name;  // the tensor's name, for errors
  std::int64_t rows = 0, cols = 0;
  AlignedBytes bytes;  // rows * cols / 256 blocks
  std::int64_t blocks_per_row() const { return cols / kTq1Block; }
  const std::uint8_t* row(std::int64_t r) const { return bytes.data() + r * blocks_per_row() * kTq1BlockBytes; }
  float block_scale(std::int64_t r, std::int64_t b) const;
};

// The TQ1_0 bytes of a ternary matrix. TQ1_0 holds one scale per 256 weights, so the two 128-weight
// scales of every block must be equal (the transcoder is exact: it refuses to lose a scale), no
// weight may be +2, and the column count must be a whole number of 256-weight blocks.
Tq1Matrix pack_tq1(const TernaryMatrix& m, std::string name);
// Reads a tensor stored in TQ1_0: checks its size against rows x cols and every block's scale.
Tq1Matrix tq1_from_bytes(std::string name, std::int64_t rows, std::int64_t cols, std::span<const std::uint8_t> bytes);

// Digit n (0 = most significant) of a TQ1_0 byte, as ggml's generic path reads it:
// u = (b * 3^n) mod 256, then (3u) >> 8.
int tq1_digit(std::uint8_t byte, int n);
// The top digit (3u) >> 8 of u as the AVX2 path reads it, without an 8-bit multiply: a = u -sat 1,
// then avg(a, avg(a, 0)) >> 6 (vpavgb rounds up).
int tq1_top_digit_avx2(std::uint8_t u);

// One row against one token's q8_K blocks, in the arithmetic of the path this CPU runs.
float tq1_dot(const std::uint8_t* w, const BlockQ8K* y, std::int64_t blocks);
// The AVX2 path's arithmetic, lane by lane in scalar code (spec 3.5: its digits, 8 int32 lanes per
// block, one fused multiply-add per lane and block, ggml's final horizontal sum).
float tq1_dot_avx2_model(const std::uint8_t* w, const BlockQ8K* y, std::int64_t blocks);
// The generic path (no AVX2): an int32 sum per block, sumf += float(sum) * d.
float tq1_dot_generic(const std::uint8_t* w, const BlockQ8K* y, std::int64_t blocks);

// y[t * ldy + row] for every token of x (gemv when x has one token), on the pool's threads.
void run_tq1_mul_mat(ThreadPool& pool, const Tq1Matrix& w, const Q8KBatch& x, float* y, std::int64_t ldy);

// Throws naming the tensor, row and token where an output differs in any bit from the model of
// the path that ran (checked on the first and last 8 rows of every token).
void check_tq1(const Tq1Matrix& w, const Q8KBatch& x, std::span<const float> y, std::int64_t ldy);

namespace detail {
float tq1_dot_avx2(const std::uint8_t* w, const BlockQ8K* y, std::int64_t blocks);  // kernels/targets/avx2/peer_tq1.cpp
}  // namespace detail

}  // namespace ternlab::peers
