// A layout that exists only in tests: t2r with bf16 scales (544 bytes, like t2r), which fp16 lanes
// cannot hold, so the broadcast strategy decodes its scales a block at a time into float lanes.
#pragma once
#include "layouts/dsl.hpp"
#include "layouts/registry.hpp"

namespace ternlab::test_layouts {

struct T2rBf16 {
  static constexpr LayoutSpec spec{
      .name = "t2r-bf16",
      .summary = "test-only: t2r with bf16 scales",
      .rows = 16,
      .code = Code::two_bit,
      .scales = {.offset = 0, .row_stride = 2, .format = ScaleFormat::bf16},
      .pieces = pieces(Piece{.row = modes(bytes("lane", 16, 4)),
                             .k = modes(bytes("b", 4, 1), slots("s", 4, 1), bytes("strip", 8, 64)),
                             .byte_base = 32}),
  };
};
TERNLAB_REGISTER_LAYOUT(T2rBf16);

}  // namespace ternlab::test_layouts
