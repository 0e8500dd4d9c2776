// The registry of experiment kinds. A kind names the keys it accepts (beyond the common ones), the
// sections whose arrays form a grid inside one run, a validation that runs for the whole plan before
// anything is measured, and the run itself. The kernel kinds (bandwidth, gemv, gemm, oracle) are
// in kernel_kinds.cpp; the model kinds (prefill, decode, speed, perplexity, greedy, profile) in
// model_kinds.cpp, the same way, sharing the arm helpers of arms.hpp; speculative (speculative
// decoding against plain decode) in speculative_kind.cpp, sharing the model arms of model_arms.hpp.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "experiments/config.hpp"
#include "experiments/report.hpp"

namespace ternlab::experiments {

struct RunContext;

struct KindInfo {
  std::string name;
  std::string summary;
  std::vector<KeySpec> keys;               // every accepted key (common ones included)
  std::vector<std::string> grid_sections;  // e.g. {"cases"}: arrays there do not sweep runs
  std::function<void(const RunSpec&)> validate;  // throws fail_at(...) naming the key
  std::function<RunReport(const RunSpec&, RunContext&)> run;
  std::function<std::int64_t(const RunSpec&)> units;  // progress units of one run (for the ETA)
};

// Keys every kind accepts (kind, name, output, seed, rounds, warmup, ...).
std::vector<KeySpec> common_keys();
// The keys of kinds that time kernels on a matrix: [shape] and [[arm]].
std::vector<KeySpec> matrix_keys();

void register_kind(KindInfo kind);
// Extra lines a kind adds to the printed plan of each of its runs (the model kinds: the memory
// estimate per arm against the memory available); "" when it adds none.
void register_plan_notes(const std::string& kind, std::function<std::string(const RunSpec&)> notes);
std::string plan_notes(const RunSpec& run);
const KindInfo& find_kind(const std::string& name, const Located& at);
std::vector<std::string> kind_names();

}  // namespace ternlab::experiments
