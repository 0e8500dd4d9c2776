// Sub-command registration for the `ternlab` CLI: each file adds its commands to the app.
#pragma once
#include <CLI/CLI.hpp>

#include <iostream>
#include <string>

namespace ternlab::cli {

void add_layout_commands(CLI::App& app);
void add_quickstart_command(CLI::App& app);
void add_kernel_commands(CLI::App& app);
void add_census_command(CLI::App& kernels);    // `ternlab kernels census`
void add_ceilings_command(CLI::App& kernels);  // `ternlab kernels ceilings`
void add_run_command(CLI::App& app);
void add_report_command(CLI::App& app);  // `ternlab report`, `ternlab report merge`
void add_sweep_commands(CLI::App& app);  // `ternlab sweep ...`
void add_model_commands(CLI::App& app);
void add_tokenize_command(CLI::App& app);
void add_lattice_commands(CLI::App& app);  // `ternlab lattice ...`
void add_explore_commands(CLI::App& app);  // `ternlab explore plan|run`

// For --layout / --layouts: every comma-separated value must name a registered layout; the error
// names the value and lists the layouts (a mistyped name never yields an empty table or a skip).
CLI::Validator known_layouts();

// -o/--output, every command's name for its output path. `old`, a spelling the command had before,
// is still accepted (hidden from --help) and says on stderr that it is deprecated. A required output
// is checked once the command line is parsed, so either spelling satisfies it.
template <class T>
CLI::Option* add_output_option(CLI::App* cmd, T& value, const std::string& help, const std::string& old = "",
                               bool required = false) {
  CLI::Option* out = cmd->add_option("-o,--output", value, help);
  CLI::Option* legacy = nullptr;
  if (!old.empty()) {
    legacy = cmd->add_option(old, value, "deprecated: -o/--output")->group("");
    legacy->each([old](const std::string&) { std::cerr << "ternlab: note: " << old << " is deprecated; use -o/--output\n"; });
    out->excludes(legacy);
  }
  if (required)
    cmd->parse_complete_callback([out, legacy] {
      if (out->count() == 0 && (!legacy || legacy->count() == 0)) throw CLI::RequiredError("-o/--output");
    });
  return out;
}

}  // namespace ternlab::cli
