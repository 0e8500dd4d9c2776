// Gated DeltaNet token mixer (spec §7.4), run in the file's tiled value-head order: value head e
// reads key head e mod Hk; the output is permuted to grouped order before ssm_out's rotation.
#include <algorithm>
#include <cmath>

#include "kernels/vector/vector_ops.hpp"
#include "model/model.hpp"

namespace ternlab::model {

namespace {

// The causal depthwise conv (no bias, then SiLU, then the l2 norms of the q and k heads, the q
// heads scaled) of channels [j0, j1) for `tokens` tokens, each token's window the raw inputs
// before it ([state (oldest first), mixed...]), then the state's shift to the last K - 1 raw
// (pre-SiLU) inputs. Decoding calls it a token at a time, a chunked prompt once for all tokens.
void conv_tokens(const ModelConfig& c, const GdnWeights& w, const float* mixed, int tokens,
                     std::vector<float>& conv_state, float* u, std::int64_t j0, std::int64_t j1) {
  const std::int64_t ch = c.conv_channels();
  const int K = c.ssm_conv, Dk = c.ssm_state, Hk = c.ssm_k_heads;
  const VectorOps& ops = vector_ops();
  const float q_scale = 1.0f / std::sqrt(float(Dk));
  const auto raw = [&](int index) {  // index < 0: the state's row K - 1 + index
    return index < 0 ? conv_state.data() + (K - 1 + index) * ch : mixed + std::int64_t(index) * ch;
  };
  std::vector<const float*> window(static_cast<std::size_t>(K));
  for (int t = 0; t < tokens; ++t) {
    // Weights and state both tap-major, so each tap's pass over the channels is contiguous.
    float* ut = u + t * ch;
    for (int tau = 0; tau < K; ++tau) window[std::size_t(tau)] = raw(t - (K - 1) + tau) + j0;
    ops.conv_taps(window.data(), w.conv.data() + j0, ch, K, ut + j0, j1 - j0);
    ops.silu(ut + j0, ut + j0, j1 - j0);
    const std::int64_t r0 = j0 / Dk, r1 = std::min<std::int64_t>(j1 / Dk, 2 * Hk);
    if (r0 < r1) l2_norm_rows(ut + r0 * Dk, Dk, int(r1 - r0), Dk, c.eps);
    for (std::int64_t r = r0; r < std::min<std::int64_t>(r1, Hk); ++r)
      for (int i = 0; i < Dk; ++i) ut[r * Dk + i] *= q_scale;
  }
  // Row r of the new state is input tokens + r of [state, mixed]: ascending r reads a row at or
  // after the one it writes, so no row is overwritten before it is read.
  for (int r = 0; r < K - 1; ++r) {
    const float* from = raw(tokens + r - (K - 1));
    std::copy(from + j0, from + j1, conv_state.data() + r * ch + j0);
  }
}

}  // namespace

void gated_deltanet(const ModelConfig& c, const GdnWeights& w, const std::vector<float>& x, const Q8KBatch& xr,
                    int tokens, std::vector<float>& conv_state, GdnState& state, float* out,
                    ThreadPool& pool, OpProfile* profile, StateRing* ring, int layer, int chunk) {
  const std::int64_t d = c.n_embd, ch = c.conv_channels(), vdim = c.ssm_value_dim();
  const int Dk = c.ssm_state, Dv = c.ssm_state, Hk = c.ssm_k_heads, Hv = c.ssm_v_heads;
  const std::int64_t key_dim = c.ssm_key_dim();

  std::vector<float> mixed(static_cast<std::size_t>(tokens * ch)), z(static_cast<std::size_t>(tokens * vdim));
  matmuls({{&w.qkv, mixed.data()}, {&w.gate, z.data()}}, xr, pool, profile);

  std::vector<float> y(static_cast<std::size_t>(tokens * vdim));
  {
  OpTimer timer(profile, OpProfile::gdn);
  // beta and alpha read the un-rotated normed input; their BF16 weights are not folded. At full
  // size these two dense matvecs read 1 MB a layer: transposed in tiles (GdnWeights::beta_alpha_*),
  // each thread runs its tiles' dot products as vector lanes, each one the same in-order sum; a
  // tile (160 KB at full size) serves every token while it is in cache. Row e of a token's
  // outputs is beta's (e < Hv) or alpha's (e - Hv); `lanes` pads to whole tiles.
  constexpr int tile = GdnWeights::kLaneTile;
  const std::int64_t tiles = (2 * Hv + tile - 1) / tile, lanes = tiles * tile;
  std::vector<float> beta_alpha(static_cast<std::size_t>(tokens * lanes));
  const VectorOps& ops = vector_ops();
  // One token: the tiles side by side, independent sums; several: the tokens side by side, each
  // tile row loaded once for a group of them (the same bits either way).
  const auto beta_alpha_part = [&](int th) {
    const auto [i0, i1] = ThreadPool::split(tiles, th, pool.size());
    if (i0 == i1) return;
    const int n = int(i1 - i0);
    float* out = beta_alpha.data() + i0 * tile;
    const bool bf16 = !w.beta_alpha_bf16.empty();
    const std::uint16_t* w16 = bf16 ? w.beta_alpha_bf16.data() + i0 * d * tile : nullptr;
    const float* w32 = bf16 ? nullptr : w.beta_alpha_f32.data() + i0 * d * tile;
    if (tokens == 1)
      bf16 ? ops.tiles_dot_bf16(w16, n, d, x.data(), out) : ops.tiles_dot_f32(w32, n, d, x.data(), out);
    else if (bf16)
      ops.tiles_dot_queries_bf16(w16, n, d, x.data(), tokens, out, lanes);
    else
      ops.tiles_dot_queries_f32(w32, n, d, x.data(), tokens, out, lanes);
  };

  const auto gates = [&](int t, std::int64_t e, float& beta, float& g) {
    beta = 1.0f / (1.0f + std::exp(-beta_alpha[std::size_t(t * lanes + e)]));
    g = w.ssm_a[std::size_t(e)] * softplus(beta_alpha[std::size_t(t * lanes + Hv + e)] + w.dt_bias[std::size_t(e)]);
  };
  const auto permute = [&](const float* tiled_t, float* yt) {
    if (c.gdn_v_grouped)
      tiled_to_grouped(tiled_t, yt, Dv, Hk, Hv / Hk);
    else
      std::copy(tiled_t, tiled_t + vdim, yt);
  };

  if (chunk > 0 && tokens > 1 && !ring) {
    // The chunked form (spec §7.4.7): every token's conv in one job; then each thread takes whole
    // key heads, and for each chunk of `chunk` tokens runs the value heads that read that key head
    // (VectorOps::gdn_chunk), each state read and written once a chunk; then the gated norms.
    std::vector<float> u(static_cast<std::size_t>(tokens * ch)), tiled(static_cast<std::size_t>(tokens * vdim));
    const std::int64_t runs = ch / Dk;
    pool.run([&](int th) {
      beta_alpha_part(th);
      const auto [r0, r1] = ThreadPool::split(runs, th, pool.size());
      if (r0 < r1) conv_tokens(c, w, mixed.data(), tokens, conv_state, u.data(), r0 * Dk, r1 * Dk);
    });
    const int rep = Hv / Hk;
    pool.run([&](int th) {
      const auto [k0, k1] = ThreadPool::split(Hk, th, pool.size());
      if (k0 == k1) return;
      const int longest = std::min(chunk, tokens);
      std::vector<float> scratch(gdn_chunk_scratch(longest, Dk, Dv));
      std::vector<float> g(static_cast<std::size_t>(rep * tokens)), beta(g.size()), n(static_cast<std::size_t>(tokens * Dv));
      std::vector<GdnChunkHead> heads(static_cast<std::size_t>(rep));
      for (std::int64_t kh = k0; kh < k1; ++kh) {
        for (int j = 0; j < rep; ++j)  // tiled order: value head kh + j * Hk reads key head kh
          for (int t = 0; t < tokens; ++t)
            gates(t, kh + j * Hk, beta[std::size_t(j * tokens + t)], g[std::size_t(j * tokens + t)]);
        for (int c0 = 0; c0 < tokens; c0 += chunk) {
          const int len = std::min(chunk, tokens - c0);
          const float* row = u.data() + c0 * ch;
          for (int j = 0; j < rep; ++j) {
            const std::int64_t e = kh + j * Hk;
            heads[std::size_t(j)] = {state.data() + e * Dk * Dv, row + 2 * key_dim + e * Dv, ch,
                                     g.data() + j * tokens + c0, beta.data() + j * tokens + c0,
                                     tiled.data() + c0 * vdim + e * Dv, vdim};
          }
          ops.gdn_chunk({row + kh * Dk, row + key_dim + kh * Dk, ch, len}, heads.data(), rep, Dk, Dv, scratch.data());
        }
        for (int j = 0; j < rep; ++j) {  // gated RMSNorm: norm, weight, x SiLU(z), in place
          float* o = tiled.data() + (kh + j * Hk) * Dv;
          rms_norm_rows(o, vdim, w.norm.data(), n.data(), Dv, tokens, Dv, c.eps);
          for (int t = 0; t < tokens; ++t)
            ops.silu_mul(z.data() + t * vdim + (kh + j * Hk) * Dv, n.data() + t * Dv, o + t * vdim, Dv);
        }
      }
    });
    for (int t = 0; t < tokens; ++t) permute(tiled.data() + t * vdim, y.data() + t * vdim);
  } else {
  std::vector<float> u(static_cast<std::size_t>(ch)), tiled(static_cast<std::size_t>(vdim));
  // The conv's channels in head-sized runs (q heads, k heads, v heads; every run Dk = Dv wide), so
  // a thread that convolves a q or k head also normalises it while it is in its cache.
  const std::int64_t runs = ch / Dk;
  for (int t = 0; t < tokens; ++t) {
    const float* cur = mixed.data() + t * ch;
    // One pool job: beta/alpha (with the first token: every token's), then this thread's runs of
    // the causal depthwise conv over [state (oldest first), current] (no bias) and SiLU, the
    // state's shift, and the l2 norms of its q and k heads.
    pool.run([&](int th) {
      if (t == 0) beta_alpha_part(th);
      const auto [r0, r1] = ThreadPool::split(runs, th, pool.size());
      if (r0 == r1) return;
      conv_tokens(c, w, cur, 1, conv_state, u.data(), r0 * Dk, r1 * Dk);
    });
    const float* zt = z.data() + t * vdim;
    pool.run([&](int th) {
      const auto [e0, e1] = ThreadPool::split(Hv, th, pool.size());
      if (e0 == e1) return;
      // Each head's scratch and read-out side by side; this thread's heads in one call
      // (VectorOps::gdn_heads overlaps one head's update with the next one's read).
      std::vector<float> scratch(static_cast<std::size_t>((e1 - e0) * 2 * Dv)), n(static_cast<std::size_t>((e1 - e0) * Dv));
      std::vector<GdnHead> heads;
      for (std::int64_t e = e0; e < e1; ++e) {
        float beta, g;
        gates(t, e, beta, g);
        float* mem = scratch.data() + (e - e0) * 2 * Dv;
        heads.push_back({state.data() + e * Dk * Dv, u.data() + (e % Hk) * Dk, u.data() + key_dim + (e % Hk) * Dk,
                         u.data() + 2 * key_dim + e * Dv, std::exp(g), beta, mem, mem + Dv});
      }
      ops.gdn_heads(heads.data(), int(heads.size()), Dk, Dv);
      // gated RMSNorm: norm, weight, x SiLU(z); the heads' read-outs are 2 Dv apart in scratch.
      rms_norm_rows(heads[0].o, 2 * Dv, w.norm.data(), n.data(), Dv, int(e1 - e0), Dv, c.eps);
      for (std::int64_t e = e0; e < e1; ++e) ops.silu_mul(zt + e * Dv, n.data() + (e - e0) * Dv, tiled.data() + e * Dv, Dv);
    });
    if (ring && t < ring->slots) ring->record(layer, t, conv_state, state);
    permute(tiled.data(), y.data() + t * vdim);
  }
  }
  }
  if (tokens == 1) prefetch_gemv_starts({&w.out}, pool);
  const Q8KBatch yr = rotate_and_quantize(c, std::move(y), tokens, vdim, pool, profile);  // site 2 (after the permute)
  matmul(w.out, yr, out, pool, profile);
}

}  // namespace ternlab::model
