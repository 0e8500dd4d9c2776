// Block scale formats: how a layout stores each row's scale, and the one decoder every kernel,
// the reference, the oracle's inputs and the model read it through.
//   fp16 - IEEE binary16 (2 bytes), what PQ2_0 / PTQ1_0 files hold;
//   bf16 - the top half of a binary32 (2 bytes): fp32's range, 8 significant bits;
//   e4m3 - OCP FP8 E4M3FN (1 byte): bias 7, max 448, subnormals down to 2^-9, no inf, S.1111.111 NaN;
//   e8m0 - OCP MX scale (1 byte): 2^(e - 127), e in 0..254, no sign, no zero, 0xff NaN;
//   fp32 - IEEE binary32 (4 bytes), BitNet I2_S's one per-tensor scale.
// Encoders round to the nearest representable value, ties to even (for e8m0: to the even
// exponent), in the value domain; e4m3 and e8m0 saturate at their largest finite value, and e8m0
// takes zero to its smallest value 2^-127. Whether that rounding lost anything is for the caller
// to decide: exact packers refuse, the requantising ones report the error (layouts/matrix.hpp).
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string_view>

#include "common/fp16.hpp"

namespace ternlab {

enum class ScaleFormat : std::uint8_t { fp16, bf16, e4m3, e8m0, fp32 };

constexpr int scale_bytes(ScaleFormat f) {
  return f == ScaleFormat::fp32 ? 4 : f == ScaleFormat::fp16 || f == ScaleFormat::bf16 ? 2 : 1;
}

constexpr std::string_view scale_format_name(ScaleFormat f) {
  switch (f) {
    case ScaleFormat::fp16: return "fp16";
    case ScaleFormat::bf16: return "bf16";
    case ScaleFormat::e4m3: return "e4m3";
    case ScaleFormat::e8m0: return "e8m0";
    case ScaleFormat::fp32: return "fp32";
  }
  return "?";
}

// Every formats' values are exact in float (e8m0's 2^-127 as a float subnormal).
// Inline and from the bits: a kernel's per-row loops decode scales through this, and a call there
// would be a call in a hot loop. e4m3 (FN): 0x7f and 0xff are NaN, exponent 0 is subnormal.
inline float decode_e4m3(std::uint8_t b) {
  const std::uint32_t e = (b >> 3) & 15u, m = b & 7u;
  float v = e == 0 ? float(m) * 0x1p-9f : std::bit_cast<float>(((e + 120u) << 23) | (m << 20));
  if ((b & 0x7f) == 0x7f) v = std::numeric_limits<float>::quiet_NaN();
  return b & 0x80 ? -v : v;
}
// The 256 e4m3 codes as floats (decode_e4m3's table), for loops that decode many.
const float* e4m3_float_table();

inline float decode_e8m0(std::uint8_t b) {
  if (b == 0xff) return std::bit_cast<float>(0x7fc00000u);
  return b == 0 ? std::bit_cast<float>(0x00400000u) : std::bit_cast<float>(std::uint32_t(b) << 23);
}

inline float decode_bf16(const std::uint8_t* p) {
  std::uint16_t h;
  std::memcpy(&h, p, 2);
  return std::bit_cast<float>(std::uint32_t(h) << 16);
}
inline float decode_fp32(const std::uint8_t* p) {
  float v;
  std::memcpy(&v, p, 4);
  return v;
}

// The scale stored at p in format f, as float.
inline float decode_scale(ScaleFormat f, const std::uint8_t* p) {
  switch (f) {
    case ScaleFormat::fp16: {
      std::uint16_t h;
      std::memcpy(&h, p, 2);
      return fp16_to_float(h);
    }
    case ScaleFormat::bf16: return decode_bf16(p);
    case ScaleFormat::e4m3: return decode_e4m3(*p);
    case ScaleFormat::e8m0: return decode_e8m0(*p);
    case ScaleFormat::fp32: return decode_fp32(p);
  }
  return 0.0f;
}

// The encoding of the representable value nearest to v (rules above); v must be finite, and for
// e8m0 not negative (it has no sign: the caller reports that as unrepresentable).
struct EncodedScale {
  std::uint8_t bytes[4] = {};
  float value = 0;  // what decode_scale returns for `bytes`
};
EncodedScale encode_scale_nearest(ScaleFormat f, float v);

// True when v is exactly a value of format f (so encode_scale_nearest loses nothing).
bool scale_representable(ScaleFormat f, float v);

}  // namespace ternlab
