// BitNet's I2_S, as a peer arm (how it stands to BitNet's own builds: docs/kernels.md, "Peer ports
// and their originals"): its x86 byte layout (ACT_PARALLEL), its int8 activations
// (I8_S: one absmax scale per token, the token's sum kept to remove the +1 code offset at the end)
// and its AVX2 dot products, 1x1 for one token and Nx1 for four, driven as BitNet drives them
// (../shared/docs/peer-formats-spec.md section 4):
//
//   layout      per row K/4 bytes in 128-weight groups of 32 bytes; byte m of a group holds the
//               group's weights m (bits 7:6), m + 32 (5:4), m + 64 (3:2), m + 96 (1:0); code
//               u = w + 1; one fp32 scale for the whole tensor after the codes (32-byte tail)
//   dot         per group: the 32 bytes shifted by 6, 4, 2, 0 and masked to codes, four
//               vpmaddubsw against the group's four 32-value activation runs, added in int16;
//               the int16 lanes widen (vpmaddwd) once per span of 32 groups (4096 weights)
//   output      y = ((dot - act_sum) / act_scale) * w_scale, in fp32, in that order
//
// The int16 span can wrap modulo 2^16 where BitNet's does (all +1 weights against 127s over 4096
// weights); the port keeps that behaviour rather than differ from the original.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/aligned.hpp"
#include "kernels/thread_pool.hpp"
#include "layouts/matrix.hpp"

namespace ternlab::peers {

inline constexpr int kI2sGroup = 128;  // weights per 32-byte group
inline constexpr int kI2sSpan = 32;    // groups per int16 span
inline constexpr int kI2sTail = 32;    // bytes after the codes: fp32 scale + 28 unused
inline constexpr int kI2sRowBlock = 128;  // COL_BLOCK_SIZE: weight rows a gemm block streams once per 4 tokens

struct I2sMatrix {
  std::string name;  // the tensor's name, for errors
  std::int64_t rows = 0, cols = 0;
  AlignedBytes bytes;  // rows * cols / 4 codes, then the tail
  float scale() const;
  const std::uint8_t* row(std::int64_t r) const { return bytes.data() + r * (cols / 4); }
};

// The I2_S bytes of a ternary matrix: its codes, and as the one per-tensor scale the largest of
// its block scales (I2_S keeps no per-block scale; the kernels' speed does not depend on it).
// Refuses code 3 (+2) and a column count that is not a whole number of 128-weight groups.
I2sMatrix pack_i2s(const TernaryMatrix& m, std::string name);
// Reads a tensor stored in I2_S: checks its size against rows x cols and its scale.
I2sMatrix i2s_from_bytes(std::string name, std::int64_t rows, std::int64_t cols, std::span<const std::uint8_t> bytes);

struct I8sActs {
  std::int64_t tokens = 0, cols = 0;
  AlignedVector<std::int8_t> q;  // tokens * cols
  std::vector<float> scale;      // per token: 127 / absmax
  std::vector<std::int32_t> sum; // per token: sum of q
  const std::int8_t* token(std::int64_t t) const { return q.data() + t * cols; }
};
// quantize_row_i8s: amax = max(1e-5, max|x|) in double, s = float(127 / amax),
// q = clamp(nearest_int(x * s), -128, 127).
I8sActs quantize_i8s(const float* x, std::int64_t tokens, std::int64_t cols);

// The exact integer sum of u * q of one row and one token (what both kernels return where the
// int16 span does not wrap).
std::int64_t i2s_dot_exact(const I2sMatrix& w, std::int64_t row, const I8sActs& x, std::int64_t token);

// gemv: token 0 of x, one 1x1 dot per row, rows split over the pool's threads in multiples of
// 128. gemm: every token, BitNet's batched gemm (ggml_gemm_i2_i8_s with ACT_PARALLEL: per 128-row
// block, per 4 tokens, one Nx1 dot per row over the 4 tokens at their stride; a last group of 1-3
// tokens runs 1x1 per token). Each thread runs its rows' loop whole, then turns its raw sums
// into outputs. y[t * ldy + row].
void run_i2s_gemv(ThreadPool& pool, const I2sMatrix& w, const I8sActs& x, float* y);
void run_i2s_gemm(ThreadPool& pool, const I2sMatrix& w, const I8sActs& x, float* y, std::int64_t ldy);

// Throws naming the tensor, row and token where an output differs from the exact sum (checked
// on the first and last 8 rows, the spec's output formula in fp32).
void check_i2s(const I2sMatrix& w, const I8sActs& x, std::span<const float> y, std::int64_t ldy);

namespace detail {
// The AVX2 loops (kernels/targets/avx2/peer_i2s.cpp) over rows [r0, r1) of the codes w (k / 4
// bytes a row) against the activations y (k bytes a token): raw sums of u * q as floats, as
// BitNet returns them. gemv: token 0, s[r]; gemm: every token, s[t * lds + r].
void i2s_gemv_rows_avx2(const std::uint8_t* w, std::int64_t k, const std::int8_t* y, std::int64_t r0, std::int64_t r1, float* s);
void i2s_gemm_rows_avx2(const std::uint8_t* w, std::int64_t k, const std::int8_t* y, std::int64_t tokens, std::int64_t r0, std::int64_t r1,
                        float* s, std::int64_t lds);
}  // namespace detail

}  // namespace ternlab::peers
