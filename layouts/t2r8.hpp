// T2R8: t2r with eight rows (272 bytes a block): a strip is 32 bytes, one 256-bit vector, so AVX2
// needs no second half; AVX-512 does not run it (a strip fills half of its vector). Row groups of
// 8 split a matrix more finely over threads and suit 8-row leftovers.
#pragma once
#include "layouts/dsl.hpp"
#include "layouts/registry.hpp"

namespace ternlab::layouts {

struct T2r8 {
  static constexpr LayoutSpec spec{
      .name = "t2r8",
      .summary = "row-interleaved: 8 rows, 32-bit lane j = row j, slot s of a 32-byte strip = 4 consecutive weights",
      .rows = 8,
      .code = Code::two_bit,
      .scales = {.offset = 0, .row_stride = 2},
      .pieces = pieces(Piece{.row = modes(bytes("lane", 8, 4)),
                             .k = modes(bytes("b", 4, 1), slots("s", 4, 1), bytes("strip", 8, 32)),
                             .byte_base = 16}),
  };
};
TERNLAB_REGISTER_LAYOUT(T2r8);

}  // namespace ternlab::layouts
