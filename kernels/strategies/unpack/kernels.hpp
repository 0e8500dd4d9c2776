// The unpack strategy: the stock PQ2_0 x86 kernel as the baseline arm (PrismML's
// ggml_vec_dot_pq2_0_q8_K, spec 6.2 / 6.5), for any layout in natural 2-bit order (unpack/plan.hpp). Weight side, as the fork:
// per 32 weights, broadcast the 8 code bytes, shift 64-bit lane j right by 2j, AND 3, and dot the
// codes with activations permuted into the same order (natural_block).
//
// Tuned as any production kernel would be, without changing that algorithm: the activation
// permutation and the "ones" dot product (the +1 code offset) depend on the token only, so they are
// done once per token (prepare_natural_acts: permuted bytes and each block's sum) instead of once
// per row; gemm unpacks each block once for the four tokens of a q8_Kx4 tile (the fork's tiled
// sgemm path); maddubs targets sum a block's maddubs results in int16 before widening (|lane| <= 4 *
// 768). The block's int32 is reduced (four blocks per fold) so the one fma per block matches
// gemv_reference bit for bit.
//
// Include only from an ISA translation unit.
#pragma once

#include <algorithm>
#include <cstdint>

#include "common/error.hpp"
#include "kernels/kernel.hpp"
#include "kernels/kernel_id.hpp"
#include "kernels/strategies/unpack/plan.hpp"
#include "kernels/strategies/block_scales.hpp"
#include "kernels/strategies/unpack/strategy.hpp"

namespace ternlab::strategies {

// One 128-weight block of codes against T tokens' activations in unpack order: int32 lanes of sum
// u * y. With maddubs the products add in int16 and widen once: kBlockK / kBytes steps of pair sums
// of at most 2 * 3 * 128 = 768 each, |lane| <= 3072 for 32-byte vectors (fewer steps for wider).
template <class P, int T>
[[gnu::always_inline]] inline void natural_block(const std::uint8_t* codes, const std::uint8_t* const* y, typename P::V* out) {
  constexpr int kSteps = kBlockK / P::kBytes, kCodeBytes = P::kBytes / 4;
  if constexpr (Int16DotOps<P>) {
    typename P::V acc[T];
    for (int t = 0; t < T; ++t) acc[t] = P::zero();
    for (int k = 0; k < kSteps; ++k) {
      const typename P::V c = P::unpack_natural(codes + kCodeBytes * k);
      for (int t = 0; t < T; ++t) acc[t] = P::add16(acc[t], P::maddubs(c, P::load(y[t] + P::kBytes * k)));
    }
    for (int t = 0; t < T; ++t) out[t] = P::widen16(acc[t]);
  } else {
    for (int t = 0; t < T; ++t) out[t] = P::zero();
    for (int k = 0; k < kSteps; ++k) {
      const typename P::V c = P::unpack_natural(codes + kCodeBytes * k);
      for (int t = 0; t < T; ++t) out[t] = P::dot4(out[t], c, P::load(y[t] + P::kBytes * k));
    }
  }
}

// kTiled: gemm unpacks each block once per 4-token tile ("unpack", the fork's tiled sgemm path);
// otherwise once per token ("unpack-vecdot", ggml's generic mul_mat: one vec_dot per (row,
// column)), kept as a second stock arm to show what the tiling is worth. gemv is the same.
template <class P, bool kTiled = true>
struct Unpack {
  using V = typename P::V;
  static constexpr Strategy kStrategy = kTiled ? Strategy::unpack : Strategy::unpack_vecdot;

  static void check(const LayoutInfo& L) {
    if (!natural_two_bit(L))
      fail(strategy_name(kStrategy), "/", P::name, " kernel cannot run layout '", L.name, "': not natural 2-bit order");
  }

  // One row against T tokens' prepared activations: out[t] = the row's dot product with token t.
  template <int T>
  static void row(const PackedMatrix& w, std::int64_t g, const SlotActs* a, float* out) {
    const int payload = w.layout->facts.payload_begin, scale = w.layout->scale_offset(0);
    const ScaleFormat format = w.layout->scale_format();
    const int bytes = w.layout->block_bytes();
    const std::uint8_t* blk = w.block(g, 0);
    const std::int64_t nb = w.blocks_per_row();
    float acc[T] = {};
    const auto fma_block = [&](int t, std::int64_t i, std::int32_t s, const std::uint8_t* b) {
      const BlockActs& ba = a[t].blocks[i];
      acc[t] = scalar_fma<P>(float(s - ba.ysum), block_scale<P>(format, b + scale) * ba.d, acc[t]);
    };
    std::int64_t i = 0;
    if constexpr (T == 1) {  // one token: fold four blocks' lanes at once
      for (; i + 4 <= nb; i += 4, blk += 4 * bytes) {
        prefetch_ahead(blk, 4 * bytes);
        V lanes[4];
        for (int b = 0; b < 4; ++b) {
          const std::uint8_t* y = a[0].expanded + (i + b) * kBlockK;
          natural_block<P, 1>(blk + b * bytes + payload, &y, &lanes[b]);
        }
        alignas(16) std::int32_t s[4];
        P::reduce_add4(lanes[0], lanes[1], lanes[2], lanes[3], s);
        for (int b = 0; b < 4; ++b) fma_block(0, i + b, s[b], blk + b * bytes);
      }
    }
    for (; i < nb; ++i, blk += bytes) {
      const std::uint8_t* y[T];
      for (int t = 0; t < T; ++t) y[t] = a[t].expanded + i * kBlockK;
      V lanes[T];
      natural_block<P, T>(blk + payload, y, lanes);
      alignas(16) std::int32_t s[4];
      if constexpr (T == 4)
        P::reduce_add4(lanes[0], lanes[1], lanes[2], lanes[3], s);
      else
        for (int t = 0; t < T; ++t) s[t] = P::reduce_add(lanes[t]);
      for (int t = 0; t < T; ++t) fma_block(t, i, s[t], blk);
    }
    for (int t = 0; t < T; ++t) out[t] = acc[t];
  }

  // The gemv in two phases (GemvPhases): the activations in unpack order, once per call.
  static std::size_t gemv_acts_bytes(const void*, const PackedMatrix& w) {
    return prepared_acts_bytes(w.blocks_per_row(), kBlockK);
  }
  static void gemv_prepare(const void*, const PackedMatrix& w, const BlockQ8K* x, std::uint8_t* mem) {
    check(*w.layout);
    prepare_natural_acts_into(x, w.blocks_per_row(), mem);
  }
  static void gemv_rows(const void*, const PackedMatrix& w, const std::uint8_t* mem, float* y, std::int64_t g0,
                        std::int64_t g1) {
    check(*w.layout);
    const SlotActs a = view_prepared_acts(mem, w.blocks_per_row());
    for (std::int64_t g = g0; g < g1; ++g) row<1>(w, g, &a, y + g);
  }
  static void gemv(const PackedMatrix& w, const BlockQ8K* x, float* y, std::int64_t g0, std::int64_t g1) {
    std::uint8_t* mem = kernel_scratch(gemv_acts_bytes(nullptr, w), 0);
    gemv_prepare(nullptr, w, x, mem);
    gemv_rows(nullptr, w, mem, y, g0, g1);
  }

  // 4-column tiles of q8_Kx4 (a partial last tile is one more pass with its padded, zero tokens).
  static void gemm(const PackedMatrix& w, const Q8KBatch& x, float* y, std::int64_t ldy, std::int64_t g0,
                   std::int64_t g1) {
    check(*w.layout);
    const std::int64_t nb = w.blocks_per_row();
    for (std::int64_t t = 0; t < x.tiles_count(); ++t) {
      const int live = int(std::min<std::int64_t>(4, x.tokens - 4 * t));
      SlotActs a[4];
      for (int m = 0; m < 4; ++m) a[m] = prepare_natural_acts_x4(x.tile(t), m, nb, m);
      for (std::int64_t g = g0; g < g1; ++g) {
        float r[4];
        if constexpr (kTiled)
          row<4>(w, g, a, r);
        else
          for (int m = 0; m < live; ++m) row<1>(w, g, &a[m], &r[m]);
        for (int m = 0; m < live; ++m) y[(4 * t + m) * ldy + g] = r[m];
      }
    }
  }

  // What the catalog lists.
  static constexpr KernelFns kFns{&gemv, &gemm, {nullptr, &gemv_acts_bytes, &gemv_prepare, &gemv_rows}};
};

template <class T>
void UnpackStrategy::add(const LayoutInfo&, std::vector<KernelVariant>& out, std::vector<KernelGap>* gaps) {
  using P = WidePolicy<T>;
  if constexpr (!UnpackOps<P>) {
    if (gaps) gaps->push_back({id, T::kIsa, cat(P::name, " has no policy of 32 bytes or more with unpack's operations (UnpackOps)")});
  } else {
    using PerColumn = Unpack<P, false>;
    detail::add_or_note(out, gaps, Unpack<P>::kStrategy, T::kIsa, "", Unpack<P>::kFns);
    detail::add_or_note(out, gaps, PerColumn::kStrategy, T::kIsa, "", PerColumn::kFns);
  }
}

}  // namespace ternlab::strategies
