// What ggml's two ternary peer arms, TQ1_0 and TQ2_0, share (../shared/docs/peer-formats-spec.md
// sections 2.4, 2.5 and 3.5): both AVX2 dots compute the same eight int32 lanes per block, differing
// only in how a weight's stored value u = w + 1 is read; both generic dots sum each block in int32;
// and both run under the same mul_mat driver and the same bit-exactness check.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#include "common/fp16.hpp"
#include "kernels/q8k.hpp"
#include "kernels/thread_pool.hpp"

namespace ternlab::peers::ggml {

inline constexpr int kBlock = 256;  // weights per block, in both formats

// Whether this CPU runs ggml's AVX2 path (otherwise its generic path runs).
bool avx2_path();

// hsum_float_8: ((a0 + a4) + (a2 + a6)) + ((a1 + a5) + (a3 + a7)).
inline float hsum8(const float a[8]) { return ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7])); }

// The AVX2 path's arithmetic lane by lane: per block, int32 lane p = sum over j = 0..7, t = 0..3 of
// u(k) * y[k] at k = 32 j + 4 p + t, minus the q8_K partial sums 2p and 2p + 1 (the +1 offset; the
// int16 steps before it cannot wrap); one fused multiply-add per lane and block with q8.d * d; then
// hsum8. `code(block, k)` reads u of weight k; the fp16 scale d lies at `scale_offset`.
template <class Code>
float avx2_lanes_model(const std::uint8_t* w, int block_bytes, int scale_offset, const BlockQ8K* y, std::int64_t blocks,
                       const Code& code) {
  float acc[8] = {};
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::uint8_t* block = w + b * block_bytes;
    std::uint16_t d;
    std::memcpy(&d, block + scale_offset, 2);
    const float scale = y[b].d * fp16_to_float(d);
    for (int p = 0; p < 8; ++p) {
      std::int32_t lane = -std::int32_t(y[b].bsums[2 * p]) - std::int32_t(y[b].bsums[2 * p + 1]);
      for (int j = 0; j < 8; ++j)
        for (int t = 0; t < 4; ++t) {
          const int k = 32 * j + 4 * p + t;
          lane += code(block, k) * std::int32_t(y[b].qs[k]);
        }
      acc[p] = std::fmaf(float(lane), scale, acc[p]);
    }
  }
  return hsum8(acc);
}

// The generic path (no AVX2): an int32 sum of w * y per block, then sumf += float(sum) * (q8.d * d),
// the product rounded before the add.
template <class Code>
float generic_dot(const std::uint8_t* w, int block_bytes, int scale_offset, const BlockQ8K* y, std::int64_t blocks,
                  const Code& code) {
  float sum = 0;
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::uint8_t* block = w + b * block_bytes;
    std::int32_t s = 0;
    for (int k = 0; k < kBlock; ++k) s += (code(block, k) - 1) * std::int32_t(y[b].qs[k]);
    std::uint16_t d;
    std::memcpy(&d, block + scale_offset, 2);
    const float term = float(s) * (y[b].d * fp16_to_float(d));
    sum += term;
  }
  return sum;
}

// Throws naming the tensor unless rows x cols is a whole number of 256-weight blocks per row.
void check_blocks(std::string_view format, const std::string& tensor, std::int64_t rows, std::int64_t cols);
// Throws naming the tensor, row and block of the first scale (fp16 at `scale_offset`) that is not finite.
void check_scales_finite(std::string_view format, const std::string& tensor, std::int64_t rows, std::int64_t cols,
                         const std::uint8_t* bytes, int block_bytes, int scale_offset);
// Throws naming the tensor where the activations or the output stride do not fit it.
void check_mul_mat(std::string_view format, const std::string& tensor, std::int64_t rows, std::int64_t cols, const Q8KBatch& x,
                   std::int64_t ldy);

// ggml_compute_forward_mul_mat's driver: y[t * ldy + r] = dot(r, t), every output one independent
// dot over K. The rows x tokens plane is cut into chunks of 16 x 16 (64 when either side is one),
// or into one chunk per thread along the longer side when there would be fewer than 4 per thread;
// threads take chunks from an atomic counter and walk each in 16 x 16 tiles, per token every row
// of the tile into a temporary, then copied out (so a gemm re-reads the weights per token).
template <class Dot>
void mul_mat(ThreadPool& pool, std::int64_t rows, std::int64_t tokens, float* y, std::int64_t ldy, const Dot& dot) {
  const std::int64_t nr0 = rows, nr1 = tokens;
  const int nth = pool.size();
  const std::int64_t chunk = (nr0 == 1 || nr1 == 1) ? 64 : 16;
  std::int64_t nchunk0 = (nr0 + chunk - 1) / chunk, nchunk1 = (nr1 + chunk - 1) / chunk;
  if (nchunk0 * nchunk1 < 4 * std::int64_t(nth)) {
    nchunk0 = nr0 > nr1 ? nth : 1;
    nchunk1 = nr0 > nr1 ? 1 : nth;
  }
  const std::int64_t dr0 = (nr0 + nchunk0 - 1) / nchunk0, dr1 = (nr1 + nchunk1 - 1) / nchunk1;
  std::atomic<std::int64_t> next{nth};  // thread t starts with chunk t, then takes the next free one
  pool.run([&](int t) {
    for (std::int64_t c = t; c < nchunk0 * nchunk1; c = next.fetch_add(1, std::memory_order_relaxed)) {
      const std::int64_t c0 = c % nchunk0, c1 = c / nchunk0;
      const std::int64_t r0 = dr0 * c0, r0_end = std::min(r0 + dr0, nr0);
      const std::int64_t t0 = dr1 * c1, t0_end = std::min(t0 + dr1, nr1);
      float tmp[16];
      for (std::int64_t tt = t0; tt < t0_end; tt += 16)
        for (std::int64_t rr = r0; rr < r0_end; rr += 16)
          for (std::int64_t tok = tt; tok < std::min(tt + 16, t0_end); ++tok) {
            const std::int64_t rend = std::min(rr + 16, r0_end);
            for (std::int64_t r = rr; r < rend; ++r) tmp[r - rr] = dot(r, tok);
            std::memcpy(y + tok * ldy + rr, tmp, std::size_t(rend - rr) * sizeof(float));
          }
    }
  });
}

// Throws naming the tensor, row and token whose output differs from the path's model.
[[noreturn]] void fail_output(std::string_view format, const std::string& tensor, std::int64_t row, std::int64_t token, float got,
                              float want);

// Throws naming the tensor, row and token where an output differs in any bit from model(r, t), the
// model of the path that ran (checked on the first and last 8 rows of every token).
template <class Model>
void check_outputs(std::string_view format, const std::string& tensor, std::int64_t rows, std::int64_t tokens,
                   std::span<const float> y, std::int64_t ldy, const Model& model) {
  const std::int64_t n = std::min<std::int64_t>(8, rows);
  for (std::int64_t t = 0; t < tokens; ++t)
    for (std::int64_t r0 : {std::int64_t(0), rows - n})
      for (std::int64_t r = r0; r < r0 + n; ++r) {
        const float want = model(r, t);
        const float got = y[std::size_t(t * ldy + r)];
        if (std::memcmp(&want, &got, sizeof(float)) != 0) fail_output(format, tensor, r, t, got, want);
      }
}

}  // namespace ternlab::peers::ggml
