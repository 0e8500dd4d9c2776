// The NEON gemv strategies, written once against an ISA policy (isa.hpp: Mull or Sdot) and
// instantiated by kernels_neon.cpp and kernels_dotprod.cpp, each under its own -march flags, as
// entry points that first check the layout (checked_entry). Every kernel computes each
// 128-weight block's exact int32 dot S = w . y and adds fma(S, d_w * d_y, acc) in block order, as
// gemv_reference does, so all of them return the reference's float bits.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <span>

#include "kernels/kernel.hpp"
#include "kernels/neon/isa.hpp"
#include "kernels/neon/neon_kernels.hpp"
#include "kernels/neon/plans.hpp"

namespace ternlab::neon {
namespace {

// The one-row strategies' outer loops: row g of groups [g0, g1) is fma(S, d_w * d_y, acc) over its
// blocks in block order, where S = block_dot(block, its 128 q8 activations) is the exact int32 dot.
template <class BlockDot>
void gemv_blocks(const PackedMatrix& w, const BlockQ8K* x, float* y, std::int64_t g0, std::int64_t g1,
                 int scale_offset, BlockDot&& block_dot) {
  for (std::int64_t g = g0; g < g1; ++g) {
    float acc = 0.0f;
    for (std::int64_t i = 0; i < w.blocks_per_row(); ++i) {
      const std::uint8_t* blk = w.block(g, i);
      const BlockQ8K& xb = x[i / 2];
      const std::int32_t s = block_dot(blk, xb.qs + 128 * (i % 2));
      acc = std::fma(float(s), load_half(blk + scale_offset) * xb.d, acc);
    }
    y[g] = acc;
  }
}

// Unpack (stock PQ2_0, PrismML's NEON kernel, spec 6.1): per 32 weights, duplicate the 8 code bytes,
// spread each byte over 4 lanes with a table lookup, shift lane j right by 2j, AND 3, subtract 1, and
// dot the natural-order int8 weights with 16 activations: tbl, shl, and, sub, dot per 16 weights.
template <class Dot>
void gemv_unpack(const PackedMatrix& w, const BlockQ8K* x, float* y, std::int64_t g0, std::int64_t g1) {
  const LayoutInfo& L = *w.layout;
  const int payload = L.facts.payload_begin, scale = L.scale_offset(0);
  const uint8x16_t spread_lo = {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3};
  const uint8x16_t spread_hi = {4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7};
  const int8x16_t shifts = {0, -2, -4, -6, 0, -2, -4, -6, 0, -2, -4, -6, 0, -2, -4, -6};
  const uint8x16_t three = vdupq_n_u8(3);
  const int8x16_t one = vdupq_n_s8(1);
  const auto decode = [&](uint8x16_t codes, uint8x16_t spread) {
    return vsubq_s8(vreinterpretq_s8_u8(vandq_u8(vshlq_u8(vqtbl1q_u8(codes, spread), shifts), three)), one);
  };
  gemv_blocks(w, x, y, g0, g1, scale, [&](const std::uint8_t* blk, const std::int8_t* q8) {
    int32x4_t sum = vdupq_n_s32(0);
    for (int k = 0; k < 4; ++k) {
      const uint8x8_t c8 = vld1_u8(blk + payload + 8 * k);
      const uint8x16_t codes = vcombine_u8(c8, c8);
      sum = Dot::dot(sum, decode(codes, spread_lo), vld1q_s8(q8 + 32 * k));
      sum = Dot::dot(sum, decode(codes, spread_hi), vld1q_s8(q8 + 32 * k + 16));
    }
    return vaddvq_s32(sum);
  });
}

// Base-3 (PTQ1_0, spec 5.13): each 16-weight vector is a byte vector (loaded, or gathered by tbl
// where a stage is 8 or 2 bytes wide) times 3^digit mod 256; the top trit of v is
// (v >= 86) + (v >= 171), so w = -1 - mask(v >= 86) - mask(v >= 171): mul, 2 cmp, 2 sub, dot.
template <class Dot>
void gemv_base3(const PackedMatrix& w, const BlockQ8K* x, float* y, std::int64_t g0, std::int64_t g1) {
  const Base3Program& P = base3_program(*w.layout);
  std::array<uint8x16_t, 8> pow3, gather;
  for (int c = 0; c < 8; ++c) {
    pow3[std::size_t(c)] = vld1q_u8(P.pow3[std::size_t(c)].data());
    gather[std::size_t(c)] = vld1q_u8(P.gather[std::size_t(c)].data());
  }
  const uint8x16_t ge86 = vdupq_n_u8(86), ge171 = vdupq_n_u8(171);
  const int8x16_t minus_one = vdupq_n_s8(-1);
  gemv_blocks(w, x, y, g0, g1, P.scale_offset, [&](const std::uint8_t* blk, const std::int8_t* q8) {
    const uint8x16x2_t table = {{vld1q_u8(blk), vld1q_u8(blk + P.tail_offset)}};
    int32x4_t sum = vdupq_n_s32(0);
    for (int c = 0; c < 8; ++c) {
      const int at = P.direct_offset[std::size_t(c)];
      const uint8x16_t bytes = at >= 0 ? vld1q_u8(blk + at) : vqtbl2q_u8(table, gather[std::size_t(c)]);
      const uint8x16_t v = vmulq_u8(bytes, pow3[std::size_t(c)]);
      const int8x16_t wv = vsubq_s8(vsubq_s8(minus_one, vreinterpretq_s8_u8(vcgeq_u8(v, ge86))),
                                    vreinterpretq_s8_u8(vcgeq_u8(v, ge171)));
      sum = Dot::dot(sum, wv, vld1q_s8(q8 + 16 * c));
    }
    return vaddvq_s32(sum);
  });
}

// Slot-mask (spec 5.5 / 5.6): one AND (or the slot-3 shift) per slot, one accumulator per slot,
// recombined once per block; the +1 code offset leaves through the q8_K partial sums. A row-pair word
// dots each slot with 8 activations duplicated into both halves (dup8), so lanes 0-1 hold row a and
// lanes 2-3 row b; a single-row word dots each slot with 16 consecutive activations.
template <class Dot, bool Pairs>
struct SlotMaskKernel {
  static constexpr int kWords = Pairs ? 4 : 2;  // words per unit per block

  static int8x16_t activations(const std::int8_t* q) { return Pairs ? dup8(q) : vld1q_s8(q); }
  static int32x4_t dot(int32x4_t acc, int8x16_t a, int8x16_t b) {
    return Pairs ? Dot::dot_halves(acc, a, b) : Dot::dot(acc, a, b);
  }

  struct Acc {
    int32x4_t a0 = vdupq_n_s32(0), a1 = a0, a2 = a0, a3 = a0;
    void add(uint8x16_t v, const std::array<int8x16_t, 4>& y) {
      a0 = dot(a0, slot<0>(v), y[0]);
      a1 = dot(a1, slot<1>(v), y[1]);
      a2 = dot(a2, slot<2>(v), y[2]);
      a3 = dot(a3, slot<3>(v), y[3]);
    }
    // The unit's exact block integers w . y into s[row].
    void finish(const SlotUnit& unit, int ysum, std::array<std::int32_t, 16>& s) const {
      const int32x4_t t = recombine(a0, a1, a2, a3);  // 16 (u . y): the low 4 bits are 0
      if constexpr (Pairs) {
        const int32x2_t ab = vshr_n_s32(vpadd_s32(vget_low_s32(t), vget_high_s32(t)), 4);
        s[std::size_t(unit.row_a)] = vget_lane_s32(ab, 0) - ysum;
        s[std::size_t(unit.row_b)] = vget_lane_s32(ab, 1) - ysum;
      } else {
        s[std::size_t(unit.row_a)] = (vaddvq_s32(t) >> 4) - ysum;
      }
    }
  };

  static std::array<int8x16_t, 4> slot_activations(const std::int8_t* q, int stride) {
    return {activations(q), activations(q + stride), activations(q + 2 * stride), activations(q + 3 * stride)};
  }

  // Block integers for every row; U > 0: all U units read the same weights per word (shared_kbase),
  // so each word's activations are prepared once and feed U units (t2p: both pairs, t2x4: 4 rows).
  template <int U>
  static void block(const SlotProgram& P, const std::uint8_t* blk, const std::int8_t* q8, int ysum,
                    std::array<std::int32_t, 16>& s) {
    if constexpr (U > 0) {
      std::array<Acc, U> acc;
      // Rolled: unrolled, GCC hoists every word's activations at once and spills the accumulators.
#pragma GCC unroll 1
      for (int k = 0; k < kWords; ++k) {
        const auto y = slot_activations(q8 + P.unit[0].words[std::size_t(k)].kbase, P.slot_stride);
        for (int u = 0; u < U; ++u) {
          const SlotWord& word = P.unit[std::size_t(u)].words[std::size_t(k)];
          acc[std::size_t(u)].add(vld1q_u8(blk + word.byte_offset), y);
        }
      }
      for (int u = 0; u < U; ++u) acc[std::size_t(u)].finish(P.unit[std::size_t(u)], ysum, s);
    } else {
      for (int u = 0; u < P.units; ++u) {
        const SlotUnit& unit = P.unit[std::size_t(u)];
        Acc acc;
        for (const SlotWord& word : std::span(unit.words).first(kWords))
          acc.add(vld1q_u8(blk + word.byte_offset), slot_activations(q8 + word.kbase, P.slot_stride));
        acc.finish(unit, ysum, s);
      }
    }
  }

  template <int U>
  static void gemv(const SlotProgram& P, const PackedMatrix& w, const BlockQ8K* x, float* y, std::int64_t g0,
                   std::int64_t g1) {
    for (std::int64_t g = g0; g < g1; ++g) {
      std::array<float, 16> acc{};
      for (std::int64_t i = 0; i < w.blocks_per_row(); ++i) {
        const std::uint8_t* blk = w.block(g, i);
        const BlockQ8K& xb = x[i / 2];
        std::array<std::int32_t, 16> s;
        block<U>(P, blk, xb.qs + 128 * (i % 2), half_sum(xb.bsums, int(i % 2)), s);
        for (std::size_t r = 0; r < std::size_t(P.rows); ++r)
          acc[r] = std::fma(float(s[r]), load_half(blk + P.scale_offset[r]) * xb.d, acc[r]);
      }
      std::copy_n(acc.begin(), P.rows, y + g * P.rows);
    }
  }

  static void run(const SlotProgram& P, const PackedMatrix& w, const BlockQ8K* x, float* y, std::int64_t g0,
                  std::int64_t g1) {
    // Register budget: 4 accumulators per unit, so up to 4 units share activations.
    const int shared = P.shared_kbase ? P.units : 0;
    if (shared == 1) return gemv<1>(P, w, x, y, g0, g1);
    if (shared == 2) return gemv<2>(P, w, x, y, g0, g1);
    if (shared == 4) return gemv<4>(P, w, x, y, g0, g1);
    gemv<0>(P, w, x, y, g0, g1);
  }
};

template <class Dot>
void gemv_slot_mask(const PackedMatrix& w, const BlockQ8K* x, float* y, std::int64_t g0, std::int64_t g1) {
  const SlotProgram& P = slot_program(*w.layout);
  if (P.pairs)
    SlotMaskKernel<Dot, true>::run(P, w, x, y, g0, g1);
  else
    SlotMaskKernel<Dot, false>::run(P, w, x, y, g0, g1);
}

// Strategy S built with dot policy Dot: the gemv checks the layout once per call, before any load;
// the gemm runs it token by token (gemm_by_rows).
template <NeonStrategy S, class Dot>
struct CheckedStrategy {
  static void gemv(const PackedMatrix& w, const BlockQ8K* x, float* y, std::int64_t g0, std::int64_t g1) {
    require_layout(*w.layout, S, Dot::name);
    if constexpr (S == NeonStrategy::unpack)
      gemv_unpack<Dot>(w, x, y, g0, g1);
    else if constexpr (S == NeonStrategy::base3)
      gemv_base3<Dot>(w, x, y, g0, g1);
    else
      gemv_slot_mask<Dot>(w, x, y, g0, g1);
  }
  static void gemm(const PackedMatrix& w, const Q8KBatch& x, float* y, std::int64_t ldy, std::int64_t g0,
                   std::int64_t g1) {
    gemm_by_rows(&gemv, w, x, y, ldy, g0, g1);
  }
  static NeonEntry entry() { return {Dot::name, &gemv, &gemm}; }
};

// Strategy s's entry points in the build of Dot, which carries the strategies Built...; empty for any
// other. Nothing here builds strings: inline library code instantiated in an ISA unit could be the
// copy the linker keeps for every unit (isa.hpp).
template <class Dot, NeonStrategy... Built>
NeonEntry checked_entry(NeonStrategy s) {
  NeonEntry e{Dot::name, nullptr, nullptr};
  ((e = s == Built ? CheckedStrategy<Built, Dot>::entry() : e), ...);
  return e;
}

}  // namespace
}  // namespace ternlab::neon
