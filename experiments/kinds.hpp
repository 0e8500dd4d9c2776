// The registry of experiment kinds. A kind names the keys it accepts (beyond the common ones), the
// sections whose arrays form a grid inside one run, a validation that runs for the whole plan before
// anything is measured, the run itself, and what shared code needs to know of the kind (hooks and
// flags instead of comparisons of kind names). Each kind is one file, experiments/<name>_kind.cpp,
// listed in experiments/kinds.def; the kernel kinds share matrix_kinds.hpp, the model kinds the
// model arms of model_arms.hpp, all the arm helpers of arms.hpp.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "experiments/config.hpp"
#include "experiments/report.hpp"

namespace ternlab::experiments {

struct RunContext;

// What a model kind (model_arms.hpp) tells the shared model code about itself: the parts of the
// memory estimate that depend on the kind, and how its pp/tg tables are titled.
struct ModelKindHooks {
  // Tokens one session holds at most, beyond the greedy check's: the kind's longest call.
  std::function<std::int64_t(const RunSpec&)> context_tokens;
  // Logit rows one forward call returns (perplexity: a whole chunk); unset: one.
  std::function<std::int64_t(const RunSpec&)> logit_rows;
  // Copies of every Gated DeltaNet layer's state held beside the sessions (speculative decoding's
  // rollback ring: one per draft); unset: none.
  std::function<std::int64_t(const RunSpec&)> state_copies;
  bool read_ceiling = true;  // the memory read ceiling's buffer is allocated (false: an untimed kind)
  bool test_in_title = false;  // several pp/tg tables in one run, each titled with its test ("pp64")
};

struct KindInfo {
  std::string name;
  std::string summary;
  std::vector<KeySpec> keys;               // every accepted key (common ones included)
  std::vector<std::string> grid_sections;  // e.g. {"cases"}: arrays there do not sweep runs
  std::function<void(const RunSpec&)> validate;  // throws fail_at(...) naming the key
  std::function<RunReport(const RunSpec&, RunContext&)> run;
  std::function<std::int64_t(const RunSpec&)> units;  // progress units of one run (for the ETA)
  // --set overrides that shrink a run of the kind to moments ("rounds=1", "shape.rows=64"): the
  // tests run every documented command with them appended, so each kind declares its own.
  std::vector<std::string> small_overrides = {};
  ModelKindHooks model = {};  // model kinds only
  bool compute_bound = false;  // judged against the int8 compute ceiling (GMAC/s), not the memory read ceiling
};

// The small overrides of a timed kind: fewer and shorter rounds and a small ceiling buffer, then `extra`.
std::vector<std::string> timed_small_overrides(const std::vector<std::string>& extra);

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
