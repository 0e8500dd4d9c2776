// T2P with one-byte e8m0 (power-of-two, OCP MX) scales after the payload (132 bytes, 2.0625 bits
// per weight). Lossy for fp16 models: they load into it only through the named requantising path
// (LoadOptions::requantise_scales); every scale moves to the nearest power of two.
#pragma once
#include "layouts/dsl.hpp"
#include "layouts/registry.hpp"

namespace ternlab::layouts {

struct T2pE8m0 {
  static constexpr LayoutSpec spec{
      .name = "t2p-e8m0",
      .summary = "t2p with e8m0 power-of-two scales, last (lossy for fp16 models)",
      .rows = 4,
      .code = Code::two_bit,
      .scales = {.offset = 128, .row_stride = 1, .format = ScaleFormat::e8m0},
      .pieces = pieces(Piece{.row = modes(bytes("half", 2, 8), bytes("pair", 2, 64)),
                             .k = modes(bytes("kk", 8, 1), slots("s", 4, 1), bytes("word", 4, 16)),
                             .byte_base = 0}),
  };
};
TERNLAB_REGISTER_LAYOUT(T2pE8m0);

}  // namespace ternlab::layouts
