// Bonsai 2 (qwen35) hyperparameters, the Hadamard fold contract and the tensor inventory, read from
// GGUF metadata and checked against the file's tensors (spec §3, §5). The same tables drive the
// synthetic writer, so what ternlab writes is what it requires.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "model/gguf.hpp"
#include "model/hadamard.hpp"

namespace ternlab::model {

struct ModelConfig {
  std::string arch = "qwen35";
  int n_layer = 0;      // trunk layers (block_count - nextn_predict_layers)
  int n_embd = 0;       // d
  int n_ff = 0;
  int n_vocab = 0;      // rows of token_embd.weight
  int n_head = 0, n_head_kv = 0, head_dim = 0;
  int rope_dims = 0;
  std::vector<std::int64_t> rope_sections;
  float rope_base = 1e7f;
  float eps = 1e-6f;
  int ssm_conv = 4;      // conv kernel
  int ssm_state = 0;     // head_k_dim = head_v_dim
  int ssm_k_heads = 0;   // group_count
  int ssm_v_heads = 0;   // time_step_rank
  int full_attention_interval = 4;
  std::vector<bool> recurrent;  // per layer: true = Gated DeltaNet
  std::uint32_t context_length = 0;
  // prism.hadamard
  Rotation rotation;
  std::set<std::string> folded, inverse_folded;
  bool gdn_v_grouped = true;
  int ternary_type = 142;  // the GGUF type every ternary tensor has (PQ2_0, PTQ1_0, TQ2_0 or TQ1_0)

  int ssm_key_dim() const { return ssm_state * ssm_k_heads; }
  int ssm_value_dim() const { return ssm_state * ssm_v_heads; }
  int conv_channels() const { return 2 * ssm_key_dim() + ssm_value_dim(); }
  int attn_dim() const { return n_head * head_dim; }
  bool is_gdn(int layer) const { return recurrent[std::size_t(layer)]; }
  // One session's Gated DeltaNet state in bytes, every recurrent layer's conv window and fp32
  // state matrices: what a decode token reads and writes back besides the weights.
  std::int64_t recurrent_state_bytes() const {
    std::int64_t b = 0;
    for (int l = 0; l < n_layer; ++l)
      if (is_gdn(l))
        b += 4 * (std::int64_t(ssm_conv - 1) * conv_channels() + std::int64_t(ssm_v_heads) * ssm_state * ssm_state);
    return b;
  }

  // Reads and validates every key and every tensor's presence, type and shape.
  static ModelConfig from_gguf(const gguf::File& f);
};

enum class Kind { ternary, f32, bf16 };
struct TensorSpec {
  std::string name;
  Kind kind;
  std::vector<std::uint64_t> ne;
  bool folded = false;   // in prism.hadamard.weight_names
  bool inverse = false;  // in prism.hadamard.inverse_weight_names
};
// Every tensor the trunk needs, in file order (globals first, then layer by layer).
std::vector<TensorSpec> tensor_specs(const ModelConfig& c);

// general.file_type (llama.cpp's llama_ftype) of a model whose ternary tensors have GGUF type
// `type`: TQ1_0 36, TQ2_0 37, F32 0, and PrismML's 141 / 143 for PQ2_0 / PTQ1_0.
int llama_file_type(std::uint32_t type);

// Writes every architecture and prism.hadamard key of `c` (not the tokenizer).
void write_metadata(const ModelConfig& c, gguf::Writer& w, int file_type);

std::string blk(int layer, const char* what);  // "blk.L.what"

}  // namespace ternlab::model
