// Must not compile: a 4-byte per-tensor scale in a 2-byte tail breaks the rule "a per-tensor scale must lie inside its tail_bytes".
// The build test (tests/CMakeLists.txt) checks that the compiler's first error states it.
// expect: invalid layout declaration: a per-tensor scale must lie inside its tail_bytes
#include "layouts/registry.hpp"

struct Broken {
  static constexpr ternlab::LayoutSpec spec{
      .name = "broken",
      .summary = "fp32 per-tensor scale, 2-byte tail",
      .rows = 1,
      .code = ternlab::Code::two_bit,
      .scales = {.offset = 0, .format = ternlab::ScaleFormat::fp32, .per_tensor = true, .tail_bytes = 2},
      .pieces = ternlab::pieces(ternlab::Piece{.row = ternlab::modes(ternlab::bytes("r", 1, 0)),
                                              .k = ternlab::modes(ternlab::slots("s", 4, 1), ternlab::bytes("b", 32, 1)),
                                              .byte_base = 0}),
  };
};
TERNLAB_REGISTER_LAYOUT(Broken);
