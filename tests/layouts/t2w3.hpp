// A layout that exists only in tests: t2w with 3 rows per block (102 bytes). An odd row count gives
// AVX2 three one-vector groups and NEON three groups of two words; its 96 payload bytes are not a
// whole number of 64-byte vectors, so AVX-512 has no slot-mask kernel and must say why.
#pragma once
#include "layouts/dsl.hpp"
#include "layouts/registry.hpp"

namespace ternlab::test_layouts {

struct T2w3 {
  static constexpr LayoutSpec spec{
      .name = "t2w3",
      .summary = "test-only: t2w with 3 rows per block",
      .rows = 3,
      .code = Code::two_bit,
      .scales = {.offset = 0, .row_stride = 2},
      .pieces = pieces(Piece{.row = modes(bytes("r", 3, 32)),
                             .k = modes(bytes("j", 32, 1), slots("s", 4, 1)),
                             .byte_base = 6}),
  };
};
TERNLAB_REGISTER_LAYOUT(T2w3);

}  // namespace ternlab::test_layouts
