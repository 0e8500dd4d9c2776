#include "model/synth.hpp"

#include <cmath>
#include <cstring>

#include "common/error.hpp"
#include "common/fp16.hpp"
#include "common/strings.hpp"
#include "layouts/matrix.hpp"
#include "layouts/registry.hpp"
#include "model/tokenizer.hpp"

namespace ternlab::model {

namespace {

ModelConfig shape(int layers, int d, int ff, int vocab, int heads, int kv_heads, int head_dim, int rope_dims,
                  std::vector<std::int64_t> sections, int ssm_state, int k_heads, int v_heads, int block) {
  ModelConfig c;
  c.n_layer = layers;
  c.n_embd = d;
  c.n_ff = ff;
  c.n_vocab = vocab;
  c.n_head = heads;
  c.n_head_kv = kv_heads;
  c.head_dim = head_dim;
  c.rope_dims = rope_dims;
  c.rope_sections = std::move(sections);
  c.ssm_state = ssm_state;
  c.ssm_k_heads = k_heads;
  c.ssm_v_heads = v_heads;
  c.rotation.block = block;
  c.context_length = 262144;
  c.recurrent.resize(std::size_t(layers));
  for (int l = 0; l < layers; ++l) c.recurrent[std::size_t(l)] = (l + 1) % c.full_attention_interval != 0;
  return c;
}

// splitmix64: a stream per (seed, tensor name), so every tensor is reproducible on its own.
struct Rng {
  std::uint64_t s;
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }
  double uniform(double a, double b) { return a + (b - a) * uniform(); }
};
Rng rng_for(std::uint64_t seed, const std::string& name) {
  std::uint64_t h = 1469598103934665603ull ^ seed;
  for (char ch : name) h = (h ^ std::uint8_t(ch)) * 1099511628211ull;
  return Rng{h};
}

std::uint16_t bf16_of(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return std::uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);  // round to nearest even
}

// Ternary weights: trits uniform over {-1, 0, +1}; per-block scales around `base`.
void fill_ternary(const TensorSpec& s, const LayoutInfo& layout, std::uint64_t seed, double base, int scale_group,
                  std::span<std::uint8_t> out) {
  Rng rng = rng_for(seed, s.name);
  const std::int64_t cols = std::int64_t(s.ne[0]), rows = std::int64_t(s.ne[1]);
  if (cols % scale_group != 0)
    fail("synth: tensor '", s.name, "' has ", cols, " columns, not a multiple of the scale group ", scale_group);
  const std::int64_t chunk = std::max<std::int64_t>(1, (1 << 22) / cols);  // ~4 M weights at a time
  const std::size_t row_bytes = std::size_t(cols / layout.k) * std::size_t(layout.block_bytes());
  for (std::int64_t r0 = 0; r0 < rows; r0 += chunk) {
    const std::int64_t n = std::min(chunk, rows - r0);
    TernaryMatrix m(n, cols);
    for (auto& c : m.codes) c = std::uint8_t(rng.next() % 3);
    for (auto& sc : m.scales) sc = float_to_fp16(float(base * rng.uniform(0.75, 1.25)));
    const std::size_t share = std::size_t(scale_group / kBlockK);  // 128-weight groups under one scale
    for (std::size_t j = 0; j < m.scales.size(); ++j) m.scales[j] = m.scales[j - j % share];
    const PackedMatrix p = pack(m, layout, s.name);
    std::memcpy(out.data() + std::size_t(r0) * row_bytes, p.bytes.data(), p.bytes.size());
  }
}

void put_f32(std::span<std::uint8_t> out, std::size_t i, float v) { std::memcpy(out.data() + 4 * i, &v, 4); }

bool ends_with(const std::string& s, const char* suffix) {
  const std::size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

void fill_float(const TensorSpec& s, const ModelConfig& c, std::uint64_t seed, std::span<std::uint8_t> out) {
  Rng rng = rng_for(seed, s.name);
  std::size_t n = 1;
  for (auto d : s.ne) n *= std::size_t(d);
  if (s.kind == Kind::bf16) {  // ssm_alpha / ssm_beta: small dense projections of the normed input
    const double bound = 1.0 / std::sqrt(double(s.ne[0]));
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint16_t b = bf16_of(float(rng.uniform(-bound, bound)));
      std::memcpy(out.data() + 2 * i, &b, 2);
    }
    return;
  }
  for (std::size_t i = 0; i < n; ++i) {
    float v;
    if (ends_with(s.name, "ssm_norm.weight"))
      v = float(rng.uniform(0.9, 1.1));  // stored raw
    else if (ends_with(s.name, "norm.weight"))
      v = float(1.0 + rng.uniform(-0.1, 0.1));  // stored as 1 + w
    else if (ends_with(s.name, "ssm_conv1d.weight"))
      v = float(rng.uniform(-1.0, 1.0) / std::sqrt(double(c.ssm_conv)));
    else if (ends_with(s.name, "ssm_a"))
      v = float(-rng.uniform(1.0, 8.0));  // -exp(A_log), A in [1, 8]
    else if (ends_with(s.name, "ssm_dt.bias")) {
      const double dt = std::exp(rng.uniform(std::log(0.001), std::log(0.1)));
      v = float(dt + std::log(-std::expm1(-dt)));  // inverse softplus, as HF initialises dt_bias
    } else
      fail("synth: no generator for tensor '", s.name, "'");
    put_f32(out, i, v);
  }
}

}  // namespace

const std::vector<SynthPreset>& synth_presets() {
  static const std::vector<SynthPreset> presets = {
      {"micro", "4 layers, hidden 128, Hadamard block 128, vocab 260: a ~100 kB file (fuzzing seeds)",
       shape(4, 128, 256, 260, 2, 1, 64, 16, {3, 3, 2, 0}, 32, 2, 4, 128)},
      {"tiny", "4 layers (3 GDN + 1 attention), hidden 256, Hadamard block 256, vocab 512 (spec fixture A)",
       shape(4, 256, 1280, 512, 12, 2, 64, 16, {3, 3, 2, 0}, 64, 4, 12, 256)},
      {"small", "4 layers, hidden 1024, Hadamard block 1024, vocab 1024 (spec fixture B)",
       shape(4, 1024, 5120, 1024, 24, 4, 128, 32, {6, 5, 5, 0}, 128, 8, 24, 1024)},
      {"mid", "16 layers, hidden 2048, 16/2 heads x 256, Hadamard block 1024, vocab 32768",
       shape(16, 2048, 6144, 32768, 16, 2, 256, 64, {11, 11, 10, 0}, 128, 8, 24, 1024)},
      {"bonsai-27b", "the full Ternary Bonsai 2 27B shapes (64 layers, hidden 5120, vocab 248320, ~7.2 GB)",
       shape(64, 5120, 17408, 248320, 24, 4, 256, 64, {11, 11, 10, 0}, 128, 16, 48, 1024)},
  };
  return presets;
}

SynthPreset with_layers(const SynthPreset& p, int layers) {
  if (layers < 1) fail("a synthetic model needs at least 1 layer, got ", layers);
  SynthPreset q = p;
  q.config.n_layer = layers;
  q.config.recurrent.resize(std::size_t(layers));
  for (int l = 0; l < layers; ++l)
    q.config.recurrent[std::size_t(l)] = (l + 1) % q.config.full_attention_interval != 0;
  q.name = cat(p.name, " (", layers, " layers)");
  return q;
}

const SynthPreset& find_preset(const std::string& name) {
  for (const auto& p : synth_presets())
    if (p.name == name) return p;
  std::vector<std::string> names;
  for (const auto& p : synth_presets()) names.push_back(p.name);
  fail("unknown synthetic preset '", name, "' (known: ", join(names), ")");
}

ModelConfig synth_config(const SynthPreset& p, const SynthOptions& o) {
  ModelConfig c = p.config;
  c.ternary_type = o.ternary_type;
  c.rotation.signs.clear();
  c.folded.clear();
  c.inverse_folded.clear();
  if (o.unfolded) {
    c.rotation.identity = true;
    c.gdn_v_grouped = false;
    return c;
  }
  Rng rng = rng_for(o.seed, "prism.hadamard.sign_values");
  for (std::int64_t w : {std::int64_t(c.n_embd), std::int64_t(c.ssm_value_dim()), std::int64_t(c.attn_dim()),
                         std::int64_t(c.n_ff)}) {
    if (c.rotation.signs.count(w)) continue;
    std::vector<float> s(static_cast<std::size_t>(w));
    for (auto& x : s) x = (rng.next() & 1) ? -1.0f : 1.0f;
    c.rotation.signs[w] = std::move(s);
  }
  for (const auto& s : tensor_specs(c)) {
    if (s.folded) c.folded.insert(s.name);
    if (s.inverse) c.inverse_folded.insert(s.name);
  }
  return c;
}

std::uint64_t write_synthetic(const SynthPreset& p, const std::string& path, const SynthOptions& o) {
  const LayoutInfo& layout = find_layout(gguf::ternary_layout_name(std::uint32_t(o.ternary_type), "synth"));
  if (o.scale_group != kBlockK && o.scale_group != 2 * kBlockK)
    fail("synth: scale group ", o.scale_group, " (128, or 256 for one scale per 256 weights)");
  if (layout.scale_group() > o.scale_group)
    fail("synth: ", layout.name, " holds one scale per ", layout.scale_group(), " weights; use scale group ",
         layout.scale_group(), " (--scale-group ", layout.scale_group(), ")");
  const ModelConfig c = synth_config(p, o);
  gguf::Writer w;
  w.set("general.name", gguf::Value::str("ternlab-synth-" + p.name));
  write_metadata(c, w, llama_file_type(std::uint32_t(o.ternary_type)));
  write_tokenizer(synth_vocab(c.n_vocab), w);
  const std::vector<TensorSpec> specs = tensor_specs(c);
  const auto type_of = [&](Kind k) {
    return k == Kind::ternary ? gguf::TensorType(o.ternary_type)
           : k == Kind::f32   ? gguf::TensorType::f32
                              : gguf::TensorType::bf16;
  };
  for (const auto& s : specs) w.add_tensor(s.name, type_of(s.kind), s.ne);
  w.write(path, [&](std::size_t i, const gguf::TensorInfo&, std::span<std::uint8_t> out) {
    const TensorSpec& s = specs[i];
    if (s.kind != Kind::ternary) {
      fill_float(s, c, o.seed, out);
      if (o.progress) o.progress(i + 1, specs.size(), s.name);
      return;
    }
    // Scales keep activations O(1): a ternary row has ~2/3 non-zeros. The embedding table holds
    // unit-size rows; the head is scaled up so greedy choices have clear margins.
    const double k = double(s.ne[0]);
    double base = 1.0 / std::sqrt(k * 2.0 / 3.0);
    if (s.name == "token_embd.weight") base = 1.0;
    if (s.name == "output.weight") base *= 4.0;
    fill_ternary(s, layout, o.seed, base, o.scale_group, out);
    if (o.progress) o.progress(i + 1, specs.size(), s.name);
  });
  return w.total_bytes();
}

}  // namespace ternlab::model
