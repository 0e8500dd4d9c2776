// T2W, "wide words": the x86-native cousin of t2p (four rows x 128 weights in 136 bytes). t2p's
// 16-byte words suit NEON; on x86 a row pair there spans 8-byte halves, so every slot needs dup8
// activations. Here each row's 128 weights fill one 32-byte word, slot s holding the 32 consecutive
// weights 32s .. 32s+31, and a row pair fills 64 bytes:
//   - AVX2 reads one row per vector, against plain (natural-order) activations;
//   - AVX-512 reads a row pair per 64-byte vector, its activation a 32-byte chunk in both halves;
//   - NEON reads half a row per 16-byte word, like t2x4.
// Everything else - packer, unpacker, kernel plans, kernels on every ISA - is derived.
#pragma once
#include "layouts/dsl.hpp"
#include "layouts/registry.hpp"

namespace ternlab::layouts {

struct T2w {
  static constexpr LayoutSpec spec{
      .name = "t2w",
      .summary = "x86 wide words: each row's 128 weights in one 32-byte word, slot s = 32 consecutive weights",
      .rows = 4,
      .code = Code::two_bit,
      .scales = {.offset = 0, .row_stride = 2},
      .pieces = pieces(Piece{.row = modes(bytes("r", 4, 32)),
                             .k = modes(bytes("j", 32, 1), slots("s", 4, 1)),
                             .byte_base = 8}),
  };
};
TERNLAB_REGISTER_LAYOUT(T2w);

}  // namespace ternlab::layouts
