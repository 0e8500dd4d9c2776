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
  static std::string run_dir;
  static bool no_compile_check = false;
  run->add_option("dir", run_dir, "The folder `explore plan` wrote")->required()->check(CLI::ExistingDirectory);
  run->add_flag("--no-compile-check", no_compile_check, "Do not compile each candidate's header alone (its compile seconds are then not reported)");
  run->callback([] {
    const int rc = explore::run_command(run_dir, {.compile_check = !no_compile_check}, std::cout);
    if (rc) std::exit(rc);
  });
}

}  // namespace ternlab::cli
