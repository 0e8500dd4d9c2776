// Must not compile: k modes that cover 64 of 128 weights breaks the rule "a (row, k) of the block is covered by no piece".
// The build test (tests/CMakeLists.txt) checks that the compiler's first error states it.
// expect: invalid layout declaration: a (row, k) of the block is covered by no piece
#include "layouts/registry.hpp"

struct Broken {
  static constexpr ternlab::LayoutSpec spec{
      .name = "broken",
      .summary = "k modes that cover 64 of 128 weights",
      .rows = 1,
      .k = 128,
      .code = ternlab::Code::two_bit,
      .scales = {.offset = 0, .row_stride = 2},
      .pieces = ternlab::pieces(ternlab::Piece{.row = ternlab::modes(ternlab::bytes("r", 1, 0)),
                                              .k = ternlab::modes(ternlab::slots("s", 4, 1), ternlab::bytes("b", 16, 1)),
                                              .byte_base = 2}),
  };
};
TERNLAB_REGISTER_LAYOUT(Broken);
