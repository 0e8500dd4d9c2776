// Gated full attention (spec §7.5): per head 256 query rows then 256 gate rows in attn_q, q/k
// RMSNorm, partial NeoX RoPE, GQA with query head h on KV head h / (H / Hkv), a growing KV cache, a
// sigmoid output gate, then attn_output behind the attn-width rotation.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/vector/vector_ops.hpp"
#include "model/model.hpp"

namespace ternlab::model {

namespace {

// One position's rotation: the cosine and sine of each of the rope_dims / 2 pair angles, computed
// once and shared by every head (28 heads a layer at full size; the double-precision pow, cos and
// sin per pair and head were most of the attention time).
struct RopeAngles {
  std::vector<float> cs, sn;
  RopeAngles(int rope_dims, int pos, float base) : cs(std::size_t(rope_dims / 2)), sn(cs.size()) {
    for (int i = 0; i < rope_dims / 2; ++i) {
      const double theta = double(pos) * std::pow(double(base), -2.0 * i / rope_dims);
      cs[std::size_t(i)] = float(std::cos(theta));
      sn[std::size_t(i)] = float(std::sin(theta));
    }
  }
};

void rope_neox(float* x, const RopeAngles& r) {
  const std::size_t half = r.cs.size();
  for (std::size_t i = 0; i < half; ++i) {
    const float a = x[i], b = x[i + half];
    x[i] = a * r.cs[i] - b * r.sn[i];
    x[i + half] = a * r.sn[i] + b * r.cs[i];
  }
}

}  // namespace

void KeyCache::append(const float* keys) {
  constexpr int T = VectorOps::kLaneTile;
  const auto tile = std::size_t(positions / T), lane = std::size_t(positions % T), tile_floats = std::size_t(head_dim) * T;
  for (int m = 0; m < kv_heads; ++m) {
    std::vector<float>& head = heads[std::size_t(m)];
    if (head.size() < (tile + 1) * tile_floats) head.resize((tile + 1) * tile_floats, 0.0f);
    const float* key = keys + std::int64_t(m) * head_dim;
    float* to = head.data() + tile * tile_floats + lane;
    for (int i = 0; i < head_dim; ++i) to[std::size_t(i) * T] = key[i];
  }
  ++positions;
}

std::vector<float> KeyCache::rows() const {
  constexpr int T = VectorOps::kLaneTile;
  std::vector<float> out(std::size_t(positions * kv_heads * head_dim));
  for (std::int64_t p = 0; p < positions; ++p)
    for (int m = 0; m < kv_heads; ++m)
      for (int i = 0; i < head_dim; ++i)
        out[std::size_t((p * kv_heads + m) * head_dim + i)] =
            heads[std::size_t(m)][std::size_t(((p / T) * head_dim + i) * T + p % T)];
  return out;
}

std::int64_t KeyCache::padded(std::int64_t n) {
  constexpr int T = VectorOps::kLaneTile;
  return (n + T - 1) / T * T;
}

void KeyCache::dots(int m, const float* q, int queries, std::int64_t upto, float* out) const {
  const int tiles = int(padded(std::min(upto, positions)) / VectorOps::kLaneTile);
  vector_ops().tiles_dot_queries_f32(heads[std::size_t(m)].data(), tiles, head_dim, q, queries, out,
                                     std::int64_t(tiles) * VectorOps::kLaneTile);
}

void attention(const ModelConfig& c, const AttnWeights& w, const Q8KBatch& xr, int tokens, int pos0,
               KeyCache& k_cache, std::vector<float>& v_cache, float* out, ThreadPool& pool,
               OpProfile* profile) {
  const int H = c.n_head, Hkv = c.n_head_kv, hd = c.head_dim;
  const std::int64_t qg_dim = 2 * std::int64_t(H) * hd, kv_dim = std::int64_t(Hkv) * hd;
  std::vector<float> qg(static_cast<std::size_t>(tokens * qg_dim)), k(static_cast<std::size_t>(tokens * kv_dim)), v(k.size());
  matmuls({{&w.q, qg.data()}, {&w.k, k.data()}, {&w.v, v.data()}}, xr, pool, profile);

  std::vector<float> o(std::size_t(tokens) * std::size_t(H * hd));
  {
    OpTimer timer(profile, OpProfile::attention);
    const float scale = 1.0f / std::sqrt(float(hd));
    // Every token's keys normed, rotated and cached first, and its values: token t's queries then
    // read the first pos0 + t + 1 positions (causal), so the whole call is one job for the pool.
    std::vector<RopeAngles> angles;
    angles.reserve(std::size_t(tokens));
    rms_norm_rows(k.data(), hd, w.k_norm.data(), k.data(), hd, tokens * Hkv, hd, c.eps);
    for (int t = 0; t < tokens; ++t) {
      angles.emplace_back(c.rope_dims, pos0 + t, c.rope_base);
      for (int m = 0; m < Hkv; ++m) rope_neox(k.data() + t * kv_dim + m * hd, angles.back());
      k_cache.append(k.data() + t * kv_dim);
    }
    v_cache.insert(v_cache.end(), v.begin(), v.begin() + tokens * kv_dim);
    // A thread's query heads in runs that share a KV head: the run's dots read each key tile
    // once, its weighted sums each cached value once.
    pool.run([&](int th) {
      const auto [h0, h1] = ThreadPool::split(H, th, pool.size());
      const int group = H / Hkv;
      std::vector<float> q(static_cast<std::size_t>(group * hd)),
          p(static_cast<std::size_t>(group * KeyCache::padded(pos0 + tokens)));
      for (int t = 0; t < tokens; ++t) {
        const int n_ctx = pos0 + t + 1;
        const std::int64_t width = KeyCache::padded(n_ctx);
        for (std::int64_t ha = h0; ha < h1;) {
          const std::int64_t m = ha / group, hb = std::min(h1, (m + 1) * group);
          const int run = int(hb - ha);
          rms_norm_rows(qg.data() + t * qg_dim + ha * 2 * hd, 2 * hd, w.q_norm.data(), q.data(), hd, run, hd, c.eps);
          for (int r = 0; r < run; ++r) rope_neox(q.data() + r * hd, angles[std::size_t(t)]);
          k_cache.dots(int(m), q.data(), run, n_ctx, p.data());
          for (int r = 0; r < run; ++r) vector_ops().softmax(p.data() + r * width, n_ctx, scale);
          float* oa = o.data() + t * std::int64_t(H * hd) + ha * hd;
          vector_ops().weighted_sums(v_cache.data() + m * hd, kv_dim, n_ctx, p.data(), width, run, oa, hd);
          for (int r = 0; r < run; ++r)
            vector_ops().sigmoid_mul(qg.data() + t * qg_dim + (ha + r) * 2 * hd + hd, oa + r * hd, hd);  // the gate rows
          ha = hb;
        }
      }
    });
  }
  if (tokens == 1) prefetch_gemv_starts({&w.out}, pool);
  const Q8KBatch orot = rotate_and_quantize(c, std::move(o), tokens, std::int64_t(H) * hd, pool, profile);  // site 2
  matmul(w.out, orot, out, pool, profile);
}

}  // namespace ternlab::model
