// A layout that exists only in tests: t2p with bf16 scales (same geometry, 136 bytes). A scale
// format is one field of the scale site; packers, kernels and the oracle read it through the one
// decoder (layouts/scale_format.hpp).
#pragma once
#include "layouts/dsl.hpp"
#include "layouts/registry.hpp"

namespace ternlab::test_layouts {

struct T2pBf16 {
  static constexpr LayoutSpec spec{
      .name = "t2p-bf16",
      .summary = "test-only: t2p with bf16 scales",
      .rows = 4,
      .code = Code::two_bit,
      .scales = {.offset = 0, .row_stride = 2, .format = ScaleFormat::bf16},
      .pieces = pieces(Piece{.row = modes(bytes("half", 2, 8), bytes("pair", 2, 64)),
                             .k = modes(bytes("kk", 8, 1), slots("s", 4, 1), bytes("word", 4, 16)),
                             .byte_base = 8}),
  };
};
TERNLAB_REGISTER_LAYOUT(T2pBf16);

}  // namespace ternlab::test_layouts
