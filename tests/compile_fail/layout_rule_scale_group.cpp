// Must not compile: a scale group of 96 weights breaks the rule "a declared scale group must be 64, 128 or 256 weights and divide k".
// The build test (tests/CMakeLists.txt) checks that the compiler's first error states it.
// expect: invalid layout declaration: a declared scale group must be 64, 128 or 256 weights and divide k
#include "layouts/registry.hpp"

struct Broken {
  static constexpr ternlab::LayoutSpec spec{
      .name = "broken",
      .summary = "one scale per 96 weights",
      .rows = 1,
      .code = ternlab::Code::two_bit,
      .scales = {.offset = 0, .row_stride = 2, .group = 96, .group_stride = 2},
      .pieces = ternlab::pieces(ternlab::Piece{.row = ternlab::modes(ternlab::bytes("r", 1, 0)),
                                              .k = ternlab::modes(ternlab::slots("s", 4, 1), ternlab::bytes("b", 32, 1)),
                                              .byte_base = 4}),
  };
};
TERNLAB_REGISTER_LAYOUT(Broken);
