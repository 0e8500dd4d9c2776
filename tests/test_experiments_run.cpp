// Experiments end to end on tiny shapes: the method (verify before timing, fixed interleaving,
// per-round ratios, per-round ceilings), the results folder (CSV, JSON, Markdown, well-formed SVG),
// and nothing half-written when a run fails.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "common/xml.hpp"
#include "common/files.hpp"
#include "experiments/bench.hpp"
#include "experiments/compare.hpp"
#include "experiments/html.hpp"
#include "experiments/kinds.hpp"
#include "experiments/measure.hpp"
#include "experiments/progress.hpp"
#include "experiments/report.hpp"
#include "experiments/run_context.hpp"
#include "experiments/runner.hpp"
#include "kernels/catalog.hpp"
#include "kernels/cpu.hpp"
#include "kernels/dispatch.hpp"
#include "kernels/peers/peers.hpp"
#include "layouts/registry.hpp"
#include "tests/support.hpp"

using namespace ternlab;
using namespace ternlab::experiments;
using test::check_error;
namespace fs = std::filesystem;

namespace {

// The structure every SVG viewer needs: the XML declaration first, one <svg> root closed at the
// end, text elements closed, and every '&' an entity. No XML reader is a dependency of the build,
// so what a plot shows is checked against the result rows it was drawn from (see the tiny run).
std::string svg_problem(const std::string& s) {
  if (s.rfind("<?xml ", 0) != 0) return "no XML declaration at the start";
  const std::size_t root = s.find("<svg ");
  if (root == std::string::npos || s.find("<svg", root + 1) != std::string::npos) return "not exactly one <svg> element";
  const std::size_t last = s.find_last_not_of("\n");
  if (last == std::string::npos || last < 5 || s.compare(last - 5, 6, "</svg>") != 0) return "the <svg> root is not closed at the end";
  const auto count = [&](const std::string& what) {
    std::size_t n = 0;
    for (std::size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
    return n;
  };
  if (count("<text") != count("</text>")) return cat(count("<text"), " <text> but ", count("</text>"), " </text>");
  for (std::size_t at = s.find('&'); at != std::string::npos; at = s.find('&', at + 1)) {
    const std::string rest = s.substr(at + 1, 6);
    bool known = rest.rfind("#", 0) == 0;
    for (const char* e : {"amp;", "lt;", "gt;", "quot;", "apos;"}) known = known || rest.rfind(e, 0) == 0;
    if (!known) return cat("a bare '&' at ", at);
  }
  return "";
}

// One RFC 4180 record per line (no field here spans lines): quoted fields, doubled quotes.
std::vector<std::vector<std::string>> read_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') field += c, ++i;
      else if (c == '"') quoted = false;
      else field += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      row.push_back(std::move(field)), field.clear();
    } else if (c == '\n') {
      row.push_back(std::move(field)), field.clear();
      rows.push_back(std::move(row)), row.clear();
    } else if (c != '\r') {
      field += c;
    }
  }
  return rows;
}

std::size_t count_of(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + what.size())) ++n;
  return n;
}

fs::path fresh_dir(const std::string& tag) {
  static std::atomic<int> n{0};
  const fs::path d = fs::temp_directory_path() / cat("ternlab-", tag, "-", getpid(), "-", n++);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

fs::path write_config(const fs::path& dir, const std::string& text) {
  const fs::path p = dir / "exp.toml";
  std::ofstream(p) << "output = \"" << (dir / "results").string() << "\"\n" << text;
  return p;
}

// A timed experiment's config, made quick: no warmup, a 4 MiB ceiling buffer, 0.5 ms samples;
// `rest` adds the kind's own keys and arms.
fs::path write_quick_config(const fs::path& dir, const std::string& kind, int rounds, const std::string& rest) {
  return write_config(dir, cat("kind = \"", kind, "\"\nrounds = ", rounds,
                               "\nwarmup = 0\nceiling_mib = 4\nsample_ms = 0.5\n", rest));
}

// A timing of two verified arms, one round each, for reports that only need a well-formed result.
TimingResult quiet_timing() {
  TimingResult r;
  r.baseline = "a";
  r.rounds = 1;
  r.arms.resize(2);
  r.arms[0].setup.name = "a";
  r.arms[1].setup.name = "b";
  for (ArmTiming& a : r.arms) {
    a.verified = true;
    a.seconds = {1};
  }
  return r;
}

RunOptions quiet(std::vector<std::string> overrides = {}) {
  RunOptions o;
  o.overrides = std::move(overrides);
  o.progress = 0;
  return o;
}

}  // namespace

TEST_SUITE("experiments-run") {
  TEST_CASE("the SVG structure check accepts a plot's shape and rejects broken ones") {
    CHECK(svg_problem("<?xml version=\"1.0\"?>\n<svg a=\"1\"><text x='2'>a &amp; b</text><rect/></svg>\n") == "");
    CHECK_FALSE(svg_problem("<svg a=\"1\"></svg>").empty());
    CHECK_FALSE(svg_problem("<?xml version=\"1.0\"?><svg a=\"1\"><text>a & b</text></svg>").empty());
    CHECK_FALSE(svg_problem("<?xml version=\"1.0\"?><svg a=\"1\"><text>a</svg>").empty());
    CHECK_FALSE(svg_problem("<?xml version=\"1.0\"?><svg a=\"1\"></svg><svg b=\"2\"></svg>").empty());
    CHECK_FALSE(svg_problem("<?xml version=\"1.0\"?><svg a=\"1\">").empty());
  }

  TEST_CASE("plots are SVG documents with their labels escaped") {
    const std::string bars = svg_bars("a <b> & \"c\"", "GB/s", {{"x<y", 1, 0.5, 2}, {"z&w", 3, 2, 4}}, {{"ceiling", 5, 4, 6}});
    CHECK(svg_problem(bars) == "");
    CHECK(bars.find("x&lt;y") != std::string::npos);
    CHECK(bars.find("z&amp;w") != std::string::npos);
    const std::string sc = svg_scatter("s", "bits", "speedup", {{"p&q", 2.125, 1, 0.9, 1.1}, {"r", 1.6, 1.2, 1.1, 1.3}},
                                       [](double b) { return 2.0 / b; }, "bound", {{"control", 30, 25, 35}, {"far", 1e9, 1e9, 1e9}});
    CHECK(svg_problem(sc) == "");
    CHECK(sc.find("p&amp;q") != std::string::npos);
    CHECK(sc.find("far: off scale") != std::string::npos);
    // Stacked bars: one rect per positive part, each part named in the legend.
    const std::string st = svg_stacked_bars("p", "ms", {"matmul", "a&b"}, {{"arm<1>", {2, 1}, "total 3 ms"}, {"arm2", {4, 0}, ""}}, "cap");
    CHECK(svg_problem(st) == "");
    CHECK(count_of(st, "<rect x=") == 3 + 2);  // 3 parts drawn, 2 legend swatches
    CHECK(st.find(">a&amp;b</text>") != std::string::npos);
    CHECK(st.find(">arm&lt;1&gt;</text>") != std::string::npos);
    // A bar's own limit draws one tick.
    BarItem limited{"x", 1, 0.5, 2, "", 3};
    CHECK(count_of(svg_bars("t", "tok/s", {limited}, {}), "stroke=\"#d62728\" stroke-width=\"3\"") == 1);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const std::string sw = svg_sweep("s", "rows (swept)", "×", {"rows=1", "rows=2"}, {{"a&b", {1, nan}, {0.9, nan}, {1.1, nan}}}, 1.0);
    CHECK(svg_problem(sw) == "");
    CHECK(count_of(sw, "<circle") == 1 + 1);  // one point drawn (the other is missing), one legend mark
  }

  TEST_CASE("CSV fields follow RFC 4180: a name with a comma and a quote survives a round trip") {
    CHECK(csv_field("plain") == "plain");
    CHECK(csv_field("t2p, \"fast\"") == "\"t2p, \"\"fast\"\"\"");
    CHECK(csv_field("two\nlines") == "\"two\nlines\"");
    Rows rows;
    rows.columns = {"arm", "seconds", "reps"};
    rows.add({"t2p, \"fast\"", 0.25, 3});
    rows.add({"b", Cell(), std::int64_t(-1)});
    rows.add({"c", std::nan(""), 0});
    CHECK(csv_text(rows) == "arm,seconds,reps\r\n\"t2p, \"\"fast\"\"\",0.25,3\r\nb,,-1\r\nc,,0\r\n");
    const auto back = read_csv(csv_text(rows));
    REQUIRE(back.size() == 4);
    CHECK(back[1] == std::vector<std::string>{"t2p, \"fast\"", "0.25", "3"});
    check_error([&] { rows.add({"too few"}); }, "rounds.csv", "1 cells under 3 columns");
  }

  TEST_CASE("summary JSON goes through the library: NaN is null, text is escaped, members keep their order") {
    Json j = {{"name", "a \"quoted\", \\ name\n"}, {"nan", json_number(std::nan(""))}, {"x", json_number(0.1)},
              {"stat", stat_json(Stat{2, 1, 3, true})}, {"none", stat_json(Stat{})}};
    const Json back = Json::parse(json_text(j));
    CHECK(back["name"] == "a \"quoted\", \\ name\n");
    CHECK(back["nan"].is_null());
    CHECK(back["x"].get<double>() == 0.1);
    CHECK(back["stat"]["median"] == 2.0);
    CHECK(back["stat"]["max"] == 3.0);
    CHECK(back["none"].is_null());
    CHECK(back.begin().key() == "name");
  }

  TEST_CASE("an arm that fails verification is reported failed and never timed") {
    Pools pools;
    Progress progress(0, false);
    int good_calls = 0, bad_calls = 0;
    std::vector<std::string> order;
    std::vector<ArmSetup> arms(3);
    arms[0].name = "good";
    arms[0].call = [&] { ++good_calls, order.push_back("good"); };
    arms[0].verify = [&] { return std::string(); };
    arms[1].name = "bad";
    arms[1].call = [&] { ++bad_calls; };
    arms[1].verify = [] { return std::string("row 3: got 1, oracle 2"); };
    arms[2].name = "other";
    arms[2].call = [&] { order.push_back("other"); };
    arms[2].verify = [] { return std::string(); };
    MeasureOptions opt;
    opt.rounds = 3;
    opt.warmup = 2;
    opt.sample_seconds = 1e-12;  // one call per sample
    opt.ceiling_bytes = 1 << 20;
    opt.compute_macs = 1 << 12;
    const TimingResult r = measure_arms(std::move(arms), opt, pools, progress);
    CHECK(bad_calls == 0);
    CHECK_FALSE(r.arms[1].verified);
    CHECK(r.arms[1].seconds.empty());
    CHECK(r.arms[0].seconds.size() == 3);  // warm-up rounds discarded
    CHECK(r.ceiling_gbps.at(1).size() == 3);
    CHECK(r.handoff_us.empty());  // one thread hands no job over
    // Each kept round names the read loop that set its ceiling, one of the loops the CPU runs.
    REQUIRE(r.ceiling_loops.at(1).size() == 3);
    const std::vector<std::string> loops = MemoryCeiling::loops();
    for (const std::string& l : r.ceiling_loops.at(1)) CHECK(std::find(loops.begin(), loops.end(), l) != loops.end());
    // calibration once, then warm-up and kept rounds, interleaved in the fixed order
    REQUIRE(order.size() == 2 + 2 * 5);
    for (std::size_t i = 0; i < order.size(); i += 2) {
      CHECK(order[i] == "good");
      CHECK(order[i + 1] == "other");
    }
    RunSpec spec;
    spec.file = "x.toml";
    spec.kind = "gemv";
    const RunReport rep = report_timing(spec, r);
    CHECK_FALSE(rep.ok);
    CHECK(rep.markdown.find("| bad | — | 1 | — | — | **FAILED** | — |") != std::string::npos);
    CHECK(rep.markdown.find("row 3: got 1, oracle 2") != std::string::npos);
  }

  TEST_CASE("ratios are medians of per-round ratios; bound fractions use each round's own ceiling") {
    TimingResult r;
    r.baseline = "base";
    r.arms.resize(2);
    r.arms[0].setup.name = "base";
    r.arms[0].seconds = {2, 3, 10};
    r.arms[1].setup.name = "arm";
    r.arms[1].setup.bytes = 1e9;
    r.arms[1].seconds = {1, 3, 4};
    // per-round ratios 2, 1, 2.5: median 2 (a ratio of median times would say 1)
    const Stat s = stat_of(r.speedups(r.arms[1]));
    CHECK(s.median == 2.0);
    CHECK(s.min == 1.0);
    CHECK(s.max == 2.5);
    r.ceiling_gbps[1] = {1, 0.5, 0.25};
    const std::vector<double> f = r.bound_fractions(r.arms[1]);
    REQUIRE(f.size() == 3);
    CHECK(f[0] == doctest::Approx(1.0).epsilon(1e-12));  // 1 GB/s against 1 GB/s
    CHECK(f[1] == doctest::Approx(0.6666666667).epsilon(1e-9));
    CHECK(f[2] == doctest::Approx(1.0).epsilon(1e-12));
  }

  TEST_CASE("the tiny config runs end to end into one results folder") {
    const fs::path dir = fresh_dir("tiny");
    std::ostringstream out;
    const RunOutcome o = run_experiment_file(TERNLAB_SOURCE_DIR "/configs/tiny.toml", quiet({"output=" + (dir / "results").string()}), out);
    CHECK(o.exit_code == 0);
    REQUIRE_FALSE(o.folder.empty());
    const fs::path f = o.folder;
    for (const char* name : {"summary.md", "summary.json", "rounds.csv", "plan.txt", "experiment.toml", "gbps.svg", "speedup.svg"})
      CHECK_MESSAGE(fs::exists(f / name), name);
    // Only the final folder: the temporary one was renamed, not copied.
    CHECK(std::distance(fs::directory_iterator(dir / "results"), fs::directory_iterator()) == 1);
    CHECK_FALSE(fs::exists(f / "owner"));
    const auto csv = read_csv(read_text(f / "rounds.csv"));
    REQUIRE(csv.size() == 1 + 3 * 3);  // header + 3 kept rounds x (2 arms + control)
    const std::string md = read_text(f / "summary.md");
    // kernel = "best" by default: whatever dispatch's best_kernel picks on this CPU, recorded by name.
    const std::string pq2_best = best_kernel(find_layout("pq2_0")).variant.name();
    CHECK_MESSAGE(md.find(cat("| pq2_0 (baseline) | ", pq2_best, " | 1 | 2.125 |")) != std::string::npos, pq2_best);
    CHECK(md.find("| t2p |") != std::string::npos);
    CHECK(md.find("no-weights control") != std::string::npos);
    CHECK(md.find("exact") != std::string::npos);
    CHECK(md.find("machine: ") != std::string::npos);
    CHECK(out.str().find("| t2p |") != std::string::npos);  // the table is also printed
    const Json json = Json::parse(read_text(f / "summary.json"));
    CHECK(json["machine"]["cpu"] == this_machine().cpu);
    CHECK(json["machine"]["cores"] == logical_cores());
    CHECK(json["machine"]["git"].is_string());
    REQUIRE(json["runs"].size() == 1);
    const Json& run = json["runs"][0];
    CHECK(run["kind"] == "gemv");
    CHECK(run["rounds"] == 3);
    REQUIRE(run["arms"].size() == 3);
    CHECK(run["arms"][0]["name"] == "pq2_0");
    CHECK(run["arms"][0]["kernel"] == pq2_best);
    CHECK(run["arms"][0]["bits_per_weight"] == 2.125);
    // Every arm's median seconds per call is the median of its three rows in rounds.csv.
    const std::string gbps_svg = read_text(f / "gbps.svg");
    CHECK(svg_problem(gbps_svg) == "");
    CHECK(svg_problem(read_text(f / "speedup.svg")) == "");
    const auto& head = csv[0];
    const auto col = [&](const std::string& name) { return std::size_t(std::find(head.begin(), head.end(), name) - head.begin()); };
    REQUIRE(col("seconds") < head.size());
    for (const Json& arm : run["arms"]) {
      const std::string name = arm["name"];
      INFO(name);
      CHECK(arm["verified"] == true);
      std::vector<double> secs;
      for (std::size_t i = 1; i < csv.size(); ++i)
        if (csv[i][col("arm")] == name) secs.push_back(std::stod(csv[i][col("seconds")]));
      REQUIRE(secs.size() == 3);
      std::sort(secs.begin(), secs.end());
      CHECK(arm["seconds_per_call"]["median"].get<double>() == doctest::Approx(secs[1]).epsilon(1e-8));
      CHECK(arm["seconds_per_call"]["min"].get<double>() == doctest::Approx(secs[0]).epsilon(1e-8));
      if (arm["control"] == true) continue;
      // The bandwidth plot is drawn from these rows: each arm's bar is labelled with its median GB/s.
      CHECK(arm["fraction_of_byte_bound"]["median"].get<double>() > 0);
      CHECK(gbps_svg.find(cat(">", name, "</text>")) != std::string::npos);
      CHECK(gbps_svg.find(cat(">", sig(arm["gbps"]["median"].get<double>()), " GB/s")) != std::string::npos);
    }
    fs::remove_all(dir);
  }

  TEST_CASE("a sweep writes one set of files per run; gemm leftover strategies both verify") {
    const fs::path dir = fresh_dir("gemm");
    const fs::path cfg = write_quick_config(dir, "gemm", 1, R"(threads = [1, 2]
[shape]
rows = 16
cols = 256
tokens = 3
[[arm]]
layout = "t2p"
leftover = ["pad", "gemv"]
)");
    std::ostringstream out;
    const RunOutcome o = run_experiment_file(cfg.string(), quiet(), out);
    CHECK(o.exit_code == 0);
    // gemm plots GMAC/s against the int8 ceiling; a sweep adds sweep.svg with the swept threads on x.
    for (const char* name : {"run01-rounds.csv", "run02-rounds.csv", "run01-gmacs.svg", "run02-speedup.svg", "sweep.svg"})
      CHECK_MESSAGE(fs::exists(fs::path(o.folder) / name), name);
    CHECK_FALSE(fs::exists(fs::path(o.folder) / "run01-gbps.svg"));
    const std::string md = read_text(fs::path(o.folder) / "summary.md");
    CHECK(md.find("| t2p leftover=gemv |") != std::string::npos);
    CHECK(md.find("exp [threads=2]") != std::string::npos);
    CHECK(md.find("FAILED") == std::string::npos);
    CHECK(md.find("2 thr ") != std::string::npos);
    CHECK(md.find(", an empty pool job ") != std::string::npos);  // beside the two-thread ceiling
    // Each run measures its ceilings on its own thread count only, though both pools persist.
    const Json json = Json::parse(read_text(fs::path(o.folder) / "summary.json"));
    REQUIRE(json["runs"].size() == 2);
    for (int run = 0; run < 2; ++run) {
      const Json& c = json["runs"][std::size_t(run)]["ceiling_gbps"];
      REQUIRE(c.size() == 1);
      CHECK(c.begin().key() == std::to_string(run + 1));
      CHECK(c.begin().value()["median"].get<double>() > 0);
      const Json& loops = json["runs"][std::size_t(run)]["ceiling_loops"];
      REQUIRE(loops.size() == 1);
      CHECK(loops.begin().key() == std::to_string(run + 1));
      CHECK(loops.begin().value().size() == json["runs"][std::size_t(run)]["rounds"].get<std::size_t>());
      // The pool's empty-job trip on two threads only: one thread hands nothing over.
      const Json& handoff = json["runs"][std::size_t(run)]["handoff_us"];
      if (run == 0) CHECK(handoff.empty());
      else {
        REQUIRE(handoff.size() == 1);
        CHECK(handoff.begin().key() == "2");
        CHECK(handoff.begin().value()["median"].get<double>() > 0);
      }
      CHECK(json["runs"][std::size_t(run)]["sweep"]["threads"] == std::to_string(run + 1));
      const std::string gmacs = read_text(fs::path(o.folder) / cat("run0", run + 1, "-gmacs.svg"));
      CHECK(svg_problem(gmacs) == "");
      CHECK(gmacs.find(cat("int8 compute ceiling, ", run + 1, " thr")) != std::string::npos);
      for (const Json& arm : json["runs"][std::size_t(run)]["arms"])
        if (arm["control"] == false) CHECK(gmacs.find(cat(">", sig(arm["gmacs_per_s"]["median"].get<double>()), " GMAC/s")) != std::string::npos);
      CHECK(json["runs"][std::size_t(run)]["plots"] == Json::array({cat("run0", run + 1, "-gmacs.svg"), cat("run0", run + 1, "-speedup.svg")}));
    }
    CHECK(json["plots"] == Json::array({"sweep.svg"}));
    const std::string sweep = read_text(fs::path(o.folder) / "sweep.svg");
    CHECK(svg_problem(sweep) == "");
    CHECK(sweep.find(">threads=1</text>") != std::string::npos);
    CHECK(sweep.find(">threads=2</text>") != std::string::npos);
    CHECK(sweep.find(">t2p leftover=gemv</text>") != std::string::npos);
    fs::remove_all(dir);
  }

  TEST_CASE("weights: warm reads one copy; cold and weight_copies cycle verified copies; bad values and a set beyond memory are refused") {
    const fs::path dir = fresh_dir("weights");
    const auto run_with = [&](const std::string& weights) {
      const fs::path cfg = write_quick_config(dir, "gemv", 1, weights + "\n[shape]\nrows = 16\ncols = 256\n[[arm]]\nlayout = \"t2p\"\n[[arm]]\nlayout = \"pq2_0\"\n");
      std::ostringstream out;
      const RunOutcome o = run_experiment_file(cfg.string(), quiet(), out);
      REQUIRE(o.exit_code == 0);
      Json j = Json::parse(read_text(fs::path(o.folder) / "summary.json"));
      j["test_summary_md"] = read_text(fs::path(o.folder) / "summary.md");
      return j;
    };
    const auto options = [](const Json& j) {
      std::map<std::string, std::string> by_arm;
      for (const Json& arm : j["runs"][0]["arms"])
        if (arm["control"] == false) {
          CHECK_MESSAGE(arm["verified"] == true, arm["name"]);
          by_arm[arm["layout"].get<std::string>()] = arm["options"].get<std::string>();
        }
      return by_arm;
    };
    const Json warm = run_with("");
    CHECK(warm["runs"][0]["weights"] == "warm");
    for (const auto& [layout, opts] : options(warm)) CHECK_MESSAGE(opts.find("copies=") == std::string::npos, layout);
    const Json three = run_with("weight_copies = 3");
    CHECK(three["runs"][0]["weights"] == "cold");
    for (const auto& [layout, opts] : options(three)) CHECK_MESSAGE(opts.find("copies=3") != std::string::npos, layout);
    // tests/main.cpp sets TERNLAB_COLD_WEIGHTS_MIB=1: a 1088-byte matrix (16 x 256 at 2.125 bits, t2p
    // and pq2_0 alike) takes 964 copies to make 1 MiB; the summary says which set they fill.
    const Json cold = run_with("weights = \"cold\"");
    CHECK(options(cold) == std::map<std::string, std::string>{{"pq2_0", "copies=964"}, {"t2p", "copies=964"}});
    CHECK(cold["test_summary_md"].get<std::string>().find("1 MiB (TERNLAB_COLD_WEIGHTS_MIB)") != std::string::npos);
    // Without it: twice the cache, never under the floor.
    CHECK(cold_set_bytes(std::int64_t{32} << 20) == kColdSetFloor);
    CHECK(cold_set_bytes(std::int64_t{480} << 20) == std::int64_t{960} << 20);
    CHECK(cold_set_bytes(kColdSetFloor / 2) == kColdSetFloor);
    CHECK(warm["test_summary_md"].get<std::string>().find("weights = \"warm\"") != std::string::npos);
    std::ostringstream out;
    const fs::path bad = write_quick_config(dir, "gemv", 1, "weights = \"lukewarm\"\n[[arm]]\nlayout = \"t2p\"\n");
    check_error([&] { run_experiment_file(bad.string(), quiet(), out); }, "exp.toml", "weights", "lukewarm", "warm", "cold");
    const fs::path both = write_quick_config(dir, "gemv", 1, "weights = \"cold\"\nweight_copies = 2\n[[arm]]\nlayout = \"t2p\"\n");
    check_error([&] { run_experiment_file(both.string(), quiet(), out); }, "weight_copies", "not both");
    // 4096 copies of a 2 MiB matrix are refused before any is made, naming the key and the memory.
    setenv("TERNLAB_MEMORY_LIMIT_MIB", "512", 1);
    const fs::path big = write_quick_config(dir, "gemv", 1, "weight_copies = 4096\n[shape]\nrows = 8192\ncols = 1024\n[[arm]]\nlayout = \"t2p\"\n");
    check_error([&] { run_experiment_file(big.string(), quiet(), out); }, "weight_copies", "GiB", "TERNLAB_MEMORY_LIMIT_MIB");
    unsetenv("TERNLAB_MEMORY_LIMIT_MIB");
    fs::remove_all(dir);
  }

  TEST_CASE("the bandwidth kind and the oracle kind") {
    const fs::path dir = fresh_dir("kinds");
    const fs::path cfg = write_quick_config(dir, "bandwidth", 2, R"(buffer_mib = 4
[[arm]]
threads = [1, 2]
[[arm]]
name = "spawned"
threads = 2
spawn = true
)");
    std::ostringstream out;
    RunOutcome o = run_experiment_file(cfg.string(), quiet(), out);
    CHECK(o.exit_code == 0);
    CHECK(o.markdown.find("| threads=2 | streaming sum | 2 |") != std::string::npos);
    CHECK(o.markdown.find("| spawned |") != std::string::npos);

    const fs::path cfg2 = write_config(dir, R"(kind = "oracle"
[cases]
tokens = [1, 3, 5]
rows = [4, 6]
cols = [256, 384]
weights = ["random", "all_minus"]
activations = ["extreme"]
[[arm]]
layout = ["pq2_0", "t2p"]
)");
    std::ostringstream oracle_out;
    o = run_experiment_file(cfg2.string(), quiet(), oracle_out);
    CHECK(o.exit_code == 0);
    // Its rows are cases, not rounds, and it draws no plot, so it announces none.
    const auto cases = read_csv(read_text(fs::path(o.folder) / "cases.csv"));
    CHECK(cases.size() == 1 + 2 * 24);
    CHECK_FALSE(fs::exists(fs::path(o.folder) / "rounds.csv"));
    CHECK(oracle_out.str().find("plot") == std::string::npos);
    CHECK(oracle_out.str().find("(index.html, summary.md, summary.json, cases.csv)") != std::string::npos);
    const Json json = Json::parse(read_text(fs::path(o.folder) / "summary.json"));
    REQUIRE(json["runs"][0]["arms"].size() == 2);
    CHECK(json["runs"][0]["arms"][1]["name"] == "t2p");
    CHECK(json["runs"][0]["arms"][1]["exact"] == 12);
    CHECK(json["runs"][0]["arms"][1]["rejected_as_expected"] == 12);
    CHECK(json["runs"][0]["arms"][1]["mismatches"] == 0);
    // pq2_0 holds any row count: 24 exact; t2p rejects 6 rows: 12 exact, 12 rejected.
    // The default kernel is best_kernel's choice, so this checks the CPU's fastest path against the oracle.
    const std::string pq2_best = best_kernel(find_layout("pq2_0")).variant.name();
    const std::string t2p_best = best_kernel(find_layout("t2p")).variant.name();
    CHECK_MESSAGE(o.markdown.find(cat("| pq2_0 | ", pq2_best, " | 24 | 24 | 0 | 0 |")) != std::string::npos, o.markdown);
    CHECK_MESSAGE(o.markdown.find(cat("| t2p | ", t2p_best, " | 24 | 12 | 12 | 0 |")) != std::string::npos, o.markdown);
    fs::remove_all(dir);
  }

  TEST_CASE("the oracle kind's first-256 generator fails past the first 256 values only, as spurious, and the correct one nowhere") {
    const fs::path dir = fresh_dir("forced-max");
    const fs::path cfg = write_config(dir, R"(kind = "oracle"
[cases]
tokens = [1, 2]
rows = [4]
cols = [256, 512]
weights = ["random"]
activations = ["random", "constant"]
forced_max = ["first-256", "every-block"]
[[arm]]
layout = "t2p"
)");
    std::ostringstream out;
    const RunOutcome o = run_experiment_file(cfg.string(), quiet(), out);
    // Spurious failures are the generator's, not the kernel's: the run passes.
    CHECK(o.exit_code == 0);
    const Json json = Json::parse(read_text(fs::path(o.folder) / "summary.json"));
    const Json& arm = json["runs"][0]["arms"][0];
    CHECK(arm["cases"] == 16);
    CHECK(arm["mismatches"] == 0);
    // Random activations past the first 256 values get a scale of amax/127 != 1 (no -127 forced
    // there, and the random fill never draws one); a constant -127 pins every block anyway.
    CHECK(arm["spurious"] == 2);
    CHECK(arm["exact"] == 14);
    std::map<std::pair<std::string, int>, int> failing;
    for (const Json& g : json["runs"][0]["by_generator"]) failing[{g["forced_max"].get<std::string>(), g["cols"].get<int>()}] = g["failing"].get<int>();
    CHECK(failing == std::map<std::pair<std::string, int>, int>{
                         {{"every-block", 256}, 0}, {{"every-block", 512}, 0}, {{"first-256", 256}, 0}, {{"first-256", 512}, 2}});
    const auto cases = read_csv(read_text(fs::path(o.folder) / "cases.csv"));
    CHECK(std::count_if(cases.begin(), cases.end(), [](const auto& row) { return row.size() > 10 && row[10] == "spurious"; }) == 2);
    fs::remove_all(dir);
  }

  TEST_CASE("ternlab bench is a front end: its configs run through the runner, the peers included, ratios read from summary.json") {
    BenchSpec b;
    b.threads = {1};
    b.cols = {3};
    b.layouts = {"pq2_0", "t2p", "i2_s", "tq2_0", "tq1_0"};
    b.gemv_shape = b.gemm_shape = "128x256";
    b.rounds = 1;
    b.min_seconds = 1e-4;
    b.ceiling_mib = 4;
    const fs::path dir = fresh_dir("bench");
    b.output = (dir / "results").string();
    const std::vector<BenchConfig> configs = bench_configs(b);
    REQUIRE(configs.size() == 2);
    std::vector<Json> summaries;
    std::set<std::string> unpack_pairs;  // the kinds with a same-ISA pair
    for (const BenchConfig& c : configs) {
      INFO(c.toml);
      const bool gemm = c.kind == "gemm";
      // Every variant of every named layout this CPU runs (the peers' layouts too, where a strategy
      // serves them; the reference only with --reference; no named-only experiment kernel), then the
      // peers' own kernels where AVX2 is.
      std::set<std::string> want;
      for (const std::string& layout : b.layouts)
        for (const KernelVariant& k : kernels_for(find_layout(layout)))
          if (k.strategy != Strategy::reference && !named_only(k.strategy) && isa_supported(k.isa) && isa_at_or_below(k.isa, best_isa()) && k.gemv &&
              (!gemm || k.gemm))
            want.insert(cat(layout, " ", k.name()));
      if (isa_supported(Isa::avx2))
        for (const peers::PeerFormat& p : peers::kPeerFormats) want.insert(p.arm_label());
      // A t2p arm has a ratio to pq2_0's unpack arm where one of the same ISA is among the arms.
      for (const std::string& name : want)
        if (name.starts_with("t2p ") && want.count(cat("pq2_0 unpack/", name.substr(name.find('/') + 1)))) unpack_pairs.insert(c.kind);
      const Plan plan = load_plan_text(c.toml, "bench.toml", {});
      REQUIRE(plan.runs.size() == 1);
      std::set<std::string> got;
      for (const ArmSpec& a : plan.runs[0].arms) got.insert(a.name);
      CHECK(got == want);
      const fs::path file = dir / (c.kind + ".toml");
      std::ofstream(file) << c.toml;
      std::ostringstream out;
      const RunOutcome o = run_experiment_file(file.string(), quiet(), out);
      CHECK_MESSAGE(o.exit_code == 0, out.str());
      summaries.push_back(Json::parse(read_text(fs::path(o.folder) / "summary.json")));
      const Json& run = summaries.back()["runs"][0];
      CHECK(run["kind"] == c.kind);
      for (const Json& arm : run["arms"]) {
        CHECK_MESSAGE(arm["verified"] == true, arm["name"]);
        if (arm["kernel"] == "bitnet-i2s/avx2") {  // the peer arm, named by its measured standing
          CHECK(arm["layout"] == "i2_s");
          CHECK(arm["name"] == peers::find_peer("i2_s")->arm_label());
          CHECK(arm["bits_per_weight"].get<double>() == doctest::Approx(2.0 + 32.0 * 8 / (128 * 256)));
        }
        if (arm["kernel"] == "ggml-tq2_0/avx2") {  // the peer arm, named by its measured standing
          CHECK(arm["layout"] == "tq2_0");
          CHECK(arm["name"] == peers::find_peer("tq2_0")->arm_label());
          CHECK(arm["bits_per_weight"].get<double>() == doctest::Approx(66.0 * 8 / 256));
        }
        if (arm["kernel"] == "ggml-tq1_0/avx2") {  // the peer arm, named by its measured standing
          CHECK(arm["layout"] == "tq1_0");
          CHECK(arm["name"] == peers::find_peer("tq1_0")->arm_label());
          CHECK(arm["bits_per_weight"].get<double>() == doctest::Approx(54.0 * 8 / 256));
        }
      }
    }
    const std::string ratios = bench_ratios(summaries);
    CHECK((ratios.find("ratios to the stock pq2_0 unpack arm") != std::string::npos) == !unpack_pairs.empty());
    CHECK((ratios.find("  gemm3  t2p") != std::string::npos) == (unpack_pairs.count("gemm") || isa_supported(Isa::avx2)));
    CHECK((ratios.find("ratios to the best peer arm") != std::string::npos) == isa_supported(Isa::avx2));
    check_error([&] { b.layouts = {"t2p", "nope"}; bench_configs(b); }, "nope");
    if (isa_supported(Isa::avx2)) {
      const fs::path cfg = write_config(dir, "kind = \"gemv\"\n[shape]\nrows = 16\ncols = 384\n[[arm]]\nlayout = \"tq2_0\"\n");
      std::ostringstream out;
      check_error([&] { run_experiment_file(cfg.string(), quiet(), out); }, "exp.toml:7", "layout", "TQ2_0", "256", "384");
    }
    fs::remove_all(dir);
  }

  TEST_CASE("peer arms run where the CPU has AVX2 and are skipped, named in the report, where it has none") {
    const fs::path dir = fresh_dir("peer-skip");
    const fs::path cfg = write_quick_config(dir, "gemv", 1, R"([shape]
rows = 16
cols = 256
[[arm]]
layout = "t2p"
[[arm]]
layout = "tq2_0"
[[arm]]
layout = "tq1_0"
[[arm]]
layout = "i2_s"
)");
    std::ostringstream out;
    const RunOutcome o = run_experiment_file(cfg.string(), quiet(), out);
    REQUIRE_MESSAGE(o.exit_code == 0, out.str());
    const Json summary = Json::parse(read_text(fs::path(o.folder) / "summary.json"));
    const Json& run = summary["runs"][0];
    std::set<std::string> ran;
    for (const Json& arm : run["arms"])
      if (arm["control"] != true) ran.insert(arm["layout"].get<std::string>());
    const std::string md = read_text(fs::path(o.folder) / "summary.md");
    if (isa_supported(Isa::avx2)) {
      CHECK(ran == std::set<std::string>{"t2p", "tq2_0", "tq1_0", "i2_s"});
      CHECK_FALSE(run.contains("skipped_arms"));
    } else {
      CHECK(ran == std::set<std::string>{"t2p"});
      REQUIRE(run.contains("skipped_arms"));
      CHECK(run["skipped_arms"].size() == 3);
      CHECK(md.find("(ggml TQ2_0) skipped: its kernel is AVX2 code") != std::string::npos);
      CHECK(md.find("(ggml TQ1_0) skipped: its kernel is AVX2 code") != std::string::npos);
      // Naming the peer's kernel makes it required: refused before anything runs.
      const fs::path named = write_quick_config(dir, "gemv", 1, "[shape]\nrows = 16\ncols = 256\n[[arm]]\nlayout = \"tq2_0\"\nkernel = \"ggml-tq2_0/avx2\"\n");
      check_error([&] { run_experiment_file(named.string(), quiet(), out); }, "TQ2_0", "no AVX2");
    }
    fs::remove_all(dir);
  }

  TEST_CASE("a run that fails midway leaves nothing half-written") {
    register_kind({"test-throws", "fails while running", common_keys(), {}, [](const RunSpec&) {},
                   [](const RunSpec&, RunContext&) -> RunReport { fail("deliberate failure while running"); }, nullptr});
    const fs::path dir = fresh_dir("throws");
    const fs::path cfg = write_config(dir, "kind = \"test-throws\"\n");
    std::ostringstream out;
    check_error([&] { run_experiment_file(cfg.string(), quiet(), out); }, "deliberate failure");
    CHECK(fs::exists(dir / "results"));
    CHECK(fs::is_empty(dir / "results"));
    fs::remove_all(dir);
  }

  TEST_CASE("spread is the coefficient of variation of the per-round times") {
    CHECK(spread({1, 1, 1}) == 0.0);
    CHECK(spread({1, 2, 3}) == doctest::Approx(0.5));  // standard deviation 1, mean 2
    CHECK(spread({1, 3}) == doctest::Approx(std::sqrt(2.0) / 2));
    CHECK(std::isnan(spread({5})));
    CHECK(spread_cell({1, 2, 3}) == "50.0%");
    CHECK(spread_cell({5}) == "—");
  }

  TEST_CASE("noise: each warning fires on a constructed case and none on a quiet one") {
    RunSpec spec;
    spec.file = "x.toml";
    spec.kind = "gemv";
    const auto warnings_of = [&](const TimingResult& r, const std::string& check) {
      std::vector<NoiseWarning> found;
      for (const NoiseWarning& w : report_timing(spec, r).warnings)
        if (w.check == check) found.push_back(w);
      return found;
    };
    // Quiet: ceilings within 3%, every ratio near 2 (above 1), fractions near 20% and 2%.
    const auto quiet_run = [] {
      TimingResult r;
      r.baseline = "base";
      r.rounds = 3;
      r.arms.resize(2);
      r.arms[0].setup.name = "base";
      r.arms[0].verified = true;
      r.arms[0].seconds = {1, 2, 3};
      r.arms[1].setup.name = "fast";
      r.arms[1].verified = true;
      r.arms[1].setup.bytes = 1e9;
      r.arms[1].setup.macs = 1e8;
      r.arms[1].seconds = {0.5, 1.0, 1.5};
      r.ceiling_gbps[1] = {10, 10.2, 9.9};
      r.compute_gmacs[1] = {100, 101, 99};
      return r;
    };
    const TimingResult quiet = quiet_run();
    const RunReport rep = report_timing(spec, quiet);
    CHECK(rep.warnings.empty());
    CHECK(rep.markdown.find("| base (baseline) | — | 1 | — | — | exact | 2000 [1000–3000] | 50.0% |") != std::string::npos);
    CHECK(rep.json["arms"][0]["name"] == "base");
    CHECK(rep.json["arms"][0]["spread"].get<double>() == doctest::Approx(0.5));

    SUBCASE("a paired ceiling that moves by more than kCeilingDriftShare") {
      TimingResult r = quiet_run();
      r.ceiling_gbps[1] = {10, 12, 9.5};  // (12 - 9.5) / 10 = 25%
      const auto w = warnings_of(r, "ceiling_drift");
      REQUIRE(w.size() == 1);
      CHECK(w[0].text.find("memory read ceiling on 1 thread moved by 25.0%") != std::string::npos);
      r = quiet_run();
      r.compute_gmacs[1] = {100, 80, 100};
      REQUIRE(warnings_of(r, "ceiling_drift").size() == 1);
      CHECK(warnings_of(r, "ceiling_drift")[0].text.find("int8 compute ceiling") != std::string::npos);
      // Just under the limit: quiet.
      r = quiet_run();
      r.ceiling_gbps[1] = {10, 10 * (1 + kCeilingDriftShare * 0.9), 10};
      CHECK(warnings_of(r, "ceiling_drift").empty());
    }
    SUBCASE("a ratio range that crosses 1.0") {
      TimingResult r = quiet_run();
      r.arms[1].seconds = {0.5, 2.5, 1.5};  // ratios 2, 0.8, 2
      const auto w = warnings_of(r, "ratio_crosses_one");
      REQUIRE(w.size() == 1);
      CHECK(w[0].arm == "fast");
      CHECK(w[0].text.find("0.800–2.00×") != std::string::npos);
      // All rounds slower is a clear answer, not noise.
      r.arms[1].seconds = {2, 4, 6};
      CHECK(warnings_of(r, "ratio_crosses_one").empty());
    }
    SUBCASE("a fraction over 100%") {
      TimingResult r = quiet_run();
      r.arms[1].setup.bytes = 6e9;  // 12 GB/s against 10 in round 0: 120%
      const auto w = warnings_of(r, "fraction_over_100");
      REQUIRE(w.size() == 1);
      CHECK(w[0].text.find("fraction of the byte bound reached 120%") != std::string::npos);
      CHECK(w[0].text.find("not an upper bound") != std::string::npos);
      r = quiet_run();
      r.arms[1].setup.macs = 6e10;  // 120 GMAC/s against 100
      REQUIRE(warnings_of(r, "fraction_over_100").size() == 1);
      CHECK(warnings_of(r, "fraction_over_100")[0].text.find("int8 compute ceiling") != std::string::npos);
    }
    SUBCASE("a model whose weights a token could stay in the last-level cache") {
      const auto check = [](double bytes, std::int64_t cache) {
        NoiseChecks n;
        n.weights_in_cache("t2r", bytes, cache);
        return n.warnings;
      };
      const auto w = check(281e6, std::int64_t{480} << 20);  // preset mid on a 480 MiB L3
      REQUIRE(w.size() == 1);
      CHECK(w[0].check == "weights_fit_cache");
      CHECK(w[0].arm == "t2r");
      CHECK(w[0].text.find("281 MB of weights a token, under 2x the 480 MiB last-level cache") != std::string::npos);
      CHECK(check(6.8e9, std::int64_t{480} << 20).empty());  // the full-size model
      CHECK(check(kCacheWeightsFactor * (std::int64_t{32} << 20), std::int64_t{32} << 20).empty());  // at the factor: quiet
      CHECK(check(281e6, 0).empty());  // the cache size unknown
    }
  }

  TEST_CASE("noise warnings reach the printed output, summary.md and summary.json; a quiet run has none") {
    // Kinds that report a constructed timing: no real timing noise decides the outcome.
    const auto constructed = [](bool noisy) {
      return [noisy](const RunSpec& run, RunContext&) {
        TimingResult r;
        r.baseline = "base";
        r.rounds = 2;
        r.arms.resize(2);
        r.arms[0].setup.name = "base";
        r.arms[0].verified = true;
        r.arms[0].seconds = {1, 1};
        r.arms[1].setup.name = "other";
        r.arms[1].verified = true;
        r.arms[1].setup.bytes = 1e9;
        r.arms[1].seconds = noisy ? std::vector<double>{0.5, 2} : std::vector<double>{0.5, 0.5};
        r.ceiling_gbps[1] = noisy ? std::vector<double>{1, 10} : std::vector<double>{10, 10};
        return report_timing(run, r);
      };
    };
    register_kind({"test-noisy", "reports constructed noisy rounds", common_keys(), {}, [](const RunSpec&) {}, constructed(true), nullptr});
    register_kind({"test-quiet", "reports constructed quiet rounds", common_keys(), {}, [](const RunSpec&) {}, constructed(false), nullptr});
    const fs::path dir = fresh_dir("noise");
    std::ostringstream out;
    const RunOutcome o = run_experiment_file(write_config(dir, "kind = \"test-noisy\"\n").string(), quiet(), out);
    const std::string md = read_text(fs::path(o.folder) / "summary.md");
    const Json json = Json::parse(read_text(fs::path(o.folder) / "summary.json"));
    for (const std::string* text : {&md, &o.markdown})
      for (const char* part : {"**noise warnings (3):**", "## Noise warnings", "memory read ceiling on 1 thread moved by 164%",
                               "arm 'other': its ratio against its baseline ranges over 0.500–2.00×",
                               "arm 'other': its fraction of the byte bound reached 200%"})
        CHECK_MESSAGE(text->find(part) != std::string::npos, part);
    CHECK(out.str().find("## Noise warnings") != std::string::npos);
    // The same three in the run and in the top-level list, which also names the run.
    const Json& in_run = json["runs"][0]["warnings"];
    const Json& top = json["warnings"];
    REQUIRE(in_run.size() == 3);
    REQUIRE(top.size() == 3);
    const std::vector<std::string> checks = {"ceiling_drift", "ratio_crosses_one", "fraction_over_100"};
    for (std::size_t i = 0; i < 3; ++i) {
      CHECK(in_run[i]["check"] == checks[i]);
      CHECK(top[i]["check"] == checks[i]);
      CHECK(top[i]["run"] == 0);
      CHECK(top[i]["text"] == in_run[i]["text"]);
      CHECK(in_run[i]["arm"] == (i == 0 ? "" : "other"));
    }

    std::ostringstream quiet_out;
    const RunOutcome q = run_experiment_file(write_config(dir, "kind = \"test-quiet\"\n").string(), quiet(), quiet_out);
    const Json qjson = Json::parse(read_text(fs::path(q.folder) / "summary.json"));
    CHECK(q.markdown.find("oise warnings") == std::string::npos);
    CHECK(quiet_out.str().find("oise warnings") == std::string::npos);
    CHECK(qjson["runs"][0]["warnings"] == Json::array());
    CHECK(qjson["warnings"] == Json::array());
    fs::remove_all(dir);
  }

  TEST_CASE("passes of one arm each merge into one result marked not interleaved, each arm against its own ceilings") {
    const auto pass = [](const std::string& name, std::vector<double> seconds, std::vector<double> ceiling) {
      TimingResult p;
      p.rounds = 2;
      p.arms.resize(1);
      p.arms[0].setup.name = name;
      p.arms[0].setup.bytes = 1e9;
      p.arms[0].verified = true;
      p.arms[0].seconds = std::move(seconds);
      p.ceiling_gbps[1] = std::move(ceiling);
      p.ceiling_loops[1] = {"zmm, 1 stream", name == "base" ? "zmm, 1 stream" : "ymm, 2 streams"};
      return p;
    };
    std::vector<TimingResult> passes;
    passes.push_back(pass("base", {1, 1}, {2, 2}));
    passes.push_back(pass("arm", {0.5, 0.25}, {4, 8}));
    const TimingResult r = merge_passes(std::move(passes), "base", "");
    // The loops that set the ceilings follow their rounds, and the report counts them, most first.
    CHECK(r.ceiling_loops.at(1) == std::vector<std::string>{"zmm, 1 stream", "zmm, 1 stream", "zmm, 1 stream", "ymm, 2 streams"});
    CHECK(loops_text(r.ceiling_loops.at(1)) == "zmm, 1 stream in 3 of 4 rounds; ymm, 2 streams in 1");
    CHECK(loops_text({"ymm, 2 streams"}) == "ymm, 2 streams in 1 of 1 round");
    CHECK_FALSE(r.interleaved);
    REQUIRE(r.arms.size() == 2);
    CHECK(r.ceiling_gbps.at(1) == std::vector<double>{2, 2, 4, 8});  // every pass's rounds, in turn
    CHECK(r.bound_fractions(r.arms[0]) == std::vector<double>{0.5, 0.5});   // 1 GB/s against its own 2
    CHECK(r.bound_fractions(r.arms[1]) == std::vector<double>{0.5, 0.5});   // 2 and 4 GB/s against its own 4 and 8
    CHECK(r.speedups(r.arms[1]) == std::vector<double>{2, 4});
    RunSpec spec;
    spec.file = "x.toml";
    spec.kind = "gemv";
    const RunReport rep = report_timing(spec, r);
    CHECK(rep.markdown.find("arms NOT interleaved") != std::string::npos);
    CHECK(rep.markdown.find("| vs baseline (separate passes) |") != std::string::npos);
    CHECK(rep.json["interleaved"] == false);
    CHECK(rep.markdown.find("1 thr 3.00 GB/s [2.00–8.00] (set by zmm, 1 stream in 3 of 4 rounds; ymm, 2 streams in 1)") != std::string::npos);
    CHECK(rep.json["ceiling_loops"]["1"].size() == 4);
    CHECK(report_timing(spec, quiet_timing()).json["interleaved"] == true);
  }

  TEST_CASE("the progress bar stays silent when disabled and formats its ETA") {
    Progress p(10, false);
    for (int i = 0; i < 10; ++i) p.step("x");
    CHECK(p.done() == 10);
    CHECK(Progress::format_seconds(5) == "5s");
    CHECK(Progress::format_seconds(65) == "1:05");
    CHECK(Progress::format_seconds(3725) == "1h02");
  }
}

// The HTML pages: each results folder's index.html, `ternlab report`'s comparison page, their bad
// input, and a killed run's temporary folder. (tests/browser/report_page.sh opens both pages in
// Chromium.)
namespace {

void write_json(const fs::path& p, const Json& j) { std::ofstream(p) << json_text(j); }

}  // namespace

TEST_SUITE("experiments-run") {
  TEST_CASE("the Markdown of a summary becomes HTML tables, lists and inline plots") {
    const std::string html = markdown_html("# t <1>\n\n| arm | ms |\n|---|--:|\n| a\\|b | 1.5 |\n| c | 2 |\n\nnote **bold** `x<y`\n- w1\n- w2\n![p](p.svg)\n",
                                           [](const std::string& f) { return "<figure class=\"plot\">" + f + "</figure>\n"; });
    CHECK(html.find("<h1>t &lt;1&gt;</h1>") != std::string::npos);
    CHECK(count_of(html, "<tr>") == 3);  // header + 2 rows
    CHECK(html.find("<td>a|b</td><td class=\"num\">1.5</td>") != std::string::npos);
    CHECK(html.find("<strong>bold</strong> <code>x&lt;y</code>") != std::string::npos);
    CHECK(count_of(html, "<li>") == 2);
    CHECK(html.find("<figure class=\"plot\">p.svg</figure>") != std::string::npos);
    CHECK(inline_svg("<?xml version=\"1.0\"?>\n<svg a=\"1\"></svg>\n") == "<svg a=\"1\"></svg>\n");
  }

  TEST_CASE("every results folder holds index.html; ternlab report merges folders by machine") {
    const fs::path dir = fresh_dir("html");
    const fs::path results = dir / "results";
    // A temporary folder left by a killed run of this name: its process is gone, so the run removes it.
    const fs::path stale = results / ".tiny-20000101-000000.partial";
    fs::create_directories(stale);
    char host[256] = {};
    REQUIRE(gethostname(host, sizeof host - 1) == 0);
    std::ofstream(stale / "owner") << host << " 1073741823\n";  // above Linux's largest pid
    std::ostringstream out;
    const RunOutcome o = run_experiment_file(TERNLAB_SOURCE_DIR "/configs/tiny.toml", quiet({"output=" + results.string()}), out);
    REQUIRE(o.exit_code == 0);
    CHECK_FALSE(fs::exists(stale));
    CHECK(out.str().find("removed " + stale.string()) != std::string::npos);

    const fs::path f = o.folder;
    const Json json = Json::parse(read_text(f / "summary.json"));
    CHECK(json["results_version"] == kResultsVersion);
    const Json& run = json["runs"][0];
    REQUIRE(run["plots"].is_array());
    REQUIRE(run["plots"].size() >= 1);
    for (const Json& p : run["plots"]) CHECK_MESSAGE(fs::exists(f / p.get<std::string>()), p);
    const std::string page = read_text(f / "index.html");
    // Every plot summary.json lists is inline; every arm has its table row; the machine record and config are there.
    CHECK(count_of(page, "<figure class=\"plot\"") == run["plots"].size());
    for (const Json& p : run["plots"]) CHECK(page.find("data-file=\"" + p.get<std::string>() + "\"") != std::string::npos);
    CHECK(page.find(cat("data-expected-plots=\"", run["plots"].size(), "\"")) != std::string::npos);
    for (const Json& arm : run["arms"]) {
      const std::string name = arm["name"];
      CHECK_MESSAGE(page.find("<tr><td>" + name) != std::string::npos, name);
    }
    CHECK(page.find("<dt>cpu</dt><dd>" + xml_escape(this_machine().cpu) + "</dd>") != std::string::npos);
    CHECK(page.find("<dt>git</dt>") != std::string::npos);
    CHECK(page.find("<dt>features</dt>") != std::string::npos);
    CHECK(page.find("kind = &quot;gemv&quot;") != std::string::npos);  // experiment.toml, escaped
    CHECK(page.find("--set output=") != std::string::npos);

    // A second folder as if from another machine: the comparison groups the two apart.
    const fs::path other = results / "tiny-other";
    fs::copy(f, other);
    Json moved = json;
    moved["machine"]["cpu"] = "Other CPU <model>";
    write_json(other / "summary.json", moved);
    const auto folders = collect_result_folders({results.string()});
    REQUIRE(folders.size() == 2);
    const auto groups = group_by_machine(folders);
    REQUIRE(groups.size() == 2);
    CHECK(groups[0].second.size() == 1);
    CHECK(groups[1].second.size() == 1);
    std::ostringstream log;
    const fs::path report = dir / "report";
    const fs::path index = write_comparison_page({results.string()}, report, log);
    const std::string cmp = read_text(index);
    CHECK(count_of(cmp, "<section class=\"machine\">") == 2);
    CHECK(count_of(cmp, "<article class=\"results\">") == 2);
    CHECK(count_of(cmp, "<figure class=\"plot\"") == 2 * run["plots"].size());
    CHECK(cmp.find("<h2>Other CPU &lt;model&gt;</h2>") != std::string::npos);
    CHECK(log.str().find("2 results folders, 2 machines") != std::string::npos);
    // Its own page is overwritten; a folder with anything else is refused.
    write_comparison_page({f.string()}, report, log);
    check_error([&] { write_comparison_page({f.string()}, dir / "results", log); }, (dir / "results").string(), "--out", "refusing");

    // Bad input names the file and the field.
    check_error([&] { collect_result_folders({(dir / "report").string()}); }, (dir / "report").string(), "no summary.json");
    moved["results_version"] = kResultsVersion + 1;
    write_json(other / "summary.json", moved);
    check_error([&] { read_result_folder(other); }, (other / "summary.json").string(), "'results_version'");
    moved.erase("results_version");
    write_json(other / "summary.json", moved);
    check_error([&] { read_result_folder(other); }, (other / "summary.json").string(), "no field 'results_version'");
    moved["results_version"] = kResultsVersion;
    moved["machine"].erase("cpu");
    write_json(other / "summary.json", moved);
    check_error([&] { read_result_folder(other); }, "no field 'machine.cpu'");
    moved["machine"]["cpu"] = "x";
    write_json(other / "summary.json", moved);
    fs::remove(other / run["plots"][0].get<std::string>());
    check_error([&] { read_result_folder(other); }, "field 'runs[0].plots'", run["plots"][0].get<std::string>());
    fs::remove_all(dir);
  }
}

TEST_SUITE("experiments-run") {
  TEST_CASE("report A B: shared arms side by side, ratios to the first folder, noise flags and --fail-above") {
    const auto folder = [](const std::string& name, std::vector<std::tuple<std::string, double, double, double>> arms) {
      ResultFolder f;
      f.dir = name;
      Json list = Json::array();
      for (const auto& [arm, median, lo, hi] : arms)
        list.push_back({{"name", arm}, {"layout", "t2r"}, {"threads", 1}, {"seconds_per_call", {{"median", median}, {"min", lo}, {"max", hi}}}});
      f.summary = {{"machine", {{"cpu", "test cpu"}, {"git", "abc"}, {"started_utc", "2026-12-05T00:00:00Z"}}},
                   {"runs", Json::array({{{"name", "run"}, {"decode", {{"arms", list}}}}})}};
      return f;
    };
    const std::vector<ResultFolder> folders = {
        folder("before", {{"x", 1.0, 0.95, 1.05}, {"y", 2.0, 1.9, 2.1}, {"only-before", 1, 1, 1}}),
        folder("after", {{"x", 1.5, 1.45, 1.55}, {"y", 2.05, 2.0, 2.1}, {"only-after", 1, 1, 1}})};
    const FolderComparison c = compare_folders(folders);
    REQUIRE(c.shared.size() == 2);
    const SharedArm& x = c.shared[0];
    const SharedArm& y = c.shared[1];
    CHECK(x.arm == "x");
    CHECK(x.test == "decode");
    CHECK(*x.ratio[1] == doctest::Approx(1.0 / 1.5));
    CHECK(!x.within_noise[1]);
    CHECK(*y.ratio[1] == doctest::Approx(2.0 / 2.05));
    CHECK(y.within_noise[1]);  // [2.0, 2.1] overlaps [1.9, 2.1]
    // x is 1.5x slower, outside noise: a regression above 10%, not above 60%; y is within noise.
    const auto ten = regressions(c, 10);
    REQUIRE(ten.size() == 1);
    INFO(ten[0]);
    CHECK(ten[0].find("run / decode / x: after 1.5") == 0);
    CHECK(ten[0].find("x slower than before (1.5") != std::string::npos);
    CHECK(regressions(c, 60).empty());
    // merged.csv and merged.json: every arm of every folder; the shared ones with their ratios.
    CHECK(c.rows.rows.size() == 6);
    CHECK(c.json["shared"].size() == 2);
    CHECK(c.json["shared"][0]["folders"][1]["within_noise"] == false);
    const std::string md = shared_arms_markdown(c);
    CHECK(md.find("| run | decode | x |") != std::string::npos);
    CHECK(md.find("(within noise)") != std::string::npos);
    CHECK(md.find("only-before") == std::string::npos);
    CHECK(shared_arms_html(c).find("Side by side") != std::string::npos);
    // No shared arm: said, not an empty table.
    const FolderComparison none = compare_folders({folders[0], folder("other", {{"z", 1, 1, 1}})});
    CHECK(none.shared.empty());
    CHECK(shared_arms_markdown(none).find("nothing to put side by side") != std::string::npos);
  }
}
