#include "kernels/peers/tq1.hpp"

#include <cstring>
#include <string_view>

#include "common/fp16.hpp"
#include "kernels/peers/ggml_mul_mat.hpp"

namespace ternlab::peers {

namespace {

constexpr std::string_view kFormat = "TQ1_0";
constexpr int kPow3[5] = {1, 3, 9, 27, 81};

// Byte and digit of weight k of a block (spec 3.2): five digit planes over qs[0..31], five over
// qs[32..47], four over qh[0..3].
int tq1_byte(int k) { return k < 160 ? k % 32 : k < 240 ? 32 + (k - 160) % 16 : 48 + (k - 240) % 4; }
int tq1_digit_of(int k) { return k < 160 ? k / 32 : k < 240 ? (k - 160) / 16 : (k - 240) / 4; }

// The byte's multiple whose top digit is weight k's: (b * 3^n) mod 256, as both paths form it.
std::uint8_t tq1_multiple(const std::uint8_t* block, int k) {
  return std::uint8_t(block[tq1_byte(k)] * kPow3[tq1_digit_of(k)]);
}
int tq1_code_generic(const std::uint8_t* block, int k) { return tq1_digit(block[tq1_byte(k)], tq1_digit_of(k)); }
int tq1_code_avx2(const std::uint8_t* block, int k) { return tq1_top_digit_avx2(tq1_multiple(block, k)); }

}  // namespace

int tq1_digit(std::uint8_t byte, int n) { return (3 * std::uint8_t(byte * kPow3[n])) >> 8; }

int tq1_top_digit_avx2(std::uint8_t u) {
  const int a = u > 0 ? u - 1 : 0;  // vpsubusb
  const int half = (a + 1) >> 1;    // vpavgb with zero
  return ((a + half + 1) >> 1) >> 6;
}

float Tq1Matrix::block_scale(std::int64_t r, std::int64_t b) const {
  std::uint16_t d;
  std::memcpy(&d, row(r) + b * kTq1BlockBytes + kTq1ScaleOffset, 2);
  return fp16_to_float(d);
}

Tq1Matrix pack_tq1(const TernaryMatrix& m, std::string name) {
  Tq1Matrix w{std::move(name), m.rows, m.cols, {}};
  ggml::check_blocks(kFormat, w.name, w.rows, w.cols);
  // The bytes of the declared layout (layouts/tq1_0.hpp): one TQ1_0 codec, whose exact pack refuses
  // two different 128-weight scales under one block's scale and a +2 weight.
  w.bytes = pack(m, find_layout("tq1_0"), w.name).bytes;
  return w;
}

Tq1Matrix tq1_from_bytes(std::string name, std::int64_t rows, std::int64_t cols, std::span<const std::uint8_t> bytes) {
  Tq1Matrix w{std::move(name), rows, cols, {}};
  ggml::check_blocks(kFormat, w.name, rows, cols);
  w.bytes = adopt_bytes(find_layout("tq1_0"), rows, cols, bytes.data(), bytes.size(), w.name).bytes;
  ggml::check_scales_finite(kFormat, w.name, rows, cols, w.bytes.data(), kTq1BlockBytes, kTq1ScaleOffset);
  return w;
}

float tq1_dot_avx2_model(const std::uint8_t* w, const BlockQ8K* y, std::int64_t blocks) {
  return ggml::avx2_lanes_model(w, kTq1BlockBytes, kTq1ScaleOffset, y, blocks, tq1_code_avx2);
}

float tq1_dot_generic(const std::uint8_t* w, const BlockQ8K* y, std::int64_t blocks) {
  return ggml::generic_dot(w, kTq1BlockBytes, kTq1ScaleOffset, y, blocks, tq1_code_generic);
}

float tq1_dot(const std::uint8_t* w, const BlockQ8K* y, std::int64_t blocks) {
  return ggml::avx2_path() ? detail::tq1_dot_avx2(w, y, blocks) : tq1_dot_generic(w, y, blocks);
}

void run_tq1_mul_mat(ThreadPool& pool, const Tq1Matrix& w, const Q8KBatch& x, float* y, std::int64_t ldy) {
  ggml::check_mul_mat(kFormat, w.name, w.rows, w.cols, x, ldy);
  const std::int64_t blocks = w.blocks_per_row();
  ggml::mul_mat(pool, w.rows, x.tokens, y, ldy, [&](std::int64_t r, std::int64_t t) { return tq1_dot(w.row(r), x.row(t), blocks); });
}

void check_tq1(const Tq1Matrix& w, const Q8KBatch& x, std::span<const float> y, std::int64_t ldy) {
  const auto model = ggml::avx2_path() ? tq1_dot_avx2_model : tq1_dot_generic;
  ggml::check_outputs(kFormat, w.name, w.rows, x.tokens, y, ldy,
                      [&](std::int64_t r, std::int64_t t) { return model(w.row(r), x.row(t), w.blocks_per_row()); });
}

}  // namespace ternlab::peers
