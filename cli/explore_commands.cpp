// `ternlab explore plan SPACE -o DIR` and `ternlab explore run DIR`: layout search over a TOML
// space (explore/explore.hpp, docs/explore.md).
#include <iostream>
#include <string>

#include "cli/commands.hpp"
#include "explore/explore.hpp"

namespace ternlab::cli {

void add_explore_commands(CLI::App& app) {
  auto* explore = app.add_subcommand("explore", "Layout search: enumerate a TOML space of layouts, then measure the candidates by successive halving");
  explore->require_subcommand(1);

  auto* plan = explore->add_subcommand("plan", "Enumerate a space's candidates (every refused combination listed with its rule), write their headers and the run's estimate into a new folder");
  static std::string space, plan_dir;
  static bool no_configure = false;
  plan->add_option("space", space, "The space (TOML; docs/explore.md)")->required()->check(CLI::ExistingFile);
  add_output_option(plan, plan_dir, "The folder to create (must not exist, or be empty)", "", true);
  plan->add_flag("--no-configure", no_configure, "Do not configure the build folder DIR/build (cmake) for the candidates' headers");
  plan->callback([] { explore::plan_command(space, plan_dir, {.configure = !no_configure}, std::cout); });

  auto* run = explore->add_subcommand("run", "Measure a planned space: compile check, then gemv, longer gemv and gemm rounds, each keeping the better candidates; writes explore.json and index.html");
  static std::string run_dir, run_out;
  static bool no_compile_check = false;
  run->add_option("dir", run_dir, "The folder `explore plan` wrote")->required()->check(CLI::ExistingDirectory);
  run->add_flag("--no-compile-check", no_compile_check, "Do not compile each candidate's header alone (its compile seconds are then not reported)");
  run->add_option("--out", run_out, "The run's own folder, inside DIR (a machine's, on a cluster: DIR/machines/NAME); default DIR");
  run->callback([] {
    const int rc = explore::run_command(run_dir, {.compile_check = !no_compile_check, .out = run_out}, std::cout);
    if (rc) std::exit(rc);
  });

  auto* slurm = explore->add_subcommand("slurm", "Write DIR/explore.sbatch: a Slurm job running the plan on the node it gets, into DIR/machines/; submit it once per CPU model");
  static std::string slurm_dir;
  static explore::SlurmJob job;
  slurm->add_option("dir", slurm_dir, "The folder `explore plan` wrote")->required()->check(CLI::ExistingDirectory);
  slurm->add_option("--partition", job.partition, "Slurm partition (default: the cluster's)");
  slurm->add_option("--time", job.time, "Time limit of the job")->capture_default_str();
  slurm->add_option("--constraint", job.constraint, "Node features (e.g. zen4); usually given to sbatch per CPU model instead");
  slurm->add_option("--cpus-per-task", job.cpus_per_task, "CPUs of the job (default: the space's largest thread count)");
  slurm->add_option("--sbatch", job.extra, "One more #SBATCH line, verbatim (e.g. --sbatch=--mem=16G)");
  slurm->add_option("--ternlab", job.ternlab, "The ternlab binary the job runs (default: this one)");
  static bool shared = false;
  slurm->add_flag("--shared", shared, "Do not ask for the node alone (--exclusive); a benchmark sharing its node measures its neighbours too");
  slurm->callback([] {
    job.exclusive = !shared;
    explore::slurm_command(slurm_dir, job, std::cout);
  });

  auto* report = explore->add_subcommand("report", "Each machine's run of a plan side by side: every round's best candidate against the best hand-designed layout (DIR/machines.html)");
  static std::string report_dir;
  report->add_option("dir", report_dir, "The folder `explore plan` wrote")->required()->check(CLI::ExistingDirectory);
  report->callback([] { explore::report_command(report_dir, std::cout); });
}

}  // namespace ternlab::cli
