// The base-3 strategy's plans. What it recognises in a layout: digit-planar base-3 (one row a block;
// every piece is `lanes` consecutive bytes whose digit n holds weights k_begin + n * lanes + j, so
// multiplying the byte vector by 3^n exposes digit n of every lane at once, for consecutive
// weights), as the layout's digit segments; and the 32-weight vector plan its kernels follow.
// Built at run time from the layout's declaration, once per layout.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "kernels/kernel_plan.hpp"

namespace ternlab {

// Byte segments whose digit n holds consecutive weights.
struct DigitSegment {
  int byte_offset = 0;
  int lanes = 0;
  int digits = 0;
  int k_begin = 0;
};

// The layout's segments, one per piece; empty when it is not digit-planar (then why below).
std::span<const DigitSegment> digit_segments(const LayoutInfo& layout);
std::string digit_planar_why_not(const LayoutInfo& layout);

// The base-3 plan (digit-planar layouts) for 32-weight vectors: lane l (16 weights) of vector v
// reads a 16-byte window of the block at window[v][l]; byte e of the vector is window byte
// shuffle[v][e] multiplied by 3^n mod 256 (n = the weight's digit), which brings digit n to the top
// trit, read by the compares (x >= 86) + (x >= 171) (spec 3.4). Weights are in natural k order.
struct Base3Plan {
  std::string why_not;
  int block_bytes = 0;
  int scale_offset = 0;
  ScaleFormat scale_format = ScaleFormat::fp16;
  bool overreads = false;  // some window reaches past the block's end (the last block needs a copy)
  int window[4][2] = {};
  std::uint8_t shuffle[4][32] = {};
  std::uint16_t mul_even[4][16] = {};  // multiplier of byte 2i of vector v, for a 16-bit multiply
  std::uint16_t mul_odd[4][16] = {};   // multiplier of byte 2i+1
};
const Base3Plan& base3_plan(const LayoutInfo& layout);

}  // namespace ternlab
