// T2P with bf16 scales: the same geometry and 136 bytes as t2p, scales with fp32's range and 8
// significant bits. A lossy target for fp16 models (models load into it through the named
// requantising path, LoadOptions::requantise_scales); a scale format is one field of the scale
// site, read by packers, kernels and the oracle through one decoder (layouts/scale_format.hpp).
#pragma once
#include "layouts/dsl.hpp"
#include "layouts/registry.hpp"

namespace ternlab::layouts {

struct T2pBf16 {
  static constexpr LayoutSpec spec{
      .name = "t2p-bf16",
      .summary = "t2p with bf16 scales (lossy for fp16 models)",
      .rows = 4,
      .code = Code::two_bit,
      .scales = {.offset = 0, .row_stride = 2, .format = ScaleFormat::bf16},
      .pieces = pieces(Piece{.row = modes(bytes("half", 2, 8), bytes("pair", 2, 64)),
                             .k = modes(bytes("kk", 8, 1), slots("s", 4, 1), bytes("word", 4, 16)),
                             .byte_base = 8}),
  };
};
TERNLAB_REGISTER_LAYOUT(T2pBf16);

}  // namespace ternlab::layouts
