// A layout that exists only in tests: t2p widened to row octets (8 rows x 128 weights, 272 bytes =
// 8 PQ2_0 blocks). This file is the whole cost of adding a layout: the DSL derives its packer,
// unpacker, kernel plan and strategies, and every registry-driven test and tool picks it up.
#pragma once
#include "layouts/dsl.hpp"
#include "layouts/registry.hpp"

namespace ternlab::test_layouts {

struct T2p8 {
  static constexpr LayoutSpec spec{
      .name = "t2p8",
      .summary = "test-only: t2p with 8 rows per block (4 row pairs)",
      .rows = 8,
      .code = Code::two_bit,
      .scales = {.offset = 0, .row_stride = 2},
      .pieces = pieces(Piece{.row = modes(bytes("half", 2, 8), bytes("pair", 4, 64)),
                             .k = modes(bytes("kk", 8, 1), slots("s", 4, 1), bytes("word", 4, 16)),
                             .byte_base = 16}),
  };
};
TERNLAB_REGISTER_LAYOUT(T2p8);

}  // namespace ternlab::test_layouts
