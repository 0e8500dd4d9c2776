// The unpack strategy: the stock PQ2_0 x86 kernel as the baseline arm (PrismML's
// ggml_vec_dot_pq2_0_q8_K, spec 6.2 / 6.5), for any NaturalTwoBit layout. Per P::kNaturalWeights
// weights: broadcast the code bytes, shift 64-bit lanes by {0,2,4,6}, AND 3; permute the
// activations into the same order; dot4(codes, Y) and dot4(ones, Y) accumulate in int32 and are
// subtracted once per 128-block. The fork then keeps a vector float accumulator; here the block's
// int32 is reduced first so the one fma per block matches gemv_reference bit for bit.
//
// Include only from an ISA translation unit.
#pragma once

#include <algorithm>
#include <cstdint>

#include "common/error.hpp"
#include "kernels/kernel.hpp"
#include "kernels/kernel_plan.hpp"

namespace ternlab::strategies {

template <class P>
struct Unpack {
  using V = typename P::V;

  // Per-lane partial sums of (u - 1) * y over one block (the fork's accC - accOne).
  static V block_lanes(const std::uint8_t* codes, const std::int8_t* q) {
    V acc_codes = P::zero(), acc_ones = P::zero();
    const V ones = P::set1_u8(1);
    for (int k = 0; k < kBlockK / P::kNaturalWeights; ++k) {
      const V y = P::natural_order_acts(q + k * P::kNaturalWeights);
      acc_codes = P::dot4(acc_codes, P::unpack_natural(codes + k * P::kNaturalWeights / 4), y);
      acc_ones = P::dot4(acc_ones, ones, y);
    }
    return P::sub32(acc_codes, acc_ones);
  }

  static float row(const PackedMatrix& w, std::int64_t g, const BlockQ8K* x) {
    const int payload = w.layout->facts.payload_begin, scale = w.layout->scale_offset(0);
    const int bytes = w.layout->block_bytes();
    const std::uint8_t* blk = w.block(g, 0);
    const std::int64_t nb = w.blocks_per_row();
    float acc = 0.0f;
    std::int64_t i = 0;
    // Four blocks' lane sums are reduced together (one fold instead of four), then added to the
    // row in block order, one fma each.
    for (; i + 4 <= nb; i += 4, blk += 4 * bytes) {
      alignas(16) std::int32_t s[4];
      P::reduce_add4(block_lanes(blk + payload, x[i / 2].qs), block_lanes(blk + bytes + payload, x[i / 2].qs + 128),
                     block_lanes(blk + 2 * bytes + payload, x[i / 2 + 1].qs),
                     block_lanes(blk + 3 * bytes + payload, x[i / 2 + 1].qs + 128), s);
      for (int b = 0; b < 4; ++b)
        acc = __builtin_fmaf(float(s[b]), P::fp16(blk + b * bytes + scale) * x[(i + b) / 2].d, acc);
    }
    for (; i < nb; ++i, blk += bytes) {
      const BlockQ8K& xb = x[i / 2];
      const std::int32_t s = P::reduce_add(block_lanes(blk + payload, xb.qs + 128 * (i % 2)));
      acc = __builtin_fmaf(float(s), P::fp16(blk + scale) * xb.d, acc);
    }
    return acc;
  }

  static void check(const LayoutInfo& L) {
    if (!L.facts.natural_two_bit) fail("unpack/", P::name, " kernel cannot run layout '", L.name, "': not natural 2-bit order");
  }

  static void gemv(const PackedMatrix& w, const BlockQ8K* x, float* y, std::int64_t g0, std::int64_t g1) {
    check(*w.layout);
    for (std::int64_t g = g0; g < g1; ++g) y[g] = row(w, g, x);
  }

  // ggml runs a plain (non-repacked) type's mul_mat as vec_dot per (row, column): the same here,
  // column tiles read back from q8_Kx4, each weight row reused from L1 for the tile's tokens.
  static void gemm(const PackedMatrix& w, const Q8KBatch& x, float* y, std::int64_t ldy, std::int64_t g0,
                   std::int64_t g1) {
    check(*w.layout);
    for (std::int64_t t = 0; t < x.tiles_count(); ++t) {
      const int live = int(std::min<std::int64_t>(4, x.tokens - 4 * t));
      const BlockQ8K* rows[4];
      for (int m = 0; m < live; ++m) rows[m] = deinterleave_tile_token(x.tile(t), m, x.blocks(), m);
      for (std::int64_t g = g0; g < g1; ++g)
        for (int m = 0; m < live; ++m) y[(4 * t + m) * ldy + g] = row(w, g, rows[m]);
    }
  }
};

}  // namespace ternlab::strategies
