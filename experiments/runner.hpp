// `ternlab run`: load and validate the whole plan (every error before anything runs), print it, run
// every run into a hidden temporary folder, and rename that folder into place only at the end, so a
// failed or interrupted experiment leaves nothing half-written under the output folder.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace ternlab::experiments {

struct RunOptions {
  std::vector<std::string> overrides;  // "key=value"
  bool dry_run = false;
  int progress = -1;                   // -1: when stderr is a terminal; 0: never; 1: always
};

struct RunOutcome {
  int exit_code = 0;        // 0: all arms verified; 1: some arm failed verification
  std::string folder;       // the results folder (empty for a dry run)
  std::string markdown;     // every run's table
};

// Throws ternlab::Error (file, line, key) for bad input; writes the plan and tables to `out`.
RunOutcome run_experiment_file(const std::string& path, const RunOptions& opt, std::ostream& out);
// The same for a config the caller wrote (`ternlab bench`, `ternlab model bench`): the runner reads
// a file and copies it into the results folder as experiment.toml, so the text goes to a temporary
// file named after `stem`, removed afterwards.
RunOutcome run_experiment_text(const std::string& toml, const std::string& stem, const RunOptions& opt, std::ostream& out);

}  // namespace ternlab::experiments
