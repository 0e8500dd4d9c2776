// SwiGLU MLP (spec §7.6): ffn_gate and ffn_up share the rotated input (site 3), the product
// SiLU(gate) * up is rotated with the intermediate width's signs (site 4) before ffn_down.
#include "kernels/vector/vector_ops.hpp"
#include "model/model.hpp"

namespace ternlab::model {

void mlp(const ModelConfig& c, const LayerWeights& w, const std::vector<float>& f, int tokens, float* out,
         ThreadPool& pool, OpProfile* profile) {
  const std::int64_t ff = c.n_ff;
  if (tokens == 1) prefetch_gemv_starts({&w.ffn_gate, &w.ffn_up}, pool);
  const Q8KBatch fr = rotate_and_quantize(c, f, tokens, c.n_embd, pool, profile);
  std::vector<float> gate(static_cast<std::size_t>(tokens * ff)), up(gate.size());
  matmuls({{&w.ffn_gate, gate.data()}, {&w.ffn_up, up.data()}}, fr, pool, profile);
  // SiLU(gate) * up, elementwise, made piece by piece inside the rotation's pass, so each piece is
  // rotated and quantised while in cache (17408 products a token at full size).
  float* g = gate.data();
  const float* u = up.data();
  const auto silu_product = [g, u, ff](std::int64_t t0, std::int64_t t1, std::int64_t c0, std::int64_t c1) {
    for (std::int64_t t = t0; t < t1; ++t) vector_ops().silu_mul(g + t * ff + c0, u + t * ff + c0, g + t * ff + c0, c1 - c0);
  };
  if (tokens == 1) prefetch_gemv_starts({&w.ffn_down}, pool);
  const Q8KBatch pr = rotate_and_quantize(c, std::move(gate), tokens, ff, pool, profile, silu_product, OpProfile::other);
  matmul(w.ffn_down, pr, out, pool, profile);
}

}  // namespace ternlab::model
