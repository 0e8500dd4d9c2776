// Experiment files: sweep expansion, --set overrides, the dry-run plan, and every kind of bad input
// rejected before anything runs with a message naming the file, the line and the key.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "experiments/arms.hpp"
#include "experiments/config.hpp"
#include "experiments/report.hpp"
#include "experiments/runner.hpp"
#include "kernels/cpu.hpp"
#include "tests/support.hpp"

using namespace ternlab;
using namespace ternlab::experiments;
using test::check_error;

namespace {

const char* kBase = R"(kind = "gemv"
rounds = 2
threads = 1
[shape]
rows = 64
cols = 256
[[arm]]
layout = "pq2_0"
[[arm]]
layout = "t2p"
)";

Plan plan_of(const std::string& text, const std::vector<std::string>& overrides = {}) {
  return load_plan_text(text, "exp.toml", overrides);
}

std::vector<std::string> arm_names(const RunSpec& r) {
  std::vector<std::string> n;
  for (const ArmSpec& a : r.arms) n.push_back(a.name);
  return n;
}

}  // namespace

TEST_SUITE("experiments-config") {
  TEST_CASE("a file without arrays is one run with its arms in file order") {
    const Plan p = plan_of(kBase);
    REQUIRE(p.runs.size() == 1);
    CHECK(p.runs[0].kind == "gemv");
    CHECK(p.runs[0].integer("shape.rows", 0, 0, 1 << 20) == 64);
    CHECK(p.runs[0].sweep_point.empty());
    CHECK(arm_names(p.runs[0]) == std::vector<std::string>{"pq2_0", "t2p"});
  }

  TEST_CASE("arrays at the top level and in sections expand into a cartesian product of runs") {
    const Plan p = plan_of(std::string("threads = [1, 2]\n") + R"(kind = "gemv"
[shape]
rows = [64, 128, 256]
cols = 256
[[arm]]
layout = "pq2_0"
)");
    REQUIRE(p.runs.size() == 6);
    // Keys in name order, the first varying slowest: shape.rows, then threads.
    std::vector<std::pair<std::int64_t, std::int64_t>> seen;
    for (const RunSpec& r : p.runs) {
      seen.emplace_back(r.integer("shape.rows", 0, 0, 1 << 20), r.integer("threads", 0, 0, 64));
      CHECK(r.sweep_point.size() == 2);
    }
    CHECK(seen == std::vector<std::pair<std::int64_t, std::int64_t>>{{64, 1}, {64, 2}, {128, 1}, {128, 2}, {256, 1}, {256, 2}});
    CHECK(p.runs[3].name() == "exp [shape.rows=128 threads=2]");
    // The chosen element keeps its own line for messages.
    CHECK(p.runs[1].at("threads").line == 1);
  }

  TEST_CASE("arrays inside an [[arm]] expand into arms, named after what they sweep") {
    const Plan p = plan_of(R"(kind = "gemv"
[[arm]]
layout = ["pq2_0", "t2p", "t2x4"]
threads = [1, 2]
[[arm]]
name = "base-3"
layout = "ptq1_0"
kernel = ["reference", "best"]
)");
    REQUIRE(p.runs.size() == 1);
    CHECK(arm_names(p.runs[0]) == std::vector<std::string>{"pq2_0 threads=1", "pq2_0 threads=2", "t2p threads=1", "t2p threads=2",
                                                           "t2x4 threads=1", "t2x4 threads=2", "base-3 kernel=reference",
                                                           "base-3 kernel=best"});
    CHECK(p.runs[0].arms[3].sweep == "layout=t2p threads=2");
  }

  TEST_CASE("the dry-run plan lists every run and arm before anything starts") {
    const std::string d = describe(plan_of(kBase, {"threads=[1,2]"}));
    CHECK(d.find("2 runs") != std::string::npos);
    CHECK(d.find("run 2/2: exp [threads=2]") != std::string::npos);
    CHECK(d.find("arm 1 't2p': layout=\"t2p\"") != std::string::npos);
    CHECK(d.find("threads=2 (--set)") != std::string::npos);  // a command-line value says so
    CHECK(d.find("layout=\"t2p\" (--set)") == std::string::npos);
    std::ostringstream out;
    const std::string path = (std::filesystem::temp_directory_path() / cat("ternlab-dry-", getpid(), ".toml")).string();
    std::ofstream(path) << "output = \"" << (std::filesystem::temp_directory_path() / cat("ternlab-dry-out-", getpid())).string() << "\"\n"
                        << kBase;
    RunOptions opt;
    opt.dry_run = true;
    const RunOutcome o = run_experiment_file(path, opt, out);
    CHECK(o.folder.empty());
    CHECK(out.str().find("arm 0 'pq2_0'") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(std::filesystem::temp_directory_path() / cat("ternlab-dry-out-", getpid())));
    std::filesystem::remove(path);
  }

  TEST_CASE("--set overrides a key, adds one, sweeps one, and reaches every arm or one arm") {
    Plan p = plan_of(kBase, {"shape.rows=128", "seed=11"});
    CHECK(p.runs[0].integer("shape.rows", 0, 0, 1 << 20) == 128);
    CHECK(p.runs[0].integer("seed", 0, 0, 1 << 20) == 11);
    CHECK(p.runs[0].at("shape.rows").origin == "--set shape.rows=128");

    p = plan_of(kBase, {"rounds=[2,3]"});
    CHECK(p.runs.size() == 2);

    p = plan_of(kBase, {"arm.threads=2"});
    for (const ArmSpec& a : p.runs[0].arms) CHECK(as_integer(a.at("threads"), 1, 64) == 2);

    p = plan_of(kBase, {"arm.1.layout=t2x4"});
    CHECK(arm_names(p.runs[0]) == std::vector<std::string>{"pq2_0", "t2x4"});

    p = plan_of(kBase, {"output=/tmp/some folder"});  // not valid TOML: read as a string
    CHECK(p.runs[0].string("output", "") == "/tmp/some folder");

    p = plan_of(kBase, {"arm.0.layout=[\"pq2_0\",\"t2x4\"]"});
    CHECK(arm_names(p.runs[0]) == std::vector<std::string>{"pq2_0", "t2x4", "t2p"});
    // The same array in every arm repeats names: rejected, naming the arm.
    check_error([] { plan_of(kBase, {"arm.layout=[\"pq2_0\",\"t2p\"]"}); }, "exp.toml:9: key 'arm[1]'", "both called 'pq2_0'");
  }

  TEST_CASE("bad overrides name the --set they came from") {
    check_error([] { plan_of(kBase, {"shape.rowz=4"}); }, "--set shape.rowz=4", "key 'shape.rowz'", "unknown key", "rows");
    check_error([] { plan_of(kBase, {"rounds=many"}); }, "--set rounds=many", "key 'rounds'", "expected integer");
    check_error([] { plan_of(kBase, {"arm.7.layout=t2p"}); }, "--set arm.7.layout=t2p", "no arm 7", "2 arms");
    check_error([] { plan_of(kBase, {"novalue"}); }, "--set novalue", "key=value");
  }

  TEST_CASE("an unknown key names the file, the line and the key, and lists the known ones") {
    check_error([] { plan_of("roundz = 3\n" + std::string(kBase)); }, "exp.toml:1: key 'roundz'", "unknown key", "rounds");
    check_error([] { plan_of("kind = \"gemv\"\n[shape]\nrows = 64\nwidth = 3\n[[arm]]\nlayout = \"t2p\"\n"); }, "exp.toml:4: key 'shape.width'", "known in [shape]", "cols");
    check_error([] { plan_of(std::string(kBase) + "colour = \"red\"\n"); }, "exp.toml:11: key 'arm[1].colour'", "[[arm]]",
                "layout");
    check_error([] { plan_of("kind = \"gemv\"\n[shapes]\nrows = 4\n[[arm]]\nlayout = \"t2p\"\n"); }, "exp.toml:3: key 'shapes.rows'");
    // A key another kind accepts is still unknown here.
    check_error([] { plan_of(std::string(kBase) + "[cases]\ntokens = [1]\n"); }, "key 'cases.tokens'", "kind 'gemv'");
    check_error([] { plan_of("kind = \"gemv\"\n[[arm]]\nlayout = \"t2p\"\nleftover = \"pad\"\n"); }, "exp.toml:4: key 'arm[0].leftover'");
  }

  TEST_CASE("a value of the wrong type") {
    check_error([] { plan_of("kind = \"gemv\"\nrounds = \"five\"\n[[arm]]\nlayout = \"t2p\"\n"); }, "exp.toml:2: key 'rounds'",
                "expected integer", "\"five\"");
    check_error([] { plan_of("kind = \"gemv\"\ncontrol = 1\n[[arm]]\nlayout = \"t2p\"\n"); }, "exp.toml:2: key 'control'", "boolean");
    check_error([] { plan_of("kind = \"gemv\"\n[[arm]]\nlayout = 3\n"); }, "exp.toml:3: key 'arm[0].layout'", "expected string");
    check_error([] { plan_of("kind = \"gemv\"\nthreads = [1, \"2\"]\n[[arm]]\nlayout = \"t2p\"\n"); }, "exp.toml:2: key 'threads'",
                "array elements must be of type integer");
    check_error([] { plan_of("kind = \"gemv\"\nname = [\"a\", \"b\"]\n[[arm]]\nlayout = \"t2p\"\n"); }, "exp.toml:2: key 'name'",
                "cannot be swept");
    check_error([] { plan_of("kind = \"gemv\"\nthreads = []\n[[arm]]\nlayout = \"t2p\"\n"); }, "exp.toml:2", "empty array");
    check_error([] { plan_of("kind = 4\n"); }, "exp.toml:1: key 'kind'", "expected string");
    check_error([] { plan_of("kind = \"gemv\"\n[arm]\nlayout = \"t2p\"\n"); }, "exp.toml:2: key 'arm'", "[[arm]]");
  }

  TEST_CASE("out-of-range values, an unknown kind and a missing kind") {
    check_error([] { plan_of(std::string(kBase) + "\n", {"rounds=0"}); }, "key 'rounds'", "out of range");
    check_error([] { plan_of("kind = \"gemv\"\nthreads = -2\n[[arm]]\nlayout = \"t2p\"\n"); }, "exp.toml:2: key 'threads'", "out of range");
    check_error([] { plan_of("kind = \"decoed\"\n"); }, "exp.toml:1: key 'kind'", "unknown experiment kind 'decoed'", "gemv", "oracle");
    check_error([] { plan_of("rounds = 3\n"); }, "exp.toml", "key 'kind' is missing");
    check_error([] { plan_of("kind = \"gemv\"\n"); }, "exp.toml", "at least one [[arm]]");
  }

  TEST_CASE("an unknown layout, ISA or strategy") {
    check_error([] { plan_of("kind = \"gemv\"\n[[arm]]\nlayout = \"t3p\"\n"); }, "exp.toml:3: key 'arm[0].layout'",
                "unknown layout 't3p'", "pq2_0");
    check_error([] { plan_of("kind = \"gemv\"\n[[arm]]\nlayout = \"t2p\"\nkernel = \"reference/avx9\"\n"); }, "exp.toml:4: key 'arm[0].kernel'", "unknown ISA 'avx9'", "avx2");
    check_error([] { plan_of("kind = \"gemv\"\n[[arm]]\nlayout = \"t2p\"\nkernel = \"teleport\"\n"); }, "exp.toml:4: key 'arm[0].kernel'", "no kernel 'teleport'", "reference/scalar");
    // A known ISA this CPU lacks.
    const char* missing = nullptr;
    for (const char* isa : {"avx512vnni", "i8mm", "avx2", "dotprod"})
      if (!isa_supported(parse_isa(isa))) {
        missing = isa;
        break;
      }
    if (!missing) {
      MESSAGE("skipped: this CPU supports every ISA tried, so none can be reported missing");
    } else {
      const std::string text = cat("kind = \"gemv\"\n[[arm]]\nlayout = \"t2p\"\nkernel = \"reference/", missing, "\"\n");
      check_error([&] { plan_of(text); }, "exp.toml:4: key 'arm[0].kernel'", cat("ISA '", missing, "' is not supported on this CPU"));
    }
  }

  TEST_CASE("an impossible shape") {
    check_error([] { plan_of("kind = \"gemv\"\n[shape]\nrows = 6\n[[arm]]\nlayout = \"pq2_0\"\n[[arm]]\nlayout = \"t2p\"\n"); },
                "exp.toml:3: key 'shape.rows'", "6 rows cannot be packed as t2p", "multiple of 4");
    check_error([] { plan_of("kind = \"gemv\"\n[shape]\ncols = 200\n[[arm]]\nlayout = \"pq2_0\"\n"); }, "exp.toml:3: key 'shape.cols'",
                "200 is not a multiple of 128");
    check_error([] { plan_of("kind = \"gemv\"\n[shape]\nrows = 0\n[[arm]]\nlayout = \"pq2_0\"\n"); }, "exp.toml:3: key 'shape.rows'", "out of range");
    // Only one element of a sweep is impossible: the plan still fails before anything runs.
    check_error([] { plan_of("kind = \"gemv\"\n[shape]\nrows = [8, 6]\n[[arm]]\nlayout = \"t2p\"\n"); }, "exp.toml:3", "6 rows");
    check_error([] { plan_of("kind = \"gemm\"\n[shape]\ntokens = 0\n[[arm]]\nlayout = \"t2p\"\n"); }, "exp.toml:3: key 'shape.tokens'");
    check_error([] { plan_of("kind = \"oracle\"\n[cases]\ncols = [256, 300]\n[[arm]]\nlayout = \"t2p\"\n"); }, "exp.toml:3: key 'cases.cols'", "300 is not a multiple of 128");
  }

  TEST_CASE("a baseline that names no arm, duplicate arm names, a bad leftover strategy") {
    check_error([] { plan_of(std::string(kBase) + "\n", {"baseline=t2x4"}); }, "--set baseline=t2x4", "no arm is called 't2x4'", "t2p");
    check_error([] { plan_of("kind = \"gemv\"\n[[arm]]\nlayout = \"t2p\"\n[[arm]]\nlayout = \"t2p\"\n"); }, "exp.toml:4", "both called 't2p'");
    check_error([] { plan_of("kind = \"gemm\"\n[[arm]]\nlayout = \"t2p\"\nleftover = \"drop\"\n"); }, "exp.toml:4: key 'arm[0].leftover'",
                "pad", "gemv");
  }

  TEST_CASE("arms keep their declared identity under sweeps and --set, and the baseline still names them") {
    // --set inside every arm renames the arms, not their identity: the file's baseline still holds.
    Plan p = plan_of("baseline = \"pq2_0\"\n" + std::string(kBase), {"arm.threads=1"});
    CHECK(arm_names(p.runs[0]) == std::vector<std::string>{"pq2_0 threads=1", "t2p threads=1"});
    CHECK(p.runs[0].arms[0].identity == "pq2_0");
    CHECK(resolve_baselines(p.runs[0]).of == std::vector<std::size_t>{0, 0});
    // A sweep of every arm: each arm is compared with the baseline arm at its own sweep point.
    p = plan_of("baseline = \"pq2_0\"\n" + std::string(kBase), {"arm.threads=[1,2]"});
    REQUIRE(arm_names(p.runs[0]) == std::vector<std::string>{"pq2_0 threads=1", "pq2_0 threads=2", "t2p threads=1", "t2p threads=2"});
    CHECK(p.runs[0].arms[3].point == std::vector<std::pair<std::string, std::string>>{{"threads", "2"}});
    Baselines b = resolve_baselines(p.runs[0]);
    CHECK(b.of == std::vector<std::size_t>{0, 1, 0, 1});
    CHECK(b.label == "'pq2_0' at each arm's threads ('pq2_0 threads=1', 'pq2_0 threads=2')");
    CHECK(describe(p).find("arm 3 't2p threads=2': layout=\"t2p\" threads=2 (--set) [vs 'pq2_0 threads=2']") != std::string::npos);
    // The full name of one arm: every arm against that one.
    p = plan_of("baseline = \"pq2_0 threads=2\"\n" + std::string(kBase), {"arm.threads=[1,2]"});
    CHECK(resolve_baselines(p.runs[0]).of == std::vector<std::size_t>{1, 1, 1, 1});
    // Without a baseline: the first arm, for every arm.
    p = plan_of(kBase, {"arm.threads=[1,2]"});
    CHECK(resolve_baselines(p.runs[0]).of == std::vector<std::size_t>{0, 0, 0, 0});
    // A named arm is its name; an unnamed one without a layout is its position.
    p = plan_of("kind = \"bandwidth\"\nbaseline = \"arm 0\"\n[[arm]]\nthreads = [1, 2]\n[[arm]]\nname = \"spawned\"\nthreads = 2\nspawn = true\n");
    CHECK(p.runs[0].arms[1].identity == "arm 0");
    CHECK(p.runs[0].arms[2].identity == "spawned");
    CHECK(resolve_baselines(p.runs[0]).of == std::vector<std::size_t>{0, 1, 1});
    // A layout sweep in an unnamed arm: the layout is the identity, not a sweep point.
    p = plan_of("kind = \"gemv\"\nbaseline = \"pq2_0\"\n[[arm]]\nlayout = [\"pq2_0\", \"t2p\"]\n", {"arm.kernel=reference"});
    CHECK(p.runs[0].arms[1].identity == "t2p");
    CHECK(p.runs[0].arms[1].point.empty());
    CHECK(resolve_baselines(p.runs[0]).of == std::vector<std::size_t>{0, 0});
  }

  TEST_CASE("a baseline that matches no arm at an arm's sweep point, or several, says what matched and what did not") {
    const std::string arms = R"(
[[arm]]
layout = "pq2_0"
threads = [1, 2]
[[arm]]
layout = "t2p"
threads = 4
)";
    check_error([&] { plan_of("kind = \"gemv\"\nbaseline = \"pq2_0\"" + arms); }, "exp.toml:2: key 'baseline'", "'pq2_0' names 2 arms ('pq2_0 threads=1', 'pq2_0 threads=2')",
                "each compared with the arms at its own threads", "arm 't2p threads=4' has threads=4, which matches none of them",
                "baseline = \"pq2_0 threads=1\"");
    // The same file without `baseline`: every arm against the first arm.
    const Plan p = plan_of("kind = \"gemv\"" + arms);
    CHECK(resolve_baselines(p.runs[0]).of == std::vector<std::size_t>{0, 0, 0});
    // Two declared arms share the identity at the same point: ambiguous, naming both.
    check_error([] { plan_of("kind = \"gemv\"\nbaseline = \"t2p\"\n[[arm]]\nlayout = \"t2p\"\nthreads = 1\n[[arm]]\nlayout = \"t2p\"\nthreads = 2\n"); },
                "exp.toml:2: key 'baseline'", "'t2p' is ambiguous: arms 't2p threads=1', 't2p threads=2' all match arm 't2p threads=1'",
                "baseline = \"t2p threads=1\"");
    // ... and naming one of them in full resolves it.
    const Plan q = plan_of("kind = \"gemv\"\nbaseline = \"t2p threads=2\"\n[[arm]]\nlayout = \"t2p\"\nthreads = 1\n[[arm]]\nlayout = \"t2p\"\nthreads = 2\n");
    CHECK(resolve_baselines(q.runs[0]).of == std::vector<std::size_t>{1, 1});
    // A baseline naming nothing lists the arms and, where they differ, the declared identities.
    check_error([] { plan_of("baseline = \"t2x4\"\n" + std::string(kBase), {"arm.threads=[1,2]"}); }, "exp.toml:1: key 'baseline'",
                "no arm is called 't2x4' (arms: pq2_0 threads=1, pq2_0 threads=2, t2p threads=1, t2p threads=2; declared arms: pq2_0, t2p)");
  }

  TEST_CASE("more threads than logical cores are planned with a warning, not refused") {
    const int over = logical_cores() + 1;
    const Plan p = plan_of(kBase, {cat("arm.1.threads=", over)});
    const std::string d = describe(p);
    CHECK(d.find(cat("warning: more threads than this machine's ", logical_cores(), " logical cores (arm 1 't2p threads=", over, "' runs ", over,
                     " threads)")) != std::string::npos);
    CHECK(describe(plan_of(kBase)).find("warning") == std::string::npos);
    CHECK(threads_cell(over) == cat(over, " (> ", logical_cores(), " cores)"));
    CHECK(threads_cell(1) == "1");
    CHECK(oversubscribed_note({1, over}).find("oversubscribed") != std::string::npos);
    CHECK(oversubscribed_note({1}).empty());
  }

  TEST_CASE("a TOML syntax error names the line") {
    check_error([] { plan_of("kind = \"gemv\"\nrounds = = 3\n"); }, "exp.toml:2", "TOML syntax error");
    check_error([] { load_plan("/nonexistent/exp.toml", {}); }, "/nonexistent/exp.toml", "cannot read");
  }

  TEST_CASE("an unwritable output folder is reported before anything runs, and nothing is left behind") {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / cat("ternlab-unwritable-", getpid());
    fs::create_directories(dir);
    const fs::path blocker = dir / "a-file";
    std::ofstream(blocker) << "not a folder";
    const fs::path cfg = dir / "exp.toml";
    std::ofstream(cfg) << "output = \"" << (blocker / "results").string() << "\"\n" << kBase;
    std::ostringstream out;
    check_error([&] { run_experiment_file(cfg.string(), {}, out); }, cfg.string() + ":1", "key 'output'", "cannot create the output folder");
    CHECK(out.str().find("machine:") == std::string::npos);  // nothing ran
    if (geteuid() != 0) {  // root writes anywhere; a read-only folder only stops other users
      const fs::path ro = dir / "read-only";
      fs::create_directories(ro);
      fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec);
      check_error([&] { run_experiment_file(cfg.string(), {{"output=" + ro.string()}}, out); }, "--set output=", "not writable");
      CHECK(fs::is_empty(ro));
      fs::permissions(ro, fs::perms::owner_all);
    } else {
      MESSAGE("read-only folder case skipped: running as root, which may write anywhere");
    }
    fs::remove_all(dir);
  }

  TEST_CASE("model-bench: its tests are ppN and tgN items; anything else is refused at the key") {
    const std::string base = "kind = \"model-bench\"\npreset = \"tiny\"\n[[arm]]\nlayout = \"pq2_0\"\n";
    CHECK_NOTHROW(plan_of("tests = \"pp64,pp512,tg32\"\n" + base));
    CHECK_NOTHROW(plan_of(base));  // default pp64,tg32
    for (const char* bad : {"pp", "pp0", "tg-3", "pp64x", "qq8", "pp64,,tg4"})
      check_error([&] { plan_of(cat("tests = \"", bad, "\"\n") + base); }, "exp.toml:1: key 'tests'", "is not a test", "ppN");
    check_error([&] { plan_of("tests = \"pp8,pp8\"\n" + base); }, "exp.toml:1: key 'tests'", "'pp8' is listed twice");
    check_error([&] { plan_of("plan = \"guess\"\n" + base); }, "exp.toml:1: key 'plan'", "guess");
    // A peer's kernel for another layout's arm is refused at the arm.
    check_error([&] { plan_of(base + "kernel = \"ggml-tq2_0\"\n"); }, "exp.toml:5: key 'arm[0].kernel'", "ggml-tq2_0", "tq2_0", "pq2_0");
  }
}

