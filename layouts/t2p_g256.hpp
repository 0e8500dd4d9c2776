// t2p-g256: t2p's row pairs with one fp16 scale per 256 weights, a lossy variant for fewer scale
// bits: 4 rows x 256 weights in 264 bytes (2.0625 bits), the scales first, then two t2p payloads
// (weights 0-127 from byte 8, 128-255 from byte 136). Merging two 128-weight scales into one is
// lossy and only done by requantise (layouts/matrix.hpp).
#pragma once
#include "layouts/dsl.hpp"
#include "layouts/registry.hpp"

namespace ternlab::layouts {

struct T2pG256 {
  static constexpr LayoutSpec spec{
      .name = "t2p-g256",
      .summary = "t2p with one scale per 256 weights: 256-weight blocks of two t2p payloads",
      .rows = 4,
      .k = 256,
      .code = Code::two_bit,
      .scales = {.offset = 0, .row_stride = 2},
      .pieces = pieces(Piece{.k_begin = 0,
                             .row = modes(bytes("half", 2, 8), bytes("pair", 2, 64)),
                             .k = modes(bytes("kk", 8, 1), slots("s", 4, 1), bytes("word", 4, 16)),
                             .byte_base = 8},
                       Piece{.k_begin = 128,
                             .row = modes(bytes("half", 2, 8), bytes("pair", 2, 64)),
                             .k = modes(bytes("kk", 8, 1), slots("s", 4, 1), bytes("word", 4, 16)),
                             .byte_base = 136}),
  };
};
TERNLAB_REGISTER_LAYOUT(T2pG256);

}  // namespace ternlab::layouts
