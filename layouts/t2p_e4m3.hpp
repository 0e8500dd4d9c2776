// T2P with one-byte fp8 e4m3 scales first (132 bytes, 2.0625 bits per weight), so the payload
// starts 4 bytes into the block. Lossy for fp16 models: they load into it only through the named
// requantising path (LoadOptions::requantise_scales).
#pragma once
#include "layouts/dsl.hpp"
#include "layouts/registry.hpp"

namespace ternlab::layouts {

struct T2pE4m3 {
  static constexpr LayoutSpec spec{
      .name = "t2p-e4m3",
      .summary = "t2p with fp8 e4m3 scales, first (lossy for fp16 models)",
      .rows = 4,
      .code = Code::two_bit,
      .scales = {.offset = 0, .row_stride = 1, .format = ScaleFormat::e4m3},
      .pieces = pieces(Piece{.row = modes(bytes("half", 2, 8), bytes("pair", 2, 64)),
                             .k = modes(bytes("kk", 8, 1), slots("s", 4, 1), bytes("word", 4, 16)),
                             .byte_base = 4}),
  };
};
TERNLAB_REGISTER_LAYOUT(T2pE4m3);

}  // namespace ternlab::layouts
