// T2x4 (ciot): four rows x 128 weights in 136 bytes (same size as four PQ2_0 blocks). Scales of the
// four rows first; then for each 64-weight group g and row r one 16-byte word whose slot s holds the
// 16 consecutive weights 64g + 16s .. +15 of row r.
#pragma once
#include "layouts/dsl.hpp"
#include "layouts/registry.hpp"

namespace ternlab::layouts {

struct T2x4 {
  static constexpr LayoutSpec spec{
      .name = "t2x4",
      .summary = "ciot T2x4: 4 rows; each 16-byte word = one row, slot s = 16 consecutive weights",
      .rows = 4,
      .code = Code::two_bit,
      .scales = {.offset = 0, .row_stride = 2},
      .pieces = pieces(Piece{.row = modes(bytes("r", 4, 16)),
                             .k = modes(bytes("j", 16, 1), slots("s", 4, 1), bytes("g", 2, 64)),
                             .byte_base = 8}),
  };
};
TERNLAB_REGISTER_LAYOUT(T2x4);

}  // namespace ternlab::layouts
