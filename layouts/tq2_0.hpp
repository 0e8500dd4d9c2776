// TQ2_0 (GGUF type 35): ggml's 2-bit ternary block, one row x 256 weights in 66 bytes (2.0625 bits),
// one fp16 scale per 256 weights, LAST (byte 64). Byte 32 h + m (h = 0, 1) holds weights
// 128 h + m, +32, +64, +96 in bit pairs 1:0, 3:2, 5:4, 7:6; code u = w + 1
// (/work/shared/docs/peer-formats-spec.md section 2.2).
#pragma once
#include "layouts/dsl.hpp"
#include "layouts/registry.hpp"

namespace ternlab::layouts {

struct Tq2_0 {
  static constexpr LayoutSpec spec{
      .name = "tq2_0",
      .summary = "ggml TQ2_0 (GGUF type 35): 256 weights, byte 32h + m holds k = 128h + 32s + m in field s, scale last",
      .rows = 1,
      .k = 256,
      .code = Code::two_bit,
      .scales = {.offset = 64},
      .pieces = pieces(Piece{.row = modes(bytes("row", 1, 0)),
                             .k = modes(bytes("m", 32, 1), slots("s", 4, 1), bytes("h", 2, 32)),
                             .byte_base = 0}),
  };
  static constexpr int gguf_type = 35;
};
TERNLAB_REGISTER_LAYOUT(Tq2_0);

}  // namespace ternlab::layouts
