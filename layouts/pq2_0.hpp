// PQ2_0 (GGUF type 142): PrismML's stock 2-bit ternary block, one row x 128 weights in 34 bytes.
// fp16 scale first, then weight k in byte 2 + k/4, bits 2(k%4): the natural order.
#pragma once
#include "layouts/dsl.hpp"
#include "layouts/registry.hpp"

namespace ternlab::layouts {

struct Pq2_0 {
  static constexpr LayoutSpec spec{
      .name = "pq2_0",
      .summary = "stock PQ2_0 (GGUF type 142): one row, scale first, 4 consecutive weights per byte",
      .rows = 1,
      .code = Code::two_bit,
      .scales = {.offset = 0},
      .pieces = pieces(Piece{.row = modes(bytes("row", 1, 0)),
                             .k = modes(slots("j", 4, 1), bytes("b", 32, 1)),
                             .byte_base = 2}),
  };
  static constexpr int gguf_type = 142;
};
TERNLAB_REGISTER_LAYOUT(Pq2_0);

}  // namespace ternlab::layouts
