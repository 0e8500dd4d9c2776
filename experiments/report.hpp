// What a run leaves behind: typed raw rows (written as CSV), a JSON summary object, a Markdown
// table (also printed) and SVG plots. Kinds fill a RunReport; report_timing turns a measured
// TimingResult into one.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "experiments/results.hpp"

namespace ternlab::experiments {

struct TimingResult;
struct RunSpec;
struct Stat;

// Noise made visible. Every timed arm's table row shows its spread, the coefficient of variation
// of its per-round seconds per call; the checks below become warnings after the run's table, in
// summary.md and in summary.json (docs/experiments.md, "Noise").
//
// A paired ceiling whose (max - min) / median over the run's kept rounds exceeds this share: the
// machine changed under the arms (a quiet machine holds its streaming read within a few percent;
// a busy one can swing the same pair of arms from below 1x to over 20x).
inline constexpr double kCeilingDriftShare = 0.10;
// A fraction of a ceiling above this in any round: that ceiling was not an upper bound for the arm
// (its bytes came partly from cache, or the ceiling measured low), so the figure is no fraction.
inline constexpr double kFractionLimit = 1.0;
// A model whose weights a token are under this many times the last-level cache: part of them can
// stay cached from one token to the next, so a decode's fraction of the memory read ceiling
// measures the cache too, and depends on what ran just before (a 281 MB model on a host reporting
// 480 MiB of L3 decoded at 80-88% alone and 65-74% after another arm).
inline constexpr double kCacheWeightsFactor = 2.0;

// Sample standard deviation / mean; NaN for fewer than 2 values or a non-positive mean.
double spread(const std::vector<double>& v);
std::string spread_cell(const std::vector<double>& v);  // "4.1%", or "—" under 2 rounds

struct NoiseWarning {
  std::string check;  // "ceiling_drift", "ratio_crosses_one", "fraction_over_100" or "weights_fit_cache"
  std::string arm;    // empty for a ceiling
  std::string text;   // one sentence, with the numbers
};

// Collects the warnings of one run, check by check.
struct NoiseChecks {
  std::vector<NoiseWarning> warnings;
  // `what` names the ceiling ("memory read ceiling on 2 threads").
  void ceiling(const std::string& what, const std::vector<double>& per_round, const std::string& unit);
  // Every paired ceiling of a timed run (memory read and int8 compute, per thread count).
  void ceilings(const TimingResult& r);
  // Per-round ratios of an arm against its baseline (1.0 both sides of the range: no winner).
  void ratio(const std::string& arm, const std::vector<double>& per_round);
  // Per-round fractions of a ceiling; `what` is the column ("decode bandwidth fraction").
  void fraction(const std::string& arm, const std::string& what, const std::vector<double>& per_round);
  // The fewest weight bytes a token of any arm (`arm`'s) against the last-level cache (0: unknown).
  void weights_in_cache(const std::string& arm, double bytes_per_token, std::int64_t cache_bytes);
};
std::string warnings_markdown(const std::vector<NoiseWarning>& w);  // "" when none
Json warnings_json(const std::vector<NoiseWarning>& w);  // a JSON array

struct RunReport {
  std::string title;
  std::string markdown;                                    // table and notes
  Rows rows;                                               // raw rows (rounds.csv, or the kind's own file)
  Json json;                                               // one JSON object
  std::vector<std::pair<std::string, std::string>> svgs;   // file suffix ("gbps.svg"), content
  bool ok = true;                                          // false: an arm failed verification
  std::vector<NoiseWarning> warnings;                      // printed and written by the runner

  // Headline numbers of each verified arm (model kinds: tok_s, read_ceiling_fraction, perplexity,
  // max_logit_diff), for callers that put several runs side by side (ternlab quickstart).
  struct ArmValues {
    std::string arm, layout;
    std::vector<std::pair<std::string, double>> values;
    double get(const std::string& key) const {
      for (const auto& [k, v] : values)
        if (k == key) return v;
      return std::numeric_limits<double>::quiet_NaN();
    }
  };
  std::vector<ArmValues> arm_values;
};

// The machine and build, recorded in every summary.
struct Machine {
  std::string cpu, features, compiler, flags, build_type, git, int8_loop, hostname, started_utc;
  int cores = 0;
  std::int64_t memory_bytes = 0;  // physical memory (0: unknown)
};
Machine this_machine();
// This host's name ("" when it has none) and the time now as 2026-12-01T17:50:00Z.
std::string host_name();
std::string utc_now();
// Whether a process recorded as (host, pid) is known to be gone: only on this host, where it can be asked.
bool process_gone(const std::string& host, long pid);
Json machine_json(const Machine& m);
// The run's point in its sweep: {"key": "value"} per swept key.
Json sweep_json(const RunSpec& run);
std::string machine_markdown(const Machine& m);

// A run's arms as summary.json holds them (the arms of each test a run holds, as the speed kind's
// "prefill" and "decode", named "prefill: ARM"), the no-weights control left out: whether each
// verified and its speedup against its baseline (invalid where the kind has no ratio).
struct ArmSpeedup {
  std::string name;
  bool verified = true;
  double median = 0, min = 0, max = 0;
  bool valid = false;
};
std::vector<ArmSpeedup> arm_speedups(const Json& run);
// The tests a run holds, each with its arms: the run itself when it has arms (test ""), and each
// object member that does (the speed kind's "prefill" and "decode").
std::vector<std::pair<std::string, const Json*>> run_tests(const Json& run);

RunReport report_timing(const RunSpec& run, const TimingResult& r);
// Words every timed table shares: how the arms were ordered, the ratio column's header and note
// (they say "separate passes" when the arms were not interleaved), and what the spread is.
std::string arms_order_text(const TimingResult& r);
std::string ratio_header(const TimingResult& r);
std::string ratio_note(const TimingResult& r);
std::string spread_note();

// More threads than logical cores time-slice the arm: kept (thread counts are swept past the core
// count on purpose) but flagged in the plan, the tables ("8 (> 2 cores)") and the JSON.
int logical_cores();
bool oversubscribed(int threads);
std::string threads_cell(int threads);
// A line for the notes under a table when any of `threads` exceeds the cores, else "".
std::string oversubscribed_note(const std::vector<int>& threads);

// Table cells: three significant digits; "median [min–max]" scaled and suffixed.
std::string sig(double v);
std::string with_range(const Stat& s, const std::string& suffix = "", double scale = 1);
// One thread count's read ceiling over the kept rounds and the loops that set it:
// "1 thr 36.0 GB/s [34.5–37.4] (set by avx512 zmm, 2 streams in 4 of 5 rounds; ...)".
std::string ceiling_text(const TimingResult& r, int threads, const std::vector<double>& gbps);
// thread count -> the median and range of its kept rounds (ceilings in summary.json).
Json stats_by_threads(const std::map<int, std::vector<double>>& per_round);
// thread count -> the read loop that set each kept round's ceiling.
Json loops_json(const std::map<int, std::vector<std::string>>& loops);

// Plots. Each returns a complete SVG document.
struct BarItem {
  std::string label;
  double median = 0, min = 0, max = 0;
  std::string note;  // printed after the value, e.g. "61% of bound"
  double limit = std::numeric_limits<double>::quiet_NaN();  // a red tick on the bar's row (its own ceiling)
};
struct RuleLine {
  std::string label;
  double value = 0, min = 0, max = 0;  // a band from min to max around the line
};
// `caption` says what a bar and its whisker are, under the axis.
std::string svg_bars(const std::string& title, const std::string& unit, const std::vector<BarItem>& bars,
                     const std::vector<RuleLine>& rules,
                     const std::string& caption = "bar: median over kept rounds; whisker: min–max");

// One bar per arm split into parts (a profile's ops), each part a colour named in the legend.
struct StackedBar {
  std::string label;
  std::vector<double> parts;  // one per part name, in order
  std::string note;           // printed after the bar
};
std::string svg_stacked_bars(const std::string& title, const std::string& unit, const std::vector<std::string>& part_names,
                             const std::vector<StackedBar>& bars, const std::string& caption);

// The swept variable on the x axis: one column per sweep point (its label), one line per arm
// (series), y linear from 0 with a rule at `rule` (1.0 for a speedup). Missing values are NaN.
struct SweepSeries {
  std::string name;
  std::vector<double> median, min, max;  // one per column
};
std::string svg_sweep(const std::string& title, const std::string& xlabel, const std::string& ylabel,
                      const std::vector<std::string>& columns, const std::vector<SweepSeries>& series, double rule);

struct ScatterPoint {
  std::string label;
  double x = 0, y = 0, ymin = 0, ymax = 0;
};
// y on a log axis; `curve(x)` drawn dashed (the byte bound); `rule` a horizontal reference (control).
std::string svg_scatter(const std::string& title, const std::string& xlabel, const std::string& ylabel,
                        const std::vector<ScatterPoint>& points, const std::function<double(double)>& curve,
                        const std::string& curve_label, const std::vector<RuleLine>& rules);

// One line per series through its points (sorted by x), whiskers from ymin to ymax, linear axes
// from 0; `rules` are horizontal references (the speculative kind: 1x, no speedup). `point_note`
// says what a point and its whisker are; `connect` false draws the points alone (series whose
// points are separate arms, not a swept variable).
struct LineSeries {
  std::string label;
  std::vector<ScatterPoint> points;
};
std::string svg_lines(const std::string& title, const std::string& xlabel, const std::string& ylabel, const std::vector<LineSeries>& series,
                      const std::vector<RuleLine>& rules,
                      const std::string& point_note = "point: median over kept rounds; whisker: min–max", bool connect = true);

}  // namespace ternlab::experiments
