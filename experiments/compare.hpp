// `ternlab report A B ...`: the arms the folders share, side by side. An arm is the same arm in two
// folders when its run, its test (a speed run's prefill or decode) and its name agree; its time is
// summary.json's seconds per call. The first folder is the reference: every other folder's time is
// a ratio to it (> 1: faster), flagged as within noise where the two folders' per-round ranges
// overlap, and `--fail-above PCT` turns a slowdown beyond PCT percent that is not within noise into
// a failing exit status (for CI).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "experiments/html.hpp"
#include "experiments/measure.hpp"
#include "experiments/results.hpp"

namespace ternlab::experiments {

struct SharedArm {
  std::string run, test, arm;
  std::vector<std::optional<Stat>> seconds;  // per folder, in the folders' order (empty: not in it)
  // Per folder: time in the first folder / time here (the first folder: 1), and whether the two
  // per-round ranges [min, max] overlap. Only where both folders hold the arm.
  std::vector<std::optional<double>> ratio;
  std::vector<bool> within_noise;
};

struct FolderComparison {
  std::vector<std::string> folders;  // folder names, the reference first
  std::vector<SharedArm> shared;     // arms in at least two folders, one of them the first
  Rows rows;                         // merged.csv: every arm of every folder
  Json json;                         // merged.json: the same, and the shared arms with their ratios
};

FolderComparison compare_folders(const std::vector<ResultFolder>& folders);

// The side-by-side table as HTML (a section for the comparison page) and as Markdown (for a terminal).
std::string shared_arms_html(const FolderComparison& c);
std::string shared_arms_markdown(const FolderComparison& c);

// Arms slower than in the first folder by more than `percent` percent and not within noise, one
// line each ("run / test / arm: folder F 1.23x slower (...)").
std::vector<std::string> regressions(const FolderComparison& c, double percent);

}  // namespace ternlab::experiments
