// PTQ1_0 (GGUF type 143): PrismML's base-3 block, one row x 128 weights in 28 bytes (1.75 bits).
// Five trits per qs byte in three stages (16 bytes x 5 digits, 8 bytes x 5 digits, then qh: 2 bytes x
// 4 digits); inside a stage of c bytes, digit n of byte m holds weight k_begin + n c + m. The fp16
// scale is LAST (byte 26).
#pragma once
#include "layouts/dsl.hpp"
#include "layouts/registry.hpp"

namespace ternlab::layouts {

struct Ptq1_0 {
  static constexpr LayoutSpec spec{
      .name = "ptq1_0",
      .summary = "stock PTQ1_0 (GGUF type 143): base-3, 5 trits per byte in staged order, scale last",
      .rows = 1,
      .code = Code::base3,
      .scales = {.offset = 26},
      .pieces = pieces(Piece{.k_begin = 0,
                             .row = modes(bytes("row", 1, 0)),
                             .k = modes(bytes("m", 16, 1), slots("n", 5, 1)),
                             .byte_base = 0},
                       Piece{.k_begin = 80,
                             .row = modes(bytes("row", 1, 0)),
                             .k = modes(bytes("m", 8, 1), slots("n", 5, 1)),
                             .byte_base = 16},
                       Piece{.k_begin = 120,
                             .row = modes(bytes("row", 1, 0)),
                             .k = modes(bytes("h", 2, 1), slots("n", 4, 1)),
                             .byte_base = 24}),
  };
  static constexpr int gguf_type = 143;
};
TERNLAB_REGISTER_LAYOUT(Ptq1_0);

}  // namespace ternlab::layouts
