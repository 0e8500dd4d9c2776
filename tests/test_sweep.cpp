// `ternlab sweep`: plan expansion, the Slurm array script, local runs of every point, the status of
// done, failed, incomplete and missing points, resubmitting the rest, merging a sweep's points, and
// each bad input. Host logic on a tiny gemv config (a few seconds); scripts/slurm-test.sh submits a
// plan through a real Slurm controller.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/strings.hpp"
#include "common/files.hpp"
#include "experiments/html.hpp"
#include "experiments/report.hpp"
#include "experiments/sweep_plan.hpp"
#include "tests/support.hpp"

using namespace ternlab;
using namespace ternlab::experiments;
namespace fs = std::filesystem;
using test::check_error;

namespace {

constexpr char kScratch[] = "ternlab-sweep";

std::size_t count_of(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + what.size())) ++n;
  return n;
}

// Three points (rows 64, 128, 256), each a gemv run of two arms of about a quarter of a second.
fs::path write_sweep_config(const fs::path& dir, const std::string& rows = "[64, 128, 256]") {
  const fs::path p = dir / "sweep.toml";
  std::ofstream(p) << "kind = \"gemv\"\nname = \"sweep\"\nrounds = 1\nwarmup = 0\nceiling_mib = 4\nsample_ms = 0.5\nthreads = 1\n"
                   << "baseline = \"pq2_0\"\n[shape]\nrows = " << rows << "\ncols = 256\n[[arm]]\nlayout = \"pq2_0\"\n[[arm]]\nlayout = \"t2p\"\n"
                   << "threads = [1, 2]\n";
  return p;
}

SlurmOptions cluster_options() {
  SlurmOptions s;
  s.partition = "bench";
  s.time = "00:10:00";
  s.constraint = "avx512";
  s.extra = {"--mem=1G"};
  s.ternlab = "/opt/ternlab/bin/ternlab";
  return s;
}

}  // namespace

TEST_SUITE("sweep") {
  TEST_CASE("sweep plan: one job per point with its overrides, a manifest and the array script; the same plan again is kept") {
    const fs::path dir = test::scratch_folder<kScratch>() / "plan";
    fs::create_directories(dir);
    const fs::path config = write_sweep_config(dir);
    const fs::path out = dir / "plan";
    std::ostringstream log;
    const SweepPlan p = write_sweep_plan(config.string(), {"seed=11"}, out, cluster_options(), log);
    REQUIRE(p.points.size() == 3);
    CHECK(p.name == "sweep");
    CHECK(p.kind == "gemv");
    CHECK(p.points[1].overrides == std::vector<std::string>{"seed=11", "shape.rows=128"});
    CHECK(p.points[2].sweep == Json{{"shape.rows", "256"}});
    const Json job = Json::parse(read_text(out / "points" / "001" / "job.json"));
    CHECK(job["overrides"] == Json{"seed=11", "shape.rows=128"});
    CHECK(job["command"] == "ternlab run sweep.toml --set seed=11 --set shape.rows=128 --set output=points/001");
    CHECK(read_text(out / "sweep.toml") == read_text(config));
    const Json manifest = Json::parse(read_text(out / "sweep-plan.json"));
    CHECK(manifest["sweep_plan_version"] == kSweepPlanVersion);
    CHECK(manifest["points"].size() == 3);
    CHECK(manifest["slurm"]["cpus_per_task"] == 2);  // the t2p arm's threads = [1, 2]

    const std::string script = read_text(out / "sweep.sbatch");
    CHECK(script.starts_with("#!/bin/bash\n"));
    for (const std::string line : {"#SBATCH --array=0-2\n", "#SBATCH --partition=bench\n", "#SBATCH --time=00:10:00\n",
                                   "#SBATCH --cpus-per-task=2\n", "#SBATCH --exclusive\n", "#SBATCH --constraint=avx512\n",
                                   "#SBATCH --mem=1G\n", "#SBATCH --job-name=ternlab-sweep\n"})
      CHECK_MESSAGE(script.find(line) != std::string::npos, line);
    CHECK(script.find("#SBATCH --output=" + (fs::absolute(out).lexically_normal() / "logs" / "point-%a.log").string() + "\n") !=
          std::string::npos);
    CHECK(script.find("exec /opt/ternlab/bin/ternlab sweep run-one " + fs::absolute(out).lexically_normal().string() +
                      " --index \"$SLURM_ARRAY_TASK_ID\"\n") != std::string::npos);
    CHECK(fs::is_directory(out / "logs"));

    // The same plan again (other Slurm options): kept, the script rewritten without --exclusive.
    SlurmOptions shared = cluster_options();
    shared.exclusive = false;
    shared.cpus_per_task = 4;
    std::ofstream(out / "points" / "000" / "marker") << "results of an earlier run";
    write_sweep_plan(config.string(), {"seed=11"}, out, shared, log);
    CHECK(log.str().find("already holds this plan") != std::string::npos);
    CHECK(fs::exists(out / "points" / "000" / "marker"));
    CHECK(read_text(out / "sweep.sbatch").find("--exclusive") == std::string::npos);
    CHECK(read_text(out / "sweep.sbatch").find("#SBATCH --cpus-per-task=4\n") != std::string::npos);

    // Bad input: a different plan in the folder, a config with no sweep, a folder of other files,
    // an option that would break the script, a manifest of another version.
    check_error([&] { write_sweep_plan(config.string(), {"seed=12"}, out, shared, log); }, out.string(), "different plan", "seed=11",
                "seed=12");
    const fs::path other = write_sweep_config(dir / "..", "[64, 512]");
    check_error([&] { write_sweep_plan(other.string(), {"seed=11"}, out, shared, log); }, out.string(), "different plan",
                (fs::absolute(out).lexically_normal() / "sweep.toml").string());
    check_error([&] { write_sweep_plan(config.string(), {"shape.rows=64"}, dir / "single", shared, log); }, config.string(), "no sweep",
                "ternlab run");
    CHECK_FALSE(fs::exists(dir / "single"));
    fs::create_directories(dir / "busy");
    std::ofstream(dir / "busy" / "notes.txt") << "x";
    check_error([&] { write_sweep_plan(config.string(), {}, dir / "busy", shared, log); }, (dir / "busy").string(), "other files");
    SlurmOptions broken = shared;
    broken.partition = "a\n#SBATCH --x";
    check_error([&] { write_sweep_plan(config.string(), {}, dir / "broken", broken, log); }, "--partition", "line break");
    check_error([&] { write_sweep_plan(config.string(), {"shape.cols=100"}, dir / "bad", shared, log); }, "--set shape.cols=100");
    Json old = manifest;
    old["sweep_plan_version"] = kSweepPlanVersion + 1;
    std::ofstream(out / "sweep-plan.json") << json_text(old);
    check_error([&] { read_sweep_plan(out); }, (out / "sweep-plan.json").string(), "'sweep_plan_version'");
    old.erase("points");
    old["sweep_plan_version"] = kSweepPlanVersion;
    std::ofstream(out / "sweep-plan.json") << json_text(old);
    check_error([&] { read_sweep_plan(out); }, (out / "sweep-plan.json").string(), "no field 'points'");
  }

  TEST_CASE("sweep run, a failed and a half-written point in status, resubmit of only those, and the merged report") {
    const fs::path dir = test::scratch_folder<kScratch>() / "run";
    fs::create_directories(dir);
    const fs::path config = write_sweep_config(dir);
    const fs::path out = dir / "plan";
    std::ostringstream log;
    SlurmOptions s = cluster_options();
    const SweepPlan p = write_sweep_plan(config.string(), {}, out, s, log);
    std::vector<PointStatus> st = sweep_status(p);
    REQUIRE(st.size() == 3);
    for (const PointStatus& x : st) CHECK(x.state == PointState::missing);

    std::ostringstream ran;
    REQUIRE(run_sweep(out, ran) == 0);
    st = sweep_status(p);
    for (const PointStatus& x : st) {
      CHECK(x.state == PointState::done);
      REQUIRE(fs::is_regular_file(x.results / "summary.json"));
    }
    // Each point's results folder: the runner's, with the machine record and the point's overrides.
    const Json sum = Json::parse(read_text(st[1].results / "summary.json"));
    for (const char* k : {"cpu", "features", "cores", "memory_bytes", "compiler", "git", "hostname"})
      CHECK_MESSAGE(sum["machine"].contains(k), k);
    CHECK(sum["machine"]["memory_bytes"].get<std::int64_t>() > 0);
    CHECK(sum["overrides"][0] == "shape.rows=128");
    const Json exit1 = Json::parse(read_text(p.point_dir(1) / "exit.json"));
    CHECK(exit1["exit_code"] == 0);
    CHECK(exit1["status"] == "done");
    CHECK(exit1["results"] == st[1].results.filename().string());
    // Everything done: a second local run runs nothing; resubmit has nothing to write.
    std::ostringstream again;
    CHECK(run_sweep(out, again) == 0);
    CHECK(count_of(again.str(), "done already") == 3);
    CHECK(write_resubmit_script(p, log).empty());
    CHECK_FALSE(fs::exists(out / "resubmit.sbatch"));

    // Point 1 fails: its job cannot read the config. Point 2 dies half-way: its run's temporary
    // folder and started.json are there, its exit status is not.
    fs::rename(out / "sweep.toml", dir / "moved.toml");
    std::ostringstream one;
    CHECK(run_sweep_point(out, 1, one) == 2);
    fs::rename(dir / "moved.toml", out / "sweep.toml");
    const fs::path p2 = p.point_dir(2);
    fs::remove(p2 / "exit.json");
    fs::remove_all(st[2].results);
    fs::create_directories(p2 / ".sweep-20260101-000000.partial");
    char host[256] = {};
    REQUIRE(gethostname(host, sizeof host - 1) == 0);
    std::ofstream(p2 / "started.json") << Json{{"hostname", host}, {"pid", 1073741823}, {"started_utc", "2026-01-01T00:00:00Z"}}.dump();
    st = sweep_status(p);
    CHECK(st[0].state == PointState::done);
    CHECK(st[1].state == PointState::failed);
    CHECK(st[1].exit_code == 2);
    CHECK(st[1].message.find("sweep.toml") != std::string::npos);
    CHECK(st[1].results.empty());
    CHECK(st[2].state == PointState::incomplete);
    CHECK(st[2].message.find("died half-way") != std::string::npos);
    const std::string text = status_text(p, st);
    CHECK(text.find("3 points: 1 done, 1 failed, 1 incomplete, 0 missing") != std::string::npos);
    CHECK(text.find("001  failed  shape.rows=128") != std::string::npos);

    const std::vector<int> todo = write_resubmit_script(p, log);
    CHECK(todo == std::vector<int>{1, 2});
    const std::string re = read_text(out / "resubmit.sbatch");
    CHECK(re.find("#SBATCH --array=1-2\n") != std::string::npos);
    CHECK(re.find("#SBATCH --partition=bench\n") != std::string::npos);

    // The merge: every point in the table, only the done one's results merged.
    const fs::path report = dir / "report";
    std::ostringstream rlog;
    write_comparison_page({out.string()}, report, rlog);
    const Json merged = Json::parse(read_text(report / "merged.json"));
    REQUIRE(merged["points"].size() == 3);
    CHECK(merged["points"][0]["state"] == "done");
    CHECK(merged["points"][0]["machine"]["cpu"] == this_machine().cpu);
    CHECK(merged["points"][0]["arms"].size() == 3);  // pq2_0 and t2p at 1 and 2 threads
    CHECK(merged["points"][1]["state"] == "failed");
    CHECK(merged["points"][2]["state"] == "incomplete");
    CHECK_FALSE(merged["points"][1].contains("results"));
    CHECK_FALSE(merged["points"][2].contains("results"));
    const std::string page = read_text(report / "index.html");
    CHECK(count_of(page, "<article class=\"results\">") == 1);
    CHECK(page.find("3 points (1 done, 1 failed, 1 incomplete, 0 missing)") != std::string::npos);
    CHECK(count_of(page, "<tr class=\"failed\">") == 1);
    CHECK(count_of(page, "<tr class=\"incomplete\">") == 1);
    CHECK(count_of(read_text(report / "merged.csv"), "\r\n") == 1 + 3 + 2);  // header, point 0's arms, one row each for the others

    // A half-written job named directly is refused, never merged.
    check_error([&] { collect_result_folders({p2.string()}); }, p2.string(), "no exit.json", "died half-way");
    fs::remove(p2 / "job.json");
    check_error([&] { collect_result_folders({p2.string()}); }, p2.string(), ".sweep-20260101-000000.partial", "died half-way");
    std::ofstream(p2 / "job.json") << "{}";

    // Run the rest here: the failed and the incomplete point, not the done one; then all merge.
    std::ostringstream rest;
    CHECK(run_sweep(out, rest) == 0);
    CHECK(count_of(rest.str(), "done already") == 1);
    CHECK(rest.str().find("ran 2 points, 0 failed") != std::string::npos);
    write_comparison_page({out.string()}, report, rlog);  // its own earlier report is replaced
    CHECK(count_of(read_text(report / "index.html"), "<article class=\"results\">") == 3);
    CHECK(read_text(report / "index.html").find("3 points (3 done, 0 failed") != std::string::npos);

    // Sweeps of different plans are not merged together; the same plan from another folder is.
    const fs::path twin = dir / "twin";
    fs::copy(out, twin, fs::copy_options::recursive);
    write_comparison_page({out.string(), twin.string()}, dir / "report2", rlog);
    CHECK(Json::parse(read_text(dir / "report2" / "merged.json"))["points"].size() == 6);
    Json m = Json::parse(read_text(twin / "sweep-plan.json"));
    m["overrides"] = Json{"seed=3"};
    std::ofstream(twin / "sweep-plan.json") << json_text(m);
    check_error([&] { write_comparison_page({out.string(), twin.string()}, dir / "report3", rlog); }, twin.string(), "other overrides",
                "seed=3");
    std::ofstream(twin / "sweep.toml", std::ios::app) << "# changed\n";
    check_error([&] { write_comparison_page({out.string(), twin.string()}, dir / "report3", rlog); }, twin.string(), "another config");
    check_error([&] { collect_result_folders({out.string()}); }, out.string(), "report merge");
  }
}
