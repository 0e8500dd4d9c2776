// A layout that exists only in tests: t2r with 4 rows. Four rows x 128 weights; the payload is
// eight 16-byte strips, the 32-bit lane j of each belonging to row j, slot s of its four bytes
// holding weights 16 strip + 4 s .. + 3. A strip is one 16-byte vector: the broadcast kernels read
// it on SSE4.1, and AVX2 and AVX-512 refuse it (half or a quarter of their vector).
#pragma once
#include "layouts/dsl.hpp"
#include "layouts/registry.hpp"

namespace ternlab::test_layouts {

struct T2r4 {
  static constexpr LayoutSpec spec{
      .name = "t2r4",
      .summary = "test-only: row-interleaved, 4 rows, 32-bit lane j = row j, slot s of a 16-byte strip = 4 consecutive weights",
      .rows = 4,
      .code = Code::two_bit,
      .scales = {.offset = 0, .row_stride = 2},
      .pieces = pieces(Piece{.row = modes(bytes("lane", 4, 4)),
                             .k = modes(bytes("b", 4, 1), slots("s", 4, 1), bytes("strip", 8, 16)),
                             .byte_base = 8}),
  };
};
TERNLAB_REGISTER_LAYOUT(T2r4);

}  // namespace ternlab::test_layouts
