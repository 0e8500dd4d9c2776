// The float work of the forward pass around the ternary matmuls: q8_K quantisation of the
// activations, the Hadamard transform, the Gated DeltaNet head update and the per-head dense dots.
// One source (vector_ops_impl.hpp), compiled once for the build's baseline and once per x86 ISA
// (the compiler vectorises its loops for each target). Every loop does the same float operations
// per element in the same order as the scalar reference, and no loop reassociates a sum, so every
// variant returns the same bits: tests/test_vector_ops.cpp checks each one against the baseline.
// The chunked Gated DeltaNet (gdn_chunk) and the dense dots (tiles_dot*, weighted_sums) fuse their
// multiply-adds (one rounding each, in every build: the baseline a lane at a time).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "kernels/q8k.hpp"

namespace ternlab {

// One Gated DeltaNet value head's operands (VectorOps::gdn_heads).
struct GdnHead {
  float* S;
  const float *q, *k, *v;
  float decay, beta;
  float *mem, *o;
};

// The key head of a chunk of tokens in the chunked Gated DeltaNet (VectorOps::gdn_chunk), shared
// by the value heads that read it: token t's query and key (normalised, the query scaled) at
// q + t * stride and k + t * stride.
struct GdnChunkKeys {
  const float *q, *k;
  std::int64_t stride;
  int tokens;
};
// One value head over the same chunk: its state S (Dk x Dv, key-major) is read, and left as the
// state after the chunk; token t's value at v + t * stride, its log decay g[t] (<= 0) and rate
// beta[t]; its read-out is written to o + t * o_stride.
struct GdnChunkHead {
  float* S;
  const float* v;
  std::int64_t stride;
  const float *g, *beta;
  float* o;
  std::int64_t o_stride;
};

struct VectorOps {
  const char* name;  // "baseline", "avx2", "avx512"
  // quantize_row_q8k over `blocks` 256-blocks.
  void (*quantize_q8k)(const float* x, BlockQ8K* y, std::int64_t blocks);
  // In place: the unnormalised fast Walsh-Hadamard transform (butterflies h = 1, 2, 4, ...), then
  // x * 1/sqrt(n). n a power of two.
  void (*fwht)(float* x, int n);
  // x[i] *= s[i].
  void (*multiply)(float* x, const float* s, std::int64_t n);
  // Gated DeltaNet value heads, each a state S (Dk x Dv, key-major) that decays, takes the
  // delta-rule update with key k, value v and rate beta, and is read out with query q into o (Dv);
  // mem is Dv floats of scratch a head. The steps and their order are those of
  // model/gated_deltanet.cpp, per head; heads may not share S, mem or o.
  void (*gdn_heads)(const GdnHead* heads, int n, int Dk, int Dv);
  // The same recurrence over a chunk of tokens at once, in its chunked form (spec §7.4.7): each
  // head's state is read and written once a chunk, and the work is products of small matrices
  // (the chunk's keys, queries, values and deltas against the state), not two passes over the
  // state a token. Mathematically the token-by-token result; the sums run in another order, so the
  // floats differ by rounding (tests/test_vector_ops.cpp bounds by how much). Every term is a fused
  // multiply-add, in every variant, so every variant returns the same bits. `scratch` holds
  // gdn_chunk_scratch(tokens, Dk, Dv) floats.
  void (*gdn_chunk)(const GdnChunkKeys& keys, const GdnChunkHead* heads, int n, int Dk, int Dv, float* scratch);
  // Dense dot products kLaneTile at a time, the weights transposed in tiles so that the products
  // sharing an x[i] are adjacent: out[j * kLaneTile + l] = the in-order sum over i < n of
  // w[(j * n + i) * kLaneTile + l] * x[i], each term fused into it, for tiles j < tiles. Each lane is its own sequential
  // sum; the tiles run side by side so their sums are independent chains, not one chain a tile.
  // The BF16 form widens each weight exactly (its bits are the float's top half).
  static constexpr int kLaneTile = 16;
  void (*tiles_dot_f32)(const float* w, int tiles, std::int64_t n, const float* x, float* out);
  void (*tiles_dot_bf16)(const std::uint16_t* w, int tiles, std::int64_t n, const float* x, float* out);
  // tiles_dot_f32 and tiles_dot_bf16 for `queries` vectors at once: query r's x at x + r * n, its
  // dots at out + r * out_stride, the same bits as one call each; each tile row loaded serves them
  // all (attention's query heads that share a KV head, a prompt's tokens against the Gated
  // DeltaNet's beta and alpha weights).
  void (*tiles_dot_queries_f32)(const float* w, int tiles, std::int64_t n, const float* x, int queries, float* out,
                                std::int64_t out_stride);
  void (*tiles_dot_queries_bf16)(const std::uint16_t* w, int tiles, std::int64_t n, const float* x, int queries,
                                 float* out, std::int64_t out_stride);
  // For each query r < queries: out[r * n + i] = the in-order sum over rows k of w[r * w_stride + k]
  // * x[k * stride + i], each term fused into it, from zero, for i < n (attention's probability-weighted sums of cached
  // values, one a query head): each element its own sequential sum; each row's run of elements
  // loaded once for every query while their sums stay in registers.
  void (*weighted_sums)(const float* x, std::int64_t stride, int rows, const float* w, std::int64_t w_stride,
                        int queries, float* out, std::int64_t n);
  // The depthwise convolution's taps: y[j] = the in-order sum over taps t < taps of x[t][j] * w[t *
  // w_stride + j], from zero, for j < n (the Gated DeltaNet's causal conv, x[t] the t-th oldest
  // input of the window).
  void (*conv_taps)(const float* const* x, const float* w, std::int64_t w_stride, int taps, float* y, std::int64_t n);
  // y[i] = SiLU(x[i]) = x / (1 + e^-x), and y[i] = SiLU(a[i]) * b[i] (y may be x or a). e^-x is
  // the project's own single-precision exponential (exp_f32 in vector_ops_impl.hpp: a range
  // reduction and a polynomial, no library call), so that every build vectorises it and returns
  // the same bits; it is within 2.5 ulp of the true SiLU, as x / (1 + expf(-x)) with the C
  // library's expf is (suite vector-ops).
  void (*silu)(const float* x, float* y, std::int64_t n);
  void (*silu_mul)(const float* a, const float* b, float* y, std::int64_t n);
  // y[i] *= 1 / (1 + e^-g[i]) (attention's output gate), with the same exponential.
  void (*sigmoid_mul)(const float* g, float* y, std::int64_t n);
  // Attention's softmax of one row of n scores in place: x[s] = e^(x[s] * scale - m) / sum, m the
  // largest scaled score and e^ the exponential above (terms under e^-87.3 are 0). The sum runs as
  // 16 interleaved in-order sums (term s in sum s mod 16), then those 16 in one fixed tree (sum l
  // gains sum l + h for h = 8, 4, 2, 1), so every build returns the same bits.
  void (*softmax)(float* x, std::int64_t n, float scale);
  // The norms' sums of squares: sums[r] = the in-order double sum over i < n of x[r * stride + i]^2,
  // for rows r < rows (ggml's order: RMSNorm and the L2 norm), each the bits of that row alone.
  void (*squares_sums)(const float* x, std::int64_t stride, int rows, std::int64_t n, double* sums);
};

// Columns of gdn_chunk's token x token tables: the tokens rounded up to a whole 16-float register.
constexpr std::int64_t gdn_chunk_columns(int tokens) { return (std::int64_t(tokens) + 15) / 16 * 16; }
// The row stride of gdn_chunk's packed copies of the chunk's queries and keys: Dk and one cache
// line more, so that no two rows sit a multiple of 4 KiB apart.
constexpr std::int64_t gdn_chunk_key_stride(int Dk) { return (std::int64_t(Dk) + 15) / 16 * 16 + 16; }
// Floats of scratch VectorOps::gdn_chunk needs for a chunk of `tokens`.
constexpr std::size_t gdn_chunk_scratch(int tokens, int Dk, int Dv) {
  const std::int64_t c = gdn_chunk_columns(tokens);
  return std::size_t(2 * Dk * c + 4 * c * c + 2 * c + 2 * c * Dv + 2 * c * gdn_chunk_key_stride(Dk));
}

// The variants this build has and this CPU runs, baseline first.
std::span<const VectorOps* const> vector_ops_variants();
// The richest of them within the ISA ceiling (kernels/cpu.hpp).
const VectorOps& vector_ops();

namespace detail {
const VectorOps* vector_ops_avx2();    // nullptr where not built
const VectorOps* vector_ops_avx512();  // nullptr where not built
}  // namespace detail

}  // namespace ternlab
