// `ternlab explore plan SPACE -o DIR` and `ternlab explore run DIR` (docs/explore.md).
//
// plan: enumerates the space (explore/space.hpp) and writes DIR whole or not at all: space.toml (the
// space as given), plan.json and plan.md (every candidate, every refused combination with the rule
// that removed it, the run's estimate), layouts/<candidate>.hpp, and, unless told not to, a build
// folder DIR/build configured with TERNLAB_LAYOUT_DIRS=DIR/layouts for adopting a candidate.
//
// run: registers the candidates in the process, compiles each header alone (the declaration's
// compile-time check, and its seconds), then measures by successive halving through the experiment
// runner (every arm verified against the oracle before it is timed, paired ceilings in every
// round): round 1 a short gemv of every candidate and the compare layouts, round 2 a longer gemv
// of the better fraction `keep`, round 3 the gemm of the `leaders` at each token count. Writes
// DIR/rounds/ (the runner's results folders), DIR/explore.json and DIR/index.html (the rounds'
// tables and the Pareto plots: bits a weight against Gweights/s and GMAC/s, hand-designed layouts
// marked). Nothing is written outside DIR.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

namespace ternlab::explore {

struct PlanOptions {
  bool configure = true;  // configure DIR/build (cmake) after writing the headers
};
// Throws ternlab::Error for a bad space (file:line:key) or a DIR that exists and is not empty.
void plan_command(const std::filesystem::path& space, const std::filesystem::path& dir, const PlanOptions& opt,
                  std::ostream& out);

// Registers the candidates a plan folder lists (its space.toml enumerated again, checked against
// plan.json), so that `ternlab run --explore DIR` can rerun a round's config (DIR/configs/).
std::vector<std::string> register_planned(const std::filesystem::path& dir);

struct RunOptions {
  bool compile_check = true;  // compile each candidate's header alone and time it
  int progress = -1;          // as the runner's: -1 when stderr is a terminal
  std::string out;            // the run's folder, inside the plan's (a machine's, on a cluster); empty: the plan's
};
// Returns 0, or 1 where an arm failed verification (it leaves the search, named in the report).
int run_command(const std::filesystem::path& dir, const RunOptions& opt, std::ostream& out);

// `ternlab explore slurm DIR`: DIR/explore.sbatch, one Slurm job that runs the plan on the node it
// gets into DIR/machines/<job id>-<host>; submitted once per CPU model (`sbatch --constraint=...`),
// so that `explore report` gives each model's winners. The options are `sweep plan`'s.
struct SlurmJob {
  std::string partition, time = "01:00:00", constraint;
  int cpus_per_task = 0;  // 0: the largest thread count the space measures
  bool exclusive = true;
  std::vector<std::string> extra;  // more #SBATCH lines, verbatim
  std::string ternlab;             // the binary; empty: this executable
};
void slurm_command(const std::filesystem::path& dir, const SlurmJob& job, std::ostream& out);

// `ternlab explore report DIR`: every run of the plan (DIR itself and DIR/machines/*), one row per
// machine: its CPU, each round's best candidate against the best hand-designed layout, and the
// leaders; printed, and written to DIR/machines.html and DIR/machines.json. Returns the runs found.
int report_command(const std::filesystem::path& dir, std::ostream& out);

}  // namespace ternlab::explore
