// The broadcast strategy, one template for every row-interleaved layout (t2r, t2r8, ...),
// instantiated per x86 ISA policy P (kernels/isa/*.hpp) and rows per block R. The layout enters
// through its StripPlan (layouts/dsl.hpp):
//
//   per token, once:  the activations in strip order (strip t's slot s = one dword) + BlockActs
//   per block:        for each strip: one load per P::kLanes rows, P::lane_slots (the AND per slot,
//                     and on AVX2 the shift to the code), then per slot one dot4 of every lane
//                     against the broadcast activation dword (P::lane_dot): each 32-bit lane
//                     accumulates its own row, so no horizontal sum is ever taken;
//                     P::lane_sums turns the accumulators into one int32 per row, and the block
//                     ends in Rows8's row_fma: one convert and one fma for 8 rows at a time, the
//                     +1 code offset leaving with the q8_K partial sums (S - ysum).
//
// Exactness: slot values are u * 4^s (AVX-512, in place, <= 192) or u (AVX2, <= 3); every policy
// keeps its intermediates below its instruction's saturation (see the policies), the row sums are
// exact int32, and the fma association is gemv_reference's, so the float result is bit-identical.
//
// Include only from an ISA translation unit (after its #pragma GCC target).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "common/error.hpp"
#include "common/strings.hpp"
#include "kernels/kernel.hpp"
#include "kernels/kernel_plan.hpp"

namespace ternlab::strategies {

template <class P, int R>
struct Broadcast {
  static_assert(R % 8 == 0 && R <= 16, "row-interleaved blocks have 8 or 16 rows");
  static constexpr const char* kStrategy = "broadcast";
  static constexpr int kLanes = P::kLanes;
  static constexpr int kHalves = kLanes / 8;  // 8-row epilogue pieces per vector
  static constexpr int kVectors = R / kLanes;  // vectors per strip
  static constexpr int kStrips = 8;            // 128 weights per row per block, 16 per strip

  // Why this instantiation cannot run the layout ("" when it can).
  static std::string why_not(const LayoutInfo& L) {
    if (!L.strip_plan) return "the layout is not row-interleaved";
    if (L.rows != R) return cat("the kernel takes ", R, "-row blocks, the layout has ", L.rows);
    if (R < kLanes) return cat("a strip of ", R, " rows fills only part of a ", kLanes, "-lane vector");
    if (L.k != 128 || L.strip_plan->strips != kStrips) return "the kernel takes blocks of 128 weights per row";
    return "";
  }
  static const StripPlan& checked_plan(const LayoutInfo& L) {
    const std::string why = why_not(L);
    if (!why.empty()) fail("broadcast/", P::name, " kernel cannot run layout '", L.name, "': ", why);
    return *L.strip_plan;
  }

  // The fp16 scales of a block's rows as R consecutive halves: in place when the layout stores
  // them so, else gathered into `tmp`.
  static const std::uint8_t* row_scales(const LayoutInfo& L, const std::uint8_t* blk, bool contiguous,
                                        std::uint8_t* tmp) {
    if (contiguous) return blk + L.scale_offset(0);
    for (int r = 0; r < R; ++r) std::memcpy(tmp + 2 * r, blk + L.scale_offset(r), 2);
    return tmp;
  }

  // Rows [g0, g1) x T tokens: acts[t] are the tokens' strip-ordered activations, y[t] their outputs
  // (row g * R + r), of which the first `live` are stored. Each pass over a row group handles VS of
  // its kVectors vectors: all of them for one token, one at a time for a tile, so the int32 and
  // float accumulators of T tokens stay in registers. GS row groups advance side by side, block by
  // block: on a core whose bandwidth is bound by the line fills in flight, GS independent weight
  // streams (each prefetched ahead) read faster than one.
  template <int T, int GS>
  static std::int64_t rows(const PackedMatrix& w, const SlotActs* acts, float* const* y, int live, std::int64_t g0,
                           std::int64_t g1) {
    const LayoutInfo& L = *w.layout;
    const StripPlan& plan = checked_plan(L);
    const std::int64_t nb = w.blocks_per_row();
    const int bb = L.block_bytes(), pb = plan.payload_begin, strip = 4 * R;
    const bool contiguous = L.spec->scales.row_stride == 2;
    constexpr int VS = T == 1 ? kVectors : 1;
    alignas(32) std::uint8_t gathered[2 * R];
    std::int64_t g = g0;
    for (; g + GS <= g1; g += GS)
      for (int v0 = 0; v0 < kVectors; v0 += VS) {
        typename P::RowF acc[GS][T][VS][kHalves];
        for (auto& a : acc)
          for (auto& b : a)
            for (auto& c : b)
              for (auto& d : c) d = P::row_zero();
        const std::uint8_t* blk[GS];
        for (int q = 0; q < GS; ++q) blk[q] = w.block(g + q, 0);
        for (std::int64_t i = 0; i < nb; ++i)
          for (int q = 0; q < GS; ++q) {
            if (v0 == 0) prefetch_ahead(blk[q], bb);
            typename P::LaneAcc a[T][VS];
            for (auto& at : a)
              for (auto& av : at) av = P::lane_zero();
#pragma GCC unroll 8
            for (int t = 0; t < kStrips; ++t)
              for (int v = 0; v < VS; ++v) {
                const typename P::LaneSlots s = P::lane_slots(P::load(blk[q] + pb + t * strip + (v0 + v) * P::kBytes));
                for (int m = 0; m < T; ++m) P::lane_dot(a[m][v], s, acts[m].expanded + i * kBlockK + 16 * t);
              }
            const std::uint8_t* sc = row_scales(L, blk[q], contiguous, gathered);
            for (int v = 0; v < VS; ++v) {
              __m256i s[T][kHalves];
              for (int m = 0; m < T; ++m) P::lane_sums(a[m][v], s[m]);
              for (int h = 0; h < kHalves; ++h) {
                const typename P::RowF d = P::row_scales(sc + 2 * ((v0 + v) * kLanes + 8 * h));
                for (int m = 0; m < T; ++m) {
                  const BlockActs b = acts[m].blocks[i];
                  acc[q][m][v][h] =
                      P::template row_fma<P::kLaneShift>(s[m][h], b.ysum, d, b.d, acc[q][m][v][h]);
                }
              }
            }
            blk[q] += bb;
          }
        for (int q = 0; q < GS; ++q)
          for (int m = 0; m < live; ++m)
            for (int v = 0; v < VS; ++v)
              for (int h = 0; h < kHalves; ++h)
                P::row_store(y[m] + (g + q) * R + (v0 + v) * kLanes + 8 * h, acc[q][m][v][h], 8);
      }
    return g;
  }

  // Row groups stream GS at a time, the rest one by one.
  template <int T, int GS>
  static void all_rows(const PackedMatrix& w, const SlotActs* acts, float* const* y, int live, std::int64_t g0,
                       std::int64_t g1) {
    const std::int64_t g = rows<T, GS>(w, acts, y, live, g0, g1);
    if constexpr (GS > 1) rows<T, 1>(w, acts, y, live, g, g1);
  }

  static void gemv(const PackedMatrix& w, const BlockQ8K* x, float* y, std::int64_t g0, std::int64_t g1) {
    const SlotActs a = prepare_strip_acts(checked_plan(*w.layout), x, w.blocks_per_row(), 0);
    all_rows<1, P::kGemvStreams>(w, &a, &y, 1, g0, g1);
  }

  // 4-column tiles of q8_Kx4, all four tokens in one pass over the weights; a partial last tile
  // runs with its missing tokens zero (q8_Kx4 pads them), never a gemv per column.
  static void gemm(const PackedMatrix& w, const Q8KBatch& x, float* y, std::int64_t ldy, std::int64_t g0,
                   std::int64_t g1) {
    const StripPlan& plan = checked_plan(*w.layout);
    const std::int64_t nb = w.blocks_per_row();
    for (std::int64_t t = 0; t < x.tiles_count(); ++t) {
      const int live = int(std::min<std::int64_t>(4, x.tokens - 4 * t));
      SlotActs a[4];
      float* yt[4];
      for (int m = 0; m < 4; ++m) {
        a[m] = prepare_strip_acts_x4(plan, x.tile(t), m, nb, m);
        yt[m] = y + (4 * t + m) * ldy;
      }
      all_rows<4, 1>(w, a, yt, live, g0, g1);
    }
  }
};

// Points gemv/gemm at Broadcast<P, R> when it can run the layout; says why not otherwise.
template <class P, int R>
std::string pick_broadcast(const LayoutInfo& L, GemvFn& gemv, GemmFn& gemm) {
  using K = Broadcast<P, R>;
  std::string why = K::why_not(L);
  if (why.empty()) gemv = &K::gemv, gemm = &K::gemm;
  return why;
}

}  // namespace ternlab::strategies
