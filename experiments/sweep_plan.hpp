// A sweep handed to a batch scheduler: `ternlab sweep plan` expands a config's sweep into one job
// per sweep point inside a plan folder, each job one `ternlab run` of the same config with the
// point's values as overrides, and writes a Slurm array script that runs them (docs/cluster.md).
//
//   DIR/sweep-plan.json        the manifest: config, overrides, points, Slurm options
//   DIR/<config>.toml          the config, copied verbatim
//   DIR/sweep.sbatch           `sbatch --array` script: task i runs `ternlab sweep run-one DIR --index i`
//   DIR/points/NNN/job.json    point NNN's job: its sweep values, its overrides, its command line
//   DIR/points/NNN/<results>/  its results folder (the runner's, renamed into place when complete)
//   DIR/points/NNN/exit.json   written last: exit code, status, host, Slurm job ids
//   DIR/logs/point-NNN.log     the array task's output
//
// A point is done (exit 0), failed (exit 1: an arm failed verification, its results kept; exit 2:
// an error, its message kept), incomplete (started, no exit status: it died half-way or is still
// running) or missing (never started). Only done and failed points with a results folder reach a
// merged report (`ternlab report merge`), so nothing merged comes from a half-written job.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

#include "experiments/html.hpp"
#include "experiments/results.hpp"

namespace ternlab::experiments {

// sweep-plan.json's "sweep_plan_version": raised whenever a field a reader relies on changes.
inline constexpr int kSweepPlanVersion = 1;

struct SlurmOptions {
  std::string partition;           // empty: the cluster's default partition
  std::string time = "01:00:00";   // per array task
  int cpus_per_task = 0;           // 0: the largest thread count the plan uses
  bool exclusive = true;           // a benchmark must not share its node
  std::string constraint;          // node features, e.g. "avx512" or "zen3"
  std::vector<std::string> extra;  // more `#SBATCH` options, verbatim ("--mem=8G")
  std::string ternlab;             // the binary the tasks run; empty: this executable
};

struct SweepPoint {
  int index = 0;
  Json sweep;                          // {"threads": "2"}: the point's value of each swept key
  std::vector<std::string> overrides;  // the plan's overrides, then one per swept key
};

struct SweepPlan {
  std::filesystem::path dir;
  std::string name, kind, config;  // config: the copy's file name inside dir
  std::string source;              // the config file as named to `sweep plan`
  std::vector<std::string> overrides;
  std::vector<SweepPoint> points;
  Json slurm;  // the options the script was written with
  std::filesystem::path point_dir(int index) const;  // dir/points/NNN
};

enum class PointState { done, failed, incomplete, missing };
const char* state_name(PointState s);

struct PointStatus {
  int index = 0;
  PointState state = PointState::missing;
  int exit_code = -1;
  std::string message;                  // a failed point's error, or why an incomplete one is so
  std::filesystem::path results;        // its results folder, when it wrote one
  std::string hostname;
};

bool is_sweep_folder(const std::filesystem::path& dir);  // holds sweep-plan.json

// Validates the whole config (as `ternlab run` would), refuses a config with no sweep and an
// output folder holding anything but the same plan; writes the plan folder. The same plan again
// rewrites the manifest and script (new Slurm options) and keeps every point's results.
SweepPlan write_sweep_plan(const std::string& config, const std::vector<std::string>& overrides, const std::filesystem::path& out,
                           const SlurmOptions& slurm, std::ostream& log);
// Throws ternlab::Error naming the file and field of a manifest this build cannot read.
SweepPlan read_sweep_plan(const std::filesystem::path& dir);

// The `sbatch` script running `indices` (all points: `--array=0-N`).
std::string slurm_script(const SweepPlan& plan, const std::vector<int>& indices);

// Runs one point in this process into its point folder and writes its exit.json; returns the exit
// code (0 done, 1 an arm failed verification, 2 an error, whose message is also in exit.json).
int run_sweep_point(const std::filesystem::path& dir, int index, std::ostream& out);
// Every point not done yet, one after another on this machine; returns 1 when any failed.
int run_sweep(const std::filesystem::path& dir, std::ostream& out);

std::vector<PointStatus> sweep_status(const SweepPlan& plan);
std::string status_text(const SweepPlan& plan, const std::vector<PointStatus>& status);

// Writes DIR/resubmit.sbatch running only the failed, incomplete and missing points; returns their
// indices (none: nothing written).
std::vector<int> write_resubmit_script(const SweepPlan& plan, std::ostream& log);

// Sweep folders merged for `ternlab report`: the points with results, and the page section, the
// JSON and the CSV of the point table (every point, its state and machine, its arms' speedups).
struct SweepMerge {
  std::vector<ResultFolder> folders;
  std::string html;
  std::size_t plots = 0;
  Json json;
  std::string csv;
};
// Refuses sweeps of different plans (config text or overrides) and unreadable point records.
SweepMerge merge_sweeps(const std::vector<std::filesystem::path>& dirs);

}  // namespace ternlab::experiments
