#include "experiments/sweep_plan.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>
#include <ostream>
#include <sstream>

#include "common/error.hpp"
#include "common/files.hpp"
#include "common/strings.hpp"
#include "common/xml.hpp"
#include "experiments/config.hpp"
#include "experiments/report.hpp"
#include "experiments/runner.hpp"

namespace ternlab::experiments {

namespace fs = std::filesystem;

namespace {

constexpr const char* kManifest = "sweep-plan.json";
constexpr const char* kGenerator = "ternlab sweep plan";

Json read_json(const fs::path& p) {
  try {
    return Json::parse(read_text(p));
  } catch (const nlohmann::json::parse_error& e) {
    fail(p.string(), ": not valid JSON: ", e.what());
  }
}

const Json& field(const Json& j, const std::string& key, const fs::path& file) {
  if (!j.is_object() || !j.contains(key)) fail(file.string(), ": no field '", key, "'");
  return j[key];
}

// A word for a POSIX shell, single-quoted unless it needs no quotes.
std::string shell_word(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+") == std::string::npos)
    return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string toml_string(const std::string& s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') q += '\\';
    q += c;
  }
  return q + "\"";
}

std::string point_name(int index) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%03d", index);
  return buf;
}

std::string sweep_label(const Json& sweep) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : sweep.items()) parts.push_back(k + "=" + text_of(v));
  return join(parts, " ");
}

// One `#SBATCH` value from the command line: a newline would end the directive and start a command.
void check_option(const std::string& value, const std::string& option) {
  if (value.find_first_of("\r\n") != std::string::npos) fail(option, ": a value with a line break (", value, ")");
}

// The largest thread count a run or arm of the plan asks for: what one task must be given. Sweeps
// are expanded by now, so every value is one integer.
int plan_threads(const Plan& plan) {
  std::int64_t most = 1;
  for (const RunSpec& r : plan.runs) {
    if (const auto it = r.params.find("threads"); it != r.params.end()) most = std::max(most, as_integer(it->second, 1, 1 << 20));
    for (const ArmSpec& a : r.arms)
      if (const auto it = a.keys.find("threads"); it != a.keys.end()) most = std::max(most, as_integer(it->second, 1, 1 << 20));
  }
  return int(most);
}

Json slurm_json(const SlurmOptions& s, const std::string& ternlab) {
  return Json{{"partition", s.partition}, {"time", s.time},           {"cpus_per_task", s.cpus_per_task}, {"exclusive", s.exclusive},
              {"constraint", s.constraint}, {"extra", s.extra}, {"ternlab", ternlab}};
}

std::string this_executable() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("ternlab") : self.string();
}

Json point_json(const SweepPoint& p) {
  return Json{{"index", p.index}, {"sweep", p.sweep}, {"overrides", p.overrides}};
}

// The job of one point as a command line, relative to the plan folder.
std::string point_command(const SweepPlan& plan, const SweepPoint& p) {
  std::string s = "ternlab run " + shell_word(plan.config);
  for (const std::string& o : p.overrides) s += " --set " + shell_word(o);
  return s + " --set " + shell_word("output=points/" + point_name(p.index));
}

void write_plan_files(const SweepPlan& plan) {
  Json points = Json::array();
  for (const SweepPoint& p : plan.points) points.push_back(point_json(p));
  const Json manifest = {{"generator", kGenerator},     {"sweep_plan_version", kSweepPlanVersion}, {"results_version", kResultsVersion},
                         {"name", plan.name},           {"kind", plan.kind},                       {"config", plan.config},
                         {"source", plan.source},       {"overrides", plan.overrides},             {"points", points},
                         {"slurm", plan.slurm}};
  for (const SweepPoint& p : plan.points) {
    const fs::path d = plan.point_dir(p.index);
    fs::create_directories(d);
    Json job = point_json(p);
    job["config"] = plan.config;
    job["command"] = point_command(plan, p);
    write_file_atomically(d / "job.json", json_text(job));
  }
  fs::create_directories(plan.dir / "logs");
  std::vector<int> all;
  for (const SweepPoint& p : plan.points) all.push_back(p.index);
  write_file_atomically(plan.dir / "sweep.sbatch", slurm_script(plan, all));
  write_file_atomically(plan.dir / kManifest, json_text(manifest));  // last: a folder with a manifest is a whole plan
}

// The array ranges of sorted indices: "0-7", "1,3,5-6".
std::string array_ranges(const std::vector<int>& indices) {
  std::vector<std::string> parts;
  for (std::size_t i = 0; i < indices.size();) {
    std::size_t j = i;
    while (j + 1 < indices.size() && indices[j + 1] == indices[j] + 1) ++j;
    parts.push_back(j == i ? std::to_string(indices[i]) : cat(indices[i], "-", indices[j]));
    i = j + 1;
  }
  return join(parts, ",");
}

void write_exit(const fs::path& pdir, int index, int code, const std::string& message, const fs::path& results) {
  Json j = {{"index", index},
            {"exit_code", code},
            {"status", code == 0 ? "done" : "failed"},
            {"message", message},
            {"results", results.empty() ? std::string() : results.filename().string()},
            {"hostname", host_name()},
            {"finished_utc", utc_now()}};
  for (const char* v : {"SLURM_JOB_ID", "SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID", "SLURM_JOB_NODELIST"})
    if (const char* s = std::getenv(v)) j[v] = s;
  write_file_atomically(pdir / "exit.json", json_text(j));
}

}  // namespace

fs::path SweepPlan::point_dir(int index) const { return dir / "points" / point_name(index); }

const char* state_name(PointState s) {
  switch (s) {
    case PointState::done: return "done";
    case PointState::failed: return "failed";
    case PointState::incomplete: return "incomplete";
    case PointState::missing: return "missing";
  }
  return "?";
}

bool is_sweep_folder(const fs::path& dir) { return fs::is_regular_file(dir / kManifest); }

SweepPlan write_sweep_plan(const std::string& config, const std::vector<std::string>& overrides, const fs::path& out,
                           const SlurmOptions& slurm, std::ostream& log) {
  const Plan plan = load_plan(config, overrides);  // every error `ternlab run` would give, first
  if (plan.runs.size() < 2)
    fail(config, ": no sweep: every key holds one value, so the plan is one run (give a key at the top level or in [shape] "
         "an array, e.g. --set 'threads=[1,2]', or run it with `ternlab run ", config, "`)");
  for (const auto& [value, option] : {std::pair{slurm.partition, "--partition"}, {slurm.time, "--time"}, {slurm.constraint, "--constraint"},
                                      {slurm.ternlab, "--ternlab"}})
    check_option(value, option);
  for (const std::string& e : slurm.extra) check_option(e, "--sbatch");
  if (slurm.time.empty()) fail("--time: empty (Slurm's forms: MM, HH:MM:SS, D-HH)");

  const RunSpec& first = plan.runs.front();
  SweepPlan sp;
  sp.dir = fs::absolute(out).lexically_normal();
  sp.name = first.string("name", fs::path(config).stem().string());
  sp.kind = first.kind;
  sp.config = fs::path(config).filename().string();
  sp.source = config;
  sp.overrides = overrides;
  for (const RunSpec& r : plan.runs) {
    SweepPoint p;
    p.index = r.index;
    p.sweep = sweep_json(r);
    p.overrides = overrides;
    for (const auto& [key, value] : r.sweep_point) p.overrides.push_back(key + "=" + value_text(*r.params.at(key).node));
    sp.points.push_back(std::move(p));
  }
  SlurmOptions s = slurm;
  if (s.cpus_per_task <= 0) s.cpus_per_task = plan_threads(plan);
  sp.slurm = slurm_json(s, s.ternlab.empty() ? this_executable() : s.ternlab);

  const std::string text = read_text(config);
  if (fs::exists(sp.dir)) {
    if (!fs::is_directory(sp.dir)) fail(out.string(), ": -o/--output names a file, not a folder");
    if (is_sweep_folder(sp.dir)) {
      const SweepPlan old = read_sweep_plan(sp.dir);
      const fs::path old_config = sp.dir / old.config;
      const std::string old_text = fs::is_regular_file(old_config) ? read_text(old_config) : std::string();
      if (old.config != sp.config || old_text != text)
        fail(out.string(), ": holds a different plan: its config ", old_config.string(), " is not the text of ", config,
             " (choose another -o/--output, or remove the folder to replace that plan and its results)");
      if (old.overrides != sp.overrides)
        fail(out.string(), ": holds a different plan: its overrides are [", join(old.overrides), "], these are [", join(sp.overrides),
             "] (choose another -o/--output, or remove the folder to replace that plan and its results)");
      log << "sweep plan: " << sp.dir.string() << " already holds this plan; its points' results are kept\n";
    } else if (!fs::is_empty(sp.dir)) {
      fail(out.string(), ": -o/--output names a folder that holds other files than a sweep plan; refusing to write there");
    }
  }
  std::error_code ec;
  fs::create_directories(sp.dir, ec);
  if (ec) fail(out.string(), ": cannot create the -o/--output folder: ", ec.message());
  write_file_atomically(sp.dir / sp.config, text);
  write_plan_files(sp);
  log << "sweep plan: " << sp.points.size() << " points of " << config << " (" << sp.kind << ") in " << sp.dir.string() << "\n";
  for (const SweepPoint& p : sp.points) log << "  " << point_name(p.index) << "  " << sweep_label(p.sweep) << "\n";
  log << "slurm: sbatch " << shell_word((sp.dir / "sweep.sbatch").string()) << "\nlocal: ternlab sweep run " << shell_word(sp.dir.string())
      << "\n";
  return sp;
}

SweepPlan read_sweep_plan(const fs::path& dir) {
  const fs::path file = dir / kManifest;
  if (!fs::is_regular_file(file)) fail(dir.string(), ": no ", kManifest, " (not a folder written by `ternlab sweep plan`)");
  const Json j = read_json(file);
  const Json& version = field(j, "sweep_plan_version", file);
  if (!version.is_number_integer() || version.get<int>() != kSweepPlanVersion)
    fail(file.string(), ": field 'sweep_plan_version' is ", version.dump(), "; this ternlab reads sweep plan version ", kSweepPlanVersion,
         " (write the plan again with this build)");
  const Json& rv = field(j, "results_version", file);
  if (!rv.is_number_integer() || rv.get<int>() != kResultsVersion)
    fail(file.string(), ": field 'results_version' is ", rv.dump(), "; this ternlab reads results version ", kResultsVersion);
  SweepPlan sp;
  sp.dir = dir;
  try {
    sp.name = field(j, "name", file).get<std::string>();
    sp.kind = field(j, "kind", file).get<std::string>();
    sp.config = field(j, "config", file).get<std::string>();
    sp.source = field(j, "source", file).get<std::string>();
    sp.overrides = field(j, "overrides", file).get<std::vector<std::string>>();
    sp.slurm = field(j, "slurm", file);
    for (const Json& p : field(j, "points", file)) {
      SweepPoint pt;
      pt.index = field(p, "index", file).get<int>();
      pt.sweep = field(p, "sweep", file);
      pt.overrides = field(p, "overrides", file).get<std::vector<std::string>>();
      if (pt.index != int(sp.points.size())) fail(file.string(), ": field 'points': point ", sp.points.size(), " has index ", pt.index);
      sp.points.push_back(std::move(pt));
    }
  } catch (const nlohmann::json::exception& e) {
    fail(file.string(), ": a field of the wrong type: ", e.what());
  }
  if (sp.config.empty() || sp.config.find('/') != std::string::npos) fail(file.string(), ": field 'config' is not a file of this folder");
  return sp;
}

std::string slurm_script(const SweepPlan& plan, const std::vector<int>& indices) {
  const Json& s = plan.slurm;
  std::ostringstream o;
  o << "#!/bin/bash\n# Written by `ternlab sweep plan`: one array task per sweep point of " << plan.name << " ("
    << (plan.dir / kManifest).string() << ").\n# Submit: sbatch " << shell_word((plan.dir / "sweep.sbatch").string())
    << "; check: ternlab sweep status " << shell_word(plan.dir.string()) << "\n";
  o << "#SBATCH --job-name=ternlab-" << plan.name << "\n#SBATCH --array=" << array_ranges(indices) << "\n";
  o << "#SBATCH --output=" << (plan.dir / "logs" / "point-%a.log").string() << "\n";
  o << "#SBATCH --time=" << s.value("time", "01:00:00") << "\n#SBATCH --cpus-per-task=" << s.value("cpus_per_task", 1) << "\n";
  if (s.value("exclusive", true)) o << "#SBATCH --exclusive\n";
  if (const std::string p = s.value("partition", ""); !p.empty()) o << "#SBATCH --partition=" << p << "\n";
  if (const std::string c = s.value("constraint", ""); !c.empty()) o << "#SBATCH --constraint=" << c << "\n";
  if (s.contains("extra"))
    for (const Json& e : s["extra"]) o << "#SBATCH " << text_of(e) << "\n";
  o << "set -eu\nexec " << shell_word(s.value("ternlab", "ternlab")) << " sweep run-one " << shell_word(plan.dir.string())
    << " --index \"$SLURM_ARRAY_TASK_ID\"\n";
  return o.str();
}

int run_sweep_point(const fs::path& dir, int index, std::ostream& out) {
  const SweepPlan plan = read_sweep_plan(dir);
  if (index < 0 || index >= int(plan.points.size()))
    fail(dir.string(), ": --index ", index, ": the plan has points 0 to ", plan.points.size() - 1);
  const SweepPoint& p = plan.points[std::size_t(index)];
  const fs::path pdir = plan.point_dir(index);
  fs::create_directories(pdir);
  // A rerun replaces the point's earlier attempt: its exit status first, so a rerun that dies
  // half-way reads as incomplete, never as the earlier result.
  fs::remove(pdir / "exit.json");
  std::vector<fs::path> earlier;
  for (const auto& e : fs::directory_iterator(pdir))
    if (e.is_directory() && !e.path().filename().string().starts_with(".")) earlier.push_back(e.path());
  for (const fs::path& e : earlier) fs::remove_all(e);
  write_file_atomically(pdir / "started.json",
                        json_text(Json{{"hostname", host_name()}, {"pid", long(getpid())}, {"started_utc", utc_now()}}));
  out << "sweep point " << point_name(index) << " of " << plan.points.size() << ": " << sweep_label(p.sweep) << "\n" << std::flush;
  RunOptions opt;
  opt.overrides = p.overrides;
  opt.overrides.push_back("output=" + toml_string(pdir.string()));
  opt.progress = 0;
  int code = 0;
  std::string message;
  fs::path results;
  try {
    const RunOutcome o = run_experiment_file((plan.dir / plan.config).string(), opt, out);
    code = o.exit_code;
    results = o.folder;
    if (code) message = "an arm failed verification (see its table)";
  } catch (const std::exception& e) {  // ternlab::Error, or the library's own (bad_alloc)
    code = 2;
    message = e.what();
  }
  write_exit(pdir, index, code, message, results);
  out << "sweep point " << point_name(index) << ": " << (code == 0 ? "done" : "failed") << (message.empty() ? "" : ": " + message) << "\n";
  return code;
}

int run_sweep(const fs::path& dir, std::ostream& out) {
  const SweepPlan plan = read_sweep_plan(dir);
  int failed = 0, ran = 0;
  for (const PointStatus& s : sweep_status(plan)) {
    if (s.state == PointState::done) {
      out << "sweep point " << point_name(s.index) << ": done already\n";
      continue;
    }
    ++ran;
    if (run_sweep_point(dir, s.index, out) != 0) ++failed;
  }
  out << "sweep: ran " << ran << " point" << (ran == 1 ? "" : "s") << ", " << failed << " failed\n";
  return failed ? 1 : 0;
}

std::vector<PointStatus> sweep_status(const SweepPlan& plan) {
  std::vector<PointStatus> out;
  for (const SweepPoint& p : plan.points) {
    PointStatus s;
    s.index = p.index;
    const fs::path pdir = plan.point_dir(p.index);
    const fs::path exit = pdir / "exit.json";
    if (fs::is_regular_file(exit)) {
      const Json j = read_json(exit);
      const Json& code = field(j, "exit_code", exit);
      if (!code.is_number_integer()) fail(exit.string(), ": field 'exit_code' is not an integer");
      s.exit_code = code.get<int>();
      s.state = s.exit_code == 0 ? PointState::done : PointState::failed;
      s.message = j.value("message", "");
      s.hostname = j.value("hostname", "");
      const std::string r = j.value("results", "");
      if (!r.empty()) {
        if (r.find('/') != std::string::npos || r.starts_with(".")) fail(exit.string(), ": field 'results' names ", r, ", not a folder of ", pdir.string());
        if (!fs::is_directory(pdir / r)) fail(exit.string(), ": field 'results' names ", r, ", which ", pdir.string(), " lacks");
        s.results = pdir / r;
      }
      if (s.state == PointState::done && s.results.empty()) fail(exit.string(), ": exit code 0 with no results folder");
    } else if (fs::is_regular_file(pdir / "started.json")) {
      const Json j = read_json(pdir / "started.json");
      s.state = PointState::incomplete;
      s.hostname = j.value("hostname", "");
      const long pid = j.value("pid", 0L);
      const bool gone = process_gone(s.hostname, pid);
      s.message = cat("started ", j.value("started_utc", "?"), " on ", s.hostname, " (process ", pid, gone ? ", gone: it died half-way)" : "), no exit status: it died half-way or is still running");
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::string status_text(const SweepPlan& plan, const std::vector<PointStatus>& status) {
  std::map<PointState, int> counts;
  std::ostringstream o;
  for (const PointStatus& s : status) {
    ++counts[s.state];
    o << "  " << point_name(s.index) << "  " << state_name(s.state) << "  " << sweep_label(plan.points[std::size_t(s.index)].sweep);
    if (!s.hostname.empty()) o << "  [" << s.hostname << "]";
    if (s.state == PointState::failed) o << "  exit " << s.exit_code;
    if (!s.message.empty()) o << ": " << s.message;
    if (!s.results.empty()) o << "  -> " << fs::relative(s.results, plan.dir).string();
    o << "\n";
  }
  std::ostringstream head;
  head << plan.name << ": " << status.size() << " points: " << counts[PointState::done] << " done, " << counts[PointState::failed] << " failed, "
       << counts[PointState::incomplete] << " incomplete, " << counts[PointState::missing] << " missing\n";
  return head.str() + o.str();
}

std::vector<int> write_resubmit_script(const SweepPlan& plan, std::ostream& log) {
  std::vector<int> todo;
  for (const PointStatus& s : sweep_status(plan))
    if (s.state != PointState::done) todo.push_back(s.index);
  if (todo.empty()) {
    log << "sweep resubmit: every point of " << plan.dir.string() << " is done; nothing to resubmit\n";
    return todo;
  }
  const fs::path file = plan.dir / "resubmit.sbatch";
  write_file_atomically(file, slurm_script(plan, todo));
  log << "sweep resubmit: " << todo.size() << " point" << (todo.size() == 1 ? "" : "s") << " (" << array_ranges(todo) << ") in "
      << file.string() << "\n";
  return todo;
}

SweepMerge merge_sweeps(const std::vector<fs::path>& dirs) {
  SweepMerge m;
  std::vector<SweepPlan> plans;
  std::string first_text;
  for (const fs::path& d : dirs) {
    SweepPlan p = read_sweep_plan(d);
    const std::string text = read_text(d / p.config);
    if (!plans.empty()) {
      const SweepPlan& a = plans.front();
      if (text != first_text)
        fail(d.string(), ": a sweep of another config than ", a.dir.string(), " (", (d / p.config).string(), " differs from ",
             (a.dir / a.config).string(), "); merge only sweeps of one plan");
      if (p.overrides != a.overrides)
        fail(d.string(), ": a sweep of other overrides than ", a.dir.string(), " ([", join(p.overrides), "] against [", join(a.overrides),
             "]); merge only sweeps of one plan");
    } else {
      first_text = text;
    }
    plans.push_back(std::move(p));
  }

  // The point table: one row per point and arm (a point without results: one row saying why).
  Rows rows;
  rows.file = "merged.csv";
  rows.columns = {"plan", "point", "sweep", "state", "exit_code", "cpu", "features", "cores", "hostname", "git", "arm", "verified",
                  "speedup_median", "speedup_min", "speedup_max", "message"};
  Json points = Json::array();
  struct Group {
    std::string cpu, features;
    std::vector<std::string> columns;
    std::vector<SweepSeries> series;
  };
  std::vector<Group> groups;
  std::string table = "<table class=\"sweep\">\n<thead><tr><th>plan</th><th>point</th><th>sweep</th><th>state</th><th>machine</th>"
                      "<th>arms (speedup vs baseline)</th></tr></thead>\n<tbody>\n";
  std::map<std::string, int> counts;
  for (const SweepPlan& plan : plans) {
    for (const PointStatus& s : sweep_status(plan)) {
      const SweepPoint& pt = plan.points[std::size_t(s.index)];
      ++counts[state_name(s.state)];
      Json pj = {{"plan", plan.dir.string()}, {"point", s.index}, {"sweep", pt.sweep}, {"state", state_name(s.state)},
                 {"exit_code", s.exit_code}, {"message", s.message}};
      std::string machine_cell, arms_cell;
      if (!s.results.empty()) {
        m.folders.push_back(read_result_folder(s.results));
        const Json& sum = m.folders.back().summary;
        const Json& mach = sum["machine"];
        pj["results"] = s.results.string();
        pj["machine"] = mach;
        const std::string cpu = text_of(mach["cpu"]), features = text_of(mach.value("features", Json("")));
        machine_cell = cat(cpu, " (", features, "; ", text_of(mach.value("cores", Json(0))), " cores; ", text_of(mach.value("hostname", Json(""))), ")");
        auto g = std::find_if(groups.begin(), groups.end(), [&](const Group& x) { return x.cpu == cpu && x.features == features; });
        if (g == groups.end()) g = groups.insert(groups.end(), Group{cpu, features, {}, {}});
        const std::size_t col = g->columns.size();
        g->columns.push_back(sweep_label(pt.sweep));
        for (auto& sr : g->series) {
          sr.median.push_back(std::nan(""));
          sr.min.push_back(std::nan(""));
          sr.max.push_back(std::nan(""));
        }
        pj["arms"] = Json::array();
        std::vector<std::string> arm_texts;
        for (const Json& run : sum["runs"])
          for (const ArmSpeedup& a : arm_speedups(run)) {
            pj["arms"].push_back(Json{{"name", a.name}, {"verified", a.verified}, {"speedup_vs_baseline", a.valid ? Json{{"median", a.median}, {"min", a.min}, {"max", a.max}} : Json(nullptr)}});
            rows.add({plan.dir.string(), s.index, sweep_label(pt.sweep), state_name(s.state), s.exit_code, cpu, features,
                      mach.value("cores", 0), text_of(mach.value("hostname", Json(""))), text_of(mach.value("git", Json(""))), a.name,
                      a.verified ? "yes" : "no", a.valid ? Cell(a.median) : Cell(), a.valid ? Cell(a.min) : Cell(), a.valid ? Cell(a.max) : Cell(), s.message});
            arm_texts.push_back(!a.verified ? a.name + ": FAILED verification" : a.valid ? a.name + ": " + sig(a.median) + "×" : a.name);
            if (!a.verified || !a.valid) continue;
            auto sr = std::find_if(g->series.begin(), g->series.end(), [&](const SweepSeries& x) { return x.name == a.name; });
            if (sr == g->series.end()) {
              const std::vector<double> nans(col + 1, std::nan(""));
              sr = g->series.insert(g->series.end(), SweepSeries{a.name, nans, nans, nans});
            }
            sr->median[col] = a.median;
            sr->min[col] = a.min;
            sr->max[col] = a.max;
          }
        arms_cell = join(arm_texts, "; ");
      } else {
        rows.add({plan.dir.string(), s.index, sweep_label(pt.sweep), state_name(s.state), s.exit_code, Cell(), Cell(), Cell(), s.hostname,
                  Cell(), Cell(), Cell(), Cell(), Cell(), Cell(), s.message});
        machine_cell = s.hostname;
        arms_cell = s.message.empty() ? std::string("(no results)") : s.message;
      }
      table += cat("<tr class=\"", state_name(s.state), "\"><td>", xml_escape(plan.dir.filename().string()), "</td><td class=\"num\">", s.index,
                   "</td><td>", xml_escape(sweep_label(pt.sweep)), "</td><td>", state_name(s.state),
                   s.state == PointState::failed ? cat(" (exit ", s.exit_code, ")") : std::string(), "</td><td>", xml_escape(machine_cell),
                   "</td><td>", xml_escape(arms_cell), "</td></tr>\n");
      points.push_back(std::move(pj));
    }
  }
  table += "</tbody>\n</table>\n";
  const std::string name = plans.empty() ? std::string() : plans.front().name;
  m.html = cat("<section class=\"sweep\">\n<h2>Sweep ", xml_escape(name), ": ", points.size(), " points (", counts["done"], " done, ",
               counts["failed"], " failed, ", counts["incomplete"], " incomplete, ", counts["missing"], " missing)</h2>\n",
               "<p>Incomplete and missing points have no results here: nothing merged comes from a job without its exit status.</p>\n",
               table);
  for (const Group& g : groups) {
    if (g.series.empty()) continue;
    m.html += cat("<h3>", xml_escape(g.cpu), "</h3>\n<p>features: ", xml_escape(g.features), "</p>\n<figure class=\"plot\" data-file=\"sweep\">",
                  inline_svg(svg_sweep("speedup against the baseline across the sweep: " + g.cpu, "sweep point",
                                       "× vs baseline (median of per-round ratios; whisker min–max)", g.columns, g.series, 1.0)),
                  "</figure>\n");
    ++m.plots;
  }
  m.html += "</section>\n";
  m.json = Json{{"generator", "ternlab report"}, {"plan", name}, {"counts", counts}, {"points", points}};
  m.csv = csv_text(rows);
  return m;
}

}  // namespace ternlab::experiments
