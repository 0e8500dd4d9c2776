// Ternary matrices in two forms:
//   TernaryMatrix - layout-free: one 2-bit code u = w + 1 per weight (u = 3 means +2, which the real
//                   PQ2_0 file may hold) and one fp16 scale per row per 128 weights (the scales
//                   a layout stores in another format convert to and from fp16 exactly, or the
//                   conversion throws);
//   PackedMatrix  - the bytes of one layout, blocks ordered row group by row group, K inside.
// pack / unpack / transcode are generated from the layout's placement table: no per-layout code.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/aligned.hpp"
#include "layouts/registry.hpp"

namespace ternlab {

inline constexpr int kBlockK = 128;  // weights per row per block, for every layout here

struct TernaryMatrix {
  std::int64_t rows = 0, cols = 0;
  std::vector<std::uint8_t> codes;    // rows * cols, u in 0..3
  std::vector<std::uint16_t> scales;  // rows * (cols / 128), fp16 bits

  TernaryMatrix() = default;
  TernaryMatrix(std::int64_t rows, std::int64_t cols);  // zero codes (w = -1), zero scales
  std::int64_t blocks_per_row() const { return cols / kBlockK; }
  int weight(std::int64_t r, std::int64_t k) const { return int(codes[r * cols + k]) - 1; }
  std::uint16_t scale_bits(std::int64_t r, std::int64_t block) const { return scales[r * blocks_per_row() + block]; }
  // Unpacked forms: int8 weights (w = u - 1) and float scales.
  std::vector<std::int8_t> weights_int8() const;
  std::vector<float> scales_f32() const;
  bool operator==(const TernaryMatrix&) const = default;
};

struct PackedMatrix {
  const LayoutInfo* layout = nullptr;
  std::int64_t rows = 0, cols = 0;
  AlignedBytes bytes;

  std::int64_t blocks_per_row() const { return cols / kBlockK; }
  std::int64_t row_groups() const { return rows / layout->rows; }
  // The block for rows [g * R, g * R + R) and weights [128 i, 128 i + 128).
  const std::uint8_t* block(std::int64_t group, std::int64_t i) const {
    return bytes.data() + (group * blocks_per_row() + i) * layout->block_bytes();
  }
  std::uint8_t* block(std::int64_t group, std::int64_t i) {
    return bytes.data() + (group * blocks_per_row() + i) * layout->block_bytes();
  }
};

// Throws unless a rows x cols matrix fits `layout` (cols a multiple of 128, rows of the row group).
// `what` names the tensor in the message.
void check_shape(const LayoutInfo& layout, std::int64_t rows, std::int64_t cols, const std::string& what = "matrix");

// Block codec: codes are rows x 128 row-major u values, scales one fp16 per row. encode_block rounds
// each scale to the layout's format (pack checks first that nothing is lost); decode_block converts
// the stored scale to fp16 (unpack checks that nothing is lost).
void encode_block(const LayoutInfo& layout, const std::uint8_t* codes, const std::uint16_t* scales, std::uint8_t* out);
void decode_block(const LayoutInfo& layout, const std::uint8_t* in, std::uint8_t* codes, std::uint16_t* scales);

PackedMatrix pack(const TernaryMatrix& m, const LayoutInfo& layout, const std::string& what = "matrix");
TernaryMatrix unpack(const PackedMatrix& p);
// Lossless re-layout: throws where the target cannot hold a code (u = 3 into base-3) or a scale
// (a value its scale format does not have), naming the tensor, row, block and value.
PackedMatrix transcode(const PackedMatrix& p, const LayoutInfo& to, const std::string& what = "matrix");

// What a requantising (lossy) re-layout did to the scales. Relative error |new - old| / |old|.
struct ScaleRequantisation {
  std::int64_t scales = 0;   // scales seen
  std::int64_t changed = 0;  // scales that moved
  double max_rel_error = 0, mean_rel_error = 0;
  std::string worst;  // "row R block B: OLD -> NEW" of the largest relative error ("" if none moved)
};

// LOSSY re-layout: every scale rounded to the nearest value of the target's scale format (the
// rounding of layouts/scale_format.hpp), the codes kept. Throws, naming the scale, where no
// rounding exists: a negative scale into e8m0, or a result outside the fp16 range of the
// layout-free form (zero into e8m0, whose smallest value is 2^-127).
PackedMatrix requantise(const PackedMatrix& p, const LayoutInfo& to, const std::string& what = "matrix",
                        ScaleRequantisation* report = nullptr);
// The same on the layout-free form: the scales `m` would have in format f.
TernaryMatrix requantise_scales(const TernaryMatrix& m, ScaleFormat f, const std::string& what = "matrix",
                                ScaleRequantisation* report = nullptr);

// Wraps existing bytes (e.g. a GGUF tensor) as a packed matrix of `layout`, checking the size.
PackedMatrix adopt_bytes(const LayoutInfo& layout, std::int64_t rows, std::int64_t cols, const std::uint8_t* data,
                         std::size_t size, const std::string& what = "matrix");

// PrismML's ternary quantiser (quantize_row_pq2_0_ref): per 128 floats d = max|x|, u = round(x/d) + 1.
// PTQ1_0's quantiser yields the same trits, so one TernaryMatrix serves both formats.
TernaryMatrix quantize_ternary(const float* x, std::int64_t rows, std::int64_t cols, const std::string& what = "matrix");

// Base-3 byte codec (ceil(256 q / 243) encoding; digit n = ((uint8)(b * 3^n) * 3) >> 8).
std::uint8_t encode_trits(const std::uint8_t* digits, int n_digits);
int decode_trit(std::uint8_t byte, int n);

}  // namespace ternlab
