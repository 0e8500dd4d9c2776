// A layout that exists only in tests: t2r8 with 16-byte lanes in slot-major k order. Eight rows x
// 128 weights; the payload is two 128-byte strips, the 16-byte lane j of each belonging to row j,
// slot s of its sixteen bytes holding weights 32 s + 16 strip .. + 15, so the broadcast kernels
// read permuted activations a 16-byte word at a time (two rows a vector on AVX2, four on AVX-512).
#pragma once
#include "layouts/dsl.hpp"
#include "layouts/registry.hpp"

namespace ternlab::test_layouts {

struct T2r8Lane16 {
  static constexpr LayoutSpec spec{
      .name = "t2r8-lane16",
      .summary = "test-only: row-interleaved, 8 rows, 16-byte lane j = row j, slot-major k order in 128-byte strips",
      .rows = 8,
      .code = Code::two_bit,
      .scales = {.offset = 0, .row_stride = 2},
      .pieces = pieces(Piece{.row = modes(bytes("lane", 8, 16)),
                             .k = modes(bytes("b", 16, 1), bytes("strip", 2, 128), slots("s", 4, 1)),
                             .byte_base = 16}),
  };
};
TERNLAB_REGISTER_LAYOUT(T2r8Lane16);

}  // namespace ternlab::test_layouts
