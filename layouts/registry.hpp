// Runtime view of the declared layouts. Each declaration registers itself with
// TERNLAB_REGISTER_LAYOUT in its own header; packers, kernels, the oracle and the CLI iterate the
// registry and never name a layout.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "layouts/dsl.hpp"

namespace ternlab {

struct LayoutInfo {
  const LayoutSpec* spec = nullptr;
  std::string_view name;
  std::string_view summary;
  int rows = 1;  // rows per block (row group)
  int k = 128;   // weights per row per block
  Code code = Code::two_bit;
  Facts facts;
  std::span<const Loc> placement;  // rows * k entries, index row * k + kk
  int gguf_type = -1;              // GGUF tensor type id when the layout is a GGUF block format

  int block_bytes() const { return facts.block_bytes; }
  double bits_per_weight() const { return facts.bits_per_weight; }
  // Offset in the block of row r's scale of group g (for a per-tensor scale: in the tensor's tail).
  int scale_offset(int row, int group = 0) const { return ternlab::scale_offset(*spec, row, group); }
  ScaleFormat scale_format() const { return spec->scales.format; }
  int scale_bytes() const { return ternlab::scale_bytes(spec->scales.format); }
  int scale_group() const { return facts.scale_group; }
  int scales_per_row() const { return facts.scales_per_row; }
  bool per_tensor_scale() const { return facts.per_tensor_scale; }
  // One scale per row per 128-weight block, inside the block: the shape the SIMD strategies read.
  bool block_scales_128() const { return k == 128 && !per_tensor_scale() && scales_per_row() == 1; }
  // Holds a model's fp16 per-128-weight scales exactly: fp16, per block row, and groups of at most
  // 128 weights (a 128-group splits into equal smaller ones; a wider group merges two, lossily).
  // The one test of "lossy layout" for the experiments, the model loader and quickstart.
  bool holds_exact_fp16_per128_scales() const {
    return scale_format() == ScaleFormat::fp16 && !per_tensor_scale() && scale_group() <= 128;
  }
  // What a lossy layout does to those scales, in words ("stores e4m3 scales, which round ..."); empty
  // when holds_exact_fp16_per128_scales.
  std::string lossy_scales_why() const;
  // Why not (empty when block_scales_128): the one reason every SIMD plan and the catalog give.
  std::string block_scales_why_not() const;
  // Row r's scale of group g in this block, as float (the one decoder: layouts/scale_format.hpp);
  // not for per-tensor scales (PackedMatrix::scale reads those from the tail).
  float scale(const std::uint8_t* block, int row, int group = 0) const {
    return decode_scale(scale_format(), block + scale_offset(row, group));
  }
  // Properties of its geometry in words, for `ternlab layouts` (which adds what each kernel strategy
  // recognises in it: kernels/catalog.hpp, layout_properties).
  std::vector<std::string> properties() const;
  // The declaration as formulas, one piece per entry, for `ternlab layout show` (t2p:
  // "k 0..127: row = (half:2, pair:2), k = (kk:8, s:4, word:4); byte = 8 + kk + 8 half + 16 word
  // + 64 pair, slot = s").
  std::vector<std::string> formulas() const;
};

namespace detail {
template <class L>
constexpr int gguf_type_of() {
  if constexpr (requires { L::gguf_type; })
    return L::gguf_type;
  else
    return -1;
}
void add_layout(const LayoutInfo* info);
}  // namespace detail

template <TernaryLayout L>
const LayoutInfo& info_of() {
  static const LayoutInfo info{&L::spec, L::spec.name, L::spec.summary, L::spec.rows,           L::spec.k,
                               L::spec.code, facts<L>,     placement_table<L>, detail::gguf_type_of<L>()};
  return info;
}

template <TernaryLayout L>
bool register_layout() {
  detail::add_layout(&info_of<L>());
  return true;
}

// Which weight each (byte, slot) of a block holds: the placement read backwards, the view the kernel
// strategies recognise their structures in (kernels/strategies/<name>/plan.cpp).
class BlockInverse {
 public:
  explicit BlockInverse(const LayoutInfo& layout);
  // {-1, -1} for a slot no weight uses, or a byte outside the block.
  RowK operator()(int byte, int slot) const {
    return byte < 0 || byte >= block_bytes_ ? RowK{} : at_[std::size_t(byte * 5 + slot)];
  }
  bool holds_weight(int byte) const;

 private:
  int block_bytes_ = 0;
  std::vector<RowK> at_;  // byte * 5 + slot
};

// All registered layouts, sorted by name.
std::span<const LayoutInfo* const> all_layouts();

// The layout called `name`; throws ternlab::Error listing the known names otherwise.
const LayoutInfo& find_layout(std::string_view name);

// Comma-separated list of registered names, for error messages and help texts.
std::string layout_names();

}  // namespace ternlab

// Registers a layout declaration; place it right after the declaration, at namespace scope. An
// invalid declaration stops the build here, with the rule it breaks as the first error.
#define TERNLAB_REGISTER_LAYOUT(Type)                                                        \
  static_assert(::ternlab::check_declaration<Type>(), "see the rule named in the error above"); \
  inline const bool ternlab_registered_##Type = ::ternlab::register_layout<Type>()
