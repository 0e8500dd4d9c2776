// Must not compile: two rows whose scales are one byte apart breaks the rule "scales overlap: row and group strides must give every scale its own bytes".
// The build test (tests/CMakeLists.txt) checks that the compiler's first error states it.
// expect: invalid layout declaration: scales overlap: row and group strides must give every scale its own bytes
#include "layouts/registry.hpp"

struct Broken {
  static constexpr ternlab::LayoutSpec spec{
      .name = "broken",
      .summary = "two rows whose scales are one byte apart",
      .rows = 2,
      .k = 128,
      .code = ternlab::Code::two_bit,
      .scales = {.offset = 0, .row_stride = 1},
      .pieces = ternlab::pieces(ternlab::Piece{.row = ternlab::modes(ternlab::bytes("r", 2, 32)),
                                              .k = ternlab::modes(ternlab::slots("s", 4, 1), ternlab::bytes("b", 32, 1)),
                                              .byte_base = 4}),
  };
};
TERNLAB_REGISTER_LAYOUT(Broken);
