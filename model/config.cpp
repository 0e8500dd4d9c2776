#include "model/config.hpp"

#include <algorithm>
#include <map>

#include "common/error.hpp"

namespace ternlab::model {

std::string blk(int layer, const char* what) { return cat("blk.", layer, ".", what); }

namespace {

int as_int(const gguf::File& f, const std::string& key, std::uint64_t max = 1u << 30) {
  const auto v = f.get_uint(key);
  if (v == 0 || v > max) fail(f.source, ": metadata key '", key, "' = ", v, " is out of range (1..", max, ")");
  return int(v);
}

}  // namespace

std::vector<TensorSpec> tensor_specs(const ModelConfig& c) {
  using U = std::uint64_t;
  const U d = U(c.n_embd), ff = U(c.n_ff), vocab = U(c.n_vocab);
  std::vector<TensorSpec> s;
  s.push_back({"token_embd.weight", Kind::ternary, {d, vocab}, false, true});
  s.push_back({"output_norm.weight", Kind::f32, {d}});
  s.push_back({"output.weight", Kind::ternary, {d, vocab}, true});
  for (int l = 0; l < c.n_layer; ++l) {
    s.push_back({blk(l, "attn_norm.weight"), Kind::f32, {d}});
    if (c.is_gdn(l)) {
      const U vdim = U(c.ssm_value_dim()), vh = U(c.ssm_v_heads);
      s.push_back({blk(l, "attn_qkv.weight"), Kind::ternary, {d, U(c.conv_channels())}, true});
      s.push_back({blk(l, "attn_gate.weight"), Kind::ternary, {d, vdim}, true});
      s.push_back({blk(l, "ssm_alpha.weight"), Kind::bf16, {d, vh}});
      s.push_back({blk(l, "ssm_beta.weight"), Kind::bf16, {d, vh}});
      s.push_back({blk(l, "ssm_conv1d.weight"), Kind::f32, {U(c.ssm_conv), U(c.conv_channels())}});
      s.push_back({blk(l, "ssm_a"), Kind::f32, {vh}});
      s.push_back({blk(l, "ssm_dt.bias"), Kind::f32, {vh}});
      s.push_back({blk(l, "ssm_norm.weight"), Kind::f32, {U(c.ssm_state)}});
      s.push_back({blk(l, "ssm_out.weight"), Kind::ternary, {vdim, d}, true});
    } else {
      const U hd = U(c.head_dim), kv = U(c.n_head_kv) * hd;
      s.push_back({blk(l, "attn_q.weight"), Kind::ternary, {d, 2 * U(c.attn_dim())}, true});
      s.push_back({blk(l, "attn_k.weight"), Kind::ternary, {d, kv}, true});
      s.push_back({blk(l, "attn_v.weight"), Kind::ternary, {d, kv}, true});
      s.push_back({blk(l, "attn_output.weight"), Kind::ternary, {U(c.attn_dim()), d}, true});
      s.push_back({blk(l, "attn_q_norm.weight"), Kind::f32, {hd}});
      s.push_back({blk(l, "attn_k_norm.weight"), Kind::f32, {hd}});
    }
    s.push_back({blk(l, "post_attention_norm.weight"), Kind::f32, {d}});
    s.push_back({blk(l, "ffn_gate.weight"), Kind::ternary, {d, ff}, true});
    s.push_back({blk(l, "ffn_up.weight"), Kind::ternary, {d, ff}, true});
    s.push_back({blk(l, "ffn_down.weight"), Kind::ternary, {ff, d}, true});
  }
  return s;
}

ModelConfig ModelConfig::from_gguf(const gguf::File& f) {
  ModelConfig c;
  c.arch = f.get_string("general.architecture");
  if (c.arch != "qwen35")
    fail(f.source, ": general.architecture = '", c.arch, "' (ternlab runs qwen35, Bonsai 2)");
  const std::string a = c.arch + ".";
  const int blocks = as_int(f, a + "block_count", 4096);
  const auto nextn = f.get_uint(a + "nextn_predict_layers", 0);
  if (nextn >= std::uint64_t(blocks)) fail(f.source, ": ", a, "nextn_predict_layers = ", nextn, " leaves no trunk");
  c.n_layer = blocks - int(nextn);
  c.n_embd = as_int(f, a + "embedding_length");
  c.n_ff = as_int(f, a + "feed_forward_length");
  c.n_head = as_int(f, a + "attention.head_count", 4096);
  c.n_head_kv = as_int(f, a + "attention.head_count_kv", 4096);
  c.head_dim = as_int(f, a + "attention.key_length", 65536);
  if (f.get_uint(a + "attention.value_length") != std::uint64_t(c.head_dim))
    fail(f.source, ": ", a, "attention.value_length must equal attention.key_length (", c.head_dim, ")");
  if (c.n_head % c.n_head_kv != 0)
    fail(f.source, ": ", a, "attention.head_count ", c.n_head, " is not a multiple of head_count_kv ", c.n_head_kv);
  c.eps = float(f.get_float(a + "attention.layer_norm_rms_epsilon"));
  c.rope_base = float(f.get_float(a + "rope.freq_base"));
  c.rope_dims = as_int(f, a + "rope.dimension_count", 65536);
  if (c.rope_dims > c.head_dim || c.rope_dims % 2 != 0)
    fail(f.source, ": ", a, "rope.dimension_count = ", c.rope_dims, " must be even and at most key_length ",
         c.head_dim);
  if (f.has(a + "rope.dimension_sections")) c.rope_sections = f.get_ints(a + "rope.dimension_sections");
  c.ssm_conv = as_int(f, a + "ssm.conv_kernel", 64);
  c.ssm_state = as_int(f, a + "ssm.state_size", 65536);
  c.ssm_k_heads = as_int(f, a + "ssm.group_count", 4096);
  c.ssm_v_heads = as_int(f, a + "ssm.time_step_rank", 4096);
  const auto inner = f.get_uint(a + "ssm.inner_size");
  if (inner != std::uint64_t(c.ssm_state) * std::uint64_t(c.ssm_v_heads))
    fail(f.source, ": ", a, "ssm.inner_size = ", inner, " must equal ssm.state_size x ssm.time_step_rank = ",
         c.ssm_state * c.ssm_v_heads);
  if (c.ssm_v_heads % c.ssm_k_heads != 0)
    fail(f.source, ": ", a, "ssm.time_step_rank ", c.ssm_v_heads, " is not a multiple of ssm.group_count ",
         c.ssm_k_heads);
  c.full_attention_interval = int(f.get_uint(a + "full_attention_interval", 4));
  if (c.full_attention_interval == 0) fail(f.source, ": ", a, "full_attention_interval must not be 0");
  c.context_length = std::uint32_t(f.get_uint(a + "context_length", 0));
  c.recurrent.resize(std::size_t(c.n_layer));
  if (f.has(a + "attention.recurrent_layers")) {
    const auto r = f.get_ints(a + "attention.recurrent_layers");
    if (r.size() < std::size_t(c.n_layer))
      fail(f.source, ": ", a, "attention.recurrent_layers has ", r.size(), " entries for ", c.n_layer, " layers");
    for (int l = 0; l < c.n_layer; ++l) c.recurrent[std::size_t(l)] = r[std::size_t(l)] != 0;
  } else {
    for (int l = 0; l < c.n_layer; ++l) c.recurrent[std::size_t(l)] = (l + 1) % c.full_attention_interval != 0;
  }

  // prism.hadamard (spec §3.3): validated like the fork's loader. A file with none of its keys is
  // unfolded, as upstream llama.cpp writes qwen35: no rotation, ssm_out's columns in tiled order.
  const std::string h = "prism.hadamard.";
  const bool folded_file = std::any_of(f.key_order.begin(), f.key_order.end(),
                                       [&](const std::string& k) { return k.starts_with(h); });
  if (!folded_file) {
    c.rotation.identity = true;
    c.gdn_v_grouped = false;
  } else {
    const auto version = f.get_uint(h + "version");
    const bool tied = f.get_bool(h + "tied_output", false);
    if (!((version == 1 && !tied) || (version == 2 && tied)))
      fail(f.source, ": ", h, "version = ", version, " with tied_output = ", tied,
           " (ternlab runs version 1, an untied folded head)");
    c.rotation.block = as_int(f, h + "block_size", 1 << 20);
    if ((c.rotation.block & (c.rotation.block - 1)) != 0)
      fail(f.source, ": ", h, "block_size = ", c.rotation.block, " is not a power of two");
    if (f.get_string(h + "transform") != "normalized-sylvester-walsh-hadamard")
      fail(f.source, ": ", h, "transform = '", f.get_string(h + "transform"), "' is not supported");
    if (f.get_string(h + "axis") != "input-last-dimension")
      fail(f.source, ": ", h, "axis = '", f.get_string(h + "axis"), "' is not supported");
    const std::string sign_mode = f.get_string(h + "sign_mode");
    if (sign_mode != "explicit" && sign_mode != "identity")
      fail(f.source, ": ", h, "sign_mode = '", sign_mode, "' (explicit or identity)");
    const auto widths = f.get_ints(h + "sign_widths");
    std::vector<std::int64_t> values;
    if (sign_mode == "explicit") values = f.get_ints(h + "sign_values");
    std::size_t at = 0;
    for (const auto w : widths) {
      if (w <= 0 || w % c.rotation.block != 0)
        fail(f.source, ": ", h, "sign_widths entry ", w, " is not a positive multiple of block_size ",
             c.rotation.block);
      // Bound the allocation by what the file can hold (explicit) or by any plausible width.
      if ((sign_mode == "explicit" && std::uint64_t(w) > values.size() - std::min(values.size(), at)) || w > (1 << 26))
        fail(f.source, ": ", h, "sign_values has ", values.size(), " entries, fewer than the sum of sign_widths");
      std::vector<float> s(std::size_t(w), 1.0f);
      if (sign_mode == "explicit") {
        if (values.size() < at + std::size_t(w))
          fail(f.source, ": ", h, "sign_values has ", values.size(), " entries, fewer than the sum of sign_widths");
        for (std::size_t i = 0; i < s.size(); ++i) {
          const auto v = values[at + i];
          if (v != 1 && v != -1) fail(f.source, ": ", h, "sign_values[", at + i, "] = ", v, " is not +1 or -1");
          s[i] = float(v);
        }
      }
      at += std::size_t(w);
      c.rotation.signs[w] = std::move(s);
    }
    if (sign_mode == "explicit" && at != values.size())
      fail(f.source, ": ", h, "sign_values has ", values.size(), " entries, sign_widths sum to ", at);
    for (auto& n : f.get_strings(h + "weight_names")) c.folded.insert(n);
    for (auto& n : f.get_strings(h + "inverse_weight_names")) c.inverse_folded.insert(n);
    if (c.folded.empty()) fail(f.source, ": ", h, "weight_names is empty");
    for (const auto& n : c.inverse_folded) {
      if (n != "token_embd.weight")
        fail(f.source, ": ", h, "inverse_weight_names holds '", n, "' (only token_embd.weight is accepted)");
      if (c.folded.count(n)) fail(f.source, ": ", h, "'", n, "' is in both weight_names and inverse_weight_names");
    }
    c.gdn_v_grouped = f.get_bool(h + "gdn_v_grouped", false);
  }

  // Tensors: vocabulary from the embedding, then every expected tensor's type and shape.
  const gguf::TensorInfo& embd = f.tensor("token_embd.weight");
  if (embd.ne.size() != 2) fail(f.source, ": tensor 'token_embd.weight' must be 2-D");
  c.n_vocab = int(std::min<std::uint64_t>(embd.ne[1], 1u << 30));
  c.ternary_type = int(embd.type);
  if (!gguf::is_ternary(embd.tensor_type()))
    fail(f.source, ": tensor 'token_embd.weight' has type ", gguf::traits_of(embd.type, "token_embd.weight").name,
         " (ternlab runs ternary models: PQ2_0, PTQ1_0, TQ2_0 or TQ1_0)");
  for (const TensorSpec& s : tensor_specs(c)) {
    const gguf::TensorInfo& t = f.tensor(s.name);
    std::vector<std::uint64_t> ne = t.ne;
    while (ne.size() > s.ne.size() && ne.back() == 1) ne.pop_back();
    if (ne != s.ne) {
      std::string want, got;
      for (auto x : s.ne) want += cat(want.empty() ? "" : ", ", x);
      for (auto x : t.ne) got += cat(got.empty() ? "" : ", ", x);
      fail(f.source, ": tensor '", s.name, "' has shape [", got, "], the hyperparameters need [", want, "]");
    }
    const auto type = gguf::TensorType(t.type);
    const bool ok = s.kind == Kind::ternary ? int(t.type) == c.ternary_type
                    : s.kind == Kind::f32   ? type == gguf::TensorType::f32
                                            : type == gguf::TensorType::bf16 || type == gguf::TensorType::f32;
    if (!ok)
      fail(f.source, ": tensor '", s.name, "' has type ", gguf::traits_of(t.type, s.name).name, ", expected ",
           s.kind == Kind::ternary ? gguf::traits_of(std::uint32_t(c.ternary_type), s.name).name
           : s.kind == Kind::f32   ? "F32"
                                   : "BF16");
    if (c.rotation.identity) continue;  // unfolded: no fold list to agree with
    if (s.folded != (c.folded.count(s.name) != 0) || s.inverse != (c.inverse_folded.count(s.name) != 0))
      fail(f.source, ": tensor '", s.name, "' is ", s.folded || s.inverse ? "not " : "",
           "listed in prism.hadamard.", s.inverse ? "inverse_weight_names" : "weight_names",
           s.folded || s.inverse ? "" : " but ternlab expects it unfolded");
    if (s.folded || s.inverse) {
      if (s.ne[0] % std::uint64_t(c.rotation.block) != 0)
        fail(f.source, ": tensor '", s.name, "' ne0 = ", s.ne[0], " is not a multiple of prism.hadamard.block_size ",
             c.rotation.block);
      c.rotation.signs_for(std::int64_t(s.ne[0]));
    }
  }
  for (const auto& n : c.folded)
    if (!f.find(n)) fail(f.source, ": prism.hadamard.weight_names lists '", n, "', which the file lacks");
  return c;
}

int llama_file_type(std::uint32_t type) {
  switch (gguf::TensorType(type)) {
    case gguf::TensorType::pq2_0: return 141;
    case gguf::TensorType::ptq1_0: return 143;
    case gguf::TensorType::tq2_0: return 37;
    case gguf::TensorType::tq1_0: return 36;
    case gguf::TensorType::f32: return 0;
    case gguf::TensorType::f16: return 1;
    case gguf::TensorType::bf16: return 32;
  }
  fail("no llama.cpp file type for GGUF tensor type ", type);
}

void write_metadata(const ModelConfig& c, gguf::Writer& w, int file_type) {
  using gguf::Value;
  using gguf::ValueType;
  const std::string a = c.arch + ".";
  w.set("general.architecture", Value::str(c.arch));
  w.set("general.file_type", Value::u32(std::uint32_t(file_type)));
  w.set("general.quantization_version", Value::u32(2));
  w.set(a + "block_count", Value::u32(std::uint32_t(c.n_layer)));
  if (c.context_length) w.set(a + "context_length", Value::u32(c.context_length));
  w.set(a + "embedding_length", Value::u32(std::uint32_t(c.n_embd)));
  w.set(a + "feed_forward_length", Value::u32(std::uint32_t(c.n_ff)));
  w.set(a + "attention.head_count", Value::u32(std::uint32_t(c.n_head)));
  w.set(a + "attention.head_count_kv", Value::u32(std::uint32_t(c.n_head_kv)));
  w.set(a + "attention.key_length", Value::u32(std::uint32_t(c.head_dim)));
  w.set(a + "attention.value_length", Value::u32(std::uint32_t(c.head_dim)));
  w.set(a + "attention.layer_norm_rms_epsilon", Value::f32(c.eps));
  w.set(a + "rope.freq_base", Value::f32(c.rope_base));
  w.set(a + "rope.dimension_count", Value::u32(std::uint32_t(c.rope_dims)));
  w.set(a + "rope.dimension_sections", Value::ints(ValueType::i32, c.rope_sections));
  w.set(a + "ssm.conv_kernel", Value::u32(std::uint32_t(c.ssm_conv)));
  w.set(a + "ssm.state_size", Value::u32(std::uint32_t(c.ssm_state)));
  w.set(a + "ssm.group_count", Value::u32(std::uint32_t(c.ssm_k_heads)));
  w.set(a + "ssm.time_step_rank", Value::u32(std::uint32_t(c.ssm_v_heads)));
  w.set(a + "ssm.inner_size", Value::u32(std::uint32_t(c.ssm_value_dim())));
  w.set(a + "full_attention_interval", Value::u32(std::uint32_t(c.full_attention_interval)));
  if (c.rotation.identity) return;  // unfolded: upstream's qwen35 keys only
  const std::string h = "prism.hadamard.";
  w.set(h + "version", Value::u32(1));
  w.set(h + "block_size", Value::u32(std::uint32_t(c.rotation.block)));
  w.set(h + "transform", Value::str("normalized-sylvester-walsh-hadamard"));
  w.set(h + "axis", Value::str("input-last-dimension"));
  w.set(h + "sign_mode", Value::str("explicit"));
  std::vector<std::int64_t> widths, values;
  for (const auto& [k, s] : c.rotation.signs) {
    widths.push_back(k);
    for (float x : s) values.push_back(x < 0 ? -1 : 1);
  }
  w.set(h + "sign_widths", Value::ints(ValueType::i32, widths));
  w.set(h + "sign_values", Value::ints(ValueType::i32, values));
  w.set(h + "weight_names", Value::strings({c.folded.begin(), c.folded.end()}));
  w.set(h + "inverse_weight_names", Value::strings({c.inverse_folded.begin(), c.inverse_folded.end()}));
  w.set(h + "gdn_v_grouped", Value::boolean(c.gdn_v_grouped));
}

}  // namespace ternlab::model
