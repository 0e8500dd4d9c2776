#include "layouts/scale_format.hpp"

#include <array>
#include <cmath>

namespace ternlab {

namespace {

constexpr float kE4m3Max = 448.0f;

// Nearest integer, ties to even (independent of the floating-point environment's rounding mode).
double round_even(double x) {
  const double f = std::floor(x), d = x - f;
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return std::fmod(f, 2.0) == 0 ? f : f + 1;
}

std::uint8_t encode_e4m3(float v) {
  const std::uint8_t sign = std::signbit(v) ? 0x80 : 0;
  double a = std::fabs(double(v));
  if (a >= kE4m3Max) return sign | 0x7e;  // saturating: no inf, and 0x7f is NaN
  if (a < 0x1p-6) {                       // subnormal quantum 2^-9; 8 quanta is the smallest normal
    return std::uint8_t(sign | int(round_even(a * 0x1p9)));
  }
  int e = 0;
  (void)std::frexp(a, &e);  // a = f 2^e, f in [0.5, 1): the leading bit is 2^(e-1)
  --e;
  int q = int(round_even(std::ldexp(a, 3 - e)));  // 8..16 steps of 2^(e-3)
  if (q == 16) q = 8, ++e;
  if (e > 8 || (e == 8 && q > 14)) return sign | 0x7e;
  return std::uint8_t(sign | (e + 7) << 3 | (q - 8));
}

std::uint8_t encode_e8m0(float v) {
  const double a = double(v);
  if (!(a > 0)) return 0;  // zero goes to the smallest value
  int e = 0;
  const double f = 2 * std::frexp(a, &e);  // a = f 2^(e-1), f in [1, 2)
  int x = e - 1;
  if (f > 1.5 || (f == 1.5 && (x + 127) % 2 != 0)) ++x;  // value-domain midpoint 1.5 2^x, ties to even code
  if (x < -127) x = -127;
  if (x > 127) x = 127;
  return std::uint8_t(x + 127);
}

std::uint16_t encode_bf16(float v) {
  const std::uint32_t b = std::bit_cast<std::uint32_t>(v);
  return std::uint16_t((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);  // finite inputs only: no NaN case
}

}  // namespace

const float* e4m3_float_table() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int c = 0; c < 256; ++c) t[std::size_t(c)] = decode_e4m3(std::uint8_t(c));
    return t;
  }();
  return table.data();
}

EncodedScale encode_scale_nearest(ScaleFormat f, float v) {
  EncodedScale out;
  switch (f) {
    case ScaleFormat::fp16: {
      const std::uint16_t h = float_to_fp16(v);
      std::memcpy(out.bytes, &h, 2);
      break;
    }
    case ScaleFormat::bf16: {
      const std::uint16_t h = encode_bf16(v);
      std::memcpy(out.bytes, &h, 2);
      break;
    }
    case ScaleFormat::e4m3: out.bytes[0] = encode_e4m3(v); break;
    case ScaleFormat::e8m0: out.bytes[0] = encode_e8m0(v); break;
    case ScaleFormat::fp32: std::memcpy(out.bytes, &v, 4); break;
  }
  out.value = decode_scale(f, out.bytes);
  return out;
}

bool scale_representable(ScaleFormat f, float v) {
  if (!std::isfinite(v) || (f == ScaleFormat::e8m0 && !(v > 0))) return false;
  const float got = encode_scale_nearest(f, v).value;
  return got == v && std::signbit(got) == std::signbit(v);
}

}  // namespace ternlab
