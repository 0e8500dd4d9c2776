// Must not compile: 64 rows x 128 weights breaks the rule "block too large: rows * k must be <= 4096".
// The build test (tests/CMakeLists.txt) checks that the compiler's first error states it.
// expect: invalid layout declaration: block too large: rows * k must be <= 4096
#include "layouts/registry.hpp"

struct Broken {
  static constexpr ternlab::LayoutSpec spec{
      .name = "broken",
      .summary = "64 rows x 128 weights",
      .rows = 64,
      .k = 128,
      .code = ternlab::Code::two_bit,
      .scales = {.offset = 0, .row_stride = 2},
      .pieces = ternlab::pieces(ternlab::Piece{.row = ternlab::modes(ternlab::bytes("r", 64, 32)),
                                              .k = ternlab::modes(ternlab::slots("s", 4, 1), ternlab::bytes("b", 32, 1)),
                                              .byte_base = 128}),
  };
};
TERNLAB_REGISTER_LAYOUT(Broken);
