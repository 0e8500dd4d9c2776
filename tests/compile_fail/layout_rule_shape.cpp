// Must not compile: k is not a multiple of 8 breaks the rule "rows must be >= 1 and k a positive multiple of 8".
// The build test (tests/CMakeLists.txt) checks that the compiler's first error states it.
// expect: invalid layout declaration: rows must be >= 1 and k a positive multiple of 8
#include "layouts/registry.hpp"

struct Broken {
  static constexpr ternlab::LayoutSpec spec{
      .name = "broken",
      .summary = "k is not a multiple of 8",
      .rows = 1,
      .k = 12,
      .code = ternlab::Code::two_bit,
      .scales = {.offset = 0, .row_stride = 2},
      .pieces = ternlab::pieces(ternlab::Piece{.row = ternlab::modes(ternlab::bytes("r", 1, 0)),
                                              .k = ternlab::modes(ternlab::slots("s", 4, 1), ternlab::bytes("b", 3, 1)),
                                              .byte_base = 2}),
  };
};
TERNLAB_REGISTER_LAYOUT(Broken);
