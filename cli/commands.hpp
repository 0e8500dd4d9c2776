// Sub-command registration for the `ternlab` CLI: each file adds its commands to the app.
#pragma once
#include <CLI/CLI.hpp>

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

}  // namespace ternlab::cli
