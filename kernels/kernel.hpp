// The kernel interface every strategy implements, and the argument checks they share.
//   gemv: y[row] = sum_k W[row][k] x[k]           for one q8_K activation row
//   gemm: Y[t * ldy + row] = sum_k W[row][k] X[t][k] for a batch of tokens (x4 tiles)
// Kernels work on a range of row groups [g0, g1) so a thread pool can split rows; the integer dot of
// each 128-weight block is exact (int32), and each block adds fma(S, d_w * d_y, acc) in block order,
// so every correct kernel returns the same float bits.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/q8k.hpp"
#include "layouts/matrix.hpp"

namespace ternlab {

// Software prefetch distance of the gemv weight streams. On Zen 3 the hardware prefetcher alone
// left much of the read ceiling unused, and 1 KiB and 8 KiB ahead were both slower than 2 KiB
// (measured: docs/notebook/2026-11-29-zen3-kernels.md).
inline constexpr int kPrefetchBytes = 2048;
// Prefetches the cache lines of a block kPrefetchBytes ahead of `block`. The first three lines are
// unconditional (a loop over them cost t2p's gemv about 15 instructions in 95 per block).
//
// Both are inlined always: a prefetch has no effect GCC must keep, so once it judged a function of
// nothing but prefetches free of side effects (ipa-pure-const) it deleted the calls: the
// broadcast gemv then ran without any.
template <int Distance = kPrefetchBytes>
[[gnu::always_inline]] inline void prefetch_ahead(const std::uint8_t* block, int block_bytes) {
  const std::uint8_t* p = block + Distance;
  __builtin_prefetch(p);
  __builtin_prefetch(p + 64);
  __builtin_prefetch(p + 128);
  for (int b = 192; b < block_bytes; b += 64) __builtin_prefetch(p + b);
}
// The same for a block whose size is known when compiling: every prefetch unrolled.
template <int Distance, int Bytes>
[[gnu::always_inline]] inline void prefetch_ahead(const std::uint8_t* block) {
#pragma GCC unroll 64
  for (int b = 0; b < Bytes; b += 64) __builtin_prefetch(block + Distance + b);
}

using GemvFn = void (*)(const PackedMatrix& w, const BlockQ8K* x, float* y, std::int64_t g0, std::int64_t g1);
using GemmFn = void (*)(const PackedMatrix& w, const Q8KBatch& x, float* y, std::int64_t ldy, std::int64_t g0,
                        std::int64_t g1);

// A gemv in two phases, for strategies whose activations need preparing (expanded, reordered):
// `prepare` runs once per call, on the calling thread, into a buffer of acts_bytes(); `rows` then
// runs on every thread of the pool over its row groups, reading that buffer. `plan` is the
// strategy's plan for the layout, bound when the kernel is listed, so no thread looks it up per
// call. A GemvFn is the same two phases on one thread's own scratch.
struct GemvPhases {
  const void* plan = nullptr;
  std::size_t (*acts_bytes)(const void* plan, const PackedMatrix& w) = nullptr;
  void (*prepare)(const void* plan, const PackedMatrix& w, const BlockQ8K* x, std::uint8_t* acts) = nullptr;
  void (*rows)(const void* plan, const PackedMatrix& w, const std::uint8_t* acts, float* y, std::int64_t g0,
               std::int64_t g1) = nullptr;
  // The row groups where `rows` over [g0, g1) begins its weight streams (at most kMaxGemvStreams,
  // written to `starts`; returns how many). Unset: one stream, from g0. What prefetch_gemv_start
  // reads, so the first lines of each stream are on their way before the call.
  int (*streams)(const PackedMatrix& w, std::int64_t g0, std::int64_t g1, std::int64_t* starts) = nullptr;
  explicit operator bool() const { return rows != nullptr; }
};
inline constexpr int kMaxGemvStreams = 8;

// What a strategy hands the catalog for one layout.
struct KernelFns {
  GemvFn gemv = nullptr;
  GemmFn gemm = nullptr;
  GemvPhases phases{};
};

// Throw ternlab::Error naming the mismatch (shape, null or misaligned buffer, empty range).
void check_gemv_args(const PackedMatrix& w, const BlockQ8K* x, std::int64_t x_cols, const float* y,
                     std::int64_t y_len);
void check_gemm_args(const PackedMatrix& w, const Q8KBatch& x, const float* y, std::int64_t ldy, std::int64_t y_len);

// Reference kernels: generic over every layout (decode each block through its placement table, then
// a scalar integer dot). The slow, obviously-right baseline the SIMD strategies are checked against.
void gemv_reference(const PackedMatrix& w, const BlockQ8K* x, float* y, std::int64_t g0, std::int64_t g1);
void gemm_reference(const PackedMatrix& w, const Q8KBatch& x, float* y, std::int64_t ldy, std::int64_t g0,
                    std::int64_t g1);

}  // namespace ternlab
