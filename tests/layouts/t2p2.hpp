// A layout that exists only in tests: t2p cut to one row pair (2 rows x 128 weights, 68 bytes).
// Its slot plans have shapes no stock layout has (AVX2: one group of 2 vectors; AVX-512: a single
// vector; NEON: one group of 4 words), so it checks that kernels exist for every shape the plan
// builder can produce, not only for the shapes someone listed.
#pragma once
#include "layouts/dsl.hpp"
#include "layouts/registry.hpp"

namespace ternlab::test_layouts {

struct T2p2 {
  static constexpr LayoutSpec spec{
      .name = "t2p2",
      .summary = "test-only: t2p with 2 rows per block (one row pair)",
      .rows = 2,
      .code = Code::two_bit,
      .scales = {.offset = 0, .row_stride = 2},
      .pieces = pieces(Piece{.row = modes(bytes("half", 2, 8)),
                             .k = modes(bytes("kk", 8, 1), slots("s", 4, 1), bytes("word", 4, 16)),
                             .byte_base = 4}),
  };
};
TERNLAB_REGISTER_LAYOUT(T2p2);

}  // namespace ternlab::test_layouts
