// T2R, "row-interleaved": sixteen rows x 128 weights in 544 bytes, for the broadcast strategy. The
// payload is eight 64-byte strips; in each strip the 32-bit lane j belongs to row j, and slot s of
// its four bytes holds weights 16 strip + 4 s .. + 3 of that row. A 512-bit vector is one strip:
// one AND per slot leaves sixteen rows' codes, each lane dotted (vpdpbusd) with the same broadcast
// activation dword, so every lane accumulates its own row and a block ends in one convert and one
// fma for all sixteen rows. AVX2 reads a strip as two 8-row halves against the same broadcasts.
#pragma once
#include "layouts/dsl.hpp"
#include "layouts/registry.hpp"

namespace ternlab::layouts {

struct T2r {
  static constexpr LayoutSpec spec{
      .name = "t2r",
      .summary = "row-interleaved: 16 rows, 32-bit lane j = row j, slot s of a 64-byte strip = 4 consecutive weights",
      .rows = 16,
      .code = Code::two_bit,
      .scales = {.offset = 0, .row_stride = 2},
      .pieces = pieces(Piece{.row = modes(bytes("lane", 16, 4)),
                             .k = modes(bytes("b", 4, 1), slots("s", 4, 1), bytes("strip", 8, 64)),
                             .byte_base = 32}),
  };
};
TERNLAB_REGISTER_LAYOUT(T2r);

}  // namespace ternlab::layouts
