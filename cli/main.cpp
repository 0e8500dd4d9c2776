// ternlab: a workbench for the bit layouts of ternary LLM weights.
#include <algorithm>
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
  ternlab::cli::add_explore_commands(app);
  // A word where a command is expected that names none: said with the commands there are (CLI11
  // would say only that a subcommand is required, or that an argument was not expected).
  const auto command_names = [](const CLI::App* at) {
    std::string names;
    for (const CLI::App* s : at->get_subcommands([](const CLI::App*) { return true; })) names += (names.empty() ? "" : ", ") + s->get_name();
    return names;
  };
  if (argc == 1) {
    std::cerr << "ternlab: error: name a command (" << command_names(&app) << "); 'ternlab --help' says what each does\n";
    return 2;
  }
  const CLI::App* level = &app;
  std::string path = "ternlab";
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word.empty() || word[0] == '-') break;
    const auto subs = level->get_subcommands([](const CLI::App*) { return true; });
    const auto it = std::find_if(subs.begin(), subs.end(), [&](const CLI::App* s) { return s->check_name(word); });
    if (it != subs.end()) {
      level = *it;
      path += " " + word;
      continue;
    }
    if (level->get_require_subcommand_min() == 0) break;
    std::cerr << "ternlab: error: unknown command '" << word << "' after '" << path << "' (commands: " << command_names(level) << ")\n";
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help is not an error: CLI11 prints it and exits 0. Everything else is a bad command line,
    // said the way every other error is, with exit status 2.
    if (e.get_exit_code() == 0) return app.exit(e);
    std::cerr << "ternlab: error: " << e.what() << " (run '" << path << " --help' for the options)\n";
    return 2;
  } catch (const ternlab::Error& e) {
    std::cerr << "ternlab: error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
