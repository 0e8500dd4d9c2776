// Synthetic Bonsai-format models: the real tensor names, types, metadata and prism.hadamard keys,
// deterministic random ternary weights and fp16 scales, plausible float parameters and a byte-level
// tokenizer. Written streaming, one tensor at a time, so the full-size preset never sits in memory.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/config.hpp"

namespace ternlab::model {

struct SynthPreset {
  std::string name;
  std::string summary;
  ModelConfig config;  // hyperparameters; the rotation's signs are drawn from the seed
};

const std::vector<SynthPreset>& synth_presets();
const SynthPreset& find_preset(const std::string& name);  // throws listing the names
// The preset with `layers` layers of the same shapes (every full_attention_interval-th one
// attention): per-layer costs at full size without the full-size file.
SynthPreset with_layers(const SynthPreset& p, int layers);

struct SynthOptions {
  std::uint64_t seed = 2026;
  int ternary_type = 142;  // GGUF type: 142 PQ2_0, 143 PTQ1_0, 35 TQ2_0, 34 TQ1_0 (same trits and scales for a seed)
  // 256: the two 128-weight scale groups of each 256 weights share one scale, so ggml's TQ2_0 / TQ1_0
  // (one scale per 256) hold the model exactly; required for those types.
  int scale_group = 128;
  // No Hadamard fold (no prism.hadamard keys, ssm_out in tiled order): the model upstream llama.cpp
  // computes exactly as ternlab does, the subject of the llama.cpp golden (tools/golden).
  bool unfolded = false;
  // Called after each tensor is written with (tensors done, tensor count, name): drives a progress bar.
  std::function<void(std::size_t, std::size_t, const std::string&)> progress;
};

// The full config (signs, folded-name lists) the file will carry.
ModelConfig synth_config(const SynthPreset& p, const SynthOptions& o);
// Writes the file; returns its size in bytes.
std::uint64_t write_synthetic(const SynthPreset& p, const std::string& path, const SynthOptions& o = {});

}  // namespace ternlab::model
