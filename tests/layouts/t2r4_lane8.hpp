// A layout that exists only in tests: t2r4 with 8-byte lanes and its scales after the payload,
// spaced 3 bytes apart. Four rows x 128 weights; the payload is four 32-byte strips, the 8-byte
// lane j of each belonging to row j, slot s of its eight bytes holding weights 32 strip + 8 s .. +
// 7. A strip is two SSE4.1 vectors and one AVX2 vector (half an AVX-512 one, which refuses it);
// the spaced scales take the broadcast kernels' decoding path at 4 rows.
#pragma once
#include "layouts/dsl.hpp"
#include "layouts/registry.hpp"

namespace ternlab::test_layouts {

struct T2r4Lane8 {
  static constexpr LayoutSpec spec{
      .name = "t2r4-lane8",
      .summary = "test-only: row-interleaved, 4 rows, 8-byte lane j = row j, spaced scales after the payload",
      .rows = 4,
      .code = Code::two_bit,
      .scales = {.offset = 128, .row_stride = 3},
      .pieces = pieces(Piece{.row = modes(bytes("lane", 4, 8)),
                             .k = modes(bytes("b", 8, 1), slots("s", 4, 1), bytes("strip", 4, 32)),
                             .byte_base = 0}),
  };
};
TERNLAB_REGISTER_LAYOUT(T2r4Lane8);

}  // namespace ternlab::test_layouts
