// ternlab: a workbench for the bit layouts of ternary LLM weights.
#include <cstdio>
#include <iostream>

#include "cli/commands.hpp"
#include "common/error.hpp"
#include "kernels/cpu.hpp"
#include "ternlab_git.hpp"  // generated at build time (cmake/git_version.cmake)

int main(int argc, char** argv) {
  CLI::App app{"ternlab: a workbench for the bit layouts of ternary LLM weights", "ternlab"};
  app.require_subcommand(1);
  app.add_subcommand("version", "Print the version, git commit, compiler and CPU")->callback([] {
    std::cout << "ternlab " << TERNLAB_VERSION << " (git " << (TERNLAB_GIT[0] ? TERNLAB_GIT : "unknown") << ", "
              << TERNLAB_CXX << ")\n"
              << "cpu: " << ternlab::cpu_description() << "; " << ternlab::feature_string() << "\n";
  });
  ternlab::cli::add_layout_commands(app);
  ternlab::cli::add_quickstart_command(app);
  ternlab::cli::add_kernel_commands(app);
  ternlab::cli::add_run_command(app);
  ternlab::cli::add_report_command(app);
  ternlab::cli::add_sweep_commands(app);
  ternlab::cli::add_model_commands(app);
  ternlab::cli::add_tokenize_command(app);
  ternlab::cli::add_lattice_commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const ternlab::Error& e) {
    std::cerr << "ternlab: error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
