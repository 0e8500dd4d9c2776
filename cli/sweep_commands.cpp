// `ternlab sweep ...`: a config's sweep as one job per point, run by Slurm as an array or here one
// after another (docs/cluster.md).
#include <cstdlib>
#include <iostream>

#include "cli/commands.hpp"
#include "common/error.hpp"
#include "experiments/sweep_plan.hpp"

namespace ternlab::cli {

namespace {

// Runs `sbatch FILE` and fails when it does.
void submit(const std::filesystem::path& script) {
  std::string quoted = "'";
  for (char c : script.string()) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  quoted += "'";
  std::cout << "sbatch " << quoted << "\n" << std::flush;
  if (std::system(("sbatch " + quoted).c_str()) != 0) fail("sbatch ", script.string(), " failed (is Slurm installed and its controller up?)");
}

}  // namespace

void add_sweep_commands(CLI::App& app) {
  struct Options {
    std::string file, dir, out;
    std::vector<std::string> overrides;
    experiments::SlurmOptions slurm;
    bool shared = false, submit = false;
    int index = -1;
  };
  static Options o;
  auto* sweep = app.add_subcommand("sweep", "A config's sweep as one job per point: a Slurm array, or run here one after another");
  sweep->require_subcommand(1);

  auto* plan = sweep->add_subcommand("plan", "Write one job per sweep point, a manifest and a Slurm array script into --out");
  plan->add_option("file", o.file, "Experiment file with a sweep (configs/*.toml)")->required()->check(CLI::ExistingFile);
  plan->add_option("--set", o.overrides, "Override a key, as for `ternlab run` (an array makes or widens the sweep)");
  add_output_option(plan, o.out, "Plan folder (new, empty, or holding this same plan)", "--out", true);
  plan->add_option("--partition", o.slurm.partition, "Slurm partition (default: the cluster's)");
  plan->add_option("--time", o.slurm.time, "Time limit per point (Slurm's forms: MM, HH:MM:SS, D-HH:MM)")->capture_default_str();
  plan->add_option("--cpus-per-task", o.slurm.cpus_per_task, "CPUs per point (default: the largest thread count of the plan)")
      ->check(CLI::NonNegativeNumber);
  plan->add_flag("--shared", o.shared, "Let points share a node (default: --exclusive, a benchmark must not share its node)");
  plan->add_option("--constraint", o.slurm.constraint, "Node features the points need (Slurm --constraint), e.g. a CPU type");
  plan->add_option("--sbatch", o.slurm.extra, "Another #SBATCH option, verbatim (--sbatch=--mem=8G)");
  plan->add_option("--ternlab", o.slurm.ternlab, "The ternlab binary the points run (default: this one)");
  plan->callback([] {
    o.slurm.exclusive = !o.shared;
    experiments::write_sweep_plan(o.file, o.overrides, o.out, o.slurm, std::cout);
  });

  auto* one = sweep->add_subcommand("run-one", "Run one point of a plan here (what each Slurm array task runs)");
  one->add_option("dir", o.dir, "Plan folder")->required();
  one->add_option("--index", o.index, "The point (SLURM_ARRAY_TASK_ID)")->required()->check(CLI::NonNegativeNumber);
  one->callback([] {
    const int code = experiments::run_sweep_point(o.dir, o.index, std::cout);
    if (code) std::exit(code);
  });

  auto* run = sweep->add_subcommand("run", "Run every point not done yet, one after another on this machine");
  run->add_option("dir", o.dir, "Plan folder")->required();
  run->callback([] {
    if (experiments::run_sweep(o.dir, std::cout)) std::exit(1);
  });

  auto* status = sweep->add_subcommand("status", "List the points done, failed, incomplete (died half-way or running) and missing");
  status->add_option("dir", o.dir, "Plan folder")->required();
  static bool status_json = false;
  status->add_flag("--json", status_json, "Print every point's state as JSON");
  status->callback([] {
    const auto plan = experiments::read_sweep_plan(o.dir);
    const auto points = experiments::sweep_status(plan);
    if (!status_json) {
      std::cout << experiments::status_text(plan, points);
      return;
    }
    experiments::Json list = experiments::Json::array();
    for (const auto& p : points)
      list.push_back({{"point", p.index}, {"state", experiments::state_name(p.state)}, {"exit_code", p.exit_code},
                      {"hostname", p.hostname}, {"results", p.results.string()}, {"message", p.message}});
    std::cout << experiments::Json{{"plan", o.dir}, {"points", list}}.dump(1) << "\n";
  });

  auto* again = sweep->add_subcommand("resubmit", "Write (and with --submit, submit) a Slurm array of the points not done");
  again->add_option("dir", o.dir, "Plan folder")->required();
  again->add_flag("--submit", o.submit, "Submit it with sbatch");
  again->callback([] {
    const auto plan = experiments::read_sweep_plan(o.dir);
    const auto todo = experiments::write_resubmit_script(plan, std::cout);
    if (!todo.empty() && o.submit) submit(plan.dir / "resubmit.sbatch");
  });
}

}  // namespace ternlab::cli
