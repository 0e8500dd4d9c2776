// A layout that exists only in tests: t2p with its four scales after the payload (bytes 128-135),
// so the payload extent must come from where the weights land, not from where the scales end.
#pragma once
#include "layouts/dsl.hpp"
#include "layouts/registry.hpp"

namespace ternlab::test_layouts {

struct T2pTail {
  static constexpr LayoutSpec spec{
      .name = "t2p-tail",
      .summary = "test-only: t2p with the scales after the payload",
      .rows = 4,
      .code = Code::two_bit,
      .scales = {.offset = 128, .row_stride = 2},
      .pieces = pieces(Piece{.row = modes(bytes("half", 2, 8), bytes("pair", 2, 64)),
                             .k = modes(bytes("kk", 8, 1), slots("s", 4, 1), bytes("word", 4, 16)),
                             .byte_base = 0}),
  };
};
TERNLAB_REGISTER_LAYOUT(T2pTail);

}  // namespace ternlab::test_layouts
