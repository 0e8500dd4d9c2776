// I2_S: BitNet's x86 (ACT_PARALLEL) 2-bit layout, 128-weight groups of 32 bytes (2 bits per weight):
// byte m of a group holds weights m (bits 7:6), m + 32 (5:4), m + 64 (3:2), m + 96 (1:0); code
// u = w + 1. One fp32 scale for the whole tensor, in the first 4 bytes of a 32-byte tail after the
// codes (/work/shared/docs/peer-formats-spec.md section 4.2). Its GGUF type id (36 in BitNet's
// fork) clashes with ggml's, so none is declared.
#pragma once
#include "layouts/dsl.hpp"
#include "layouts/registry.hpp"

namespace ternlab::layouts {

struct I2_s {
  static constexpr LayoutSpec spec{
      .name = "i2_s",
      .summary = "BitNet I2_S (x86): byte m of a 128-group holds k = 32s + m in field 3 - s; one fp32 scale per tensor",
      .rows = 1,
      .code = Code::two_bit,
      .scales = {.offset = 0, .format = ScaleFormat::fp32, .per_tensor = true, .tail_bytes = 32},
      .pieces = pieces(Piece{.row = modes(bytes("row", 1, 0)),
                             .k = modes(bytes("m", 32, 1), slots("s", 4, -1)),
                             .byte_base = 0,
                             .slot_base = 3}),
  };
};
TERNLAB_REGISTER_LAYOUT(I2_s);

}  // namespace ternlab::layouts
