// A layout that exists only in tests: t2r with 32 rows. 32 rows x 128 weights in 1088 bytes, past
// the 2048-cell and 1024-byte block the DSL once capped: eight 128-byte strips, the 32-bit lane j of
// a strip row j's four consecutive weights in slot s. A strip is two AVX-512 vectors, four AVX2
// and eight SSE4.1 ones, more than a pass of the broadcast kernels holds on the 16-register
// targets: their passes end fewer rows than the block has.
#pragma once
#include "layouts/dsl.hpp"
#include "layouts/registry.hpp"

namespace ternlab::test_layouts {

struct T2r32 {
  static constexpr LayoutSpec spec{
      .name = "t2r32",
      .summary = "test-only: row-interleaved, 32 rows, 32-bit lane j = row j, slot s of a 128-byte strip = 4 consecutive weights",
      .rows = 32,
      .code = Code::two_bit,
      .scales = {.offset = 0, .row_stride = 2},
      .pieces = pieces(Piece{.row = modes(bytes("lane", 32, 4)),
                             .k = modes(bytes("b", 4, 1), slots("s", 4, 1), bytes("strip", 8, 128)),
                             .byte_base = 64}),
  };
};
TERNLAB_REGISTER_LAYOUT(T2r32);

}  // namespace ternlab::test_layouts
