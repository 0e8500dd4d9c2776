// HTML pages over results folders: index.html in every folder the runner writes (its summary
// tables, its plots inline, the machine record, the config and overrides), and `ternlab report`'s
// comparison page merging several folders, grouped by machine. Both are built from what the folder
// holds on disk (summary.json read through nlohmann, summary.md, the plots it lists), so a page
// shows exactly what the files say. Layout of the pages: docs/experiments.md, "HTML report".
#pragma once

#include <filesystem>
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "experiments/results.hpp"

namespace ternlab::experiments {

// summary.json's "results_version": raised whenever a field a reader relies on changes meaning.
inline constexpr int kResultsVersion = 1;

// The Markdown the runner writes (headings, pipe tables, "- " lists, paragraphs, `code`, **bold**,
// and "![alt](file)" image lines) as HTML; `image(file)` gives the HTML put where an image line was.
std::string markdown_html(std::string_view md, const std::function<std::string(const std::string&)>& image);

// An SVG document as an element to put inside HTML (its XML declaration dropped).
std::string inline_svg(std::string_view svg);

// A summary.json value as table text: a string as it is, anything else as JSON.
std::string text_of(const Json& j);

// One results folder as read back from disk.
struct ResultFolder {
  std::filesystem::path dir;
  Json summary;                                            // summary.json
  std::string markdown, config;                            // summary.md, experiment.toml
  std::vector<std::pair<std::string, std::string>> plots;  // file name, SVG text, in summary.json's order
  std::string cpu() const;                                 // summary.json machine.cpu
};

// Throws ternlab::Error naming the file and the field: no summary.json, a summary.json from another
// results version, a missing machine record or plot list, a plot file it lists but the folder lacks.
ResultFolder read_result_folder(const std::filesystem::path& dir);

// The result folders under each argument: the folder itself when it holds summary.json, else its
// visible subfolders that do (a runner's output folder). An argument with neither is an error.
std::vector<ResultFolder> collect_result_folders(const std::vector<std::string>& dirs);

// The page of one folder (index.html).
std::string results_page(const ResultFolder& r);
// The comparison page: `sweep_html` (a merged sweep's point table and plots, holding
// `sweep_plots` plots) first, then machines in order of first appearance, each with its folders.
// `side_by_side` (the arms the folders share, experiments/compare.hpp) goes right after the folder list.
std::string comparison_page(const std::vector<ResultFolder>& folders, const std::string& sweep_html = "", std::size_t sweep_plots = 0,
                            const std::string& side_by_side = "");
// Folders grouped by machine: machine.cpu and machine.features, in order of first appearance (what
// comparison_page draws).
std::vector<std::pair<std::string, std::vector<const ResultFolder*>>> group_by_machine(const std::vector<ResultFolder>& folders);

// Writes index.html into `dir` (through a temporary file and a rename).
void write_results_page(const std::filesystem::path& dir);
struct FolderComparison;
// `ternlab report [merge] DIR... --out OUT`: writes OUT/index.html with the arms the folders share side
// by side, and OUT/merged.json and OUT/merged.csv (a sweep's: one row per point and arm; otherwise one
// row per folder and arm); refuses an OUT that exists and holds anything but an earlier report.
// Returns the page's path; `comparison`, when given, receives the side-by-side comparison.
std::filesystem::path write_comparison_page(const std::vector<std::string>& dirs, const std::filesystem::path& out,
                                            std::ostream& log, FolderComparison* comparison = nullptr);

}  // namespace ternlab::experiments
