// The broadcast strategy's gemm on matrix tiles (AMX), for row-interleaved 2-bit layouts with
// dword lanes and 16 or 32 rows: the weights' slots already are the tile unit's B operand.
//
// A tile dot (tdpbssd) adds to C[m][n] the products of A row m's 64 s8 bytes with B's column n,
// whose four bytes k..k+3 sit in dword n of B row k / 4. A slot vector of a strip (the lane program's
// codes, one 64-byte vector for 16 rows) holds in dword j the four codes of row j for one slot: it
// is one B row. So the 16 slots of strips 4h..4h+3 (slot s of strip t as B row 4 (t - 4h) + s) are
// the B tile of block half h, and the activations in strip order (prepare_strip_acts_tiles, one
// 128-byte row a token) are its A tile, 16 tokens at a 128-byte stride: C row m then holds token
// m's sums for the 16 rows in lane order, the float end's row vector. Per block and 16 rows:
//
//   8 strip vectors -> 32 slot vectors, each code less one (the weight w = u - 1 as an s8 byte),
//   stored as two B tiles;
//   per group of 16 tokens: two A tiles, two tile dots into C, C stored;
//   per token: the float end of the vector kernels (RowEnd::fma: S converted, times the rows'
//   scales times d, added), so the float bits are every kernel's.
//
// The weights' offset leaves in the unpacking, once for all of a pass's tokens, where the vector
// kernels subtract each token's ysum from its sums: the tile unit and the vector units did not run
// at once on the Sapphire Rapids guest measured (tools/mca/tile_bounds.cpp), so every vector op a
// token costs the whole pass its time.
//
// A pass takes up to G groups (16 G tokens): the weights are unpacked once for all of them. A pass
// of one q8_Kx4 tile (at most four tokens) would fill a quarter of each dot's rows, and runs the
// vector build's single-tile pass instead. The int32 sums are exact (|S| <= 128 * 2 * 128), so the
// results equal the oracle's bit for bit.
//
// Tiles is the tile unit (kernels/targets/avx512vnni/amx_tiles.hpp: the instructions, or their
// emulation for the test suite, and the build's name); units() says which tile holds what.
// S only names the build: the gemm is the same in both (the gemv's prefetches differ).
//
// Include only from an ISA translation unit (after its #pragma GCC target).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

#include "common/strings.hpp"
#include "kernels/kernel.hpp"
#include "kernels/kernel_plan.hpp"
#include "kernels/strategies/block_scales.hpp"
#include "kernels/strategies/broadcast/kernels.hpp"

namespace ternlab::strategies {

template <class P, class Tiles, int R, int G, Streaming S>
struct TileGemm {
  static_assert(P::kBytes == 64 && P::kLanes == 16, "a slot vector is one 64-byte B row of 16 dwords");
  static_assert(R == 16 || R == 32, "blocks of 16 or 32 rows: whole 16-row vectors a strip");
  static_assert(G >= 1 && G <= 4, "C takes tiles 0 .. G - 1, below A's 4 and 5");
  using LP = typename LanePrograms<P>::Gemm;  // the codes in place, one vector a slot
  using Vectors = Broadcast<P, R, 4, S>;      // the vector build beside it
  using End = RowEnd<P, 16>;
  static constexpr int kTileRows = 16, kTileBytes = 64;  // every tile's shape (the configuration)
  static constexpr int kGroup = kTileRows;          // tokens an A or C tile holds
  static constexpr int kStrips = kBlockK / 16;      // 8 strips of four dword slots
  static constexpr int kHalfStrips = kStrips / 2;   // a B tile: 4 strips x 4 slots = 16 rows
  static constexpr int kVectors = R / 16;           // 16-row vectors a strip

  static std::string why_not(const LayoutInfo& L) {
    const StripPlan* plan = strip_plan(L);
    if (!plan) return not_row_interleaved(L);
    if (L.rows != R) return cat("the tile gemm takes ", R, "-row blocks, the layout has ", L.rows);
    if (plan->lane_bytes != 4) return cat("the tile gemm takes a dword a row per slot (B columns), the layout's lanes are ", plan->lane_bytes, " bytes");
    if (L.k != kBlockK || plan->strips != kStrips) return "the tile gemm takes blocks of 128 weights per row";
    return "";
  }

  static void gemm(const PackedMatrix& w, const Q8KBatch& x, float* y, std::int64_t ldy, std::int64_t g0,
                   std::int64_t g1) {
    const LayoutInfo& L = *w.layout;
    const std::string why = why_not(L);
    if (!why.empty())
      fail("broadcast/", Tiles::name, S == Streaming::software_prefetch ? "" : kHardwarePrefetchSuffix,
           " kernel (its tile gemm) cannot run layout '", L.name, "': ", why);
    const StripPlan& plan = *strip_plan(L);
    const std::int64_t nb = w.blocks_per_row();
    constexpr int kPassTiles = 4 * G;  // q8_Kx4 tiles a pass
    if (x.tiles_count() == 1) return Vectors::gemm(w, x, y, ldy, g0, g1);  // its one pass below, untiled
    Tiles::configure();
    for (std::int64_t t0 = 0; t0 < x.tiles_count(); t0 += kPassTiles) {
      const int tokens = 4 * int(std::min<std::int64_t>(kPassTiles, x.tiles_count() - t0));
      if (tokens == 4) {
        // A pass of one q8_Kx4 tile fills a quarter of each tile dot's rows: the vector build's
        // single-tile pass (four streams, two chains a token) runs it faster (measured:
        // docs/notebook/2026-12-06-xeon-amx.md). The same bits either way.
        Vectors::template gemm_tokens<typename LanePrograms<P>::Gemm4, 4, BroadcastTraits<P>::kGemm4Streams>(w, x, y, ldy, t0, g0, g1);
        continue;
      }
      const int live = int(std::min<std::int64_t>(tokens, x.tokens - 4 * t0));
      // A group's A tile reads 16 rows: past the last block's tokens when a pass has fewer than a
      // whole group, into zeroed slack (their sums are never stored).
      const std::size_t bytes = prepared_acts_bytes(nb * tokens, kBlockK);
      const std::size_t slack = std::size_t(kGroup) * kBlockK;
      std::uint8_t* mem = kernel_scratch(bytes + slack, kScratchTileGemm);
      std::memset(mem + bytes, 0, slack);
      const SlotActs acts = prepare_strip_acts_tiles_into(plan, x, t0, tokens, nb, mem);
      if (L.spec->scales.row_stride == 2 && L.scale_format() == ScaleFormat::fp16)
        pass<true>(plan, w, acts, tokens, live, y + 4 * t0 * ldy, ldy, g0, g1);
      else
        pass<false>(plan, w, acts, tokens, live, y + 4 * t0 * ldy, ldy, g0, g1);
    }
    Tiles::release();
  }

  // Row groups [g0, g1) against `tokens` prepared tokens (block i of token m at entry i * tokens +
  // m), the first `live` stored at y + m * ldy: their 16-row units (unit u is vector u % kVectors
  // of row group u / kVectors) two at a time, an odd one last on its own.
  template <bool kContiguous>
  static void pass(const StripPlan& plan, const PackedMatrix& w, const SlotActs& acts, int tokens, int live, float* y,
                   std::int64_t ldy, std::int64_t g0, std::int64_t g1) {
    std::int64_t u = g0 * kVectors;
    for (; u + 2 <= g1 * kVectors; u += 2) units<kContiguous, 2>(plan, w, acts, tokens, live, y, ldy, u);
    if (u < g1 * kVectors) units<kContiguous, 1>(plan, w, acts, tokens, live, y, ldy, u);
  }

  // Units u .. u + U - 1, block by block. The tile unit and the vector units take turns (on the
  // Sapphire Rapids guest measured nothing else ran while tile instructions did:
  // tools/mca/tile_bounds.cpp), so a pass's time is the sum of its tile and vector work, and each
  // is kept small:
  //
  //   U = 2: the two units' B tiles (tiles 4-7) stay loaded for the block, and each A tile (a
  //          group's half, from L2: 64 tokens' activations of a 5120-wide row are 320 KiB) is
  //          dotted with both units' B, into the group's C tiles 0 and 1: half the A loads a
  //          product of one unit at a time;
  //   U = 1: C tiles 0 .. G - 1, the block's dots half by half across the groups, so consecutive
  //          dots feed different C tiles; A tiles 4 and 5 in turn, B 6 and 7.
  //
  // Unpacking runs a block ahead (b_rows[i % 2]) and the float end a block behind, from the sums
  // stored the block before (c_rows[i % 2]), so no tile load waits on the stores just made.
  template <bool kContiguous, int U>
  [[gnu::noinline]] static void units(const StripPlan& plan, const PackedMatrix& w, const SlotActs& acts, int tokens,
                                      int live, float* y, std::int64_t ldy, std::int64_t u) {
    const LayoutInfo& L = *w.layout;
    const std::int64_t nb = w.blocks_per_row();
    const int bb = L.block_bytes(), pb = plan.payload_begin, strip = 4 * R;
    const int groups = (live + kGroup - 1) / kGroup;
    const BlockScaleDecoder decoder(kContiguous ? ScaleFormat::fp16 : L.scale_format());
    const auto offset = [&L](int r) { return L.scale_offset(r); };
    const std::uint8_t* base[U];
    int vec[U];
    bool decodes[U];  // units of one row group (R = 32: a pair's two vectors) share its decoded scales
    for (int r = 0; r < U; ++r) {
      base[r] = w.block((u + r) / kVectors, 0);
      vec[r] = int((u + r) % kVectors);
      decodes[r] = r == 0 || vec[r] == 0;
    }
    alignas(64) float decoded[R];
    alignas(64) std::uint8_t b_rows[2][U][2][kTileRows][kTileBytes];
    alignas(64) std::int32_t c_rows[2][U][G][kGroup][16];
    typename End::F acc[U][G][kGroup];
    for (auto& a : acc)
      for (auto& b : a)
        for (auto& c : b) c = End::zero();
    // Block i's float end: its sums (c_rows[i % 2]) times its rows' scales and each token's d.
    const auto float_end = [&](std::int64_t i) {
      for (int r = 0; r < U; ++r) {
        const std::uint8_t* blk = base[r] + i * bb;
        if constexpr (!kContiguous)
          if (decodes[r]) decoder.template decode<P, R>(blk, offset, decoded);
        const typename End::F d = kContiguous ? End::scales(blk + L.scale_offset(0) + 2 * 16 * vec[r]) : End::load(decoded + 16 * vec[r]);
        for (int q = 0; q < groups; ++q) {
          const int n = std::min(kGroup, live - kGroup * q);
          const BlockActs* b = acts.blocks + i * tokens + kGroup * q;
          const auto token = [&](int m) { acc[r][q][m] = End::fma_centred(P::load(c_rows[i % 2][r][q][m]), d, b[m].d, acc[r][q][m]); };
          if (n == kGroup) {
#pragma GCC unroll 16
            for (int m = 0; m < kGroup; ++m) token(m);  // no test a token
          } else {
            for (int m = 0; m < n; ++m) token(m);
          }
        }
      }
    };
    // Block i's weights (codes less one) as each unit's two B tiles' rows, b_rows[i % 2].
    const auto unpack = [&](std::int64_t i) {
      const typename P::V minus_one = P::set1_u8(0xff);
      for (int r = 0; r < U; ++r) {
        const std::uint8_t* blk = base[r] + i * bb;
        for (int h = 0; h < 2; ++h)
          for (int t = 0; t < kHalfStrips; ++t) {
            const typename LP::Slots s = LP::slots(P::load(blk + pb + (kHalfStrips * h + t) * strip + vec[r] * P::kBytes));
            for (int q = 0; q < 4; ++q) P::store(b_rows[i % 2][r][h][4 * t + q], P::add8(s.s[q], minus_one));
          }
      }
    };
    unpack(0);
    for (std::int64_t i = 0; i < nb; ++i) {
      for (int r = 0; r < U; ++r)
        if (vec[r] == 0) prefetch_ahead(base[r] + i * bb, bb);
      const std::uint8_t* xa = acts.expanded + i * tokens * kBlockK;
      if constexpr (U == 2) {
        Tiles::template load<4>(b_rows[i % 2][0][0], kTileBytes);
        Tiles::template load<5>(b_rows[i % 2][0][1], kTileBytes);
        Tiles::template load<6>(b_rows[i % 2][1][0], kTileBytes);
        Tiles::template load<7>(b_rows[i % 2][1][1], kTileBytes);
        for (int q = 0; q < groups; ++q) {
          const std::uint8_t* xq = xa + q * kGroup * kBlockK;
          Tiles::template zero<0>();
          Tiles::template zero<1>();
          Tiles::template load<2>(xq, kBlockK);
          Tiles::template dot_ss<0, 2, 4>();
          Tiles::template dot_ss<1, 2, 6>();
          Tiles::template load<3>(xq + kTileBytes, kBlockK);
          Tiles::template dot_ss<0, 3, 5>();
          Tiles::template dot_ss<1, 3, 7>();
          Tiles::template store<0>(c_rows[i % 2][0][q], kTileBytes);
          Tiles::template store<1>(c_rows[i % 2][1][q], kTileBytes);
        }
      } else {
        Tiles::template load<6>(b_rows[i % 2][0][0], kTileBytes);
        Tiles::template load<7>(b_rows[i % 2][0][1], kTileBytes);
        for_groups(groups, [&]<int Gi>() { Tiles::template zero<Gi>(); });
        for_groups(groups, [&]<int Gi>() { half_dot<Gi, 0>(xa); });
        for_groups(groups, [&]<int Gi>() { half_dot<Gi, 1>(xa); });
        for_groups(groups, [&]<int Gi>() { Tiles::template store<Gi>(c_rows[i % 2][0][Gi], kTileBytes); });
      }
      if (i + 1 < nb) unpack(i + 1);
      if (i > 0) float_end(i - 1);
    }
    float_end(nb - 1);
    for (int r = 0; r < U; ++r) {
      float* yr = y + ((u + r) / kVectors) * R + 16 * vec[r];
      for (int q = 0; q < groups; ++q)
        for (int m = 0; m < std::min(kGroup, live - kGroup * q); ++m) End::store(yr + (kGroup * q + m) * ldy, acc[r][q][m]);
    }
  }

  // f.template operator()<Gi>() for the first `groups` of the G groups (tile numbers are constants).
  template <class F>
  [[gnu::always_inline]] static void for_groups(int groups, F f) {
    [&]<std::size_t... Gi>(std::index_sequence<Gi...>) {
      ((int(Gi) < groups ? f.template operator()<int(Gi)>() : void()), ...);
    }(std::make_index_sequence<G>{});
  }

  // C tile Gi += the group's A tile of block half H (64 bytes of each token's 128) x B tile H (both
  // s8), the A tiles taken in turn by even and odd groups.
  template <int Gi, int H>
  [[gnu::always_inline]] static void half_dot(const std::uint8_t* xa) {
    constexpr int A = 4 + Gi % 2;
    Tiles::template load<A>(xa + Gi * kGroup * kBlockK + H * kTileBytes, kBlockK);
    Tiles::template dot_ss<Gi, A, 6 + H>();
  }
};

}  // namespace ternlab::strategies
