// The base-3 strategy for digit-planar layouts (ptq1_0): per 32 weights, gather each weight's byte
// into natural k order (two 16-byte windows + one shuffle), multiply by 3^n mod 256 so digit n
// becomes the top trit, read it with the two compares (x >= 86) + (x >= 171) (spec 3.4, exact for
// every byte thanks to the ceil(256 q / 243) encoding), then dot4(trits, y) minus the block's
// activation sum. Trits are 0..2, so the dot's unsigned operand never saturates (2 * 2 * 128).
//
// Include only from an ISA translation unit.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "common/error.hpp"
#include "kernels/kernel.hpp"
#include "kernels/strategies/base3/plan.hpp"
#include "kernels/strategies/block_scales.hpp"
#include "kernels/strategies/base3/strategy.hpp"

namespace ternlab::strategies {

template <class P>
struct Base3 {
  using V = typename P::V;
  static_assert(P::kBytes == 32, "the base-3 plan is laid out for 32-weight vectors");

  static std::int32_t block_dot(const Base3Plan& p, const std::uint8_t* blk, const std::int8_t* q) {
    V acc = P::zero();
    for (int v = 0; v < 4; ++v) {
      const V bytes = P::shuffle_bytes(P::windows(blk + p.window[v][0], blk + p.window[v][1]), P::load(p.shuffle[v]));
      const V trits = P::top_trit(P::mul_u8(bytes, P::load(p.mul_even[v]), P::load(p.mul_odd[v])));
      acc = P::dot4(acc, trits, P::load(q + 32 * v));
    }
    return P::reduce_add(acc);
  }

  // The activation sum of every 128-block, once per token.
  static const std::int32_t* block_sums(const BlockQ8K* x, std::int64_t nb, int slot) {
    auto* s = reinterpret_cast<std::int32_t*>(kernel_scratch(std::size_t(nb) * sizeof(std::int32_t), slot));
    for (std::int64_t i = 0; i < nb; ++i) s[i] = half_sum(x[i / 2], int(i % 2));
    return s;
  }

  static float row(const Base3Plan& p, const PackedMatrix& w, std::int64_t g, const BlockQ8K* x,
                   const std::int32_t* ysum) {
    const std::int64_t nb = w.blocks_per_row();
    const std::uint8_t* blk = w.block(g, 0);
    // The windows of the matrix's very last block may reach past the buffer: read a padded copy.
    const bool last_group = g == w.row_groups() - 1 && p.overreads;
    float acc = 0.0f;
    for (std::int64_t i = 0; i < nb; ++i, blk += p.block_bytes) {
      const BlockQ8K& xb = x[i / 2];
      const std::int8_t* q = xb.qs + 128 * (i % 2);
      std::int32_t s;
      if (last_group && i == nb - 1) {
        alignas(64) std::uint8_t copy[64] = {};
        std::memcpy(copy, blk, std::size_t(p.block_bytes));
        s = block_dot(p, copy, q);
      } else {
        s = block_dot(p, blk, q);
      }
      acc = scalar_fma<P>(float(s - ysum[i]), block_scale<P>(p.scale_format, blk + p.scale_offset) * xb.d, acc);
    }
    return acc;
  }

  static const Base3Plan& checked_plan(const LayoutInfo& L) {
    const Base3Plan& p = base3_plan(L);
    if (!p.why_not.empty()) fail("base3/", P::name, " kernel cannot run layout '", L.name, "': ", p.why_not);
    return p;
  }

  static void gemv(const PackedMatrix& w, const BlockQ8K* x, float* y, std::int64_t g0, std::int64_t g1) {
    const Base3Plan& p = checked_plan(*w.layout);
    const std::int32_t* ysum = block_sums(x, w.blocks_per_row(), 8);
    for (std::int64_t g = g0; g < g1; ++g) y[g] = row(p, w, g, x, ysum);
  }

  static void gemm(const PackedMatrix& w, const Q8KBatch& x, float* y, std::int64_t ldy, std::int64_t g0,
                   std::int64_t g1) {
    const Base3Plan& p = checked_plan(*w.layout);
    for (std::int64_t t = 0; t < x.tiles_count(); ++t) {
      const int live = int(std::min<std::int64_t>(4, x.tokens - 4 * t));
      const BlockQ8K* rows[4];
      const std::int32_t* ysum[4];
      for (int m = 0; m < live; ++m) {
        rows[m] = deinterleave_tile_token(x.tile(t), m, x.blocks(), m);
        ysum[m] = block_sums(rows[m], w.blocks_per_row(), 8 + m);
      }
      for (std::int64_t g = g0; g < g1; ++g)
        for (int m = 0; m < live; ++m) y[(4 * t + m) * ldy + g] = row(p, w, g, rows[m], ysum[m]);
    }
  }
};

template <class T>
void Base3Strategy::add(const LayoutInfo& L, std::vector<KernelVariant>& out, std::vector<KernelGap>* gaps) {
  using P = WidePolicy<T>;
  if constexpr (!Base3Ops<P>) {
    if (gaps) gaps->push_back({id, T::kIsa, cat("its kernels read 32 weights a 32-byte vector, and ", P::name, " has no such policy with base-3's operations (Base3Ops)")});
  } else {
    detail::add_or_note(out, gaps, id, T::kIsa, base3_plan(L).why_not, {&Base3<P>::gemv, &Base3<P>::gemm});
  }
}

}  // namespace ternlab::strategies
