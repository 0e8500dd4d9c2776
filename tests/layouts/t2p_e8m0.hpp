// A layout that exists only in tests: t2p with one-byte e8m0 (power-of-two) scales placed after
// the payload (132 bytes).
#pragma once
#include "layouts/dsl.hpp"
#include "layouts/registry.hpp"

namespace ternlab::test_layouts {

struct T2pE8m0 {
  static constexpr LayoutSpec spec{
      .name = "t2p-e8m0",
      .summary = "test-only: t2p with e8m0 power-of-two scales, last",
      .rows = 4,
      .code = Code::two_bit,
      .scales = {.offset = 128, .row_stride = 1, .format = ScaleFormat::e8m0},
      .pieces = pieces(Piece{.row = modes(bytes("half", 2, 8), bytes("pair", 2, 64)),
                             .k = modes(bytes("kk", 8, 1), slots("s", 4, 1), bytes("word", 4, 16)),
                             .byte_base = 0}),
  };
};
TERNLAB_REGISTER_LAYOUT(T2pE8m0);

}  // namespace ternlab::test_layouts
