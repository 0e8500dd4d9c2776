// A layout that exists only in tests: t2r4 with 16-byte lanes and its fp16 scales after the
// payload. Four rows x 128 weights; the payload is two 64-byte strips, the 16-byte lane j of each
// belonging to row j, slot s of its sixteen bytes holding weights 64 strip + 16 s .. + 15: t2x4's
// payload, with the scales at the block's end instead of its start. A strip is four SSE4.1
// vectors, two AVX2 ones and one AVX-512 one, so every x86 broadcast build reads it.
#pragma once
#include "layouts/dsl.hpp"
#include "layouts/registry.hpp"

namespace ternlab::test_layouts {

struct T2r4Lane16 {
  static constexpr LayoutSpec spec{
      .name = "t2r4-lane16",
      .summary = "test-only: row-interleaved, 4 rows, 16-byte lane j = row j, fp16 scales after the payload",
      .rows = 4,
      .code = Code::two_bit,
      .scales = {.offset = 128, .row_stride = 2},
      .pieces = pieces(Piece{.row = modes(bytes("lane", 4, 16)),
                             .k = modes(bytes("b", 16, 1), slots("s", 4, 1), bytes("strip", 2, 64)),
                             .byte_base = 0}),
  };
};
TERNLAB_REGISTER_LAYOUT(T2r4Lane16);

}  // namespace ternlab::test_layouts
