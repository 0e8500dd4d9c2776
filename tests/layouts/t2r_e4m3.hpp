// A layout that exists only in tests: t2r with one-byte fp8 e4m3 scales (528 bytes), so the
// broadcast strategy decodes its scales a block at a time into float lanes.
#pragma once
#include "layouts/dsl.hpp"
#include "layouts/registry.hpp"

namespace ternlab::test_layouts {

struct T2rE4m3 {
  static constexpr LayoutSpec spec{
      .name = "t2r-e4m3",
      .summary = "test-only: t2r with fp8 e4m3 scales",
      .rows = 16,
      .code = Code::two_bit,
      .scales = {.offset = 0, .row_stride = 1, .format = ScaleFormat::e4m3},
      .pieces = pieces(Piece{.row = modes(bytes("lane", 16, 4)),
                             .k = modes(bytes("b", 4, 1), slots("s", 4, 1), bytes("strip", 8, 64)),
                             .byte_base = 16}),
  };
};
TERNLAB_REGISTER_LAYOUT(T2rE4m3);

}  // namespace ternlab::test_layouts
