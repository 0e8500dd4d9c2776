#include "kernels/peers/tq2.hpp"

#include <cstring>
#include <string_view>

#include "common/fp16.hpp"
#include "kernels/peers/ggml_mul_mat.hpp"

namespace ternlab::peers {

namespace {

// Byte and shift of weight k of a block (spec 2.2).
int tq2_byte(int k) { return 32 * (k / 128) + k % 32; }
int tq2_shift(int k) { return 2 * (k % 128 / 32); }
int tq2_code(const std::uint8_t* block, int k) { return (block[tq2_byte(k)] >> tq2_shift(k)) & 3; }
std::uint16_t tq2_scale_bits(const std::uint8_t* block) {
  std::uint16_t d;
  std::memcpy(&d, block + kTq2ScaleOffset, 2);
  return d;
}

constexpr std::string_view kFormat = "TQ2_0";

}  // namespace

float Tq2Matrix::block_scale(std::int64_t r, std::int64_t b) const {
  return fp16_to_float(tq2_scale_bits(row(r) + b * kTq2BlockBytes));
}

Tq2Matrix pack_tq2(const TernaryMatrix& m, std::string name) {
  Tq2Matrix w{std::move(name), m.rows, m.cols, {}};
  ggml::check_blocks(kFormat, w.name, w.rows, w.cols);
  // The bytes of the declared layout (layouts/tq2_0.hpp): one TQ2_0 codec, whose exact pack refuses
  // two different 128-weight scales under one block's scale.
  w.bytes = pack(m, find_layout("tq2_0"), w.name).bytes;
  return w;
}

Tq2Matrix tq2_from_bytes(std::string name, std::int64_t rows, std::int64_t cols, std::span<const std::uint8_t> bytes) {
  Tq2Matrix w{std::move(name), rows, cols, {}};
  ggml::check_blocks(kFormat, w.name, rows, cols);
  w.bytes = adopt_bytes(find_layout("tq2_0"), rows, cols, bytes.data(), bytes.size(), w.name).bytes;
  ggml::check_scales_finite(kFormat, w.name, rows, cols, w.bytes.data(), kTq2BlockBytes, kTq2ScaleOffset);
  return w;
}

float tq2_dot_avx2_model(const std::uint8_t* w, const BlockQ8K* y, std::int64_t blocks) {
  return ggml::avx2_lanes_model(w, kTq2BlockBytes, kTq2ScaleOffset, y, blocks, tq2_code);
}

float tq2_dot_generic(const std::uint8_t* w, const BlockQ8K* y, std::int64_t blocks) {
  return ggml::generic_dot(w, kTq2BlockBytes, kTq2ScaleOffset, y, blocks, tq2_code);
}

float tq2_dot(const std::uint8_t* w, const BlockQ8K* y, std::int64_t blocks) {
  return ggml::avx2_path() ? detail::tq2_dot_avx2(w, y, blocks) : tq2_dot_generic(w, y, blocks);
}

void run_tq2_mul_mat(ThreadPool& pool, const Tq2Matrix& w, const Q8KBatch& x, float* y, std::int64_t ldy) {
  ggml::check_mul_mat(kFormat, w.name, w.rows, w.cols, x, ldy);
  const std::int64_t blocks = w.blocks_per_row();
  ggml::mul_mat(pool, w.rows, x.tokens, y, ldy, [&](std::int64_t r, std::int64_t t) { return tq2_dot(w.row(r), x.row(t), blocks); });
}

void check_tq2(const Tq2Matrix& w, const Q8KBatch& x, std::span<const float> y, std::int64_t ldy) {
  const auto model = ggml::avx2_path() ? tq2_dot_avx2_model : tq2_dot_generic;
  ggml::check_outputs(kFormat, w.name, w.rows, x.tokens, y, ldy,
                      [&](std::int64_t r, std::int64_t t) { return model(w.row(r), x.row(t), w.blocks_per_row()); });
}

}  // namespace ternlab::peers
