// Ternary matrices in two forms:
//   TernaryMatrix - layout-free: one 2-bit code u = w + 1 per weight (u = 3 means +2, which the real
//                   PQ2_0 file may hold) and one fp16 scale per row per 128 weights (the scales
//                   a layout stores in another format convert to and from fp16 exactly, or the
//                   conversion throws; a layout's 256-weight scale group or per-tensor scale is
//                   that scale repeated, a 64-weight group one of two equal halves);
//   PackedMatrix  - the bytes of one layout, blocks ordered row group by row group, K inside, then
//                   the tail of a per-tensor scale.
// pack / unpack / transcode are generated from the layout's placement table: no per-layout code.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/aligned.hpp"
#include "layouts/registry.hpp"

namespace ternlab {

inline constexpr int kBlockK = 128;  // weights per row per scale of the layout-free form (and per block of most layouts)

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

  std::int64_t blocks_per_row() const { return cols / layout->k; }
  std::int64_t row_groups() const { return rows / layout->rows; }
  std::size_t blocks_bytes() const { return std::size_t(row_groups() * blocks_per_row() * layout->block_bytes()); }
  // Row r's scale of group j in block (g, i): from the block, or the tensor's tail for a per-tensor scale.
  float scale(std::int64_t group, std::int64_t i, int r, int j = 0) const {
    if (layout->per_tensor_scale()) return decode_scale(layout->scale_format(), bytes.data() + blocks_bytes() + layout->scale_offset(0));
    return layout->scale(block(group, i), r, j);
  }
  // The block for rows [g * R, g * R + R) and weights [k i, k i + k) (k = the layout's block width).
  const std::uint8_t* block(std::int64_t group, std::int64_t i) const {
    return bytes.data() + (group * blocks_per_row() + i) * layout->block_bytes();
  }
  std::uint8_t* block(std::int64_t group, std::int64_t i) {
    return bytes.data() + (group * blocks_per_row() + i) * layout->block_bytes();
  }
};

// Throws unless a rows x cols matrix fits `layout` (cols a multiple of its k, rows of the row group).
// `what` names the tensor in the message.
void check_shape(const LayoutInfo& layout, std::int64_t rows, std::int64_t cols, const std::string& what = "matrix");

// Block codec: codes are rows x k row-major u values, scales rows x scales_per_row fp16 (none for
// a per-tensor scale, which pack and unpack handle in the tail). encode_block rounds each scale to
// the layout's format (pack checks first that nothing is lost); decode_block converts the stored
// scale to fp16 (unpack checks that nothing is lost).
void encode_block(const LayoutInfo& layout, const std::uint8_t* codes, const std::uint16_t* scales, std::uint8_t* out);
void decode_block(const LayoutInfo& layout, const std::uint8_t* in, std::uint8_t* codes, std::uint16_t* scales);

PackedMatrix pack(const TernaryMatrix& m, const LayoutInfo& layout, const std::string& what = "matrix");
TernaryMatrix unpack(const PackedMatrix& p);
// Lossless re-layout: throws where the target cannot hold a code (u = 3 into base-3) or a scale
// (a value its scale format does not have; two different 128-weight scales under one 256-weight
// scale; rows of different scales under one per-tensor scale), naming the tensor, row, block and
// values.
PackedMatrix transcode(const PackedMatrix& p, const LayoutInfo& to, const std::string& what = "matrix");

// What a requantising (lossy) re-layout did to the scales. Relative error |new - old| / |old|.
struct ScaleRequantisation {
  std::int64_t scales = 0;   // scales seen
  std::int64_t changed = 0;  // scales that moved
  std::int64_t weights = 0;          // weights re-ternarised under a merged scale (0: no merge)
  std::int64_t weights_changed = 0;  // of those, weights whose code moved
  double max_abs_weight_error = 0;   // max |new w * new scale - old w * old scale| over them
  double max_rel_error = 0, mean_rel_error = 0;
  std::string worst;  // "row R block B: OLD -> NEW" of the largest relative error ("" if none moved)
};

// Folds one tensor's report into a model's (counts summed, the mean weighted by scales, the worst
// scale kept with the tensor's name).
void accumulate(ScaleRequantisation& all, const ScaleRequantisation& one, const std::string& name);

// LOSSY re-layout: where the target's scale group is wider than 128 weights (or one per tensor),
// the scales under one target scale merge into the largest in magnitude and the weights are
// re-ternarised against it (w' = round(w s / s'), halves away from zero, as ggml's quantisers
// round); then every scale is rounded to the nearest value of the target's scale format (the
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
// Either base-3 code (Code::base3 above, Code::base3_banded): five digits 0..2, digit 0 first,
// to a byte and back (only bytes the codec writes are read back).
std::uint8_t encode_digits(Code code, const std::uint8_t* digits);
int decode_digit(Code code, std::uint8_t byte, int n);
// Whether Code::base3_banded writes `byte` (84 t0 + r with r < 81; not 81-83 of a band, not 252-255).
constexpr bool banded_writes(int byte) { return byte >= 0 && byte < 3 * 84 && byte % 84 < 81; }
// Each Code::base3_banded byte's Code::base3 byte (the same five digits; 0 for bytes the banded
// code never writes), for kernels written against Code::base3's digit arithmetic.
const std::array<std::uint8_t, 256>& banded_to_base3();

}  // namespace ternlab
