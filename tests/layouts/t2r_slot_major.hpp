// A layout that exists only in tests: t2r with its slots in another k order and its scales after
// the payload, spaced 3 bytes apart. Slot s of every strip holds weights 32 s + 4 strip .. + 3 (the
// order BitNet's I2_S gives its 2-bit fields), so the broadcast kernels read permuted activations;
// the scales are neither first nor contiguous, so they take the decoding path.
#pragma once
#include "layouts/dsl.hpp"
#include "layouts/registry.hpp"

namespace ternlab::test_layouts {

struct T2rSlotMajor {
  static constexpr LayoutSpec spec{
      .name = "t2r-slot-major",
      .summary = "test-only: t2r with slot-major k order and spaced scales after the payload",
      .rows = 16,
      .code = Code::two_bit,
      .scales = {.offset = 512, .row_stride = 3},
      .pieces = pieces(Piece{.row = modes(bytes("lane", 16, 4)),
                             .k = modes(bytes("b", 4, 1), bytes("strip", 8, 64), slots("s", 4, 1)),
                             .byte_base = 0}),
  };
};
TERNLAB_REGISTER_LAYOUT(T2rSlotMajor);

}  // namespace ternlab::test_layouts
