// A layout that exists only in tests: t2r with 8-byte lanes. Sixteen rows x 128 weights; the payload
// is four 128-byte strips, and in each strip the 8-byte lane j belongs to row j, slot s of its
// eight bytes holding weights 32 strip + 8 s .. + 7. A valid row-interleaved layout whose lanes are
// two dwords: every strategy that admits it must run it, and the suite must take what each admits
// from that strategy's own answer.
#pragma once
#include "layouts/dsl.hpp"
#include "layouts/registry.hpp"

namespace ternlab::test_layouts {

struct T2rLane8 {
  static constexpr LayoutSpec spec{
      .name = "t2r-lane8",
      .summary = "test-only: row-interleaved, 16 rows, 8-byte lane j = row j, slot s of a 128-byte strip = 8 consecutive weights",
      .rows = 16,
      .code = Code::two_bit,
      .scales = {.offset = 0, .row_stride = 2},
      .pieces = pieces(Piece{.row = modes(bytes("lane", 16, 8)),
                             .k = modes(bytes("b", 8, 1), slots("s", 4, 1), bytes("strip", 4, 128)),
                             .byte_base = 32}),
  };
};
TERNLAB_REGISTER_LAYOUT(T2rLane8);

}  // namespace ternlab::test_layouts
