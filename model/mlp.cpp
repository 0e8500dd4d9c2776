// SwiGLU MLP (spec §7.6): ffn_gate and ffn_up share the rotated input (site 3), the product
// SiLU(gate) * up is rotated with the intermediate width's signs (site 4) before ffn_down.
#include "kernels/vector/vector_ops.hpp"
#include "model/model.hpp"

namespace ternlab::model {

void mlp(const ModelConfig& c, const LayerWeights& w, const std::vector<float>& f, int tokens, float* out,
         ThreadPool& pool, OpProfile* profile) {
  const std::int64_t ff = c.n_ff;
  const Q8KBatch fr = rotate_and_quantize(c, f, tokens, c.n_embd, pool, profile);
  std::vector<float> gate(static_cast<std::size_t>(tokens * ff)), up(gate.size());
  matmuls({{&w.ffn_gate, gate.data()}, {&w.ffn_up, up.data()}}, fr, pool, profile);
  {
    OpTimer timer(profile, OpProfile::other);
    pool.run([&](int th) {  // 17408 SiLUs a token at full size: elementwise, so split
      const auto [i0, i1] = ThreadPool::split(std::int64_t(gate.size()), th, pool.size());
      vector_ops().silu_mul(gate.data() + i0, up.data() + i0, gate.data() + i0, i1 - i0);
    });
  }
  const Q8KBatch pr = rotate_and_quantize(c, std::move(gate), tokens, ff, pool, profile);
  matmul(w.ffn_down, pr, out, pool, profile);
}

}  // namespace ternlab::model
