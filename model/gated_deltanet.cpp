// Gated DeltaNet token mixer (spec §7.4), run in the file's tiled value-head order: value head e
// reads key head e mod Hk; the output is permuted to grouped order before ssm_out's rotation.
#include <algorithm>
#include <cmath>

#include "kernels/vector/vector_ops.hpp"
#include "model/model.hpp"

namespace ternlab::model {

void gated_deltanet(const ModelConfig& c, const GdnWeights& w, const std::vector<float>& x, const Q8KBatch& xr,
                    int tokens, std::vector<float>& conv_state, GdnState& state, float* out,
                    ThreadPool& pool, OpProfile* profile, StateRing* ring, int layer) {
  const std::int64_t d = c.n_embd, ch = c.conv_channels(), vdim = c.ssm_value_dim();
  const int Dk = c.ssm_state, Dv = c.ssm_state, Hk = c.ssm_k_heads, Hv = c.ssm_v_heads, K = c.ssm_conv;
  const std::int64_t key_dim = c.ssm_key_dim();

  std::vector<float> mixed(static_cast<std::size_t>(tokens * ch)), z(static_cast<std::size_t>(tokens * vdim));
  matmul(w.qkv, xr, mixed.data(), pool, profile);
  matmul(w.gate, xr, z.data(), pool, profile);

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
  pool.run([&](int th) {
    const auto [i0, i1] = ThreadPool::split(tiles, th, pool.size());
    if (i0 == i1) return;
    for (int t = 0; t < tokens; ++t) {
      float* out_t = beta_alpha.data() + t * lanes + i0 * tile;
      if (!w.beta_alpha_bf16.empty())
        ops.tiles_dot_bf16(w.beta_alpha_bf16.data() + i0 * d * tile, int(i1 - i0), d, x.data() + t * d, out_t);
      else
        ops.tiles_dot_f32(w.beta_alpha_f32.data() + i0 * d * tile, int(i1 - i0), d, x.data() + t * d, out_t);
    }
  });

  std::vector<float> u(static_cast<std::size_t>(ch)), tiled(static_cast<std::size_t>(vdim));
  const float q_scale = 1.0f / std::sqrt(float(Dk));
  for (int t = 0; t < tokens; ++t) {
    // Causal depthwise conv over [state (oldest first), current], no bias, then SiLU.
    // Channels are independent: split over the pool (10240 SiLUs a token at full size).
    const float* cur = mixed.data() + t * ch;
    pool.run([&](int th) {
      const auto [j0, j1] = ThreadPool::split(ch, th, pool.size());
      for (std::int64_t j = j0; j < j1; ++j) {
        float acc = 0;
        for (int tau = 0; tau < K - 1; ++tau) acc += conv_state[std::size_t(tau * ch + j)] * w.conv[std::size_t(j * K + tau)];
        acc += cur[j] * w.conv[std::size_t(j * K + K - 1)];
        u[std::size_t(j)] = acc;
      }
      ops.silu(u.data() + j0, u.data() + j0, j1 - j0);
    });
    // The state keeps raw (pre-SiLU) projections.
    for (int tau = 0; tau + 1 < K - 1; ++tau)
      std::copy_n(conv_state.begin() + (tau + 1) * ch, ch, conv_state.begin() + tau * ch);
    if (K > 1) std::copy_n(cur, ch, conv_state.begin() + (K - 2) * ch);

    for (int h = 0; h < Hk; ++h) {
      l2_norm(u.data() + h * Dk, Dk, c.eps);
      l2_norm(u.data() + key_dim + h * Dk, Dk, c.eps);
      for (int i = 0; i < Dk; ++i) u[std::size_t(h * Dk + i)] *= q_scale;
    }
    const float* zt = z.data() + t * vdim;
    pool.run([&](int th) {
      const auto [e0, e1] = ThreadPool::split(Hv, th, pool.size());
      if (e0 == e1) return;
      // Each head's scratch and read-out side by side; this thread's heads in one call
      // (VectorOps::gdn_heads overlaps one head's update with the next one's read).
      std::vector<float> scratch(static_cast<std::size_t>((e1 - e0) * 2 * Dv)), n(static_cast<std::size_t>(Dv));
      std::vector<GdnHead> heads;
      for (std::int64_t e = e0; e < e1; ++e) {
        const float beta = 1.0f / (1.0f + std::exp(-beta_alpha[std::size_t(t * lanes + e)]));
        const float g = w.ssm_a[std::size_t(e)] * softplus(beta_alpha[std::size_t(t * lanes + Hv + e)] + w.dt_bias[std::size_t(e)]);
        float* mem = scratch.data() + (e - e0) * 2 * Dv;
        heads.push_back({state.data() + e * Dk * Dv, u.data() + (e % Hk) * Dk, u.data() + key_dim + (e % Hk) * Dk,
                         u.data() + 2 * key_dim + e * Dv, std::exp(g), beta, mem, mem + Dv});
      }
      ops.gdn_heads(heads.data(), int(heads.size()), Dk, Dv);
      for (std::int64_t e = e0; e < e1; ++e) {
        rms_norm(heads[std::size_t(e - e0)].o, w.norm.data(), n.data(), Dv, c.eps);  // gated RMSNorm: norm, weight, x SiLU(z)
        ops.silu_mul(zt + e * Dv, n.data(), tiled.data() + e * Dv, Dv);
      }
    });
    if (ring && t < ring->slots) ring->record(layer, t, conv_state, state);
    float* yt = y.data() + t * vdim;
    if (c.gdn_v_grouped)
      tiled_to_grouped(tiled.data(), yt, Dv, Hk, Hv / Hk);
    else
      std::copy(tiled.begin(), tiled.end(), yt);
  }
  }
  const Q8KBatch yr = rotate_and_quantize(c, std::move(y), tokens, vdim, pool, profile);  // site 2 (after the permute)
  matmul(w.out, yr, out, pool, profile);
}

}  // namespace ternlab::model
