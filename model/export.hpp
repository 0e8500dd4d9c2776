// A Bonsai 2 (qwen35) model re-written for another engine: its ternary tensors re-encoded in another
// GGUF block format (ggml's TQ2_0 / TQ1_0, which upstream llama.cpp runs, or PrismML's PQ2_0 /
// PTQ1_0), or its Hadamard fold undone into F32 weights (upstream llama.cpp has no fold: see
// docs/llamacpp.md). Every other tensor and key is copied as it is, the tokenizer included.
//
// Exact unless asked otherwise: a scale the target cannot hold (TQ2_0 has one fp16 scale per 256
// weights, so the two 128-weight scales under it must agree) is refused naming tensor, row and
// block; `lossy` merges them instead (layouts/matrix.hpp `requantise`) and the report says what moved.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "layouts/matrix.hpp"

namespace ternlab::model {

struct ExportOptions {
  std::string type;     // tq2_0, tq1_0, pq2_0, ptq1_0 or f32
  bool unfold = false;  // undo the Hadamard fold (weights and embedding rows, ssm_out to tiled order)
  bool lossy = false;   // merge scale groups the target cannot hold instead of refusing
  // (tensors done, tensor count, name), after each tensor is written.
  std::function<void(std::size_t, std::size_t, const std::string&)> progress;
};

struct ExportReport {
  std::uint32_t type = 0;      // GGUF type of the written ternary (or unfolded) tensors
  bool fold_kept = false;      // the file still carries prism.hadamard (ternlab and the Prism fork apply it)
  std::int64_t converted = 0;  // tensors re-encoded
  std::uint64_t bytes = 0;     // file size
  ScaleRequantisation scales;  // merged scale groups (lossy only; all zero when exact)
  // Unfolding into F32: weights computed (in double) and those float32 could not hold exactly.
  std::int64_t unfolded_weights = 0, unfolded_rounded = 0;
  double unfolded_max_rel_error = 0;
  bool exact() const { return scales.changed == 0 && scales.weights_changed == 0 && unfolded_rounded == 0; }
};

// GGUF type id of an export target name; throws listing the names.
std::uint32_t export_type(const std::string& name);

// Reads `in`, writes `out` whole or not at all (common/files.hpp replace_file_atomically).
ExportReport export_model(const std::string& in, const std::string& out, const ExportOptions& o);

}  // namespace ternlab::model
