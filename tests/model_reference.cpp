#include "tests/model_reference.hpp"

#include <bit>
#include <cmath>
#include <cstring>

#include "common/fp16.hpp"
#include "kernels/q8k.hpp"
#include "layouts/matrix.hpp"
#include "layouts/registry.hpp"

namespace ternlab::test {

using Eigen::MatrixXd;
using Eigen::VectorXd;
using model::blk;

namespace {

MatrixXd hadamard_rotation(const std::vector<float>& signs, int block) {
  const auto k = Eigen::Index(signs.size());
  MatrixXd r = MatrixXd::Zero(k, k);
  const double norm = 1.0 / std::sqrt(double(block));
  for (Eigen::Index b = 0; b < k; b += block)
    for (int i = 0; i < block; ++i)
      for (int j = 0; j < block; ++j)  // H[i][j] = (-1)^popcount(i & j), then diag(s) on the right
        r(b + i, b + j) = ((std::popcount(unsigned(i & j)) & 1) ? -norm : norm) * signs[std::size_t(b + j)];
  return r;
}

MatrixXd read_matrix(const gguf::File& f, const std::string& name) {
  const auto& t = f.tensor(name);
  const auto rows = Eigen::Index(t.ne.size() > 1 ? t.ne[1] : 1), cols = Eigen::Index(t.ne[0]);
  MatrixXd m(rows, cols);
  const auto bytes = f.data(t);
  if (gguf::is_ternary(t.tensor_type())) {
    const LayoutInfo& l = find_layout(t.tensor_type() == gguf::TensorType::pq2_0 ? "pq2_0" : "ptq1_0");
    const TernaryMatrix tm = unpack(adopt_bytes(l, rows, cols, bytes.data(), bytes.size(), name));
    for (Eigen::Index r = 0; r < rows; ++r)
      for (Eigen::Index k = 0; k < cols; ++k)
        m(r, k) = double(tm.weight(r, k)) * double(fp16_to_float(tm.scale_bits(r, k / 128)));
  } else if (t.tensor_type() == gguf::TensorType::f32) {
    for (Eigen::Index i = 0; i < rows * cols; ++i) {
      float x;
      std::memcpy(&x, bytes.data() + 4 * i, 4);
      m(i / cols, i % cols) = x;
    }
  } else {  // BF16
    for (Eigen::Index i = 0; i < rows * cols; ++i) {
      std::uint16_t b;
      std::memcpy(&b, bytes.data() + 2 * i, 2);
      const std::uint32_t u = std::uint32_t(b) << 16;
      float x;
      std::memcpy(&x, &u, 4);
      m(i / cols, i % cols) = x;
    }
  }
  return m;
}

VectorXd rms_norm(const VectorXd& x, const VectorXd& g, double eps) {
  return x.cwiseProduct(g) / std::sqrt(x.squaredNorm() / double(x.size()) + eps);
}
double silu(double x) { return x / (1 + std::exp(-x)); }
double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

}  // namespace

ReferenceModel::ReferenceModel(const std::string& path) {
  const auto f = gguf::File::open(path, gguf::LoadMode::memory);
  c = model::ModelConfig::from_gguf(f);
  for (const auto& [k, s] : c.rotation.signs) rotation[k] = hadamard_rotation(s, c.rotation.block);
  for (const auto& spec : model::tensor_specs(c)) {
    const MatrixXd m = read_matrix(f, spec.name);
    if (spec.ne.size() == 1)
      v[spec.name] = m.row(0).transpose();
    else
      w[spec.name] = m;
  }
  // Un-tile the GDN value heads: tiled position t = j * nk + k holds grouped head g = k * rep + j.
  const int nk = c.ssm_k_heads, rep = c.ssm_v_heads / c.ssm_k_heads, hd = c.ssm_state;
  const auto grouped_from_tiled = [&](int g) { return (g % rep) * nk + g / rep; };
  for (int l = 0; l < c.n_layer; ++l) {
    if (!c.is_gdn(l)) continue;
    const auto key_dim = Eigen::Index(c.ssm_key_dim());
    auto regroup_rows = [&](MatrixXd& m, Eigen::Index first, int per_head) {
      const MatrixXd old = m;
      for (int g = 0; g < c.ssm_v_heads; ++g)
        m.middleRows(first + g * per_head, per_head) = old.middleRows(first + grouped_from_tiled(g) * per_head, per_head);
    };
    regroup_rows(w[blk(l, "attn_qkv.weight")], 2 * key_dim, hd);
    regroup_rows(w[blk(l, "attn_gate.weight")], 0, hd);
    regroup_rows(w[blk(l, "ssm_alpha.weight")], 0, 1);
    regroup_rows(w[blk(l, "ssm_beta.weight")], 0, 1);
    regroup_rows(w[blk(l, "ssm_conv1d.weight")], 2 * key_dim, hd);  // [channels, taps]
    for (const char* name : {"ssm_a", "ssm_dt.bias"}) {
      VectorXd& x = v[blk(l, name)];
      const VectorXd old = x;
      for (int g = 0; g < c.ssm_v_heads; ++g) x(g) = old(grouped_from_tiled(g));
    }
  }
}

VectorXd ReferenceModel::linear(const std::string& name, const VectorXd& x) const {
  VectorXd xr = rotation.at(x.size()) * x;  // forward site: R_K x
  if (q8_activations) {
    const std::vector<float> xf(xr.data(), xr.data() + xr.size());
    const Q8KBatch q = quantize_batch(xf.data(), 1, std::int64_t(xf.size()));
    for (Eigen::Index i = 0; i < xr.size(); ++i)
      xr(i) = double(q.rows[std::size_t(i / kQK)].d) * double(q.rows[std::size_t(i / kQK)].qs[i % kQK]);
  }
  return w.at(name) * xr;
}

MatrixXd ReferenceModel::forward(const std::vector<std::int32_t>& tokens) const {
  const auto T = Eigen::Index(tokens.size());
  const Eigen::Index d = c.n_embd;
  const double eps = c.eps;
  MatrixXd h(d, T);
  const MatrixXd& embd = w.at("token_embd.weight");
  for (Eigen::Index t = 0; t < T; ++t)
    h.col(t) = rotation.at(d).transpose() * embd.row(tokens[std::size_t(t)]).transpose();  // e = R^T z

  const int nk = c.ssm_k_heads, nv = c.ssm_v_heads, rep = nv / nk, Dk = c.ssm_state, K = c.ssm_conv;
  const Eigen::Index key_dim = c.ssm_key_dim(), vdim = c.ssm_value_dim(), ch = c.conv_channels();
  const int H = c.n_head, Hkv = c.n_head_kv, hd = c.head_dim;
  for (int l = 0; l < c.n_layer; ++l) {
    MatrixXd mix(d, T);
    if (c.is_gdn(l)) {
      MatrixXd raw(ch, T);
      std::vector<MatrixXd> S(std::size_t(nv), MatrixXd::Zero(Dk, Dk));
      for (Eigen::Index t = 0; t < T; ++t) {
        const VectorXd a = rms_norm(h.col(t), v.at(blk(l, "attn_norm.weight")), eps);
        raw.col(t) = linear(blk(l, "attn_qkv.weight"), a);
        const VectorXd z = linear(blk(l, "attn_gate.weight"), a);
        const VectorXd b = w.at(blk(l, "ssm_beta.weight")) * a, al = w.at(blk(l, "ssm_alpha.weight")) * a;
        // Causal conv over the raw projections, zero history before the sequence.
        VectorXd u(ch);
        const MatrixXd& taps = w.at(blk(l, "ssm_conv1d.weight"));
        for (Eigen::Index j = 0; j < ch; ++j) {
          double acc = 0;
          for (int tau = 0; tau < K; ++tau) {
            const Eigen::Index src = t - (K - 1) + tau;
            if (src >= 0) acc += raw(j, src) * taps(j, tau);
          }
          u(j) = silu(acc);
        }
        VectorXd y(vdim);
        for (int g = 0; g < nv; ++g) {
          const int kh = g / rep;  // grouped order
          VectorXd q = u.segment(kh * Dk, Dk), k = u.segment(key_dim + kh * Dk, Dk);
          q /= std::max(q.norm(), eps);
          k /= std::max(k.norm(), eps);
          q /= std::sqrt(double(Dk));
          const VectorXd vv = u.segment(2 * key_dim + g * Dk, Dk);
          const double beta = sigmoid(b(g));
          const double x = al(g) + v.at(blk(l, "ssm_dt.bias"))(g);
          const double gate = v.at(blk(l, "ssm_a"))(g) * (x > 20 ? x : std::log1p(std::exp(x)));
          MatrixXd& s = S[std::size_t(g)];
          s *= std::exp(gate);
          const VectorXd delta = beta * (vv - s.transpose() * k);
          s += k * delta.transpose();
          const VectorXd o = s.transpose() * q;
          const VectorXd n = rms_norm(o, v.at(blk(l, "ssm_norm.weight")), eps);
          for (int j = 0; j < Dk; ++j) y(g * Dk + j) = n(j) * silu(z(g * Dk + j));
        }
        if (!permute_ssm_out) {  // feed tiled order instead (what skipping the permutation amounts to)
          VectorXd tiled(vdim);
          for (int g = 0; g < nv; ++g) tiled.segment(((g % rep) * nk + g / rep) * Dk, Dk) = y.segment(g * Dk, Dk);
          y = tiled;
        }
        mix.col(t) = linear(blk(l, "ssm_out.weight"), y);
      }
    } else {
      std::vector<VectorXd> keys, values;
      for (Eigen::Index t = 0; t < T; ++t) {
        const VectorXd a = rms_norm(h.col(t), v.at(blk(l, "attn_norm.weight")), eps);
        const VectorXd qg = linear(blk(l, "attn_q.weight"), a);
        const VectorXd k = linear(blk(l, "attn_k.weight"), a), vv = linear(blk(l, "attn_v.weight"), a);
        auto rope = [&](VectorXd x) {
          const int half = c.rope_dims / 2;
          for (int i = 0; i < half; ++i) {
            const double th = double(t) * std::pow(double(c.rope_base), -2.0 * i / c.rope_dims);
            const double x0 = x(i), x1 = x(i + half);
            x(i) = x0 * std::cos(th) - x1 * std::sin(th);
            x(i + half) = x0 * std::sin(th) + x1 * std::cos(th);
          }
          return x;
        };
        VectorXd kr(Hkv * hd);
        for (int m = 0; m < Hkv; ++m)
          kr.segment(m * hd, hd) = rope(rms_norm(k.segment(m * hd, hd), v.at(blk(l, "attn_k_norm.weight")), eps));
        keys.push_back(kr);
        values.push_back(vv);
        VectorXd o(H * hd);
        for (int hh = 0; hh < H; ++hh) {
          const VectorXd q = rope(rms_norm(qg.segment(2 * hd * hh, hd), v.at(blk(l, "attn_q_norm.weight")), eps));
          const int m = hh / (H / Hkv);
          VectorXd p(t + 1);
          for (Eigen::Index s = 0; s <= t; ++s) p(s) = q.dot(keys[std::size_t(s)].segment(m * hd, hd)) / std::sqrt(double(hd));
          p = (p.array() - p.maxCoeff()).exp();
          p /= p.sum();
          VectorXd oh = VectorXd::Zero(hd);
          for (Eigen::Index s = 0; s <= t; ++s) oh += p(s) * values[std::size_t(s)].segment(m * hd, hd);
          for (int i = 0; i < hd; ++i) o(hh * hd + i) = oh(i) * sigmoid(qg(2 * hd * hh + hd + i));
        }
        mix.col(t) = linear(blk(l, "attn_output.weight"), o);
      }
    }
    h += mix;
    for (Eigen::Index t = 0; t < T; ++t) {
      const VectorXd f = rms_norm(h.col(t), v.at(blk(l, "post_attention_norm.weight")), eps);
      const VectorXd g = linear(blk(l, "ffn_gate.weight"), f), up = linear(blk(l, "ffn_up.weight"), f);
      VectorXd p(g.size());
      for (Eigen::Index i = 0; i < g.size(); ++i) p(i) = silu(g(i)) * up(i);
      h.col(t) += linear(blk(l, "ffn_down.weight"), p);
    }
  }
  MatrixXd logits(T, c.n_vocab);
  for (Eigen::Index t = 0; t < T; ++t)
    logits.row(t) = linear("output.weight", rms_norm(h.col(t), v.at("output_norm.weight"), eps)).transpose();
  return logits;
}

}  // namespace ternlab::test
