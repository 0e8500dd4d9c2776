#include "kernels/peers/i2s.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/error.hpp"
#include "common/fp16.hpp"
#include "kernels/cpu.hpp"
#include "kernels/q8k.hpp"

namespace ternlab::peers {

namespace {

// Byte and shift of weight k of a row (spec 4.2).
std::int64_t i2s_byte(std::int64_t k) { return 32 * (k / kI2sGroup) + k % 32; }
int i2s_shift(std::int64_t k) { return 6 - 2 * int(k % kI2sGroup / 32); }

// BitNet's dots without AVX2 (the aarch64 test build): the exact sum, as a float.
float dot_1x1_portable(const std::uint8_t* w, const std::int8_t* y, std::int64_t k) {
  std::int64_t s = 0;
  for (std::int64_t j = 0; j < k; ++j) s += ((w[i2s_byte(j)] >> i2s_shift(j)) & 3) * std::int64_t(y[j]);
  return float(s);
}

// BitNet's loops without AVX2 (the aarch64 test build): the same 128-row blocks, one exact sum
// per row and token.
void gemv_rows_portable(const std::uint8_t* w, std::int64_t k, const std::int8_t* y, std::int64_t r0, std::int64_t r1, float* s) {
  for (std::int64_t r = r0; r < r1; ++r) s[r] = dot_1x1_portable(w + r * (k / 4), y, k);
}
void gemm_rows_portable(const std::uint8_t* w, std::int64_t k, const std::int8_t* y, std::int64_t tokens, std::int64_t r0, std::int64_t r1,
                        float* s, std::int64_t lds) {
  for (std::int64_t c0 = r0; c0 < r1; c0 += kI2sRowBlock)
    for (std::int64_t m = 0; m < tokens; ++m)
      for (std::int64_t r = c0; r < std::min(r1, c0 + kI2sRowBlock); ++r) s[m * lds + r] = dot_1x1_portable(w + r * (k / 4), y + m * k, k);
}

float output(float dot, const I8sActs& x, std::int64_t t, float w_scale) {
  return (dot - float(x.sum[std::size_t(t)])) / x.scale[std::size_t(t)] * w_scale;
}

void check_shape(const I2sMatrix& w) {
  if (w.rows <= 0 || w.cols <= 0 || w.cols % kI2sGroup != 0)
    fail("I2_S tensor '", w.name, "': ", w.rows, " x ", w.cols, " is not a whole number of ", kI2sGroup,
         "-weight groups per row");
}

}  // namespace

float I2sMatrix::scale() const {
  float s;
  std::memcpy(&s, bytes.data() + rows * cols / 4, 4);
  return s;
}

I2sMatrix pack_i2s(const TernaryMatrix& m, std::string name) {
  I2sMatrix w{std::move(name), m.rows, m.cols, {}};
  check_shape(w);
  for (std::size_t j = 0; j < m.codes.size(); ++j)
    if (m.codes[j] > 2)
      fail("I2_S tensor '", w.name, "': weight (", std::int64_t(j) / m.cols, ", ", std::int64_t(j) % m.cols,
           ") is +2, which I2_S cannot hold");
  // The codes as they are under the largest block scale (the kernels' speed does not depend on it),
  // packed by the declared layout (layouts/i2_s.hpp): one I2_S codec.
  TernaryMatrix one_scale = m;
  std::uint16_t big = 0;
  for (std::uint16_t h : m.scales) big = std::fabs(fp16_to_float(h)) > fp16_to_float(big) ? std::uint16_t(h & 0x7fff) : big;
  std::fill(one_scale.scales.begin(), one_scale.scales.end(), big);
  w.bytes = pack(one_scale, find_layout("i2_s"), w.name).bytes;
  return w;
}

I2sMatrix i2s_from_bytes(std::string name, std::int64_t rows, std::int64_t cols, std::span<const std::uint8_t> bytes) {
  I2sMatrix w{std::move(name), rows, cols, {}};
  check_shape(w);
  w.bytes = adopt_bytes(find_layout("i2_s"), rows, cols, bytes.data(), bytes.size(), w.name).bytes;
  if (!std::isfinite(w.scale()) || w.scale() <= 0)
    fail("I2_S tensor '", w.name, "': the per-tensor scale ", w.scale(), " is not a finite positive number");
  return w;
}

I8sActs quantize_i8s(const float* x, std::int64_t tokens, std::int64_t cols) {
  I8sActs a{tokens, cols, AlignedVector<std::int8_t>(std::size_t(tokens * cols)), {}, {}};
  for (std::int64_t t = 0; t < tokens; ++t) {
    const float* xt = x + t * cols;
    double amax = 1e-5;
    for (std::int64_t j = 0; j < cols; ++j) amax = std::max(amax, double(std::fabs(xt[j])));
    const float s = float(127.0 / amax);
    std::int32_t sum = 0;
    for (std::int64_t j = 0; j < cols; ++j) {
      const int q = std::clamp(nearest_int(xt[j] * s), -128, 127);
      a.q[std::size_t(t * cols + j)] = std::int8_t(q);
      sum += q;
    }
    a.scale.push_back(s);
    a.sum.push_back(sum);
  }
  return a;
}

std::int64_t i2s_dot_exact(const I2sMatrix& w, std::int64_t row, const I8sActs& x, std::int64_t token) {
  const std::uint8_t* b = w.row(row);
  const std::int8_t* y = x.token(token);
  std::int64_t s = 0;
  for (std::int64_t k = 0; k < w.cols; ++k) s += ((b[i2s_byte(k)] >> i2s_shift(k)) & 3) * std::int64_t(y[k]);
  return s;
}

namespace {
void check_args(const I2sMatrix& w, const I8sActs& x, const char* what) {
  check_shape(w);
  if (x.cols != w.cols)
    fail(what, ": activations have ", x.cols, " elements but the I2_S tensor '", w.name, "' (", w.rows, " x ", w.cols,
         ") needs ", w.cols);
  if (x.tokens < 1) fail(what, ": no activation token");
}
// Rows split over threads in multiples of 128, as BitNet's harness splits them.
std::pair<std::int64_t, std::int64_t> thread_rows(std::int64_t rows, int t, int n) {
  const std::int64_t blocks = (rows + 127) / 128;
  const auto [b0, b1] = ThreadPool::split(blocks, t, n);
  return {std::min(rows, b0 * 128), std::min(rows, b1 * 128)};
}
}  // namespace

void run_i2s_gemv(ThreadPool& pool, const I2sMatrix& w, const I8sActs& x, float* y) {
  check_args(w, x, "I2_S gemv");
  static const bool avx2 = isa_supported(Isa::avx2);
  const float ws = w.scale();
  pool.run([&](int t) {
    const auto [r0, r1] = thread_rows(w.rows, t, pool.size());
    if (r0 >= r1) return;
    (avx2 ? detail::i2s_gemv_rows_avx2 : gemv_rows_portable)(w.bytes.data(), w.cols, x.token(0), r0, r1, y);
    for (std::int64_t r = r0; r < r1; ++r) y[r] = output(y[r], x, 0, ws);
  });
}

void run_i2s_gemm(ThreadPool& pool, const I2sMatrix& w, const I8sActs& x, float* y, std::int64_t ldy) {
  check_args(w, x, "I2_S gemm");
  if (ldy < w.rows) fail("I2_S gemm: output row stride ", ldy, " is smaller than the ", w.rows, " rows of '", w.name, "'");
  static const bool avx2 = isa_supported(Isa::avx2);
  const float ws = w.scale();
  pool.run([&](int t) {
    const auto [r0, r1] = thread_rows(w.rows, t, pool.size());
    if (r0 >= r1) return;
    (avx2 ? detail::i2s_gemm_rows_avx2 : gemm_rows_portable)(w.bytes.data(), w.cols, x.q.data(), x.tokens, r0, r1, y, ldy);
    // The fork's output formula after the dots, as its mul_mat applies it (spec 4.6).
    for (std::int64_t m = 0; m < x.tokens; ++m)
      for (std::int64_t r = r0; r < r1; ++r) y[m * ldy + r] = output(y[m * ldy + r], x, m, ws);
  });
}

void check_i2s(const I2sMatrix& w, const I8sActs& x, std::span<const float> y, std::int64_t ldy) {
  const std::int64_t n = std::min<std::int64_t>(8, w.rows);
  for (std::int64_t t = 0; t < x.tokens; ++t)
    for (std::int64_t r0 : {std::int64_t(0), w.rows - n})
      for (std::int64_t r = r0; r < r0 + n; ++r) {
        const float want = output(float(i2s_dot_exact(w, r, x, t)), x, t, w.scale());
        const float got = y[std::size_t(t * ldy + r)];
        if (std::memcmp(&want, &got, sizeof(float)) != 0)
          fail("I2_S tensor '", w.name, "': row ", r, " token ", t, " gives ", got, ", the exact sum gives ", want);
      }
}

}  // namespace ternlab::peers
