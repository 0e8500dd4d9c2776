// B3R, "base-3 row-interleaved": sixteen rows x 128 weights in 448 bytes (1.75 bits a weight, the
// size of PTQ1_0), for the broadcast strategy's base-3 build. Six 64-byte strips, in each of which
// the 32-bit lane j belongs to row j and byte b of it holds, in base-3 digit n, weight 20 strip +
// 4 n + b of that row; then a 32-byte tail whose 16-bit lane j holds row j's last 8 weights (byte
// b, digit n < 4: weight 120 + 2 n + b); then the sixteen fp16 scales. Bytes are banded (84 t0 +
// digits 1-4 in base 3), so a strip's bytes go through byte tables (digit 0 from byte >> 2, and
// digits 1-4 as t2r's four 2-bit slots), and every lane then dots
// against broadcast activation dwords as in t2r: the same one convert and one fma per block for
// sixteen rows, for a sixth fewer bytes than t2r's 2.125 bits where a gemv waits on memory.
#pragma once
#include "layouts/dsl.hpp"
#include "layouts/registry.hpp"

namespace ternlab::layouts {

struct B3r {
  static constexpr LayoutSpec spec{
      .name = "b3r",
      .summary = "base-3 row-interleaved: 16 rows, 32-bit lane j = row j, 5 digits a byte, 1.75 bits",
      .rows = 16,
      .code = Code::base3_banded,
      .scales = {.offset = 416, .row_stride = 2},
      .pieces = pieces(Piece{.row = modes(bytes("lane", 16, 4)),
                             .k = modes(bytes("b", 4, 1), slots("n", 5, 1), bytes("strip", 6, 64)),
                             .byte_base = 0},
                       Piece{.k_begin = 120,
                             .row = modes(bytes("lane", 16, 2)),
                             .k = modes(bytes("b", 2, 1), slots("n", 4, 1)),
                             .byte_base = 384}),
  };
};
TERNLAB_REGISTER_LAYOUT(B3r);

}  // namespace ternlab::layouts
