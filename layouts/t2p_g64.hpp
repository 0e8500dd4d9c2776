// t2p-g64: t2p's row pairs with one fp16 scale per 64 weights (two per row per block), a lossy
// variant for finer scales: 4 rows x 128 weights in 144 bytes (2.25 bits). Row r's scale of
// weights 64 g .. 64 g + 63 sits at byte 2 r + 8 g; the weights follow from byte 16 as in t2p.
// A 128-weight scale splits into two equal 64-weight ones exactly.
#pragma once
#include "layouts/dsl.hpp"
#include "layouts/registry.hpp"

namespace ternlab::layouts {

struct T2pG64 {
  static constexpr LayoutSpec spec{
      .name = "t2p-g64",
      .summary = "t2p with one scale per 64 weights (2 per row per block), scales first",
      .rows = 4,
      .code = Code::two_bit,
      .scales = {.offset = 0, .row_stride = 2, .group = 64, .group_stride = 8},
      .pieces = pieces(Piece{.row = modes(bytes("half", 2, 8), bytes("pair", 2, 64)),
                             .k = modes(bytes("kk", 8, 1), slots("s", 4, 1), bytes("word", 4, 16)),
                             .byte_base = 16}),
  };
};
TERNLAB_REGISTER_LAYOUT(T2pG64);

}  // namespace ternlab::layouts
