// Must not compile: a payload starting past byte 2048 breaks the rule "block larger than 2048 bytes".
// The build test (tests/CMakeLists.txt) checks that the compiler's first error states it.
// expect: invalid layout declaration: block larger than 2048 bytes
#include "layouts/registry.hpp"

struct Broken {
  static constexpr ternlab::LayoutSpec spec{
      .name = "broken",
      .summary = "a payload starting past byte 2048",
      .rows = 1,
      .k = 128,
      .code = ternlab::Code::two_bit,
      .scales = {.offset = 0, .row_stride = 2},
      .pieces = ternlab::pieces(ternlab::Piece{.row = ternlab::modes(ternlab::bytes("r", 1, 0)),
                                              .k = ternlab::modes(ternlab::slots("s", 4, 1), ternlab::bytes("b", 32, 1)),
                                              .byte_base = 2100}),
  };
};
TERNLAB_REGISTER_LAYOUT(Broken);
