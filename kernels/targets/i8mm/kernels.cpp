// The row-pair slot-mask gemm on i8mm (spec 5.7): a tile is one row group x 4 tokens (q8_Kx4). A
// row-pair slot masked in place is smmla's 2x8 weight operand as it stands; the 16 bytes of a q8_Kx4
// chunk are the 2x8 operand of tokens 0|1 (and of 2|3), so each decoded slot meets two activation
// operands: 2 smmla per slot per row pair, 32 MACs each. Slots 0 and 3 both carry 1 u and share an
// accumulator; 4 u and 16 u get their own.
// Single-row words (t2x4, spec 5.8) take the zips the row-pair layout was designed to remove: two
// rows' slots are decoded to u, their 64-bit halves zipped into [row a 8 | row b 8] operands, and
// each meets chunks kc and kc + 1: 4 smmla per slot per row pair, tiles of u . y directly.
// The units come from the shared slot plan (SlotVectorPlan's tile view, kernels/strategies/slot_mask/plan.hpp);
// the gemv of slot-mask/i8mm is slot-mask/dotprod's. Generic headers come first and keep the
// baseline target; the code below the pragma is compiled with +i8mm and reached only through
// kernels_for() after HWCAP2 reported i8mm.
#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "kernels/targets/target.hpp"
#include "kernels/kernel.hpp"
#include "kernels/kernel_id.hpp"
#include "kernels/strategies/slot_mask/plan.hpp"

#if defined(__aarch64__)
#include <arm_neon.h>

#pragma GCC push_options
#pragma GCC target("arch=armv8.2-a+dotprod+i8mm")
#include "kernels/strategies/block_scales.hpp"

namespace ternlab::detail {

namespace {

using TileUnit = SlotVectorPlan::TileUnit;

struct HalfLoad {
  static float fp16(const std::uint8_t* p) {
    __fp16 h;
    __builtin_memcpy(&h, p, 2);
    return float(h);
  }
};

// Slot s of a 2-bit word, masked in place (4^s u for s = 0..2); slot 3 is shifted down instead,
// since 64 u would read as negative int8 for u >= 2.
template <int S>
int8x16_t slot(uint8x16_t v) {
  if constexpr (S == 3)
    return vreinterpretq_s8_u8(vshrq_n_u8(v, 6));
  else
    return vreinterpretq_s8_u8(vandq_u8(v, vdupq_n_u8(std::uint8_t(3u << (2 * S)))));
}

// Sums of the 128 activations of half h for tokens 0..3: the q8_Kx4 16-sums of token t for groups
// 8h..8h+7 sit at 32h + 4t + {0..3} and 32h + 16 + 4t + {0..3} (q8k.hpp, x4_bsum_index).
int32x4_t half_sums_x4(const std::int16_t* bsums, int h) {
  const std::int16_t* b = bsums + 32 * h;
  const int16x8_t t01 = vaddq_s16(vld1q_s16(b), vld1q_s16(b + 16));  // |sum of 32 int8| <= 4096
  const int16x8_t t23 = vaddq_s16(vld1q_s16(b + 8), vld1q_s16(b + 24));
  return vpaddq_s32(vpaddlq_s16(t01), vpaddlq_s16(t23));
}

// One unit's (row pair's) tile for one block: 16 (u . y) for (row a, row b) x (token pair q).
struct PairTile {
  std::array<int32x4_t, 2> m1, m4, m16;
};

template <int S>
inline void smmla_slot(PairTile& t, uint8x16_t word, const std::int8_t* chunk) {
  const int8x16_t w = slot<S>(word);
  auto& m = S == 1 ? t.m4 : S == 2 ? t.m16 : t.m1;
  m[0] = vmmlaq_s32(m[0], w, vld1q_s8(chunk));       // tokens 0 | 1
  m[1] = vmmlaq_s32(m[1], w, vld1q_s8(chunk + 16));  // tokens 2 | 3
}

// Slot S of a single-row word decoded to u (0..3) in every byte.
template <int S>
inline uint8x16_t decoded(uint8x16_t v) {
  if constexpr (S == 3)
    return vshrq_n_u8(v, 6);
  else
    return vandq_u8(vshrq_n_u8(v, 2 * S), vdupq_n_u8(3));
}

// Rows a and b (one word each, same weights): slot S's 16 weights of both rows as two zipped 2x8
// operands against chunks kc, kc + 1 of both token pairs. t accumulates u . y.
template <int S>
inline void smmla_zipped(std::array<int32x4_t, 2>& t, uint8x16_t va, uint8x16_t vb, const std::int8_t* chunk) {
  const uint64x2_t a = vreinterpretq_u64_u8(decoded<S>(va)), b = vreinterpretq_u64_u8(decoded<S>(vb));
  const int8x16_t lo = vreinterpretq_s8_u64(vzip1q_u64(a, b)), hi = vreinterpretq_s8_u64(vzip2q_u64(a, b));
  t[0] = vmmlaq_s32(vmmlaq_s32(t[0], lo, vld1q_s8(chunk)), hi, vld1q_s8(chunk + 32));
  t[1] = vmmlaq_s32(vmmlaq_s32(t[1], lo, vld1q_s8(chunk + 16)), hi, vld1q_s8(chunk + 48));
}

// The rows (a, b) of tile unit u: a row pair's own, or two single-row units zipped.
struct TileRows {
  int a, b;
};
TileRows tile_rows(const SlotVectorPlan& P, int u) {
  return P.tile_pairs ? TileRows{P.tile_unit[u].row_a, P.tile_unit[u].row_b}
                      : TileRows{P.tile_unit[2 * u].row_a, P.tile_unit[2 * u + 1].row_a};
}

void gemm(const PackedMatrix& w, const Q8KBatch& x, float* y, std::int64_t ldy, std::int64_t g0, std::int64_t g1) {
  const SlotVectorPlan& P = neon_slot_plan(*w.layout);
  const ScaleFormat format = w.layout->scale_format();
  const std::string why = smmla_why_not(*w.layout);
  if (!why.empty()) fail(kernel_name(Strategy::slot_mask, Isa::i8mm), " kernel cannot run layout '", w.layout->name, "': ", why);
  const int tiles = P.tile_pairs ? P.tile_units : P.tile_units / 2;  // 2-row tiles per row group
  const int slot_bytes = 4 * P.slot_stride;            // q8_Kx4 interleaves 4 tokens: slot s is 4 s stride bytes on
  for (std::int64_t tile = 0; tile < x.tiles_count(); ++tile) {
    const BlockQ8Kx4* xt = x.tile(tile);
    // Leftover tokens ride in the zero-padded last tile (d = 0, qs = 0): one extra pass, not one gemv each.
    const int live = int(std::min<std::int64_t>(4, x.tokens - 4 * tile));
    for (std::int64_t g = g0; g < g1; ++g) {
      std::array<std::array<float32x4_t, 2>, 8> acc;
      for (auto& a : acc) a = {vdupq_n_f32(0), vdupq_n_f32(0)};
      for (std::int64_t i = 0; i < w.blocks_per_row(); ++i) {
        const std::uint8_t* blk = w.block(g, i);
        const BlockQ8Kx4& xb = xt[i / 2];
        const int h = int(i % 2);
        const std::int8_t* q8 = xb.qs + 512 * h;  // chunk c of this half at 32 c
        const int32x4_t ys = half_sums_x4(xb.bsums, h);
        const float32x4_t dy = vld1q_f32(xb.d);
        // Lane l of a tile is (row a or b by l >> 1) x (token 2q + (l & 1)).
        const std::array<int32x4_t, 2> ysum = {vcombine_s32(vget_low_s32(ys), vget_low_s32(ys)),
                                               vcombine_s32(vget_high_s32(ys), vget_high_s32(ys))};
        const std::array<float32x4_t, 2> dys = {vcombine_f32(vget_low_f32(dy), vget_low_f32(dy)),
                                                vcombine_f32(vget_high_f32(dy), vget_high_f32(dy))};
        for (int u = 0; u < tiles; ++u) {
          std::array<int32x4_t, 2> s;  // u . y per (row a | b) x (token pair q)
          if (P.tile_pairs) {
            const TileUnit& unit = P.tile_unit[u];
            PairTile t;
            t.m1 = t.m4 = t.m16 = {vdupq_n_s32(0), vdupq_n_s32(0)};
            for (int k = 0; k < P.words_per_unit; ++k) {
              const uint8x16_t v = vld1q_u8(blk + unit.word_offset[k]);
              const std::int8_t* chunk = q8 + 4 * unit.word_k0[k];  // chunk k0 / 8: 32 bytes each
              smmla_slot<0>(t, v, chunk);
              smmla_slot<1>(t, v, chunk + slot_bytes);
              smmla_slot<2>(t, v, chunk + 2 * slot_bytes);
              smmla_slot<3>(t, v, chunk + 3 * slot_bytes);
            }
            for (int q = 0; q < 2; ++q) {
              const int32x4_t s16 = vaddq_s32(vaddq_s32(t.m16[std::size_t(q)], vshlq_n_s32(t.m4[std::size_t(q)], 2)),
                                              vshlq_n_s32(t.m1[std::size_t(q)], 4));
              s[std::size_t(q)] = vshrq_n_s32(s16, 4);
            }
          } else {
            const TileUnit& ua = P.tile_unit[2 * u];
            const TileUnit& ub = P.tile_unit[2 * u + 1];
            s = {vdupq_n_s32(0), vdupq_n_s32(0)};
            for (int k = 0; k < P.words_per_unit; ++k) {
              const uint8x16_t va = vld1q_u8(blk + ua.word_offset[k]);
              const uint8x16_t vb = vld1q_u8(blk + ub.word_offset[k]);
              const std::int8_t* chunk = q8 + 4 * ua.word_k0[k];  // slot s: slot_bytes further
              smmla_zipped<0>(s, va, vb, chunk);
              smmla_zipped<1>(s, va, vb, chunk + slot_bytes);
              smmla_zipped<2>(s, va, vb, chunk + 2 * slot_bytes);
              smmla_zipped<3>(s, va, vb, chunk + 3 * slot_bytes);
            }
          }
          const TileRows rows = tile_rows(P, u);
          const float da = block_scale<HalfLoad>(format, blk + P.scale_offset[rows.a]);
          const float db = block_scale<HalfLoad>(format, blk + P.scale_offset[rows.b]);
          const float32x4_t dw = {da, da, db, db};
          for (int q = 0; q < 2; ++q)
            acc[std::size_t(u)][std::size_t(q)] =
                vfmaq_f32(acc[std::size_t(u)][std::size_t(q)], vcvtq_f32_s32(vsubq_s32(s[std::size_t(q)], ysum[std::size_t(q)])),
                          vmulq_f32(dw, dys[std::size_t(q)]));
        }
      }
      for (int u = 0; u < tiles; ++u)
        for (int q = 0; q < 2; ++q) {
          std::array<float, 4> lanes;
          vst1q_f32(lanes.data(), acc[std::size_t(u)][std::size_t(q)]);
          const TileRows rows = tile_rows(P, u);
          for (int l = 0; l < 4; ++l) {
            const int token = 2 * q + (l & 1);
            const int row = l >> 1 ? rows.b : rows.a;
            if (token < live) y[(4 * tile + token) * ldy + g * P.rows + row] = lanes[std::size_t(l)];
          }
        }
    }
  }
}

}  // namespace
}  // namespace ternlab::detail
#pragma GCC pop_options

namespace ternlab::detail {
namespace {
// slot-mask/i8mm: this unit's smmla gemm paired with slot-mask/dotprod's gemv, which the dotprod
// target (listed before this one in targets.def) has put in `out`.
void add_kernels(const LayoutInfo& L, std::vector<KernelVariant>& out, std::vector<KernelGap>* gaps) {
  if (!slot_words(L).why_not.empty()) return;
  const auto dot = std::find_if(out.begin(), out.end(), [](const KernelVariant& k) {
    return k.strategy == Strategy::slot_mask && k.isa == Isa::dotprod;
  });
  const std::string why = dot == out.end() ? "slot-mask/dotprod, whose gemv it shares, is not listed" : smmla_why_not(L);
  if (why.empty())
    out.push_back({Strategy::slot_mask, Isa::i8mm, dot->gemv, &gemm, dot->phases});
  else if (gaps)
    gaps->push_back({Strategy::slot_mask, Isa::i8mm, why});
}
}  // namespace
}  // namespace ternlab::detail

TERNLAB_DEFINE_TARGET(i8mm, {"i8mm", Isa::i8mm, [] { return isa_supported(Isa::i8mm); }, &detail::add_kernels})

#else  // not aarch64: a target that never runs
TERNLAB_DEFINE_TARGET(i8mm, {"i8mm", Isa::i8mm, [] { return false; },
                             [](const LayoutInfo&, std::vector<KernelVariant>&, std::vector<KernelGap>*) {}})
#endif
