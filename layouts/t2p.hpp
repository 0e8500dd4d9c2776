// T2P (ciot), the row-pair layout: four rows x 128 weights in 136 bytes. Each 16-byte word belongs to
// a row pair; in slot s its bytes 0-7 hold 8 consecutive weights of row 2p and bytes 8-15 the same 8
// weights of row 2p+1 (chunk 4 word + s). One AND yields smmla's 2x8 operand, or with duplicated
// activations an sdot giving both rows.
#pragma once
#include "layouts/dsl.hpp"
#include "layouts/registry.hpp"

namespace ternlab::layouts {

struct T2p {
  static constexpr LayoutSpec spec{
      .name = "t2p",
      .summary = "ciot T2P: 4 rows as 2 row pairs; slot s of a word = 8 weights of row a | same 8 of row b",
      .rows = 4,
      .code = Code::two_bit,
      .scales = {.offset = 0, .row_stride = 2},
      .pieces = pieces(Piece{.row = modes(bytes("half", 2, 8), bytes("pair", 2, 64)),
                             .k = modes(bytes("kk", 8, 1), slots("s", 4, 1), bytes("word", 4, 16)),
                             .byte_base = 8}),
  };
};
TERNLAB_REGISTER_LAYOUT(T2p);

}  // namespace ternlab::layouts
