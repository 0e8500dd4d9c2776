#include "kernels/peers/tq2.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

#include "common/error.hpp"
#include "common/fp16.hpp"
#include "kernels/cpu.hpp"

namespace ternlab::peers {

namespace {

// Byte and shift of weight k of a block (spec 2.2).
int tq2_byte(int k) { return 32 * (k / 128) + k % 32; }
int tq2_shift(int k) { return 2 * (k % 128 / 32); }
int tq2_code(const std::uint8_t* block, int k) { return (block[tq2_byte(k)] >> tq2_shift(k)) & 3; }
std::uint16_t tq2_scale_bits(const std::uint8_t* block) {
  std::uint16_t d;
  std::memcpy(&d, block + 64, 2);
  return d;
}

void check_shape(const Tq2Matrix& w) {
  if (w.rows <= 0 || w.cols <= 0 || w.cols % kTq2Block != 0)
    fail("TQ2_0 tensor '", w.name, "': ", w.rows, " x ", w.cols, " is not a whole number of ", kTq2Block,
         "-weight blocks per row");
}

}  // namespace

float Tq2Matrix::block_scale(std::int64_t r, std::int64_t b) const {
  return fp16_to_float(tq2_scale_bits(row(r) + b * kTq2BlockBytes));
}

Tq2Matrix pack_tq2(const TernaryMatrix& m, std::string name) {
  Tq2Matrix w{std::move(name), m.rows, m.cols, {}};
  check_shape(w);
  // The bytes of the declared layout (layouts/tq2_0.hpp): one TQ2_0 codec, whose exact pack refuses
  // two different 128-weight scales under one block's scale.
  w.bytes = pack(m, find_layout("tq2_0"), w.name).bytes;
  return w;
}

Tq2Matrix tq2_from_bytes(std::string name, std::int64_t rows, std::int64_t cols, std::span<const std::uint8_t> bytes) {
  Tq2Matrix w{std::move(name), rows, cols, {}};
  check_shape(w);
  w.bytes = adopt_bytes(find_layout("tq2_0"), rows, cols, bytes.data(), bytes.size(), w.name).bytes;
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t b = 0; b < w.blocks_per_row(); ++b)
      if (!std::isfinite(w.block_scale(r, b)))
        fail("TQ2_0 tensor '", w.name, "': row ", r, " block ", b, " has the scale ", w.block_scale(r, b),
             ", which is not finite");
  return w;
}

float tq2_dot_avx2_model(const std::uint8_t* w, const BlockQ8K* y, std::int64_t blocks) {
  float acc[8] = {};
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::uint8_t* block = w + b * kTq2BlockBytes;
    const float scale = y[b].d * fp16_to_float(tq2_scale_bits(block));
    for (int p = 0; p < 8; ++p) {
      // Lane p gathers elements 32 j + 4 p + t, j = 0..7, t = 0..3, and partial sums 2p and 2p + 1.
      std::int32_t lane = -std::int32_t(y[b].bsums[2 * p]) - std::int32_t(y[b].bsums[2 * p + 1]);
      for (int j = 0; j < 8; ++j)
        for (int t = 0; t < 4; ++t) {
          const int k = 32 * j + 4 * p + t;
          lane += tq2_code(block, k) * std::int32_t(y[b].qs[k]);
        }
      acc[p] = std::fmaf(float(lane), scale, acc[p]);
    }
  }
  return ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
}

float tq2_dot_generic(const std::uint8_t* w, const BlockQ8K* y, std::int64_t blocks) {
  float sum = 0;
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::uint8_t* block = w + b * kTq2BlockBytes;
    std::int32_t s = 0;
    for (int k = 0; k < kTq2Block; ++k) s += (tq2_code(block, k) - 1) * std::int32_t(y[b].qs[k]);
    const float scale = y[b].d * fp16_to_float(tq2_scale_bits(block));
    const float term = float(s) * scale;  // rounded before the add: ggml's generic path is unfused
    sum += term;
  }
  return sum;
}

namespace {
bool avx2_path() {
  static const bool avx2 = isa_supported(Isa::avx2);
  return avx2;
}
}  // namespace

float tq2_dot(const std::uint8_t* w, const BlockQ8K* y, std::int64_t blocks) {
  return avx2_path() ? detail::tq2_dot_avx2(w, y, blocks) : tq2_dot_generic(w, y, blocks);
}

void run_tq2_mul_mat(ThreadPool& pool, const Tq2Matrix& w, const Q8KBatch& x, float* y, std::int64_t ldy) {
  check_shape(w);
  if (x.cols != w.cols)
    fail("TQ2_0 mul_mat: activations have ", x.cols, " elements but the TQ2_0 tensor '", w.name, "' (", w.rows, " x ",
         w.cols, ") needs ", w.cols);
  if (x.tokens < 1) fail("TQ2_0 mul_mat: no activation token");
  if (x.tokens > 1 && ldy < w.rows)
    fail("TQ2_0 mul_mat: output row stride ", ldy, " is smaller than the ", w.rows, " rows of '", w.name, "'");
  // ggml_compute_forward_mul_mat's chunking: 16 x 16 chunks (64 when either side is one), and one
  // chunk per thread along the longer side when there would be fewer than 4 per thread.
  const std::int64_t nr0 = w.rows, nr1 = x.tokens;
  const int nth = pool.size();
  const std::int64_t chunk = (nr0 == 1 || nr1 == 1) ? 64 : 16;
  std::int64_t nchunk0 = (nr0 + chunk - 1) / chunk, nchunk1 = (nr1 + chunk - 1) / chunk;
  if (nchunk0 * nchunk1 < 4 * std::int64_t(nth)) {
    nchunk0 = nr0 > nr1 ? nth : 1;
    nchunk1 = nr0 > nr1 ? 1 : nth;
  }
  const std::int64_t dr0 = (nr0 + nchunk0 - 1) / nchunk0, dr1 = (nr1 + nchunk1 - 1) / nchunk1;
  const std::int64_t blocks = w.blocks_per_row();
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
            for (std::int64_t r = rr; r < rend; ++r) tmp[r - rr] = tq2_dot(w.row(r), x.row(tok), blocks);
            std::memcpy(y + tok * ldy + rr, tmp, std::size_t(rend - rr) * sizeof(float));
          }
    }
  });
}

void check_tq2(const Tq2Matrix& w, const Q8KBatch& x, std::span<const float> y, std::int64_t ldy) {
  const std::int64_t n = std::min<std::int64_t>(8, w.rows);
  const auto model = avx2_path() ? tq2_dot_avx2_model : tq2_dot_generic;
  for (std::int64_t t = 0; t < x.tokens; ++t)
    for (std::int64_t r0 : {std::int64_t(0), w.rows - n})
      for (std::int64_t r = r0; r < r0 + n; ++r) {
        const float want = model(w.row(r), x.row(t), w.blocks_per_row());
        const float got = y[std::size_t(t * ldy + r)];
        if (std::memcmp(&want, &got, sizeof(float)) != 0)
          fail("TQ2_0 tensor '", w.name, "': row ", r, " token ", t, " gives ", got, ", the model of ggml's ",
               avx2_path() ? "AVX2" : "generic", " path gives ", want);
      }
}

}  // namespace ternlab::peers
