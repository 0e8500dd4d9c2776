// PrismML's stock PQ2_0 NEON kernel (spec 6.1), kept as a faithful baseline arm ("prism-neon"):
// per 32 weights, duplicate the 8 code bytes, spread each byte over 4 lanes with a table lookup,
// shift lane j right by 2j, AND 3, subtract 1, and sdot the natural-order int8 weights with 16
// activations (tbl, ushl, and, sub, sdot per 16 weights); one fma per block, in block order, as
// gemv_reference. Its gemm is the fork's generic one: the gemv once per token, row-group chunk by
// chunk. The unpack strategy (kernels/strategies/unpack/kernels.hpp) is the one-tree path for the layout.
//
// Include only from the dotprod translation unit (kernels/targets/dotprod/kernels.cpp), under its target.
#pragma once

#include <arm_neon.h>

#include <algorithm>
#include <cstdint>

#include "common/error.hpp"
#include "kernels/kernel.hpp"
#include "kernels/kernel_id.hpp"
#include "kernels/strategies/unpack/plan.hpp"

namespace ternlab::baselines {
namespace {

struct PrismNeon {
  static void check(const LayoutInfo& L) {
    if (!natural_two_bit(L))
      fail(kernel_name(Strategy::prism_neon, Isa::dotprod), " kernel cannot run layout '", L.name,
           "': not natural 2-bit order");
    if (L.scale_format() != ScaleFormat::fp16)
      fail(kernel_name(Strategy::prism_neon, Isa::dotprod), " kernel cannot run layout '", L.name,
           "': PrismML's kernel reads fp16 scales");
  }

  static std::int32_t block_dot(const std::uint8_t* codes, const std::int8_t* q8) {
    const uint8x16_t spread_lo = {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3};
    const uint8x16_t spread_hi = {4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7};
    const int8x16_t shifts = {0, -2, -4, -6, 0, -2, -4, -6, 0, -2, -4, -6, 0, -2, -4, -6};
    const auto decode = [&](uint8x16_t c, uint8x16_t spread) {
      return vsubq_s8(vreinterpretq_s8_u8(vandq_u8(vshlq_u8(vqtbl1q_u8(c, spread), shifts), vdupq_n_u8(3))),
                      vdupq_n_s8(1));
    };
    int32x4_t sum = vdupq_n_s32(0);
    for (int k = 0; k < 4; ++k) {
      const uint8x8_t c8 = vld1_u8(codes + 8 * k);
      const uint8x16_t c = vcombine_u8(c8, c8);
      sum = vdotq_s32(sum, decode(c, spread_lo), vld1q_s8(q8 + 32 * k));
      sum = vdotq_s32(sum, decode(c, spread_hi), vld1q_s8(q8 + 32 * k + 16));
    }
    return vaddvq_s32(sum);
  }

  static void gemv(const PackedMatrix& w, const BlockQ8K* x, float* y, std::int64_t g0, std::int64_t g1) {
    const LayoutInfo& L = *w.layout;
    check(L);
    const int payload = L.facts.payload_begin, scale = L.scale_offset(0);
    for (std::int64_t g = g0; g < g1; ++g) {
      float acc = 0.0f;
      for (std::int64_t i = 0; i < w.blocks_per_row(); ++i) {
        const std::uint8_t* blk = w.block(g, i);
        const BlockQ8K& xb = x[i / 2];
        const std::int32_t s = block_dot(blk + payload, xb.qs + 128 * (i % 2));
        __fp16 d;
        __builtin_memcpy(&d, blk + scale, 2);
        acc = __builtin_fmaf(float(s), float(d) * xb.d, acc);
      }
      y[g] = acc;
    }
  }

  // Every token's q8_K row (a Q8KBatch holds them) through the gemv, 32 row groups at a time so a
  // chunk's weights come from cache for all but the first token.
  static void gemm(const PackedMatrix& w, const Q8KBatch& x, float* y, std::int64_t ldy, std::int64_t g0,
                   std::int64_t g1) {
    check(*w.layout);
    constexpr std::int64_t kChunkGroups = 32;
    for (std::int64_t c = g0; c < g1; c += kChunkGroups) {
      const std::int64_t e = std::min(g1, c + kChunkGroups);
      for (std::int64_t t = 0; t < x.tokens; ++t) gemv(w, x.row(t), y + t * ldy, c, e);
    }
  }

  static constexpr KernelFns kFns{&gemv, &gemm, {}};
};

}  // namespace
}  // namespace ternlab::baselines
