// A layout that exists only in tests: t2r32 with one-byte fp8 e4m3 scales (1056 bytes), so a
// 32-row block's scales are decoded before its float end (the tile gemm's two 16-row units of a
// row group share them).
#pragma once
#include "layouts/dsl.hpp"
#include "layouts/registry.hpp"

namespace ternlab::test_layouts {

struct T2r32E4m3 {
  static constexpr LayoutSpec spec{
      .name = "t2r32-e4m3",
      .summary = "test-only: t2r32 with fp8 e4m3 scales",
      .rows = 32,
      .code = Code::two_bit,
      .scales = {.offset = 0, .row_stride = 1, .format = ScaleFormat::e4m3},
      .pieces = pieces(Piece{.row = modes(bytes("lane", 32, 4)),
                             .k = modes(bytes("b", 4, 1), slots("s", 4, 1), bytes("strip", 8, 128)),
                             .byte_base = 32}),
  };
};
TERNLAB_REGISTER_LAYOUT(T2r32E4m3);

}  // namespace ternlab::test_layouts
