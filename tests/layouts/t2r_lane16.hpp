// A layout that exists only in tests: t2r with 16-byte lanes and its scales after the payload,
// spaced 3 bytes apart. Sixteen rows x 128 weights; the payload is two 256-byte strips, the 16-byte
// lane j of each belonging to row j, slot s of its sixteen bytes holding weights 64 strip + 16 s
// .. + 15. The scales are neither first nor contiguous, so the broadcast kernels take the decoding
// path with 16-byte lanes too.
#pragma once
#include "layouts/dsl.hpp"
#include "layouts/registry.hpp"

namespace ternlab::test_layouts {

struct T2rLane16 {
  static constexpr LayoutSpec spec{
      .name = "t2r-lane16",
      .summary = "test-only: row-interleaved, 16 rows, 16-byte lane j = row j, spaced scales after the payload",
      .rows = 16,
      .code = Code::two_bit,
      .scales = {.offset = 512, .row_stride = 3},
      .pieces = pieces(Piece{.row = modes(bytes("lane", 16, 16)),
                             .k = modes(bytes("b", 16, 1), slots("s", 4, 1), bytes("strip", 2, 256)),
                             .byte_base = 0}),
  };
};
TERNLAB_REGISTER_LAYOUT(T2rLane16);

}  // namespace ternlab::test_layouts
