// The broadcast strategy's base-3 build, for base-3 row-interleaved layouts (b3r), instantiated per
// AVX-512 policy P with byte lookups (VBMI). The layout enters through its Base3StripPlan
// (layouts/dsl.hpp); the walk is broadcast.hpp's AVX-512 one with one step more per strip:
//
//   per token, once:  the activations in base-3 strip order (strip t's digit n = one dword) + BlockActs
//   per block:        for each of the seven strips (the tail's two bytes a row widened to a lane):
//                     one load, the byte tables (Base3Bytes::digits: digit 0, and digits 1-4 as t2r's
//                     four 2-bit slots), then the lane program's slots and dots exactly as for t2r,
//                     and one more dot of digit 0 against its own dword (LP::dot_codes); the block
//                     ends in P::lanes_fma as t2r's does, the +1 code offset leaving with ysum.
//
// At 1.75 bits a weight it moves a sixth fewer bytes than t2r; its strip costs about twice t2r's
// instructions for 1.25 times the weights, so it wins where the gemv waits on memory (two threads
// and more) and loses where one core's instructions are the bound.
//
// Exactness: digits are 0..2, slot values u * 4^s <= 128, so no dot saturates; the row sums are
// exact int32 and the fma association is gemv_reference's, so the float result is bit-identical.
//
// Include only from an ISA translation unit built for AVX-512 VBMI (after its #pragma GCC target).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>

#include "common/error.hpp"
#include "common/strings.hpp"
#include "kernels/kernel.hpp"
#include "kernels/strategies/broadcast/plan.hpp"
#include "kernels/strategies/broadcast/kernels.hpp"
#include "layouts/matrix.hpp"

namespace ternlab::strategies {

// The byte lookups the base-3 build reads from a policy (AVX-512 VBMI's vpermb and vpermi2b).
template <class P>
concept Base3LookupOps = requires(typename P::V v, const std::uint8_t* p) {
  P::lookup64(v, v);           // table[idx & 63] for every byte of idx
  P::lookup128(v, v, v);       // (t0 : t1)[idx & 127] for every byte of idx
  P::lookup128_high(v, v, v);  // the same for the bytes of idx with bit 7 set; the others kept as they are
  P::load_u16_as_u32(p);       // kLanes uint16 values, each zero-extended into its int32 lane
};

// Five digits a byte, 16 rows per vector. A byte is 84 t0 + r (Code::base3_banded, r = digits 1-4
// in base 3). Digit 0 is a 64-entry lookup of byte >> 2 (a 16-bit shift: the lookup reads each
// byte's low six bits, which are then the byte's own bits 2-7); digits 1-4 come from a table as
// t2r's four 2-bit slots, so that the lane programs take them as they take t2r's codes. A lookup
// covers 128 entries, so a byte with its top bit set is first sent, by a lookup of its own, to a
// byte below 128 with the same four digits (r itself), whose digits the second lookup reads.
// Against ggml's ceil(256 q / 243) byte, whose digit 0 took two compares and two masked moves (no
// function of byte >> k reads it), b3r's gemv and gemm ran faster, the strips alone more so (the
// tail strip and the block's epilogue did not shrink; measured: docs/notebook/2026-12-05-zen4-kernels.md).
template <Base3LookupOps P>
struct Base3Bytes {
  using V = typename P::V;
  struct Table {
    V low[2];   // bytes 0-127: digits 1-4
    V high[2];  // bytes 128-255: a byte below 128 with the same digits 1-4
    V top;      // byte >> 2: digit 0
  };
  static Table table(const Base3DigitTables& t) {
    const auto at = [](const auto& bytes, int i) { return P::load(bytes.data() + i); };
    return {{at(t.low, 0), at(t.low, 64)}, {at(t.high, 0), at(t.high, 64)}, at(t.top, 0)};  // 128, 128 and 64 entries
  }
  struct Digits {
    V top;  // digit 0 of every byte, 0..2
    V low;  // digits 1-4 as 2-bit fields 0-3
  };
  static Digits digits(V x, const Table& t) {
    const V top = P::lookup64(P::srli16(x, 2), t.top);
    const V below = P::lookup128_high(x, t.high[0], t.high[1]);
    return {top, P::lookup128(below, t.low[0], t.low[1])};
  }
};

template <class P, Streaming S = Streaming::software_prefetch>
struct BroadcastBase3 {
  static constexpr int R = P::kLanes;  // one vector of rows per strip
  static constexpr bool kSoftwarePrefetch = S == Streaming::software_prefetch;
  static constexpr int kGemvPrefetch = kSoftwarePrefetch ? BroadcastTraits<P>::kGemvPrefetch : kNoPrefetch;
  static constexpr std::string_view kBuild = kSoftwarePrefetch ? "" : kHardwarePrefetchSuffix;
  static constexpr int kStrips = kBase3Strips + 1;  // the tail read as one more strip
  static constexpr int kBlockBytes = R * (4 * kBase3Strips + kBase3TailLanes) + 2 * R;
  static constexpr int kActs = kBase3StripActBytes;

  static std::string why_not(const LayoutInfo& L) {
    if (!base3_strip_plan(L)) {
      const std::string why = row_interleaved_why_not(L);
      return cat("the layout is not base-3 row-interleaved: ", why.empty() ? "its strips are 2-bit" : why);
    }
    if (L.code != Code::base3_banded)
      return "its bytes are ceil(256 q / 243) (Code::base3), whose digit 0 no byte table of byte >> 2 reads; the "
             "kernel reads Code::base3_banded";
    if (L.rows != R)
      return cat("the kernel takes ", R, "-row blocks, the layout has ", L.rows, ": it reads each strip as one ",
                 P::kBytes, "-byte vector of 4-byte row lanes, through byte tables of that width");
    // The scales in one run of 16 fp16 values, before the payload or after it (one load either way).
    if (L.block_bytes() != kBlockBytes || (L.scale_offset(0) != 0 && L.scale_offset(0) != L.block_bytes() - 2 * R) ||
        L.spec->scales.row_stride != 2 || L.scale_format() != ScaleFormat::fp16)
      return "the kernel reads the sixteen fp16 scales in one run, before the payload or after it";
    return "";
  }
  static const Base3StripPlan& checked_plan(const LayoutInfo& L) {
    const std::string why = why_not(L);
    if (!why.empty()) fail("broadcast/", P::name, kBuild, " kernel cannot run layout '", L.name, "': ", why);
    return *base3_strip_plan(L);
  }

  // Rows [g0, g1) x T tokens through the lane program LP, GS row groups side by side (each its own
  // run of consecutive groups, as in Broadcast::rows); `acts` holds the tokens' base-3 strip-ordered
  // activations block-major (block i of token m is entry i * T + m). Returns the first group not done.
  template <class LP, int T, int GS, int PF>
  [[gnu::noinline]] static std::int64_t rows(const Base3StripPlan& plan, const PackedMatrix& w, const SlotActs& acts,
                                             float* y, std::int64_t ldy, int live, std::int64_t g0, std::int64_t g1) {
    const std::int64_t nb = w.blocks_per_row();
    const int pb = plan.payload_begin, tail = plan.tail_begin, strip = 4 * R, scale_offset = w.layout->scale_offset(0);
    using Bytes = Base3Bytes<P>;
    const typename Bytes::Table table = Bytes::table(base3_digit_tables());
    const std::int64_t passes = (g1 - g0) / GS;
    for (std::int64_t p = 0; p < passes; ++p) {
      typename P::LaneF acc[GS][T];
      for (auto& a : acc)
        for (auto& b : a) b = P::lanes_zero();
      const std::uint8_t* blk[GS];
      for (int q = 0; q < GS; ++q) blk[q] = w.block(g0 + q * passes + p, 0);
      const std::uint8_t* xb = acts.expanded;
      for (std::int64_t i = 0; i < nb; ++i, xb += T * kActs)
        for (int q = 0; q < GS; ++q) {
          __asm__("" : "+r"(xb));  // one base register for every dot's activation (Broadcast::rows)
          if constexpr (PF != kNoPrefetch) prefetch_ahead<PF, kBlockBytes + 64>(blk[q]);
          typename LP::Acc a[T];
          for (auto& at : a) at = LP::zero();
#pragma GCC unroll 7
          for (int t = 0; t < kStrips; ++t) {
            const typename P::V bytes =
                t < kBase3Strips ? P::load(blk[q] + pb + t * strip) : P::load_u16_as_u32(blk[q] + tail);
            const typename Bytes::Digits d = Bytes::digits(bytes, table);
            const typename LP::Slots s = LP::slots(d.low);
            const std::uint8_t* x = xb + kBase3StripWeights * t;
            for (int m = 0; m < T; ++m) {
              LP::dot_codes(a[m], d.top, x + m * kActs);
              LP::dot(a[m], s, x + m * kActs + 4);
            }
          }
          const typename P::LaneF d = P::lanes_scales(blk[q] + scale_offset);
          for (int m = 0; m < T; ++m) {
            const BlockActs b = acts.blocks[i * T + m];
            acc[q][m] = P::template lanes_fma<LP::kShift>(LP::sums(a[m]), b.ysum, d, b.d, acc[q][m]);
          }
          blk[q] += kBlockBytes;
        }
      for (int q = 0; q < GS; ++q)
        for (int m = 0; m < live; ++m) P::lanes_store(y + m * ldy + (g0 + q * passes + p) * R, acc[q][m]);
    }
    return g0 + GS * passes;
  }
  template <class LP, int T, int GS, int PF>
  static void all_rows(const Base3StripPlan& plan, const PackedMatrix& w, const SlotActs& acts, float* y,
                       std::int64_t ldy, int live, std::int64_t g0, std::int64_t g1) {
    const std::int64_t g = rows<LP, T, GS, PF>(plan, w, acts, y, ldy, live, g0, g1);
    if constexpr (GS > 1) rows<LP, T, 1, PF>(plan, w, acts, y, ldy, live, g, g1);
  }

  // The gemv in two phases (GemvPhases): the strip-ordered activations are prepared once per call.
  static const Base3StripPlan& bound(const void* plan, const PackedMatrix& w) {
    if (plan != base3_strip_plan(*w.layout))
      fail("broadcast/", P::name, kBuild, " kernel was bound to another layout than '", w.layout->name, "'");
    return *static_cast<const Base3StripPlan*>(plan);
  }
  static std::size_t gemv_acts_bytes(const void*, const PackedMatrix& w) {
    return prepared_acts_bytes(w.blocks_per_row(), kActs);
  }
  static void gemv_prepare(const void* plan, const PackedMatrix& w, const BlockQ8K* x, std::uint8_t* mem) {
    prepare_base3_strip_acts_into(bound(plan, w), x, w.blocks_per_row(), mem);
  }
  static void gemv_rows(const void* plan, const PackedMatrix& w, const std::uint8_t* mem, float* y, std::int64_t g0,
                        std::int64_t g1) {
    with_gemv_streams<P>(w, g0, g1, [&]<int GS>() {
      all_rows<typename LanePrograms<P>::Gemv, 1, GS, kGemvPrefetch>(bound(plan, w), w,
                                                                    view_prepared_acts(mem, w.blocks_per_row()), y, 0, 1, g0, g1);
    });
  }
  static void gemv(const PackedMatrix& w, const BlockQ8K* x, float* y, std::int64_t g0, std::int64_t g1) {
    const Base3StripPlan& plan = checked_plan(*w.layout);
    std::uint8_t* mem = kernel_scratch(gemv_acts_bytes(&plan, w), 0);
    gemv_prepare(&plan, w, x, mem);
    gemv_rows(&plan, w, mem, y, g0, g1);
  }

  // T tokens (T / 4 tiles of q8_Kx4) from tile t0 in one pass over the weights: each strip's
  // digits are looked up once for all of them.
  template <class LP, int T, int GS>
  static void gemm_tokens(const PackedMatrix& w, const Q8KBatch& x, float* y, std::int64_t ldy, std::int64_t t0,
                          std::int64_t g0, std::int64_t g1) {
    const Base3StripPlan& plan = checked_plan(*w.layout);
    const SlotActs a = prepare_base3_strip_acts_tiles(plan, x, t0, T, w.blocks_per_row(), 0);
    const int live = int(std::min<std::int64_t>(T, x.tokens - 4 * t0));
    all_rows<LP, T, GS, kPrefetchBytes>(plan, w, a, y + 4 * t0 * ldy, ldy, live, g0, g1);
  }
  // As Broadcast::gemm, the last tiles one row group at a time: the tables take four of the
  // registers that t2r's side-by-side groups use.
  static void gemm(const PackedMatrix& w, const Q8KBatch& x, float* y, std::int64_t ldy, std::int64_t g0,
                   std::int64_t g1) {
    gemm_in_passes<BroadcastTraits<P>::kGemmTokens>(
        x, [&](std::int64_t t) { gemm_tokens<typename LanePrograms<P>::Gemm, BroadcastTraits<P>::kGemmTokens, 1>(w, x, y, ldy, t, g0, g1); },
        [&](std::int64_t t) { gemm_tokens<typename LanePrograms<P>::Gemm4, 4, 1>(w, x, y, ldy, t, g0, g1); });
  }
};

// Points k at BroadcastBase3<P, S> when it can run the layout, the plan bound; says why not otherwise.
template <class P, Streaming S = Streaming::software_prefetch>
std::string pick_broadcast_base3(const LayoutInfo& L, KernelFns& k) {
  using K = BroadcastBase3<P, S>;
  std::string why = K::why_not(L);
  if (why.empty())
    k = {&K::gemv, &K::gemm, {base3_strip_plan(L), &K::gemv_acts_bytes, &K::gemv_prepare, &K::gemv_rows, &gemv_stream_starts<P>}};
  return why;
}

}  // namespace ternlab::strategies
