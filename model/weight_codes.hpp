// The model's matmul weights in codes other than its ternary layout, to measure the quality side of
// the bit-layout trade-off (docs/lattice.md "Perplexity of the trained model"): the latent float
// weights the ternary ones were rounded from (a GGUF of F32/F16 tensors under the ternary tensors'
// names, tools/train/train.py --export-float), and those floats coded with the Λ24 shape-gain
// quantiser (lattice/quantise.hpp) and transcoded to a record layout.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kernels/thread_pool.hpp"
#include "lattice/quantise.hpp"
#include "layouts/record_dsl.hpp"
#include "model/gguf.hpp"

namespace ternlab::model {

enum class WeightCode { ternary, float32, lattice };

// Matrix `name` of `file` (the float weights at `path`) as rows x cols f32, row-major. Errors name
// the file, the tensor and both shapes: a missing tensor, a type other than F32/F16, a shape other
// than the ternary tensor's rows x cols (GGUF ne = [cols, rows]).
std::vector<float> read_float_matrix(const gguf::File& file, const std::string& path, const std::string& name,
                                     std::int64_t rows, std::int64_t cols);

// FNV-1a 64 of a file's bytes: the key of its Λ24 encoding cache.
std::uint64_t file_fnv1a64(const std::filesystem::path& path);

// The Λ24 encodings of a float weight file's matrices, by tensor name, and the hash of the file they
// were encoded from. The cache file holds exactly this (format below, lattice_cache.cpp).
struct LatticeEncodings {
  std::uint64_t source_hash = 0;
  std::map<std::string, lattice::EncodedMatrix> matrices;
};

// The cache beside the float file: FLOAT.gguf -> FLOAT.gguf.l24.
std::filesystem::path default_lattice_cache(const std::filesystem::path& float_path);
// The cache's encodings, or nothing (empty map) when the file is absent. A file that is not a
// cache, or is cut short, is an error naming it.
LatticeEncodings read_lattice_cache(const std::filesystem::path& path);
// Written to a temporary file and renamed, so a reader never sees half of it.
void write_lattice_cache(const std::filesystem::path& path, const LatticeEncodings& e);

// encode_matrix with its rows handed out to the pool's threads in small chunks (a row of a
// 256-wide matrix is 10 blocks, ~0.1 s), calling progress(rows done, rows) as chunks finish.
lattice::EncodedMatrix encode_matrix_parallel(std::span<const float> w, std::int64_t rows, std::int64_t cols,
                                              const std::string& name, ThreadPool& pool,
                                              const std::function<void(std::int64_t, std::int64_t)>& progress = {});

}  // namespace ternlab::model
