// A layout that exists only in tests: t2p split along k into two pieces with the scales between
// them (weights 0-63 of every row in bytes 0-63, scales in 64-71, weights 64-127 in 72-135). Its
// words are found where weights land, so the payload is two runs of words with a gap.
#pragma once
#include "layouts/dsl.hpp"
#include "layouts/registry.hpp"

namespace ternlab::test_layouts {

// Weights k_begin .. k_begin + 63 of all four rows, t2p-ordered, from byte_base on.
constexpr Piece t2p_half_of_k(int k_begin, int byte_base) {
  return Piece{.k_begin = k_begin,
               .row = modes(bytes("half", 2, 8), bytes("pair", 2, 32)),
               .k = modes(bytes("kk", 8, 1), slots("s", 4, 1), bytes("word", 2, 16)),
               .byte_base = byte_base};
}

struct T2pSplit {
  static constexpr LayoutSpec spec{
      .name = "t2p-split",
      .summary = "test-only: t2p in two k pieces with the scales between them",
      .rows = 4,
      .code = Code::two_bit,
      .scales = {.offset = 64, .row_stride = 2},
      .pieces = pieces(t2p_half_of_k(0, 0), t2p_half_of_k(64, 72)),
  };
};
TERNLAB_REGISTER_LAYOUT(T2pSplit);

}  // namespace ternlab::test_layouts
