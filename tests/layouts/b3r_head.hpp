// A layout that exists only in tests: b3r with its sixteen fp16 scales before the payload instead
// of after it. The base-3 broadcast build reads the scales' run wherever it sits, so where the
// scales are must not change which kernel reads the layout (a layout search found this member
// read only by the permute fallback: docs/notebook/2026-12-05-zen4-explore.md).
#pragma once
#include "layouts/dsl.hpp"
#include "layouts/registry.hpp"

namespace ternlab::test_layouts {

struct B3rHead {
  static constexpr LayoutSpec spec{
      .name = "b3r-head",
      .summary = "test-only: b3r with the scales before the payload",
      .rows = 16,
      .code = Code::base3_banded,
      .scales = {.offset = 0, .row_stride = 2},
      .pieces = pieces(Piece{.row = modes(bytes("lane", 16, 4)),
                             .k = modes(bytes("b", 4, 1), slots("n", 5, 1), bytes("strip", 6, 64)),
                             .byte_base = 32},
                       Piece{.k_begin = 120,
                             .row = modes(bytes("lane", 16, 2)),
                             .k = modes(bytes("b", 2, 1), slots("n", 4, 1)),
                             .byte_base = 416}),
  };
};
TERNLAB_REGISTER_LAYOUT(B3rHead);

}  // namespace ternlab::test_layouts
