// Must not compile: 8 slots in a 2-bit byte breaks the rule "slot index out of range for the code".
// The build test (tests/CMakeLists.txt) checks that the compiler's first error states it.
// expect: invalid layout declaration: slot index out of range for the code
#include "layouts/registry.hpp"

struct Broken {
  static constexpr ternlab::LayoutSpec spec{
      .name = "broken",
      .summary = "8 slots in a 2-bit byte",
      .rows = 1,
      .k = 128,
      .code = ternlab::Code::two_bit,
      .scales = {.offset = 0, .row_stride = 2},
      .pieces = ternlab::pieces(ternlab::Piece{.row = ternlab::modes(ternlab::bytes("r", 1, 0)),
                                              .k = ternlab::modes(ternlab::slots("s", 8, 1), ternlab::bytes("b", 16, 1)),
                                              .byte_base = 2}),
  };
};
TERNLAB_REGISTER_LAYOUT(Broken);
