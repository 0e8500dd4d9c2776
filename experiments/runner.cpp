#include "experiments/runner.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <set>

#include "common/error.hpp"
#include "common/files.hpp"
#include "common/strings.hpp"
#include "experiments/measure.hpp"
#include "experiments/report.hpp"
#include "experiments/results.hpp"
#include "experiments/arms.hpp"
#include "experiments/config.hpp"
#include "experiments/html.hpp"
#include "experiments/kinds.hpp"
#include "experiments/run_context.hpp"

namespace ternlab::experiments {

namespace fs = std::filesystem;

namespace {

std::string utc_stamp() {
  const std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", std::gmtime(&now));
  return buf;
}

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary);
  f << text;
  f.close();
  if (!f) fail("cannot write ", p.string());
}

std::string run_prefix(const RunSpec& r, std::size_t runs) {
  if (runs == 1) return "";
  char buf[16];
  std::snprintf(buf, sizeof buf, "run%02d-", r.index + 1);
  return buf;
}

// Removes the temporary folder unless released (on success it has been renamed away).
struct TempFolder {
  fs::path path;
  bool keep = false;
  ~TempFolder() {
    if (keep || path.empty()) return;
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// A run killed before its rename (SIGKILL, the out-of-memory killer, a power cut) leaves its hidden
// temporary folder behind. The next run of the same name into the same output removes each one whose
// owner file names a process of this host that is gone; any other (a run in progress, or one from
// another host sharing the folder) is only reported.
void clean_stale_partials(const fs::path& output, const std::string& name, std::ostream& out) {
  const std::string prefix = "." + name + "-";
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(output, ec)) {
    const std::string file = e.path().filename().string();
    if (!e.is_directory() || !file.starts_with(prefix) || !file.ends_with(".partial")) continue;
    std::string host;
    long pid = 0;
    std::ifstream(e.path() / "owner") >> host >> pid;
    const bool gone = process_gone(host, pid);
    if (gone) {
      std::error_code rm;
      fs::remove_all(e.path(), rm);
      out << "removed " << e.path().string() << ": the temporary folder of an interrupted run (process " << pid << " is gone)\n";
    } else {
      out << "note: " << e.path().string() << " is another run's temporary folder ("
          << (host.empty() ? "no owner recorded" : "process " + std::to_string(pid) + " on " + host)
          << "); if no run is writing there, it is left from an interrupted run and can be removed\n";
    }
  }
}

// A sweep's plot (sweep.svg): the swept variable on the x axis, one line per arm through its
// speedup against its baseline at each sweep point. Returns the plot files written (none for a
// single run or runs without ratios).
Json sweep_plot(const Json& runs, const fs::path& folder, std::string& md) {
  Json files = Json::array();
  if (runs.size() < 2) return files;
  const auto text = [](const Json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<std::string> columns, keys;
  std::vector<SweepSeries> series;
  for (std::size_t c = 0; c < runs.size(); ++c) {
    const Json& run = runs[c];
    const Json* sweep = run.contains("sweep") ? &run["sweep"] : nullptr;
    for (const auto& [k, v] : run.items())
      if (!sweep && v.is_object() && v.contains("arms") && v.contains("sweep")) sweep = &v["sweep"];
    std::vector<std::string> parts;
    if (sweep)
      for (const auto& [k, v] : sweep->items()) {
        parts.push_back(k + "=" + text(v));
        if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
      }
    columns.push_back(parts.empty() ? cat("run ", c + 1) : join(parts, ", "));
    for (const ArmSpeedup& a : arm_speedups(run)) {
      if (!a.valid) continue;
      auto it = std::find_if(series.begin(), series.end(), [&](const SweepSeries& x) { return x.name == a.name; });
      if (it == series.end())
        it = series.insert(series.end(), SweepSeries{a.name, std::vector<double>(runs.size(), nan), std::vector<double>(runs.size(), nan),
                                                     std::vector<double>(runs.size(), nan)});
      it->median[c] = a.median;
      it->min[c] = a.min;
      it->max[c] = a.max;
    }
  }
  if (series.empty()) return files;
  write_file(folder / "sweep.svg",
             svg_sweep("speedup against the baseline across the sweep", keys.empty() ? "run" : join(keys) + " (swept)",
                       "× vs baseline (median of per-round ratios; whisker min–max)", columns, series, 1.0));
  files.push_back("sweep.svg");
  md += "## Sweep\n\nEach arm's speedup against its baseline (median of per-round ratios) at each point of the sweep.\n\n"
        "![sweep.svg](sweep.svg)\n\n";
  return files;
}

}  // namespace

namespace {
RunOutcome run_plan(const std::string& path, const RunOptions& opt, std::ostream& out);
}  // namespace

RunOutcome run_experiment_file(const std::string& path, const RunOptions& opt, std::ostream& out) {
  try {
    return run_plan(path, opt, out);
  } catch (const fs::filesystem_error& e) {
    fail(path, ": ", e.what());  // e.g. the disk filled up while writing results
  }
}

namespace {

RunOutcome run_plan(const std::string& path, const RunOptions& opt, std::ostream& out) {
  const Plan plan = load_plan(path, opt.overrides);
  out << describe(plan);
  RunOutcome outcome;
  if (opt.dry_run) return outcome;

  const RunSpec& first = plan.runs.front();
  const Located out_at = first.at("output");
  const fs::path output = first.string("output", "results");
  const std::string name = first.string("name", fs::path(path).stem().string());
  const std::string stamp = utc_stamp();
  TempFolder temp;
  {
    std::error_code ec;
    fs::create_directories(output, ec);
    if (ec) fail(out_at ? out_at.where() : path + ": key 'output'", ": cannot create the output folder '", output.string(), "': ", ec.message());
    clean_stale_partials(output, name, out);
    temp.path = output / ("." + name + "-" + stamp + ".partial");
    fs::create_directories(temp.path, ec);
    std::ofstream(temp.path / "owner") << host_name() << " " << getpid() << "\n";
    std::ofstream probe(temp.path / "plan.txt");
    probe << describe(plan);
    probe.close();
    if (ec || !probe)
      fail(out_at ? out_at.where() : path + ": key 'output'", ": the output folder '", output.string(), "' is not writable",
           ec ? ": " + ec.message() : std::string());
  }
  fs::copy_file(path, temp.path / "experiment.toml", fs::copy_options::overwrite_existing);

  const Machine machine = this_machine();
  out << "\n" << machine_markdown(machine);
  std::int64_t units = 0;
  for (const RunSpec& r : plan.runs) {
    const KindInfo& kind = find_kind(r.kind, r.at("kind"));
    units += kind.units ? kind.units(r) : 1;
  }
  Progress progress(units, opt.progress < 0 ? isatty(STDERR_FILENO) == 1 : opt.progress == 1);
  Pools pools(key::pin(first));
  RunContext ctx{pools, progress, out};

  std::string md = "# " + name + "\n\n" + machine_markdown(machine) + "\nexperiment: `" + path + "`";
  for (const std::string& o : opt.overrides) md += " `--set " + o + "`";
  md += "\n\n";
  Json json = {{"results_version", kResultsVersion}, {"name", name}, {"file", path}, {"overrides", opt.overrides}, {"machine", machine_json(machine)}, {"runs", Json::array()}};
  std::vector<std::pair<int, NoiseWarning>> all_warnings;
  std::set<std::string> written;  // the files a reader finds, named once each in the last line
  for (const RunSpec& r : plan.runs) {
    const KindInfo& kind = find_kind(r.kind, r.at("kind"));
    out << "\nrun " << r.index + 1 << "/" << plan.runs.size() << ": " << r.name() << "\n" << std::flush;
    RunReport rep = kind.run(r, ctx);
    progress.finish();
    const std::string prefix = run_prefix(r, plan.runs.size());
    write_file(temp.path / (prefix + rep.rows.file), csv_text(rep.rows));
    written.insert(rep.rows.file);
    std::string plots;
    Json plot_files = Json::array();
    for (const auto& [suffix, svg] : rep.svgs) {
      write_file(temp.path / (prefix + suffix), svg);
      plots += "![" + suffix + "](" + prefix + suffix + ")\n";
      plot_files.push_back(prefix + suffix);
      written.insert("plots");
    }
    const std::string noise = warnings_markdown(rep.warnings);
    out << "\n" << rep.markdown << noise;
    for (const auto& [suffix, svg] : rep.svgs) out << "plot: " << prefix << suffix << "\n";
    md += rep.markdown + noise + "\n" + plots + "\n";
    // Every kind's object ends the same way: the plot files it drew, then its warnings.
    rep.json["plots"] = std::move(plot_files);
    rep.json["warnings"] = warnings_json(rep.warnings);
    json["runs"].push_back(std::move(rep.json));
    for (const NoiseWarning& w : rep.warnings) all_warnings.emplace_back(r.index, w);
    if (!rep.ok) outcome.exit_code = 1;
  }
  json["plots"] = sweep_plot(json["runs"], temp.path, md);
  if (!json["plots"].empty()) written.insert("plots");
  // Every run's warnings again at the end, where a reader of the summary looks first.
  json["warnings"] = Json::array();
  std::string noise_md;
  for (const auto& [run, w] : all_warnings) {
    json["warnings"].push_back(Json{{"run", run}, {"check", w.check}, {"arm", w.arm}, {"text", w.text}});
    noise_md += cat("- warning", plan.runs.size() > 1 ? cat(" (run ", run + 1, ")") : "", ": ", w.text, "\n");
  }
  if (!all_warnings.empty()) {
    const std::string head = cat("## Noise warnings\n\n", all_warnings.size(), " warning", all_warnings.size() == 1 ? "" : "s",
                                 " (thresholds in docs/experiments.md, \"Noise\"):\n\n");
    md += head + noise_md;
    out << "\n" << head << noise_md;
  }
  write_file(temp.path / "summary.md", md);
  write_file(temp.path / "summary.json", json_text(json));
  write_results_page(temp.path);  // read back from the files just written, so the page shows what they say

  fs::remove(temp.path / "owner");  // only a temporary folder has an owner
  fs::path final_path = output / (name + "-" + stamp);
  for (int i = 2; fs::exists(final_path); ++i) final_path = output / (name + "-" + stamp + "-" + std::to_string(i));
  fs::rename(temp.path, final_path);
  temp.keep = true;
  outcome.folder = final_path.string();
  outcome.markdown = md;
  out << "\nresults: " << outcome.folder << "/ (index.html, summary.md, summary.json, " << join(written) << ")\n";
  return outcome;
}

}  // namespace

RunOutcome run_experiment_text(const std::string& toml, const std::string& stem, const RunOptions& opt, std::ostream& out) {
  const std::filesystem::path file = std::filesystem::temp_directory_path() / cat("ternlab-", stem, "-", getpid(), ".toml");
  write_file_atomically(file, toml);
  struct Remove {
    std::filesystem::path p;
    ~Remove() {
      std::error_code ec;
      std::filesystem::remove(p, ec);
    }
  } remove{file};
  return run_experiment_file(file.string(), opt, out);
}

}  // namespace ternlab::experiments

