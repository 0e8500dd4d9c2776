// `ternlab run FILE.toml`: an experiment described entirely in TOML (see docs/experiments.md).
#include <iostream>

#include "cli/commands.hpp"
#include "experiments/compare.hpp"
#include "experiments/html.hpp"
#include "experiments/runner.hpp"
#include "explore/explore.hpp"

namespace ternlab::cli {

void add_run_command(CLI::App& app) {
  struct Options {
    std::string file;
    std::vector<std::string> overrides;
    std::string output, explore;
    bool dry_run = false, progress = false, no_progress = false;
  };
  static Options o;
  auto* r = app.add_subcommand("run", "Run a TOML experiment: arms interleaved in one process, verified, tabled and plotted");
  r->add_option("file", o.file, "Experiment file (configs/*.toml)")->required()->check(CLI::ExistingFile);
  r->add_option("--set", o.overrides, "Override a key: --set shape.rows=512, --set arm.threads=2, --set 'threads=[1,2]'");
  add_output_option(r, o.output, "Folder for the results folders (the config's `output` key; the same as --set output=DIR)");
  r->add_flag("--dry-run", o.dry_run, "Print the expanded plan and stop");
  r->add_option("--explore", o.explore, "A folder of `ternlab explore plan`: its candidate layouts are registered first (to rerun a round's config)")
      ->check(CLI::ExistingDirectory);
  r->add_flag("--progress", o.progress, "Draw the progress bar even when stderr is not a terminal");
  r->add_flag("--no-progress", o.no_progress, "Never draw the progress bar");
  r->callback([] {
    if (!o.explore.empty()) explore::register_planned(o.explore);
    experiments::RunOptions opt;
    opt.overrides = o.overrides;
    if (!o.output.empty()) opt.overrides.push_back("output=" + o.output);
    opt.dry_run = o.dry_run;
    opt.progress = o.no_progress ? 0 : o.progress ? 1 : -1;
    const auto outcome = experiments::run_experiment_file(o.file, opt, std::cout);
    if (outcome.exit_code) {
      std::cerr << "ternlab run: some arm failed verification against the oracle (see the table)\n";
      std::exit(outcome.exit_code);
    }
  });
}

void add_report_command(CLI::App& app) {
  struct Options {
    std::vector<std::string> dirs;
    std::string out;
    double fail_above = -1;
  };
  static Options o, merge_o;
  // The page, the shared arms side by side on the terminal, and --fail-above's verdict.
  const auto report = [](const Options& opt) {
    experiments::FolderComparison c;
    experiments::write_comparison_page(opt.dirs, opt.out, std::cout, &c);
    if (c.folders.size() > 1) std::cout << "\n" << experiments::shared_arms_markdown(c);
    if (opt.fail_above < 0) return;
    const auto slower = experiments::regressions(c, opt.fail_above);
    if (slower.empty()) {
      std::cout << "--fail-above " << opt.fail_above << ": no shared arm is slower than in " << c.folders.front() << " by more than "
                << opt.fail_above << "% beyond the runs' noise (" << c.shared.size() << " shared arms)\n";
      return;
    }
    std::cerr << "ternlab report: " << slower.size() << " regression" << (slower.size() == 1 ? "" : "s") << " beyond " << opt.fail_above
              << "% (--fail-above), outside the runs' noise:\n";
    for (const auto& line : slower) std::cerr << "  " << line << "\n";
    std::exit(1);
  };
  auto* r = app.add_subcommand("report", "Merge results folders (one machine or several) into one HTML comparison page, grouped by machine, "
                                         "with the arms they share side by side");
  r->add_option("dirs", o.dirs, "Results folders of `ternlab run`, output folders holding them, or sweep plan folders");
  add_output_option(r, o.out, "Folder for index.html, merged.json and merged.csv; an existing folder must hold only an earlier report", "--out");
  r->add_option("--fail-above", o.fail_above, "Exit 1 when a shared arm is slower than in the first folder by more than PCT percent "
                                              "and outside the runs' noise (for CI)")
      ->check(CLI::NonNegativeNumber);
  // `report merge DIR...` and `report DIR...` are the same merger; `merge` says so where a sweep's
  // points from many jobs and machines come together.
  auto* m = r->add_subcommand("merge", "The same: merge results folders and sweep plan folders (their points, failed ones as failed)");
  m->add_option("dirs", merge_o.dirs, "Results folders, folders holding them, or sweep plan folders of `ternlab sweep plan`")->required();
  add_output_option(m, merge_o.out, "Folder for index.html, merged.json and merged.csv (new, or holding an earlier report)", "--out", true);
  m->add_option("--fail-above", merge_o.fail_above, "As for report: exit 1 on a shared arm slower by more than PCT percent beyond noise")
      ->check(CLI::NonNegativeNumber);
  m->callback([report] { report(merge_o); });
  r->callback([r, report] {
    if (r->got_subcommand("merge")) return;
    if (o.dirs.empty() || o.out.empty()) throw CLI::ValidationError("report", "name the folders and -o (ternlab report DIR... -o OUT)");
    report(o);
  });
}

}  // namespace ternlab::cli
