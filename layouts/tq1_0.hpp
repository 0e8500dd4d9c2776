// TQ1_0 (GGUF type 34): ggml's base-3 block, one row x 256 weights in 54 bytes (1.6875 bits). Trits
// t = w + 1, five per byte, digit 0 most significant, byte = ceil(256 q / 243): five digit planes
// over qs[0..31] (weights 0-159), five over qs[32..47] (160-239), four over qh[0..3] (240-255);
// the fp16 scale is LAST (byte 52) (/work/shared/docs/peer-formats-spec.md section 3).
#pragma once
#include "layouts/dsl.hpp"
#include "layouts/registry.hpp"

namespace ternlab::layouts {

struct Tq1_0 {
  static constexpr LayoutSpec spec{
      .name = "tq1_0",
      .summary = "ggml TQ1_0 (GGUF type 34): base-3, 256 weights, digit planes over 32, 16 and 4 bytes, scale last",
      .rows = 1,
      .k = 256,
      .code = Code::base3,
      .scales = {.offset = 52},
      .pieces = pieces(Piece{.k_begin = 0,
                             .row = modes(bytes("row", 1, 0)),
                             .k = modes(bytes("m", 32, 1), slots("n", 5, 1)),
                             .byte_base = 0},
                       Piece{.k_begin = 160,
                             .row = modes(bytes("row", 1, 0)),
                             .k = modes(bytes("m", 16, 1), slots("n", 5, 1)),
                             .byte_base = 32},
                       Piece{.k_begin = 240,
                             .row = modes(bytes("row", 1, 0)),
                             .k = modes(bytes("h", 4, 1), slots("n", 4, 1)),
                             .byte_base = 48}),
  };
  static constexpr int gguf_type = 34;
};
TERNLAB_REGISTER_LAYOUT(Tq1_0);

}  // namespace ternlab::layouts
