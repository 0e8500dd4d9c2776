// A block's row scales decoded to floats, whatever their format, for the register epilogues of the
// slot-mask and broadcast strategies (layouts whose scales are not fp16 lanes in place).
//
// Include only from an ISA translation unit (after its #pragma GCC target): fp16 goes through the
// policy's scalar conversion.
#pragma once

#include <cstdint>

#include "layouts/scale_format.hpp"

namespace ternlab {

// A block's scale as float for policy P: fp16 through the policy's own conversion (F16C / fcvt,
// the same values as decode_scale), every other format through decode_scale, so that every
// strategy's epilogue reads scales one way. Defined here, below the ISA translation unit's target
// pragma: compiled for the baseline target it could not inline P::fp16, and the F16C conversion
// became a call in the per-row loops.
template <class P>
[[gnu::always_inline]] inline float block_scale(ScaleFormat f, const std::uint8_t* p) {
  return f == ScaleFormat::fp16 ? P::fp16(p) : decode_scale(f, p);
}

// fma(a, b, c) rounded once, for policy P: the policy's own where it has one (a target without an
// FMA instruction, where __builtin_fmaf would be a libm call in the loop), else the compiler's.
template <class P>
[[gnu::always_inline]] inline float scalar_fma(float a, float b, float c) {
  if constexpr (requires { P::fmaf(a, b, c); })
    return P::fmaf(a, b, c);
  else
    return __builtin_fmaf(a, b, c);
}

}  // namespace ternlab

namespace ternlab::strategies {

// One switch on the format per block, not per scale, and e4m3 through its float table: an
// out-of-line decode call inside a vector loop would make every vector register caller-saved.
// Exact: every format's values are floats.
struct BlockScaleDecoder {
  ScaleFormat format;
  const float* e4m3;
  explicit BlockScaleDecoder(ScaleFormat f)
      : format(f), e4m3(f == ScaleFormat::e4m3 ? e4m3_float_table() : nullptr) {}

  // Rows [0, N) of the block at blk into d, row r's scale at blk + offset(r).
  template <class P, int N, class Offset>
  void decode(const std::uint8_t* blk, Offset offset, float* d) const {
    switch (format) {
      case ScaleFormat::fp16:
        for (int r = 0; r < N; ++r) d[r] = P::fp16(blk + offset(r));
        break;
      case ScaleFormat::bf16:
        for (int r = 0; r < N; ++r) d[r] = decode_bf16(blk + offset(r));
        break;
      case ScaleFormat::e4m3:
        for (int r = 0; r < N; ++r) d[r] = e4m3[blk[offset(r)]];
        break;
      case ScaleFormat::e8m0:
        for (int r = 0; r < N; ++r) d[r] = decode_e8m0(blk[offset(r)]);
        break;
      case ScaleFormat::fp32:
        for (int r = 0; r < N; ++r) d[r] = decode_fp32(blk + offset(r));
        break;
    }
  }
};

}  // namespace ternlab::strategies
