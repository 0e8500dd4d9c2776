// A layout that exists only in tests: row-mixing words. Each 16-byte word holds 4 weights of each of
// 4 rows per slot, byte-interleaved (byte 4 b + r of word w holds row r, weights 16 w + 4 s + b in
// slot s), so no 4-byte dot4 lane is one row's until the bytes are permuted. No richer strategy
// admits it; the permute strategy sorts each word's bytes by row (one pshufb / tbl per slot).
#pragma once
#include "layouts/dsl.hpp"
#include "layouts/registry.hpp"

namespace ternlab::test_layouts {

struct T2m {
  static constexpr LayoutSpec spec{
      .name = "t2m",
      .summary = "test-only: row-mixing words, 4 weights of each of 4 rows per slot, bytes interleaved by row",
      .rows = 4,
      .code = Code::two_bit,
      .scales = {.offset = 0, .row_stride = 2},
      .pieces = pieces(Piece{.row = modes(bytes("r", 4, 1)),
                             .k = modes(bytes("b", 4, 4), slots("s", 4, 1), bytes("word", 8, 16)),
                             .byte_base = 8}),
  };
};
TERNLAB_REGISTER_LAYOUT(T2m);

}  // namespace ternlab::test_layouts
