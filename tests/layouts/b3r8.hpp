// A layout that exists only in tests: b3r with eight rows (224 bytes). The DSL admits it as base-3
// row-interleaved; the AVX-512 base-3 build reads sixteen rows a vector and refuses it, naming why,
// so it runs on the permute fallback.
#pragma once
#include "layouts/b3r.hpp"
#include "layouts/dsl.hpp"
#include "layouts/registry.hpp"

namespace ternlab::test_layouts {

struct B3r8 {
  static constexpr LayoutSpec spec{
      .name = "b3r8",
      .summary = "test-only: b3r with 8 rows",
      .rows = 8,
      .code = Code::base3_banded,
      .scales = {.offset = 208, .row_stride = 2},
      .pieces = pieces(Piece{.row = modes(bytes("lane", 8, 4)),
                             .k = modes(bytes("b", 4, 1), slots("n", 5, 1), bytes("strip", 6, 32)),
                             .byte_base = 0},
                       Piece{.k_begin = 120,
                             .row = modes(bytes("lane", 8, 2)),
                             .k = modes(bytes("b", 2, 1), slots("n", 4, 1)),
                             .byte_base = 192}),
  };
};
TERNLAB_REGISTER_LAYOUT(B3r8);

// b3r in ggml's ceil(256 q / 243) byte (Code::base3): the same geometry, admitted as base-3
// row-interleaved, but the AVX-512 base-3 build reads banded bytes and refuses it, naming why, so
// it runs on the permute fallback, which reads both codes.
struct B3rCeil {
  static constexpr LayoutSpec spec = [] {
    LayoutSpec s = layouts::B3r::spec;
    s.name = "b3r-ceil";
    s.summary = "test-only: b3r with ceil(256 q / 243) bytes";
    s.code = Code::base3;
    return s;
  }();
};
TERNLAB_REGISTER_LAYOUT(B3rCeil);

// b3r with its tail's digits in the other order (byte b digit n: weight 120 + 4 b + n): no longer
// two consecutive weights a digit, so not base-3 row-interleaved.
struct B3rTailAcross {
  static constexpr LayoutSpec spec{
      .name = "b3r-tail-across",
      .summary = "test-only: b3r whose tail bytes hold consecutive weights in their digits",
      .rows = 16,
      .code = Code::base3_banded,
      .scales = {.offset = 416, .row_stride = 2},
      .pieces = pieces(Piece{.row = modes(bytes("lane", 16, 4)),
                             .k = modes(bytes("b", 4, 1), slots("n", 5, 1), bytes("strip", 6, 64)),
                             .byte_base = 0},
                       Piece{.k_begin = 120,
                             .row = modes(bytes("lane", 16, 2)),
                             .k = modes(slots("n", 4, 1), bytes("b", 2, 1)),
                             .byte_base = 384}),
  };
};
TERNLAB_REGISTER_LAYOUT(B3rTailAcross);

}  // namespace ternlab::test_layouts
