// Must not compile: a 2-row block whose piece spans 1 row breaks the rule "every piece must span all rows of the block".
// The build test (tests/CMakeLists.txt) checks that the compiler's first error states it.
// expect: invalid layout declaration: every piece must span all rows of the block
#include "layouts/registry.hpp"

struct Broken {
  static constexpr ternlab::LayoutSpec spec{
      .name = "broken",
      .summary = "a 2-row block whose piece spans 1 row",
      .rows = 2,
      .k = 128,
      .code = ternlab::Code::two_bit,
      .scales = {.offset = 0, .row_stride = 2},
      .pieces = ternlab::pieces(ternlab::Piece{.row = ternlab::modes(ternlab::bytes("r", 1, 0)),
                                              .k = ternlab::modes(ternlab::slots("s", 4, 1), ternlab::bytes("b", 32, 1)),
                                              .byte_base = 4}),
  };
};
TERNLAB_REGISTER_LAYOUT(Broken);
