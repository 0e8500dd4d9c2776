// The slot-mask strategy, one template for every slot-vectorizable layout (t2p, t2x4, t2p8, ...),
// instantiated per ISA policy P (kernels/isa/*.hpp) and per block shape (G groups of M vectors,
// ROWS rows).
// The layout enters only through its runtime SlotVectorPlan (plan.hpp):
//
//   per token, once:  expanded activations (per block, class and slot: the bytes matching each
//                     word's lanes, 16 consecutive values or dup8 for row-pair words) + BlockActs
//   per block:        for each weight vector: one load, then P::slot_dot = AND per slot, dot4
//                     against the expansion, the 1/4/16(/64) recombination where the policy masks
//                     in place, summed per group (P::slot_add, widened once by P::slot_widen);
//                     pair sums of lanes are gathered into rows by the plan's pair_index; the +1 code offset leaves with
//                     the q8_K partial sums (S - ysum); one fma per row with d_w * d_y.
//   a block of several 128-weight chunks under one scale per row (t2p-g256, tq2_0): each chunk
//                     runs as a block of its own at its plan offset, one fma per chunk with the
//                     block's scale, as the reference and the oracle do (Chunks below).
//   scale groups narrower than a chunk (t2p-g64: two 64-weight groups, words 0-1 and 2-3 of each
//                     row pair): each group's lane pairs are summed apart (the plan puts a group's
//                     words in accumulators of their own) and the epilogue is the reference's: one
//                     fma under the row's scale where its groups' scales are equal, else one fma
//                     per group, the +1 offset leaving with that group's q8_K sums.
//
// Exactness: every slot value is a code u in 0..3 times 4^s, every product fits the dot4's
// intermediate (see the policies), each block's integer is below 2^24 (|S| <= 128 * 3 * 128 * 64),
// and the fma association is gemv_reference's, so the float result is bit-identical.
//
// Include only from an ISA translation unit (after its #pragma GCC target).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "common/error.hpp"
#include "kernels/kernel.hpp"
#include "kernels/kernel_id.hpp"
#include "kernels/strategies/slot_mask/ops.hpp"
#include "kernels/strategies/slot_mask/plan.hpp"
#include "kernels/strategies/block_scales.hpp"
#include "kernels/strategies/slot_mask/strategy.hpp"

namespace ternlab::strategies {

// The pair sums of G group accumulators, where pair_sum_position<P::kBytes> says: from the
// policy's pair_add, or its own store where its vector is not int32 lanes (the portable policy).
template <class P, int G>
void store_pair_sums(const typename P::V* c, std::int32_t* out) {
  if constexpr (requires { P::template store_pair_sums<G>(c, out); })
    P::template store_pair_sums<G>(c, out);
  else
    for (int a = 0; a < G; a += 2) P::store(out + P::kBytes / 4 * (a / 2), P::pair_add(c[a], a + 1 < G ? c[a + 1] : P::zero()));
}

// kDecodedScales: the instantiation for plans whose row scales one 16-byte load cannot read as
// fp16 (bf16, e4m3, e8m0, spaced apart, or too near the block's end): its register epilogue decodes
// each block's scales into float lanes. An instantiation of its own, so the fp16 one's loops stay
// as they are.
template <SlotMaskOps P, int G, int M, int ROWS, bool kDecodedScales = false>
struct SlotMask {
  static constexpr int kPairsPerRow = 2 * G * (P::kBytes / kWordBytes) / ROWS;
  static_assert(M <= P::kGroupVectors, "the policy's narrow group accumulator holds at most kGroupVectors vectors");

  // The variant's name in messages: a policy may run the strategy as another Strategy (kSlotStrategy),
  // and the policy's own name tells builds of one ISA apart (avx512vnni-simde).
  static constexpr Strategy kStrategy = [] {
    if constexpr (requires { P::kSlotStrategy; }) return P::kSlotStrategy;
    return Strategy::slot_mask;
  }();
  static std::string kernel() { return cat(strategy_name(kStrategy), "/", P::name); }

  static const SlotVectorPlan& plan(const LayoutInfo& L) {
    return slot_vector_plan(L, P::kBytes, &pair_sum_position<P::kBytes>, P::kGroupVectors);
  }
  // Whether this instantiation's shape is the plan's.
  static bool fits(const SlotVectorPlan& p) {
    return p.why_not.empty() && p.groups == G && p.group_size == M && p.rows == ROWS && p.pairs_per_row == kPairsPerRow;
  }

  // Sum of u * y for each row of one block, times 2^P::kSlotShift: s[r][j] over scale group j
  // (j < p.scale_groups; one group: the row's sum).
  static void block_dot(const SlotVectorPlan& p, const std::uint8_t* blk, const std::uint8_t* x,
                        std::int32_t (&s)[ROWS][kPairsPerRow]) {
    block_dot_tokens<1>(p, blk, &x, &s);
  }

  // Group accumulators of one block for T tokens at once: each weight vector is loaded and its
  // slots extracted once, then dotted with every token's expansion (the 4-column tile of gemm).
  template <int T, bool kTwoChains = false>
  static void accumulate(const SlotVectorPlan& p, const std::uint8_t* blk, const std::uint8_t* const* x,
                         typename P::V (*c)[G]) {
    constexpr bool kInPlace = requires(typename P::V a, typename P::Slots w, const std::uint8_t* xt) {
      P::slot_dot_into(a, w, xt);
    };
    for (int g = 0; g < G; ++g) {
      // Vector 0 starts each accumulator, so every one is written before it is read (peeled, not
      // a conditional inside the loop, which GCC cannot always see through).
      const typename P::Slots w0 = P::extract(P::load(blk + p.vector_offset[g * M]));
      for (int t = 0; t < T; ++t) {
        const std::uint8_t* xt = x[t] + p.class_offset[g * M];
        if constexpr (kInPlace)
          c[t][g] = P::slot_dot_into(P::zero(), w0, xt);
        else
          c[t][g] = P::slot_dot(w0, xt);
      }
      if constexpr (kInPlace && M >= 2 && kTwoChains) {
        // Odd vectors into a second accumulator, added once, so a group of several vectors
        // (t2p-split) is two chains of dot4, not one that waits on each dot's latency. Asked for
        // by the gemv tile only: in the gemm tile (a chain a token) and the one-group-at-a-time
        // gemv (t2x4) it cost more than it gained (docs/notebook/2026-12-05-zen4-split-fold.md).
        typename P::V odd[T];
        for (int m = 1; m < M; ++m) {
          const typename P::Slots w = P::extract(P::load(blk + p.vector_offset[g * M + m]));
          for (int t = 0; t < T; ++t) {
            const std::uint8_t* xt = x[t] + p.class_offset[g * M + m];
            if (m == 1)
              odd[t] = P::slot_dot_into(P::zero(), w, xt);
            else if (m % 2 == 1)
              odd[t] = P::slot_dot_into(odd[t], w, xt);
            else
              c[t][g] = P::slot_dot_into(c[t][g], w, xt);
          }
        }
        for (int t = 0; t < T; ++t) c[t][g] = P::add32(c[t][g], odd[t]);
      } else {
        for (int m = 1; m < M; ++m) {
          const typename P::Slots w = P::extract(P::load(blk + p.vector_offset[g * M + m]));
          for (int t = 0; t < T; ++t) {
            const std::uint8_t* xt = x[t] + p.class_offset[g * M + m];
            if constexpr (kInPlace)
              c[t][g] = P::slot_dot_into(c[t][g], w, xt);
            else
              c[t][g] = P::slot_add(c[t][g], P::slot_dot(w, xt));
          }
        }
      }
      for (int t = 0; t < T; ++t) c[t][g] = P::slot_widen(c[t][g]);
    }
  }

  // The group accumulators of block i (at blk) for a gemm tile's four tokens.
  static void accumulate_tile(const SlotVectorPlan& p, const SlotActs (&a)[4], std::int64_t i, const std::uint8_t* blk,
                              typename P::V (*c)[G]) {
    const std::uint8_t* xs[4];
    for (int m = 0; m < 4; ++m) xs[m] = a[m].expanded + i * p.expanded_block_bytes;
    accumulate<4>(p, blk, xs, c);
  }

  // Per-row sums through memory: the portable reduction.
  template <int T>
  static void block_dot_tokens(const SlotVectorPlan& p, const std::uint8_t* blk, const std::uint8_t* const* x,
                               std::int32_t (*s)[ROWS][kPairsPerRow]) {
    typename P::V c[T][G];
    accumulate<T>(p, blk, x, c);
    for (int t = 0; t < T; ++t) {
      alignas(64) std::int32_t pairs[(G + 1) * P::kBytes / 4];
      store_pair_sums<P, G>(c[t], pairs);
      if (p.scale_groups == 1) {
        for (int r = 0; r < ROWS; ++r) {
          std::int32_t sum = 0;
          for (int e = 0; e < kPairsPerRow; ++e) sum += pairs[p.pair_index[r * kPairsPerRow + e]];
          s[t][r][0] = sum;
        }
        continue;
      }
      const int per_group = kPairsPerRow / p.scale_groups;
      for (int r = 0; r < ROWS; ++r)
        for (int j = 0; j < p.scale_groups; ++j) {
          std::int32_t sum = 0;
          for (int e = j * per_group; e < (j + 1) * per_group; ++e) sum += pairs[p.pair_index[r * kPairsPerRow + e]];
          s[t][r][j] = sum;
        }
    }
  }

  // acc += row r's chunk c of the block at `block` from its scale-group sums s (times
  // 2^P::kSlotShift), in the reference's float operations: one fma under the row's scale where its
  // groups' scales are equal (the +1 offset leaves with the chunk's ysum), else one fma per group
  // in order, each with its own scale and its own q8_K sums. Always inlined: it runs per row in
  // the per-row loops, where GCC's -O3 build (portable/avx2) had made it a call.
  [[gnu::always_inline]] static void add_split_chunk(const SlotVectorPlan& p, const std::uint8_t* block, int c, int r, const std::int32_t* s,
                              const BlockActs& b, float& acc) {
    const ScaleFormat f = p.layout->scale_format();
    const int* at = p.scale_at[r] + c * p.scale_groups;
    float d[kMaxChunkScaleGroups];
    bool one_scale = true;
    std::int32_t sum = 0;
    for (int j = 0; j < p.scale_groups; ++j) {
      d[j] = block_scale<P>(f, block + at[j]);
      one_scale = one_scale && d[j] == d[0];
      sum += s[j];
    }
    if (one_scale) {
      acc = scalar_fma<P>(float((sum >> P::kSlotShift) - b.ysum), d[0] * b.d, acc);
      return;
    }
    for (int j = 0; j < p.scale_groups; ++j) {
      std::int32_t ysum = 0;
      for (int q = j * p.group_bsums; q < (j + 1) * p.group_bsums; ++q) ysum += b.bsums[q];
      acc = scalar_fma<P>(float((s[j] >> P::kSlotShift) - ysum), d[j] * b.d, acc);
    }
  }

  // Policies with 8-lane row vectors (AVX2) keep the reduction and the epilogue in registers when
  // the plan allows: rows <= 8, one scale per row and block, contiguous fp16 scales readable as one
  // load inside the block (or, in the kDecodedScales instantiation, scales that are not).
  using Rows = SlotRowsOf<P>;  // the target's gather of pair sums into rows
  static constexpr bool kVectorRows = requires(const typename P::V* c, const SlotVectorPlan& p) {
    typename P::RowF;
    Rows::template rows_from_pairs<G, kPairsPerRow>(c, p);
  } && ROWS <= 8 && kPairsPerRow <= 8;
  // The in-place fp16 read: up to 4 rows' scales in one 8-byte load, else 8 in one 16-byte load. The
  // load must stay inside the block, so a block whose scales end it (t2p-tail) needs the narrow one.
  static constexpr bool kNarrowScaleLoad = ROWS <= 4 && requires(const std::uint8_t* b) { P::row_scales4(b); };
  static constexpr int kScaleLoadBytes = kNarrowScaleLoad ? 8 : 16;
  static bool vector_rows(const SlotVectorPlan& p) {
    // Pair sums travel as 8-lane pieces: (G + 1) / 2 pair vectors of kBytes / 32 pieces each.
    if constexpr (kDecodedScales)  // every plan the fp16 read below refuses for its scales alone
      return kVectorRows && p.scale_groups == 1 && !(p.scales_contiguous && p.scale_offset[0] + kScaleLoadBytes <= p.block_bytes) &&
             (G + 1) / 2 * (P::kBytes / 32) <= 8;
    return kVectorRows && p.scale_groups == 1 && p.scales_contiguous && p.scale_offset[0] + kScaleLoadBytes <= p.block_bytes &&
           (G + 1) / 2 * (P::kBytes / 32) <= 8;
  }
  // Each block's ROWS scales as float lanes for the register epilogue: contiguous fp16 read in
  // place, anything else decoded into the lanes. Decoding is exact: every
  // scale format's values are floats. The per-row scalar epilogue instead ran these formats far
  // slower (measured: docs/notebook/2026-12-03-zen3-kernels.md).
  struct Fp16Lanes {
    explicit Fp16Lanes(const SlotVectorPlan&) {}
    static auto at(const SlotVectorPlan& p, const std::uint8_t* blk) {
      if constexpr (kNarrowScaleLoad)
        return P::row_scales4(blk + p.scale_offset[0]);
      else
        return P::row_scales(blk + p.scale_offset[0]);
    }
  };
  struct DecodedLanes {
    BlockScaleDecoder decoder;
    explicit DecodedLanes(const SlotVectorPlan& p) : decoder(p.layout->scale_format()) {}
    // Decoded as the block streams in. A pass over a row group's scales ahead of its block loop
    // waits on a cache miss per block (measured: docs/notebook/2026-12-03-zen3-kernels.md).
    auto at(const SlotVectorPlan& p, const std::uint8_t* blk) const {
      alignas(32) float d[8] = {};
      decoder.template decode<P, ROWS>(blk, [&](int r) { return p.scale_offset[r]; }, d);
      return P::row_load(d);
    }
  };
  using RowScaleLanes = std::conditional_t<kDecodedScales, DecodedLanes, Fp16Lanes>;
  // The decoded instantiation is picked only for plans its register epilogue takes, so it leaves
  // out the scalar paths (GCC drops what follows a call that does not return).
  [[noreturn]] static void not_vector_rows(const SlotVectorPlan& p) {
    fail(kernel(), " decoded-scales kernel handed layout '", p.layout->name,
         "', whose plan its register epilogue refuses");
  }

  // Policies that hold a 4 x 4 tile of results in registers (x86: Rows8::TileF) do so for plans
  // of two row pairs whose rows their target's tile_rows can gather from G accumulators (t2p: two,
  // t2p-split: one); TileActs feeds the epilogue.
  static constexpr bool kTileRows = requires(const typename P::V (*c)[G], const SlotVectorPlan& p) {
    typename P::TileF;
    Rows::tile_rows(c, p);
  } && ROWS == 4 && !kDecodedScales;
  static constexpr bool kTileGemv = [] {
    if constexpr (kTileRows) return Rows::kTileGemv;
    return false;
  }();
  static bool tiles_fit(const SlotVectorPlan& p) {
    if constexpr (kTileRows)
      return Rows::tile_fits(p) && p.scale_groups == 1 && p.scales_contiguous && p.scale_offset[0] + 8 <= p.block_bytes;
    return false;
  }
  // Per block of a tile: each token's ysum and d, repeated over its four row lanes (gemv: the one
  // token's, in all sixteen).
  struct TileActs {
    std::int32_t ysum[16];
    float d[16];
  };
  static void fill_tile_acts(const SlotActs (&a)[4], std::int64_t nb, TileActs* ta) {
    for (std::int64_t i = 0; i < nb; ++i)
      for (int m = 0; m < 4; ++m)
        for (int r = 0; r < 4; ++r) ta[i].ysum[4 * m + r] = a[m].blocks[i].ysum, ta[i].d[4 * m + r] = a[m].blocks[i].d;
  }
  static const TileActs* tile_acts(const SlotActs (&a)[4], std::int64_t nb) {
    auto* ta = reinterpret_cast<TileActs*>(kernel_scratch(std::size_t(nb) * sizeof(TileActs), kScratchTileActs));
    fill_tile_acts(a, nb, ta);
    return ta;
  }

  static const SlotVectorPlan& checked_plan(const LayoutInfo& L) {
    const SlotVectorPlan& p = plan(L);
    if (!fits(p))
      fail(kernel(), " kernel (", G, " x ", M, " vectors, ", ROWS, " rows) cannot run layout '", L.name,
           "': ", p.why_not.empty() ? std::string("its plan has another shape") : p.why_not);
    return p;
  }

  // A row group's blocks as 128-weight chunks (SlotVectorPlan::chunks): `w` is chunk i's base (the
  // plan's vector offsets from it), `s` its block's (the scale offsets from it). Chunks index the
  // prepared activations one q8_K half each, so a block of two chunks is two fmas with one scale.
  struct Chunks {
    const std::uint8_t* w;
    const std::uint8_t* s;
    int c = 0;
    explicit Chunks(const std::uint8_t* block) : w(block), s(block) {}
    void next(const SlotVectorPlan& p) {
      if (++c == p.chunks) {
        c = 0;
        s += p.block_bytes;
        w = s;
      } else {
        w += p.chunk_stride;
      }
    }
  };
  static std::int64_t chunks_per_row(const SlotVectorPlan& p, const PackedMatrix& w) {
    return w.blocks_per_row() * p.chunks;
  }

  static void scales(const SlotVectorPlan& p, const std::uint8_t* blk, float* d) {
    const ScaleFormat f = p.layout->scale_format();
    for (int r = 0; r < ROWS; ++r) d[r] = block_scale<P>(f, blk + p.scale_offset[r]);
  }

  // The gemv in two phases (GemvPhases): the prepared buffer holds the expansion, then, where the
  // tile path runs, each block's TileActs.
  static bool gemv_tiles(const SlotVectorPlan& p) {
    if constexpr (kTileGemv) return tiles_fit(p);
    return false;
  }
  static std::size_t tile_acts_offset(const SlotVectorPlan& p, std::int64_t nb) {
    return (prepared_acts_bytes(nb, p.expanded_block_bytes) + 63) / 64 * 64;
  }
  // The plan bound at listing time, checked against the matrix handed in (a pointer compare).
  static const SlotVectorPlan& bound(const void* plan, const PackedMatrix& w) {
    const auto& p = *static_cast<const SlotVectorPlan*>(plan);
    if (p.layout != w.layout)
      fail(kernel(), " kernel bound to layout '", p.layout->name, "' was handed layout '", w.layout->name, "'");
    return p;
  }
  static std::size_t gemv_acts_bytes(const void* plan, const PackedMatrix& w) {
    const SlotVectorPlan& p = bound(plan, w);
    const std::int64_t nb = chunks_per_row(p, w);
    return tile_acts_offset(p, nb) + (gemv_tiles(p) ? std::size_t(nb) * sizeof(TileActs) : 0);
  }
  static void gemv_prepare(const void* plan, const PackedMatrix& w, const BlockQ8K* x, std::uint8_t* mem) {
    const SlotVectorPlan& p = bound(plan, w);
    const std::int64_t nb = chunks_per_row(p, w);
    const SlotActs a = prepare_slot_acts_into(p, *w.layout, x, nb, mem);
    if (gemv_tiles(p)) {
      const SlotActs same[4] = {a, a, a, a};
      fill_tile_acts(same, nb, reinterpret_cast<TileActs*>(mem + tile_acts_offset(p, nb)));
    }
  }
  static void gemv(const PackedMatrix& w, const BlockQ8K* x, float* y, std::int64_t g0, std::int64_t g1) {
    const SlotVectorPlan& p = checked_plan(*w.layout);
    std::uint8_t* mem = kernel_scratch(gemv_acts_bytes(&p, w), 0);
    gemv_prepare(&p, w, x, mem);
    gemv_rows(&p, w, mem, y, g0, g1);
  }

  static void gemv_rows(const void* plan, const PackedMatrix& w, const std::uint8_t* mem, float* y, std::int64_t g0,
                        std::int64_t g1) {
    const SlotVectorPlan& p = bound(plan, w);
    const std::int64_t nb = chunks_per_row(p, w);
    const SlotActs a = view_prepared_acts(mem, nb);
    std::int64_t g = g0;
    if constexpr (kTileGemv)  // four row groups at a time fill the policy's tile
      if (gemv_tiles(p) && g1 - g0 >= 4) {
        const auto* ta = reinterpret_cast<const TileActs*>(mem + tile_acts_offset(p, nb));
        for (; g + 4 <= g1; g += 4) {
          typename P::TileF acc = P::tile_zero();
          Chunks blk[4] = {Chunks(w.block(g, 0)), Chunks(w.block(g + 1, 0)), Chunks(w.block(g + 2, 0)), Chunks(w.block(g + 3, 0))};
          const std::uint8_t* xe = a.expanded;
          for (std::int64_t i = 0; i < nb; ++i, xe += p.expanded_block_bytes) {
            typename P::V c[4][G];
#pragma GCC unroll 4
            for (int q = 0; q < 4; ++q) {
              prefetch_ahead(blk[q].w, p.block_bytes);
              accumulate<1, true>(p, blk[q].w, &xe, &c[q]);
            }
            const int so = p.scale_offset[0];
            acc = P::template tile_fma<P::kSlotShift>(
                Rows::tile_rows(c, p), ta[i], P::tile_scales(blk[0].s + so, blk[1].s + so, blk[2].s + so, blk[3].s + so), acc);
            for (int q = 0; q < 4; ++q) blk[q].next(p);
          }
          P::tile_store(acc, y + g * ROWS, ROWS, 4);
        }
      }
    if constexpr (kVectorRows)
      if (vector_rows(p)) {
        const RowScaleLanes scale_lanes(p);
        for (; g < g1; ++g) {
          typename P::RowF acc = P::row_zero();
          Chunks blk(w.block(g, 0));
          const std::uint8_t* xe = a.expanded;
          for (std::int64_t i = 0; i < nb; ++i, blk.next(p), xe += p.expanded_block_bytes) {
            prefetch_ahead(blk.w, p.block_bytes);
            typename P::V c[1][G];
            accumulate<1>(p, blk.w, &xe, c);
            const auto s = Rows::template rows_from_pairs<G, kPairsPerRow>(c[0], p);
            acc = P::template row_fma<P::kSlotShift>(s, a.blocks[i].ysum, scale_lanes.at(p, blk.s), a.blocks[i].d, acc);
          }
          P::row_store(y + g * ROWS, acc, ROWS);
        }
        return;
      }
    if constexpr (kDecodedScales) not_vector_rows(p);
    for (; g < g1; ++g) {
      float acc[ROWS] = {};
      Chunks blk(w.block(g, 0));
      const std::uint8_t* xe = a.expanded;
      for (std::int64_t i = 0; i < nb; ++i, blk.next(p), xe += p.expanded_block_bytes) {
        prefetch_ahead(blk.w, p.block_bytes);
        std::int32_t s[ROWS][kPairsPerRow] = {};
        block_dot(p, blk.w, xe, s);
        const BlockActs b = a.blocks[i];
        if (p.scale_groups > 1) {
          for (int r = 0; r < ROWS; ++r) add_split_chunk(p, blk.s, blk.c, r, s[r], b, acc[r]);
          continue;
        }
        float d[ROWS];
        scales(p, blk.s, d);
        for (int r = 0; r < ROWS; ++r)
          acc[r] = scalar_fma<P>(float((s[r][0] >> P::kSlotShift) - b.ysum), d[r] * b.d, acc[r]);
      }
      for (int r = 0; r < ROWS; ++r) y[g * ROWS + r] = acc[r];
    }
  }

  // 4-column tiles of q8_Kx4, all four columns in one pass over the weights; a last, partial tile
  // is one more such pass with its missing tokens zero (q8_Kx4 pads them), never a gemv per column.
  static void gemm(const PackedMatrix& w, const Q8KBatch& x, float* y, std::int64_t ldy, std::int64_t g0,
                   std::int64_t g1) {
    const LayoutInfo& L = *w.layout;
    const SlotVectorPlan& p = checked_plan(L);
    const std::int64_t nb = chunks_per_row(p, w);
    for (std::int64_t t = 0; t < x.tiles_count(); ++t) {
      const int live = int(std::min<std::int64_t>(4, x.tokens - 4 * t));
      SlotActs a[4];
      for (int m = 0; m < 4; ++m) a[m] = prepare_slot_acts_x4(p, L, x.tile(t), m, nb, m);
      if constexpr (kTileRows)
        if (tiles_fit(p)) {
          const TileActs* ta = tile_acts(a, nb);
          for (std::int64_t g = g0; g < g1; ++g) {
            typename P::TileF acc = P::tile_zero();
            Chunks blk(w.block(g, 0));
            for (std::int64_t i = 0; i < nb; ++i, blk.next(p)) {
              typename P::V c[4][G];
              accumulate_tile(p, a, i, blk.w, c);
              const std::uint8_t* sc = blk.s + p.scale_offset[0];
              acc = P::template tile_fma<P::kSlotShift>(Rows::tile_rows(c, p), ta[i], P::tile_scales(sc, sc, sc, sc), acc);
            }
            P::tile_store(acc, y + 4 * t * ldy + g * ROWS, ldy, live);
          }
          continue;
        }
      if constexpr (kVectorRows)
        if (vector_rows(p)) {
          const RowScaleLanes scale_lanes(p);
          for (std::int64_t g = g0; g < g1; ++g) {
            typename P::RowF acc[4] = {P::row_zero(), P::row_zero(), P::row_zero(), P::row_zero()};
            Chunks blk(w.block(g, 0));
            for (std::int64_t i = 0; i < nb; ++i, blk.next(p)) {
              typename P::V c[4][G];
              accumulate_tile(p, a, i, blk.w, c);
              const typename P::RowF d = scale_lanes.at(p, blk.s);
              for (int m = 0; m < 4; ++m)
                acc[m] = P::template row_fma<P::kSlotShift>(Rows::template rows_from_pairs<G, kPairsPerRow>(c[m], p),
                                                            a[m].blocks[i].ysum, d, a[m].blocks[i].d, acc[m]);
            }
            for (int m = 0; m < live; ++m) P::row_store(y + (4 * t + m) * ldy + g * ROWS, acc[m], ROWS);
          }
          continue;
        }
      if constexpr (kDecodedScales) not_vector_rows(p);
      for (std::int64_t g = g0; g < g1; ++g) {
        float acc[4][ROWS] = {};
        Chunks blk(w.block(g, 0));
        for (std::int64_t i = 0; i < nb; ++i, blk.next(p)) {
          const std::uint8_t* xs[4];
          for (int m = 0; m < 4; ++m) xs[m] = a[m].expanded + i * p.expanded_block_bytes;
          std::int32_t s[4][ROWS][kPairsPerRow] = {};
          block_dot_tokens<4>(p, blk.w, xs, s);
          if (p.scale_groups > 1) {
            for (int m = 0; m < 4; ++m)
              for (int r = 0; r < ROWS; ++r) add_split_chunk(p, blk.s, blk.c, r, s[m][r], a[m].blocks[i], acc[m][r]);
            continue;
          }
          float d[ROWS];
          scales(p, blk.s, d);
          for (int m = 0; m < 4; ++m) {
            const BlockActs b = a[m].blocks[i];
            for (int r = 0; r < ROWS; ++r)
              acc[m][r] = scalar_fma<P>(float((s[m][r][0] >> P::kSlotShift) - b.ysum), d[r] * b.d, acc[m][r]);
          }
        }
        for (int m = 0; m < live; ++m)
          for (int r = 0; r < ROWS; ++r) y[(4 * t + m) * ldy + g * ROWS + r] = acc[m][r];
      }
    }
  }
};

// Points k at SlotMask<P, G, M, ROWS> when the plan has that block shape, the plan bound: the
// decoded-scales instantiation where only it keeps the epilogue in registers. Programs that run
// the strategy as another Strategy (kSlotStrategy: slot-mask-widen, portable) keep the per-row
// path for those plans, which spares the build their instantiations.
template <class P, int G, int M, int ROWS>
bool pick_slot_mask(const SlotVectorPlan& p, KernelFns& k) {
  using K = SlotMask<P, G, M, ROWS>;
  if (!K::fits(p)) return false;
  k = {&K::gemv, &K::gemm, {&p, &K::gemv_acts_bytes, &K::gemv_prepare, &K::gemv_rows}};
  if constexpr (K::kVectorRows && K::kStrategy == Strategy::slot_mask) {
    using D = SlotMask<P, G, M, ROWS, true>;
    if (!K::vector_rows(p) && D::vector_rows(p))
      k = {&D::gemv, &D::gemm, {&p, &D::gemv_acts_bytes, &D::gemv_prepare, &D::gemv_rows}};
  }
  return true;
}

// Every block shape a slot plan can take at policy P's width, derived from the plan builder's
// bounds rather than listed by hand: a 2-bit block of R rows is 32 R payload bytes, so G groups of
// M vectors satisfy G M kBytes = 32 R; M is at most the policy's group width (the builder splits
// larger groups), and the 2 G (kBytes / 16) lane pairs must split evenly over the rows. Any layout
// the builder accepts at this width therefore has an instantiation, whatever its shape.
struct SlotShape {
  int groups = 0, group_size = 0, rows = 0;
};
template <class P>
inline constexpr auto kSlotShapes = [] {
  std::array<SlotShape, 64> out{};
  std::size_t n = 0;
  for (int rows = 1; rows <= kMaxPlanRows; ++rows) {
    if (32 * rows % P::kBytes != 0) continue;
    const int vectors = 32 * rows / P::kBytes;
    if (vectors > kMaxPlanVectors) continue;
    for (int m = 1; m <= std::min(vectors, P::kGroupVectors); ++m) {
      const int g = vectors / m;
      if (vectors % m == 0 && 2 * g * (P::kBytes / kWordBytes) % rows == 0) out[n++] = {g, m, rows};
    }
  }
  return std::pair{out, n};
}();

template <class P, std::size_t... I>
bool pick_slot_mask_of(const SlotVectorPlan& p, KernelFns& k, std::index_sequence<I...>) {
  constexpr auto& s = kSlotShapes<P>.first;
  return (pick_slot_mask<P, s[I].groups, s[I].group_size, s[I].rows>(p, k) || ...);
}

// The slot-mask kernels of layout L on policy P, or the plan's reason when there are none.
template <class P>
std::string pick_slot_mask_any(const LayoutInfo& L, KernelFns& k) {
  const SlotVectorPlan& p = slot_vector_plan(L, P::kBytes, &pair_sum_position<P::kBytes>, P::kGroupVectors);
  if (!p.why_not.empty()) return p.why_not;
  if (pick_slot_mask_of<P>(p, k, std::make_index_sequence<kSlotShapes<P>.second>{})) return "";
  // Unreachable while kSlotShapes mirrors build_slot_plan's bounds; the registry test would fail.
  return cat("no instantiation for ", p.groups, " groups of ", p.group_size, " vectors, ", p.rows, " rows");
}

template <class T>
void SlotMaskStrategy::add(const LayoutInfo& L, std::vector<KernelVariant>& out, std::vector<KernelGap>* gaps) {
  using P = SlotPolicyOf<T>;
  if constexpr (!SlotMaskOps<P>) {
    if (gaps) gaps->push_back({id, T::kIsa, cat(P::name, "'s policy lacks slot-mask's operations (SlotMaskOps)")});
  } else {
    KernelFns k;
    const std::string why = pick_slot_mask_any<P>(L, k);  // sets k
    detail::add_or_note(out, gaps, id, T::kIsa, why, k);
    if (why.empty()) {
      const SlotVectorPlan& p = slot_vector_plan(L, P::kBytes, &pair_sum_position<P::kBytes>, P::kGroupVectors);
      out.back().gathers_rows = !(p.fold_words || p.fold_pair_words || p.fold_halves);
    }
    if constexpr (requires { typename T::WidenSlots; }) {
      // The same plan without the trick with 4 and 16, for experiments only (ranked last by dispatch).
      KernelFns widen;
      detail::add_or_note(out, gaps, Strategy::slot_mask_widen, T::kIsa, pick_slot_mask_any<typename T::WidenSlots>(L, widen),
                          widen);
    }
  }
}

}  // namespace ternlab::strategies
