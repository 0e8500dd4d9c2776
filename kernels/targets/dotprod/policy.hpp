// dot4 on Armv8.2 dotprod: sdot, lane i += bytes 4i..4i+3 (one instruction per 16 bytes), and the
// NEON policies built with it. Include only from a translation unit compiled with +dotprod (see
// kernels/targets/dotprod/kernels.cpp); the policies themselves are in kernels/targets/neon/policy.hpp.
#pragma once

#include <arm_neon.h>

#include "kernels/targets/neon/policy.hpp"

namespace ternlab::isa {

struct Sdot {
  static constexpr const char* name = "dotprod";
  static constexpr Isa kIsa = Isa::dotprod;
  static int32x4_t dot4(int32x4_t acc, int8x16_t a, int8x16_t b) { return vdotq_s32(acc, a, b); }
};

using NeonDotprod = Neon<Sdot>;
using NeonDotprodX2 = NeonX2<Sdot>;

}  // namespace ternlab::isa
