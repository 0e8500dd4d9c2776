// Must not compile: a byte stride of 0 stacking every weight on 4 slots breaks the rule "two weights share one (byte, slot): placement is not injective".
// The build test (tests/CMakeLists.txt) checks that the compiler's first error states it.
// expect: invalid layout declaration: two weights share one (byte, slot): placement is not injective
#include "layouts/registry.hpp"

struct Broken {
  static constexpr ternlab::LayoutSpec spec{
      .name = "broken",
      .summary = "a byte stride of 0 stacking every weight on 4 slots",
      .rows = 1,
      .k = 128,
      .code = ternlab::Code::two_bit,
      .scales = {.offset = 0, .row_stride = 2},
      .pieces = ternlab::pieces(ternlab::Piece{.row = ternlab::modes(ternlab::bytes("r", 1, 0)),
                                              .k = ternlab::modes(ternlab::slots("s", 4, 1), ternlab::bytes("b", 32, 0)),
                                              .byte_base = 2}),
  };
};
TERNLAB_REGISTER_LAYOUT(Broken);
