// The broadcast strategy, one template for every row-interleaved layout (t2r, t2r8, ...),
// instantiated per x86 ISA policy P (kernels/isa/*.hpp) and rows per block R. The layout enters
// through its StripPlan (layouts/dsl.hpp):
//
//   per token, once:  the activations in strip order (strip t's slot s = one dword) + BlockActs
//   per block:        for each strip: one load per P::kLanes rows, the lane program's slots (an
//                     AND per slot, plus the shift to the code where the program takes codes),
//                     then per slot one dot4 of every lane against the broadcast activation dword:
//                     each 32-bit lane accumulates its own row, so no horizontal sum is ever
//                     taken; the program's sums give one int32 per row, and the block ends in
//                     P::lanes_fma: one convert and one fma for all the vector's rows, the +1 code
//                     offset leaving with the q8_K partial sums (S - ysum).
//
// The policy supplies a lane program per use, GemvLanes, GemmLanes (kGemmTokens tokens) and
// Gemm4Lanes (a last tile of four, kGemm4Streams row groups side by side): with one token the
// cheapest extraction wins (AVX-512: in-place masks, one accumulator per slot; AVX2: each nibble's
// slots in place, one shift a vector); with many, the fewest accumulators per token (codes, one
// accumulator per token).
//
// Two walks of a block, by register file: with 32 registers (AVX-512) each stream's block in turn,
// vector by vector, its lane program taking all four slots of a vector (slots, dot with the
// activation address: the broadcast rides in the dot's memory operand); with 16 (AVX2) the
// streams' blocks together, strip by strip and slot by slot, its lane program taking one slot's
// codes (code), one broadcast register per token (broadcast) and one dot (dot), told the slot so
// it may keep slots apart, and the end of each strip (strip_done).
//
// Exactness: slot values are u * 4^s (AVX-512, in place, <= 192) or u and 4u (AVX2); every policy
// keeps its intermediates below its instruction's saturation (see the policies), the row sums are
// exact int32, and the fma association is gemv_reference's, so the float result is bit-identical.
//
// Include only from an ISA translation unit (after its #pragma GCC target).
#pragma once

#include <algorithm>
#include <cstdint>
#include <concepts>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "common/strings.hpp"
#include "kernels/kernel.hpp"
#include "kernels/kernel_plan.hpp"
#include "kernels/strategies/block_scales.hpp"
#include "kernels/strategies/broadcast/strategy.hpp"

namespace ternlab::strategies {

// Who brings a gemv's weights in ahead of the loads: the kernel's prefetches or the hardware
// prefetcher alone. The better one depends on the core, so both are built and the planner may
// choose (see CpuFeatures::prefers_hardware_prefetch): on the Zen 4 guest t2r's AVX-512 gemv read
// more without its prefetches, on Zen 3 the prefetches paid. The gemm keeps its prefetches in both
// builds: on Zen 4 they were level or faster there. Measured: docs/notebook/2026-12-04-zen4-kernels.md,
// 2026-12-03-zen3-kernels.md.
enum class Streaming { software_prefetch, hardware_prefetch };
inline constexpr int kNoPrefetch = -1;  // a prefetch distance that prefetches nothing

// A gemm in passes over the weights: kTokens tokens (kTokens / 4 tiles) a pass, many(t) from
// tile t, while whole groups of tiles remain, then one tile a pass, one(t); a partial last tile
// runs with its missing tokens zero (q8_Kx4 pads them), never a gemv per column.
template <int kTokens, class Many, class One>
void gemm_in_passes(const Q8KBatch& x, Many many, One one) {
  constexpr int kTiles = kTokens / 4;
  std::int64_t t = 0;
  if constexpr (kTiles > 1)
    for (; t + kTiles <= x.tiles_count(); t += kTiles) many(t);
  for (; t < x.tiles_count(); ++t) one(t);
}

template <class P, int R, Streaming S = Streaming::software_prefetch>
struct Broadcast {
  static_assert(R % 8 == 0 && R <= 16, "row-interleaved blocks have 8 or 16 rows");
  static constexpr Strategy kStrategy = Strategy::broadcast;
  static constexpr bool kSoftwarePrefetch = S == Streaming::software_prefetch;
  static constexpr int kGemvPrefetch = kSoftwarePrefetch ? P::kGemvPrefetch : kNoPrefetch;
  static constexpr std::string_view kBuild = kSoftwarePrefetch ? "" : kHardwarePrefetchSuffix;  // as KernelVariant::name
  static constexpr int kLanes = P::kLanes;
  static constexpr int kVectors = R / kLanes;  // vectors per strip
  static constexpr int kStrips = 8;            // 128 weights per row per block, 16 per strip
  // The bytes a block's prefetch covers without a loop: the payload, fp16 scales and one line
  // past the block (see rows). A longer block prefetches the rest in a loop.
  static constexpr int kBlockPrefetch = kStrips * 4 * R + 2 * R + 64;
  // Prefetches the lines of a block `PF` bytes ahead (none for kNoPrefetch): through a loop over
  // a block size known only at run time, t2r's AVX2 gemv spent 31 instructions of 290 a block on
  // it.
  template <int PF>
  [[gnu::always_inline]] static void prefetch_block(const std::uint8_t* blk, int bb) {
    if constexpr (PF != kNoPrefetch) {
      prefetch_ahead<PF, kBlockPrefetch>(blk);
      if (bb + 64 > kBlockPrefetch) prefetch_ahead<PF>(blk + kBlockPrefetch, bb + 64 - kBlockPrefetch);
    }
  }

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
    if (!why.empty()) fail("broadcast/", P::name, kBuild, " kernel cannot run layout '", L.name, "': ", why);
    return *L.strip_plan;
  }

  // Rows [g0, g1) x T tokens through the lane program LP (the policy's GemvLanes or GemmLanes):
  // `acts` holds the tokens' strip-ordered activations block-major (block i of token m is entry
  // i * T + m), y + m * ldy token m's outputs (row g * R + r), of which the first `live` are
  // stored. Each pass over a row group handles VS of its kVectors vectors: all of them for one
  // token, one at a time for several, so the int32 and float accumulators of T tokens stay in
  // registers. GS row groups advance side by side, block by block: on a core whose bandwidth is
  // bound by the line fills in flight, GS independent weight streams (each prefetched ahead) read
  // faster than one. Each stream walks its own run of consecutive groups rather than the pass
  // taking GS neighbours: with short rows a stream that jumps GS groups on every pass restarts
  // cold, and at 5120 weights a row that cost a tenth of the bandwidth. Returns the first row
  // group not done.
  //
  // Out of line: inlined into a caller beside another instantiation, GCC rolled part of the
  // block's strips (t2r's AVX2 4-token gemm at half its speed).
  template <class LP, int T, int GS, int PF, bool kContiguous>
  [[gnu::noinline]] static std::int64_t rows(const StripPlan& plan, const PackedMatrix& w, const SlotActs& acts,
                                             float* y, std::int64_t ldy, int live, std::int64_t g0, std::int64_t g1) {
    const LayoutInfo& L = *w.layout;
    const std::int64_t nb = w.blocks_per_row();
    const int bb = L.block_bytes(), pb = plan.payload_begin, strip = 4 * R;
    constexpr int VS = T == 1 ? kVectors : 1;
    // Scales that are not fp16 in place (t2r-e4m3, t2r-bf16, t2r-slot-major) are decoded per
    // block into `decoded`: faster than a table of e4m3's codes as fp16 and the fp16 lanes
    // (measured: docs/notebook/2026-12-03-zen3-kernels.md).
    const BlockScaleDecoder decoder(kContiguous ? ScaleFormat::fp16 : L.scale_format());
    alignas(64) float decoded[R];
    const auto offset = [&L](int r) { return L.scale_offset(r); };
    // Stream q reads the q-th of GS equal runs of groups; its prefetch runs on into its next group.
    const std::int64_t passes = (g1 - g0) / GS;
    for (std::int64_t p = 0; p < passes; ++p)
      for (int v0 = 0; v0 < kVectors; v0 += VS) {
        typename P::LaneF acc[GS][T][VS];
        for (auto& a : acc)
          for (auto& b : a)
            for (auto& c : b) c = P::lanes_zero();
        const std::uint8_t* blk[GS];
        for (int q = 0; q < GS; ++q) blk[q] = w.block(g0 + q * passes + p, 0);
        const std::uint8_t* xb = acts.expanded;
        for (std::int64_t i = 0; i < nb; ++i, xb += T * kBlockK) {
          // Each dot's activation as base + constant: left to itself GCC made the 32 slot
          // addresses separate induction variables (kept in spare vector registers, a move per
          // dot) or indexed them (a vpdpbusd with an index is two uops). Hiding the base's
          // provenance leaves it one register and one uop per dot, and the 16-token gemm faster
          // (measured: docs/notebook/2026-12-02-sapphire-rapids-kernels.md).
          if constexpr (P::kRegisters >= 32)
            for (int q = 0; q < GS; ++q) {
              __asm__("" : "+r"(xb));
              // One line past the block too: the 10th prefetch runs into the stream's next block,
              // and measured 2-3% more bandwidth on 1 and 2 threads (32768 x 8192, cold) than the
              // block's own 9 lines.
              if (v0 == 0) prefetch_block<PF>(blk[q], bb);
              typename LP::Acc a[T][VS];
              for (auto& at : a)
                for (auto& av : at) av = LP::zero();
              // The whole block unrolled: slot by slot within a vector, the broadcasts embedded
              // in the dots' memory operands. (The block's end is written out in both walks:
              // through a shared function GCC scheduled this one's loops differently.)
#pragma GCC unroll 8
              for (int t = 0; t < kStrips; ++t)
                for (int v = 0; v < VS; ++v) {
                  const typename LP::Slots s = LP::slots(P::load(blk[q] + pb + t * strip + (v0 + v) * P::kBytes));
                  const std::uint8_t* x = xb + 16 * t;
                  for (int m = 0; m < T; ++m) LP::dot(a[m][v], s, x + m * kBlockK);
                }
              const std::uint8_t* sc = blk[q] + L.scale_offset(0);
              if constexpr (!kContiguous) decoder.template decode<P, R>(blk[q], offset, decoded);
              for (int v = 0; v < VS; ++v) {
                const typename P::LaneF d = kContiguous ? P::lanes_scales(sc + 2 * (v0 + v) * kLanes)
                                                        : P::lanes_load(decoded + (v0 + v) * kLanes);
                for (int m = 0; m < T; ++m) {
                  const BlockActs b = acts.blocks[i * T + m];
                  acc[q][m][v] = P::template lanes_fma<LP::kShift>(LP::sums(a[m][v]), b.ysum, d, b.d, acc[q][m][v]);
                }
              }
              blk[q] += bb;
            }
          else {
            __asm__("" : "+r"(xb));
            // With 16 registers and no broadcast operand every broadcast is an instruction of its
            // own, on Zen 3 about as dear as the dot it feeds, so the strip is walked slot by
            // slot and each broadcast serves all GS x VS vectors of the pass; faster than the
            // per-stream order, which also spilled its accumulators (measured:
            // docs/notebook/2026-12-03-zen3-kernels.md).
            for (int q = 0; q < GS; ++q)
              if (v0 == 0) prefetch_block<PF>(blk[q], bb);
            typename LP::Acc a[GS][T][VS];
            for (auto& aq : a)
              for (auto& at : aq)
                for (auto& av : at) av = LP::zero();
#pragma GCC unroll 8
            for (int t = 0; t < kStrips; ++t) {
              typename P::V wv[GS][VS];
              for (int q = 0; q < GS; ++q)
                for (int v = 0; v < VS; ++v) wv[q][v] = P::load(blk[q] + pb + t * strip + (v0 + v) * P::kBytes);
#pragma GCC unroll 4
              for (int s = 0; s < 4; ++s) {
                typename P::V c[GS][VS];
                for (int q = 0; q < GS; ++q)
                  for (int v = 0; v < VS; ++v) c[q][v] = LP::code(wv[q][v], s);
                for (int m = 0; m < T; ++m) {
                  const typename P::V b = LP::broadcast(xb + m * kBlockK + 16 * t + 4 * s);
                  for (int q = 0; q < GS; ++q)
                    for (int v = 0; v < VS; ++v) LP::dot(a[q][m][v], c[q][v], b, s);
                }
              }
              for (auto& aq : a)
                for (auto& at : aq)
                  for (auto& av : at) LP::strip_done(av, t);
            }
            // The block's end as above, stream by stream.
            for (int q = 0; q < GS; ++q) {
              const std::uint8_t* sc = blk[q] + L.scale_offset(0);
              if constexpr (!kContiguous) decoder.template decode<P, R>(blk[q], offset, decoded);
              for (int v = 0; v < VS; ++v) {
                const typename P::LaneF d = kContiguous ? P::lanes_scales(sc + 2 * (v0 + v) * kLanes)
                                                        : P::lanes_load(decoded + (v0 + v) * kLanes);
                for (int m = 0; m < T; ++m) {
                  const BlockActs b = acts.blocks[i * T + m];
                  acc[q][m][v] = P::template lanes_fma<LP::kShift>(LP::sums(a[q][m][v]), b.ysum, d, b.d, acc[q][m][v]);
                }
              }
              blk[q] += bb;
            }
          }
        }
        for (int q = 0; q < GS; ++q)
          for (int m = 0; m < live; ++m)
            for (int v = 0; v < VS; ++v) P::lanes_store(y + m * ldy + (g0 + q * passes + p) * R + (v0 + v) * kLanes, acc[q][m][v]);
      }
    return g0 + GS * passes;
  }

  // The row groups streamed GS at a time, the rest one by one; the scales read in place where
  // the layout stores them contiguously (a template flag keeps the gathering out of that loop).
  template <class LP, int T, int GS, int PF>
  static void all_rows(const StripPlan& plan, const PackedMatrix& w, const SlotActs& acts, float* y,
                       std::int64_t ldy, int live, std::int64_t g0, std::int64_t g1) {
    const auto run = [&]<bool kContiguous>() {
      const std::int64_t g = rows<LP, T, GS, PF, kContiguous>(plan, w, acts, y, ldy, live, g0, g1);
      if constexpr (GS > 1) rows<LP, T, 1, PF, kContiguous>(plan, w, acts, y, ldy, live, g, g1);
    };
    if (w.layout->spec->scales.row_stride == 2 && w.layout->scale_format() == ScaleFormat::fp16)
      run.template operator()<true>();
    else
      run.template operator()<false>();
  }

  // The gemv in two phases (GemvPhases): the strip-ordered activations are prepared once per call.
  static const StripPlan& bound(const void* plan, const PackedMatrix& w) {
    if (plan != w.layout->strip_plan)
      fail("broadcast/", P::name, kBuild, " kernel was bound to another layout than '", w.layout->name, "'");
    return *static_cast<const StripPlan*>(plan);
  }
  static std::size_t gemv_acts_bytes(const void*, const PackedMatrix& w) {
    return prepared_acts_bytes(w.blocks_per_row(), kBlockK);
  }
  static void gemv_prepare(const void* plan, const PackedMatrix& w, const BlockQ8K* x, std::uint8_t* mem) {
    prepare_strip_acts_into(bound(plan, w), x, w.blocks_per_row(), mem);
  }
  // GS row groups side by side, each prefetched PF bytes ahead.
  template <int GS, int PF>
  static void gemv_rows_with(const void* plan, const PackedMatrix& w, const std::uint8_t* mem, float* y,
                             std::int64_t g0, std::int64_t g1) {
    all_rows<typename P::GemvLanes, 1, GS, PF>(bound(plan, w), w, view_prepared_acts(mem, w.blocks_per_row()), y, 0, 1,
                                               g0, g1);
  }
  static void gemv_rows(const void* plan, const PackedMatrix& w, const std::uint8_t* mem, float* y, std::int64_t g0,
                        std::int64_t g1) {
    gemv_rows_with<P::kGemvStreams, kGemvPrefetch>(plan, w, mem, y, g0, g1);
  }
  template <int GS, int PF>
  static void gemv_with(const PackedMatrix& w, const BlockQ8K* x, float* y, std::int64_t g0, std::int64_t g1) {
    const StripPlan& plan = checked_plan(*w.layout);
    std::uint8_t* mem = kernel_scratch(gemv_acts_bytes(&plan, w), 0);
    gemv_prepare(&plan, w, x, mem);
    gemv_rows_with<GS, PF>(&plan, w, mem, y, g0, g1);
  }
  static void gemv(const PackedMatrix& w, const BlockQ8K* x, float* y, std::int64_t g0, std::int64_t g1) {
    gemv_with<P::kGemvStreams, kGemvPrefetch>(w, x, y, g0, g1);
  }

  // T tokens (T / 4 tiles of q8_Kx4) starting at tile t0, in one pass over the weights, GS row
  // groups side by side.
  template <class LP, int T, int GS>
  static void gemm_tokens(const PackedMatrix& w, const Q8KBatch& x, float* y, std::int64_t ldy, std::int64_t t0,
                          std::int64_t g0, std::int64_t g1) {
    const StripPlan& plan = checked_plan(*w.layout);
    const SlotActs a = prepare_strip_acts_tiles(plan, x, t0, T, w.blocks_per_row(), 0);
    const int live = int(std::min<std::int64_t>(T, x.tokens - 4 * t0));
    all_rows<LP, T, GS, kPrefetchBytes>(plan, w, a, y + 4 * t0 * ldy, ldy, live, g0, g1);
  }

  static void gemm(const PackedMatrix& w, const Q8KBatch& x, float* y, std::int64_t ldy, std::int64_t g0,
                   std::int64_t g1) {
    gemm_in_passes<P::kGemmTokens>(
        x, [&](std::int64_t t) { gemm_tokens<typename P::GemmLanes, P::kGemmTokens, 1>(w, x, y, ldy, t, g0, g1); },
        [&](std::int64_t t) { gemm_tokens<typename P::Gemm4Lanes, 4, P::kGemm4Streams>(w, x, y, ldy, t, g0, g1); });
  }
};

// Points k at Broadcast<P, R, S> when it can run the layout, the strip plan bound; says why not
// otherwise.
template <class P, int R, Streaming S = Streaming::software_prefetch>
std::string pick_broadcast(const LayoutInfo& L, KernelFns& k) {
  using K = Broadcast<P, R, S>;
  std::string why = K::why_not(L);
  if (why.empty()) k = {&K::gemv, &K::gemm, {L.strip_plan, &K::gemv_acts_bytes, &K::gemv_prepare, &K::gemv_rows}};
  return why;
}

// Lists one broadcast build twice, with the gemv's software prefetches (fns) and without (hw_fns,
// Streaming); dispatch ranks the two.
inline void add_streaming_builds(std::vector<KernelVariant>& out, Isa isa, const KernelFns& fns, const KernelFns& hw_fns,
                                 bool gfni = false) {
  for (const bool hw : {false, true}) {
    detail::add_or_note(out, nullptr, Strategy::broadcast, isa, "", hw ? hw_fns : fns);
    out.back().gfni = gfni;
    out.back().hardware_prefetch = hw;
  }
}

// A target's further broadcast builds, compiled in units of their own for features beyond its ISA
// (AVX-512's GFNI and VBMI): `has_*()` says whether this CPU runs them, `pick_*` binds them as
// pick_broadcast does.
template <class T>
concept HasGfniBroadcast = requires(const LayoutInfo& L, KernelFns& k) {
  { T::has_gfni() } -> std::same_as<bool>;
  { T::pick_gfni_broadcast(L, k, true) } -> std::same_as<std::string>;
};
template <class T>
concept HasBase3Broadcast = requires(const LayoutInfo& L, KernelFns& k) {
  { T::base3_broadcast_why_not() } -> std::same_as<std::string>;
  { T::pick_base3_broadcast(L, k, true) } -> std::same_as<std::string>;
};

template <class T>
void BroadcastStrategy::add(const LayoutInfo& L, std::vector<KernelVariant>& out, std::vector<KernelGap>* gaps) {
  using P = typename T::Policy;
  if (L.facts.row_interleaved) {
    if constexpr (!BroadcastOps<P>) {
      if (gaps) gaps->push_back({id, T::kIsa, cat(P::name, "'s policy has no broadcast lane programs (BroadcastOps)")});
    } else {
      using enum Streaming;
      // Every row count a strip of P's width holds (8 rows fill a 32-byte vector, not a 64-byte one).
      const auto pick = [&]<Streaming S>(KernelFns& fns) {
        if constexpr (8 >= P::kLanes) {
          if (std::string why = pick_broadcast<P, 8, S>(L, fns); why.empty()) return why;
        }
        return pick_broadcast<P, 16, S>(L, fns);
      };
      KernelFns k;
      const std::string why = pick.template operator()<software_prefetch>(k);
      if (!why.empty()) {
        detail::add_or_note(out, gaps, id, T::kIsa, why, k);  // a further build would say the same
      } else {
        KernelFns hw;
        pick.template operator()<hardware_prefetch>(hw);
        add_streaming_builds(out, T::kIsa, k, hw);
        if constexpr (HasGfniBroadcast<T>) {
          if (T::has_gfni()) {
            KernelFns g, g_hw;
            T::pick_gfni_broadcast(L, g, false);
            T::pick_gfni_broadcast(L, g_hw, true);
            add_streaming_builds(out, T::kIsa, g, g_hw, true);
          }
        }
      }
    }
  }
  if (L.facts.row_interleaved_base3) {
    if constexpr (HasBase3Broadcast<T>) {
      KernelFns b, b_hw;
      std::string why = T::base3_broadcast_why_not();
      if (why.empty()) why = T::pick_base3_broadcast(L, b, false);
      if (!why.empty()) {
        detail::add_or_note(out, gaps, id, T::kIsa, why, b);
      } else {
        T::pick_base3_broadcast(L, b_hw, true);
        add_streaming_builds(out, T::kIsa, b, b_hw);
      }
    } else if (gaps) {
      gaps->push_back({id, T::kIsa, "the base-3 build decodes through byte tables of AVX-512 VBMI (vpermi2b), which this target lacks"});
    }
  }
}

}  // namespace ternlab::strategies
