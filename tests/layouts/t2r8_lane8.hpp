// A layout that exists only in tests: t2r8 with 8-byte lanes. Eight rows x 128 weights; the payload
// is four 64-byte strips, and in each strip the 8-byte lane j belongs to row j, slot s of its eight
// bytes holding weights 32 strip + 8 s .. + 7. A strip is one AVX2 vector of four rows' lanes
// twice, and one AVX-512 vector: the broadcast kernels' qword lanes at 8 rows.
#pragma once
#include "layouts/dsl.hpp"
#include "layouts/registry.hpp"

namespace ternlab::test_layouts {

struct T2r8Lane8 {
  static constexpr LayoutSpec spec{
      .name = "t2r8-lane8",
      .summary = "test-only: row-interleaved, 8 rows, 8-byte lane j = row j, slot s of a 64-byte strip = 8 consecutive weights",
      .rows = 8,
      .code = Code::two_bit,
      .scales = {.offset = 0, .row_stride = 2},
      .pieces = pieces(Piece{.row = modes(bytes("lane", 8, 8)),
                             .k = modes(bytes("b", 8, 1), slots("s", 4, 1), bytes("strip", 4, 64)),
                             .byte_base = 16}),
  };
};
TERNLAB_REGISTER_LAYOUT(T2r8Lane8);

}  // namespace ternlab::test_layouts
