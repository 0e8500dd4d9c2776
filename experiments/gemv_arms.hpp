// The gemv kind's arms (a registered ternary layout x kernel x threads, or a peer's format) for a kind
// that runs them beside its own on the same rows x cols: the lattice layout-scale kind sets the
// ternary family next to the Λ24 records this way, each arm built, verified and billed exactly as
// `kind = "gemv"` does.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "experiments/config.hpp"
#include "experiments/measure.hpp"

namespace ternlab::experiments {

// Checks one arm as the gemv kind does: layout, kernel, threads, rows a multiple of its row group,
// cols a multiple of 128 (a peer's block). Errors name the file, line and key.
void validate_gemv_arm(const RunSpec& run, const ArmSpec& arm, std::int64_t rows, std::int64_t cols);

struct GemvArms {
  std::vector<ArmSetup> arms;        // in the order of `arms`, skipped ones left out
  std::vector<std::string> skipped;  // a peer arm on a CPU without its ISA, in words
};
// The arms on synthetic ternary weights (the run's seed, unit scales) and integer activations,
// verified against the oracle exactly.
GemvArms gemv_arms(const RunSpec& run, const std::vector<const ArmSpec*>& arms, std::int64_t rows, std::int64_t cols, Pools& pools);
// A peer arm left to `best` on a CPU without its ISA: gemv_arms skips it.
bool is_gemv_arm_skipped(const ArmSpec& arm);

}  // namespace ternlab::experiments
