// A plain reference forward pass for Bonsai 2 GGUF files, written for clarity, not speed: weights
// dequantised to double (Eigen), the rotation as an explicit dense matrix, the Gated DeltaNet run in
// HF's grouped value-head order (the seven tiled tensors are un-permuted at load, spec §7.4.1 (B)),
// attention recomputed over the whole sequence. Optionally rounds every ternary matmul's input
// through q8_K exactly as the engine does, which isolates the engine's float arithmetic.
#pragma once

#include <Eigen/Dense>
#include <cstdint>
#include <string>
#include <vector>

#include "model/config.hpp"
#include "model/gguf.hpp"

namespace ternlab::test {

struct ReferenceModel {
  explicit ReferenceModel(const std::string& path);
  // Logits (tokens x vocab) for every position of `tokens`, from an empty state.
  Eigen::MatrixXd forward(const std::vector<std::int32_t>& tokens) const;

  bool q8_activations = true;  // round matmul inputs through q8_K like the engine
  bool permute_ssm_out = true;  // negative test switch: false skips the grouped-order fix-up

  model::ModelConfig c;
  std::map<std::int64_t, Eigen::MatrixXd> rotation;  // K -> R_K (dense)
  std::map<std::string, Eigen::MatrixXd> w;           // every matrix, [N, K] (PyTorch order), grouped
  std::map<std::string, Eigen::VectorXd> v;           // every vector

 private:
  Eigen::VectorXd linear(const std::string& name, const Eigen::VectorXd& x) const;
};

}  // namespace ternlab::test
