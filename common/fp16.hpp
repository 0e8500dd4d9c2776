// IEEE binary16 <-> float. Conversions go through Eigen::half (round to nearest even, as ggml's
// software conversion); hot loops use the 64 Ki-entry decode table.
#pragma once
#include <cmath>
#include <cstdint>

namespace ternlab {

float fp16_to_float_slow(std::uint16_t h);
std::uint16_t float_to_fp16(float f);

// Table of all 65536 fp16 values as float.
const float* fp16_table();

inline float fp16_to_float(std::uint16_t h) { return fp16_table()[h]; }

inline bool fp16_is_finite(std::uint16_t h) { return (h & 0x7c00u) != 0x7c00u; }

}  // namespace ternlab
