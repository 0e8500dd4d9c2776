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
// A lane program per use (LanePrograms<P>: maddubs_lanes.hpp's for a maddubs dot, dot4_lanes.hpp's
// for a dot into int32 lanes with a broadcast operand; Gemv, Gemm for the target's kGemmTokens
// tokens, Gemm4 for a last tile of four over kGemm4Streams row groups side by side, both from its
// BroadcastTraits): with one token the
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
// Lanes wider than a dword (8 or 16 bytes, StripPlan::lane_bytes): a row spans LB / 4 32-bit
// lanes, each slot's LB activation bytes are broadcast to every LB-byte lane (so dword i of a row
// meets bytes 4i..4i+3), and the block's end first adds each row's dwords and orders the rows
// (BroadcastTraits<P>::lane_rows) before the same fma. Dword lanes (LB = 4) take none of these steps.
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
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "common/error.hpp"
#include "common/strings.hpp"
#include "kernels/kernel.hpp"
#include "kernels/strategies/broadcast/plan.hpp"
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

// Why no 2-bit build reads the layout: the recognition's own words (plan.hpp).
inline std::string not_row_interleaved(const LayoutInfo& L) {
  const std::string why = row_interleaved_why_not(L);
  return cat("the layout is not 2-bit row-interleaved: ", why.empty() ? "its strips are base-3" : why);
}
inline constexpr int kNoPrefetch = -1;  // a prefetch distance that prefetches nothing

// Calls rows_with.operator()<GS>() with the gemv's row groups side by side: kGemvStreams where the
// thread reads the whole matrix, kGemvSharedStreams where [g0, g1) is one part of a call split over
// threads (a take of SharedRanges), whose other parts the other threads read at the same time. Every thread's
// streams then draw on one memory, and fewer a thread read more (measured:
// docs/notebook/2026-12-07-zen4-decode-streams.md). A row's sum does not depend on the count.
template <class P, class F>
void with_gemv_streams(const PackedMatrix& w, std::int64_t g0, std::int64_t g1, F&& rows_with) {
  constexpr int kAlone = BroadcastTraits<P>::kGemvStreams, kShared = BroadcastTraits<P>::kGemvSharedStreams;
  if constexpr (kShared != kAlone)
    if (g1 - g0 < w.row_groups()) return rows_with.template operator()<kShared>();
  rows_with.template operator()<kAlone>();
}

// GemvPhases::streams for a gemv that reads with_gemv_streams' count of row groups side by side:
// stream q walks the q-th of GS equal runs of [g0, g1) (Broadcast::rows), the leftover groups
// after the last run; a range shorter than GS groups is one stream.
template <class P>
int gemv_stream_starts(const PackedMatrix& w, std::int64_t g0, std::int64_t g1, std::int64_t* starts) {
  int n = 0;
  with_gemv_streams<P>(w, g0, g1, [&]<int GS>() {
    static_assert(GS <= kMaxGemvStreams, "GemvPhases::streams writes at most kMaxGemvStreams starts");
    const std::int64_t passes = (g1 - g0) / GS;
    if (passes == 0) {
      starts[n++] = g0;
      return;
    }
    for (int q = 0; q < GS; ++q) starts[n++] = g0 + q * passes;
  });
  return n;
}

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

// The float end of a block for E rows: the policy's kLanes-row vector (lanes_*), or, where a pass
// ends fewer rows than that (lanes wider than a dword, or a 4-row block), Rows8's 8-row vector
// (row_*) or its 4-row one (row4_*).
enum class RowEndKind { lanes, rows8, rows4 };
template <class P, RowEndKind K>
struct RowEndF {
  using F = typename P::LaneF;
};
template <class P>
struct RowEndF<P, RowEndKind::rows8> {
  using F = typename P::RowF;
};
template <class P>
struct RowEndF<P, RowEndKind::rows4> {
  using F = typename P::Row4F;
};
template <class P, int E>
struct RowEnd {
  static_assert(E == P::kLanes || E == 8 || E == 4, "the policy's lanes, 8 or 4 rows");
  static constexpr RowEndKind kKind = E == P::kLanes ? RowEndKind::lanes : E == 8 ? RowEndKind::rows8 : RowEndKind::rows4;
  // (Not std::conditional_t: a vector type as its argument loses its attributes, with a warning.)
  using F = typename RowEndF<P, kKind>::F;
  static F zero() {
    if constexpr (kKind == RowEndKind::lanes) return P::lanes_zero();
    else if constexpr (kKind == RowEndKind::rows8) return P::row_zero();
    else return P::row4_zero();
  }
  static F scales(const std::uint8_t* p) {
    if constexpr (kKind == RowEndKind::lanes) return P::lanes_scales(p);
    else if constexpr (kKind == RowEndKind::rows8) return P::row_scales(p);
    else return P::row4_scales(p);
  }
  static F load(const float* p) {
    if constexpr (kKind == RowEndKind::lanes) return P::lanes_load(p);
    else if constexpr (kKind == RowEndKind::rows8) return P::row_load(p);
    else return P::row4_load(p);
  }
  template <int shift, class I>
  static F fma(I s, std::int32_t ysum, F scales, float d, F acc) {
    if constexpr (kKind == RowEndKind::lanes) return P::template lanes_fma<shift>(s, ysum, scales, d, acc);
    else if constexpr (kKind == RowEndKind::rows8) return P::template row_fma<shift>(s, ysum, scales, d, acc);
    else return P::template row4_fma<shift>(s, ysum, scales, d, acc);
  }
  // Sums with no offset to take off (the tile gemm's weights are s8 already): the zero folds away.
  template <class I>
  static F fma_centred(I s, F scales, float d, F acc) {
    return fma<0>(s, 0, scales, d, acc);
  }
  static void store(float* y, F v) {
    if constexpr (kKind == RowEndKind::lanes) P::lanes_store(y, v);
    else if constexpr (kKind == RowEndKind::rows8) _mm256_storeu_ps(y, v);
    else P::row4_store(y, v);
  }
};

// Rows R (4, 8, 16 or 32) and lanes of LB bytes (4, 8 or 16): a strip is LB * R bytes, whole
// vectors of P.
template <class P, int R, int LB = 4, Streaming S = Streaming::software_prefetch>
struct Broadcast {
  static_assert(R == 4 || R == 8 || R == 16 || R == 32, "row-interleaved blocks have 4, 8, 16 or 32 rows");
  static_assert(LB == 4 || LB == 8 || LB == 16, "lanes of 4, 8 or 16 bytes");
  static_assert(R * LB % P::kBytes == 0, "a strip is whole vectors");
  static constexpr Strategy kStrategy = Strategy::broadcast;
  static constexpr bool kSoftwarePrefetch = S == Streaming::software_prefetch;
  static constexpr int kGemvPrefetch = kSoftwarePrefetch ? BroadcastTraits<P>::kGemvPrefetch : kNoPrefetch;
  static constexpr std::string_view kBuild = kSoftwarePrefetch ? "" : kHardwarePrefetchSuffix;  // as KernelVariant::name
  static constexpr int kLanes = P::kLanes;
  static constexpr int kVectors = R * LB / P::kBytes;  // vectors per strip
  static constexpr int kStrips = kBlockK / (4 * LB);   // 128 weights per row per block, 4 LB per strip
  // The bytes a block's prefetch covers without a loop: the payload, fp16 scales and one line
  // past the block (see rows). A longer block prefetches the rest in a loop.
  static constexpr int kBlockPrefetch = kStrips * LB * R + 2 * R + 64;
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
    const StripPlan* plan = strip_plan(L);
    if (!plan) return not_row_interleaved(L);
    if (L.rows != R) return cat("the kernel takes ", R, "-row blocks, the layout has ", L.rows);
    if (plan->lane_bytes != LB) return cat("the kernel takes ", LB, "-byte lanes, the layout has ", plan->lane_bytes);
    if (L.k != 128 || plan->strips != kStrips) return "the kernel takes blocks of 128 weights per row";
    return "";
  }
  static const StripPlan& checked_plan(const LayoutInfo& L) {
    const std::string why = why_not(L);
    if (!why.empty()) fail("broadcast/", P::name, kBuild, " kernel cannot run layout '", L.name, "': ", why);
    return *strip_plan(L);
  }

  // The rows a pass over the weights ends for T tokens. One token: every row of the block that the
  // register file holds, as int32 accumulators beside the pass's weight vectors (32 registers: four
  // strip vectors, each with its slots' accumulators; 16 registers: 16 rows of dword lanes, whose
  // two or four vectors keep one lane per row, or 8 rows of wider lanes, one row vector's). Several
  // tokens: one row vector's (kLanes rows of dword lanes, 8 of wider ones), so that every token's
  // int32 and float accumulators stay in registers. Never more than the block's R.
  static constexpr int pass_rows(int T) {
    const int rows = T == 1 ? (P::kRegisters >= 32 ? 4 * P::kBytes / LB : LB == 4 ? 16 : 8) : LB == 4 ? kLanes : 8;
    return std::min(R, rows);
  }
  // A pass ends E rows at a time (E * LB / kBytes vectors: one with dword lanes): the policy's
  // kLanes, or with wider lanes as many as the pass ends, up to kLanes.
  static constexpr int end_rows(int T) { return LB == 4 ? kLanes : std::min(pass_rows(T), kLanes); }
  static_assert(pass_rows(1) * LB % P::kBytes == 0 && pass_rows(4) * LB % P::kBytes == 0,
                "a pass takes whole vectors of each strip");
  static_assert(pass_rows(1) % end_rows(1) == 0 && pass_rows(4) % end_rows(4) == 0, "a pass ends whole row vectors");

  // The int32 sums of E rows from their VE = E * LB / kBytes accumulators: the lane program's sums
  // as they stand with dword lanes (one accumulator), else each row's LB / 4 lanes added.
  template <class LP, int E>
  [[gnu::always_inline]] static auto row_sums(const typename LP::Acc* a) {
    if constexpr (LB == 4) {
      return LP::sums(a[0]);
    } else {
      constexpr int VE = E * LB / P::kBytes;
      typename P::V c[VE];
      for (int e = 0; e < VE; ++e) c[e] = LP::sums(a[e]);
      return BroadcastTraits<P>::template lane_rows<LB, E>(c);
    }
  }

  // Rows [g0, g1) x T tokens through the lane program LP (LanePrograms<P>::Gemv or Gemm):
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
    const int bb = L.block_bytes(), pb = plan.payload_begin, strip = LB * R;
    // A pass takes VS vectors of each strip (pass_rows) and ends E rows at a time (VE vectors).
    constexpr int kPassRows = pass_rows(T), E = end_rows(T);
    constexpr int VS = kPassRows * LB / P::kBytes, VE = E * LB / P::kBytes, FU = VS / VE;
    using End = RowEnd<P, E>;
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
        typename End::F acc[GS][T][FU];
        for (auto& a : acc)
          for (auto& b : a)
            for (auto& c : b) c = End::zero();
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
                  const std::uint8_t* x = xb + 4 * LB * t;
                  for (int m = 0; m < T; ++m) LP::template dot<LB>(a[m][v], s, x + m * kBlockK);
                }
              const std::uint8_t* sc = blk[q] + L.scale_offset(0);
              if constexpr (!kContiguous) decoder.template decode<P, R>(blk[q], offset, decoded);
              for (int f = 0; f < FU; ++f) {
                const int r0 = (v0 / VE + f) * E;
                const typename End::F d = kContiguous ? End::scales(sc + 2 * r0) : End::load(decoded + r0);
                for (int m = 0; m < T; ++m) {
                  const BlockActs b = acts.blocks[i * T + m];
                  acc[q][m][f] = End::template fma<LP::kShift>(row_sums<LP, E>(a[m] + f * VE), b.ysum, d, b.d, acc[q][m][f]);
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
                  const typename P::V b = LP::template broadcast<LB>(xb + m * kBlockK + 4 * LB * t + LB * s);
                  for (int q = 0; q < GS; ++q)
                    for (int v = 0; v < VS; ++v) LP::dot(a[q][m][v], c[q][v], b, s);
                }
              }
              for (auto& aq : a)
                for (auto& at : aq)
                  for (auto& av : at) LP::template strip_done<kStrips>(av, t);
            }
            // The block's end as above, stream by stream.
            for (int q = 0; q < GS; ++q) {
              const std::uint8_t* sc = blk[q] + L.scale_offset(0);
              if constexpr (!kContiguous) decoder.template decode<P, R>(blk[q], offset, decoded);
              for (int f = 0; f < FU; ++f) {
                const int r0 = (v0 / VE + f) * E;
                const typename End::F d = kContiguous ? End::scales(sc + 2 * r0) : End::load(decoded + r0);
                for (int m = 0; m < T; ++m) {
                  const BlockActs b = acts.blocks[i * T + m];
                  acc[q][m][f] = End::template fma<LP::kShift>(row_sums<LP, E>(a[q][m] + f * VE), b.ysum, d, b.d, acc[q][m][f]);
                }
              }
              blk[q] += bb;
            }
          }
        }
        for (int q = 0; q < GS; ++q)
          for (int m = 0; m < live; ++m)
            for (int f = 0; f < FU; ++f) End::store(y + m * ldy + (g0 + q * passes + p) * R + (v0 / VE + f) * E, acc[q][m][f]);
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
    if (plan != strip_plan(*w.layout))
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
    all_rows<typename LanePrograms<P>::Gemv, 1, GS, PF>(bound(plan, w), w, view_prepared_acts(mem, w.blocks_per_row()), y, 0, 1,
                                               g0, g1);
  }
  static void gemv_rows(const void* plan, const PackedMatrix& w, const std::uint8_t* mem, float* y, std::int64_t g0,
                        std::int64_t g1) {
    with_gemv_streams<P>(w, g0, g1, [&]<int GS>() { gemv_rows_with<GS, kGemvPrefetch>(plan, w, mem, y, g0, g1); });
  }
  template <int GS, int PF>
  static void gemv_with(const PackedMatrix& w, const BlockQ8K* x, float* y, std::int64_t g0, std::int64_t g1) {
    const StripPlan& plan = checked_plan(*w.layout);
    std::uint8_t* mem = kernel_scratch(gemv_acts_bytes(&plan, w), 0);
    gemv_prepare(&plan, w, x, mem);
    gemv_rows_with<GS, PF>(&plan, w, mem, y, g0, g1);
  }
  static void gemv(const PackedMatrix& w, const BlockQ8K* x, float* y, std::int64_t g0, std::int64_t g1) {
    with_gemv_streams<P>(w, g0, g1, [&]<int GS>() { gemv_with<GS, kGemvPrefetch>(w, x, y, g0, g1); });
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
    gemm_in_passes<BroadcastTraits<P>::kGemmTokens>(
        x, [&](std::int64_t t) { gemm_tokens<typename LanePrograms<P>::Gemm, BroadcastTraits<P>::kGemmTokens, 1>(w, x, y, ldy, t, g0, g1); },
        [&](std::int64_t t) { gemm_tokens<typename LanePrograms<P>::Gemm4, 4, BroadcastTraits<P>::kGemm4Streams>(w, x, y, ldy, t, g0, g1); });
  }
};

// Points k at Broadcast<P, R, LB, S> when it can run the layout, the strip plan bound; says why not
// otherwise.
template <class P, int R, int LB, Streaming S>
std::string pick_broadcast_for(const LayoutInfo& L, KernelFns& k) {
  if constexpr (R * LB % P::kBytes != 0) {
    return cat("a strip of ", R, " rows with ", LB, "-byte lanes (", R * LB, " bytes) fills only part of a ", P::kBytes,
               "-byte vector");
  } else {
    using K = Broadcast<P, R, LB, S>;
    std::string why = K::why_not(L);
    if (why.empty()) k = {&K::gemv, &K::gemm, {strip_plan(L), &K::gemv_acts_bytes, &K::gemv_prepare, &K::gemv_rows, &gemv_stream_starts<P>}};
    return why;
  }
}

// The build for the layout's rows (kRowInterleavedRows) and lane width (kRowLaneBytes): one
// instantiation per pair, refusing with the reason where a strip is not whole vectors of P.
template <class P, Streaming S = Streaming::software_prefetch>
std::string pick_broadcast(const LayoutInfo& L, KernelFns& k) {
  const StripPlan* plan = strip_plan(L);
  if (!plan) return not_row_interleaved(L);
  std::string why = cat("no build takes ", L.rows, " rows with ", plan->lane_bytes, "-byte lanes");
  const auto pick = [&]<std::size_t... Ri, std::size_t... Li>(std::index_sequence<Ri...>, std::index_sequence<Li...>) {
    const auto lanes = [&]<int R>() {
      return ((plan->lane_bytes == kRowLaneBytes[Li] &&
               (why = pick_broadcast_for<P, R, kRowLaneBytes[Li], S>(L, k), true)) || ...);
    };
    return ((L.rows == kRowInterleavedRows[Ri] && lanes.template operator()<kRowInterleavedRows[Ri]>()) || ...);
  };
  pick(std::make_index_sequence<std::size(kRowInterleavedRows)>{}, std::make_index_sequence<std::size(kRowLaneBytes)>{});
  return why;
}

// Lists one broadcast build twice, with the gemv's software prefetches (fns) and without (hw_fns,
// Streaming); dispatch ranks the two.
inline void add_streaming_builds(std::vector<KernelVariant>& out, Isa isa, const KernelFns& fns, const KernelFns& hw_fns,
                                 bool gfni = false, bool amx = false) {
  for (const bool hw : {false, true}) {
    detail::add_or_note(out, nullptr, Strategy::broadcast, isa, "", hw ? hw_fns : fns);
    out.back().gfni = gfni;
    out.back().amx = amx;
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
// The same for a gemm on matrix tiles (AMX): its build carries the GFNI build's gemv.
template <class T>
concept HasAmxBroadcast = requires(const LayoutInfo& L, KernelFns& k) {
  { T::has_amx() } -> std::same_as<bool>;
  { T::pick_amx_broadcast(L, k, true) } -> std::same_as<std::string>;
};
template <class T>
concept HasBase3Broadcast = requires(const LayoutInfo& L, KernelFns& k) {
  { T::base3_broadcast_why_not() } -> std::same_as<std::string>;
  { T::pick_base3_broadcast(L, k, true) } -> std::same_as<std::string>;
};

template <class T>
void BroadcastStrategy::add(const LayoutInfo& L, std::vector<KernelVariant>& out, std::vector<KernelGap>* gaps) {
  using P = typename T::Policy;
  if (strip_plan(L)) {
    if constexpr (!BroadcastOps<P>) {
      if (gaps) gaps->push_back({id, T::kIsa, cat(P::name, "'s policy has no broadcast lane programs (BroadcastOps)")});
    } else {
      using enum Streaming;
      KernelFns k;
      const std::string why = pick_broadcast<P, software_prefetch>(L, k);  // the build for the layout's rows and lanes
      if (!why.empty()) {
        detail::add_or_note(out, gaps, id, T::kIsa, why, k);  // a further build would say the same
      } else {
        KernelFns hw;
        pick_broadcast<P, hardware_prefetch>(L, hw);
        add_streaming_builds(out, T::kIsa, k, hw);
        if constexpr (HasGfniBroadcast<T>) {
          if (T::has_gfni()) {
            KernelFns g, g_hw;
            T::pick_gfni_broadcast(L, g, false);
            T::pick_gfni_broadcast(L, g_hw, true);
            add_streaming_builds(out, T::kIsa, g, g_hw, true);
          }
        }
        // The tile gemm's build where the tiles run and the layout's lanes are dwords (B columns);
        // elsewhere the builds above serve it, so nothing is missing.
        if constexpr (HasAmxBroadcast<T>) {
          KernelFns a, a_hw;
          if (T::has_amx() && T::pick_amx_broadcast(L, a, false).empty()) {
            T::pick_amx_broadcast(L, a_hw, true);
            add_streaming_builds(out, T::kIsa, a, a_hw, true, true);
          }
        }
      }
    }
  }
  if (base3_strip_plan(L)) {
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
