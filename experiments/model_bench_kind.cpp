// The `model-bench` kind: llama-bench's tests on a whole model, through the runner, so that
// `ternlab model bench` leaves a results folder like any `ternlab run` (summary.json, the raw rows,
// the plots, index.html) and `ternlab report` compares two of them.
//
//   tests        "pp64,pp512,tg32,tg128": ppN is one N-token pseudo-random prompt from an empty
//                context (gemm batches of prefill_chunk), tgN is N single-token forward passes from
//                an empty context (gemv), as llama-bench's pp and tg tests are
//   rounds       the timed repetitions of every test (llama-bench's -r), after `warmup` untimed
//   sample_ms    0.001 keeps one call per repetition, as llama-bench times them
//
// Every test is one phase of the runner's model arms (model_arms.hpp): arms loaded once, greedy
// tokens checked against the baseline before timing, interleaved round by round beside the
// memory read ceiling. Beside each test's table (medians, ratios, fractions of the ceiling) the
// report gives llama-bench's summary: t/s as mean ± standard deviation over the repetitions, under
// llama-bench's field names in summary.json ("records").
#include <charconv>
#include <cmath>
#include <map>
#include <sstream>
#include <utility>

#include "common/strings.hpp"
#include "common/table.hpp"
#include "experiments/arms.hpp"
#include "experiments/kinds.hpp"
#include "experiments/measure.hpp"
#include "experiments/model_arms.hpp"
#include "experiments/report.hpp"
#include "experiments/run_context.hpp"
#include "kernels/planner.hpp"
#include "model/experiments.hpp"

namespace ternlab::experiments {

namespace {

struct BenchTest {
  std::string name;  // "pp64", "tg32"
  int n_prompt = 0, n_gen = 0;
  int tokens() const { return n_prompt + n_gen; }
  bool decode() const { return n_gen > 0; }
};

constexpr int kMaxTestTokens = 1 << 20;

std::vector<BenchTest> bench_tests(const RunSpec& run) {
  const Located at = run.at("tests");
  const std::string text = at ? as_string(at) : "pp64,tg32";
  std::vector<BenchTest> tests;
  std::stringstream items(text);
  for (std::string item; std::getline(items, item, ',');) {
    int n = 0;
    const bool pp = item.starts_with("pp"), tg = item.starts_with("tg");
    const char* digits = item.data() + 2;
    const auto [end, ec] = std::from_chars(digits, item.data() + item.size(), n);
    if (!(pp || tg) || item.size() < 3 || ec != std::errc() || end != item.data() + item.size() || n < 1 || n > kMaxTestTokens)
      fail_at(at, "'", item, "' is not a test: ppN (an N-token prompt) or tgN (N decoded tokens), N from 1 to ", kMaxTestTokens);
    for (const BenchTest& t : tests)
      if (t.name == item) fail_at(at, "test '", item, "' is listed twice");
    tests.push_back({item, pp ? n : 0, tg ? n : 0});
  }
  if (tests.empty()) fail_at(at, "no test listed (give ppN and tgN items, comma-separated)");
  return tests;
}

PlanMode run_plan(const RunSpec& run) {
  const Located at = run.at("plan");
  return at ? relocated(at, [&] { return parse_plan_mode(as_string(at)); }) : PlanMode::automatic;
}

void validate(const RunSpec& run) {
  validate_model_kind(run);
  bench_tests(run);
  key::requantise_scales(run);
  run_plan(run);
}

std::pair<double, double> mean_and_sd(const std::vector<double>& v) {
  if (v.empty()) return {std::nan(""), std::nan("")};
  double mean = 0, ss = 0;
  for (double x : v) mean += x;
  mean /= double(v.size());
  for (double x : v) ss += (x - mean) * (x - mean);
  return {mean, v.size() > 1 ? std::sqrt(ss / double(v.size() - 1)) : 0.0};
}

RunReport run_model_bench(const RunSpec& run, RunContext& ctx) {
  const std::vector<BenchTest> tests = bench_tests(run);
  const int chunk = int(key::prefill_chunk(run));
  ModelArms m = plan_arms(run, ctx, 8, int(key::verify_tokens(run)));
  for (ModelArm& a : m.arms) {
    a.requantise_scales = key::requantise_scales(run);
    a.plan = run_plan(run);
  }
  std::map<int, std::vector<std::int32_t>> streams;  // by length, drawn once the baseline has told the vocabulary
  const auto prepare = [&](std::size_t, ModelArm& a) {
    std::vector<ArmSetup> setups;
    for (const BenchTest& t : tests) {
      std::vector<std::int32_t>& s = streams[t.tokens()];
      if (s.empty()) s = model::random_tokens(t.tokens(), std::max(m.vocab, 1), run_seed(run) + 1);
      setups.push_back(speed_setup(a, t.decode(), t.tokens(), chunk, s));
    }
    return setups;
  };
  const std::vector<TimingResult> r = run_arms(run, ctx, m, std::vector<MeasureOptions>(tests.size(), measure_options(run)), prepare);

  RunReport rep;
  rep.title = run.name();
  Json js{{"index", run.index}, {"name", rep.title}, {"kind", run.kind}, {"tests", Json::array()}};
  std::ostringstream md;
  md << "### " << rep.title << "\n\n" << model_line(m)
     << "kind model-bench: llama-bench's tests (ppN: one N-token prompt, tgN: N tokens decoded one at a time, both from an empty "
        "context); t/s as mean ± standard deviation over "
     << r.front().rounds << " timed repetitions after " << r.front().warmup << " untimed; arms interleaved within every repetition; "
     << "every arm's greedy tokens checked against the baseline '" << m.arms[m.baseline].name << "' before timing.\n\n";
  Table table({{"arm"}, {"layout"}, {"kernel"}, {"threads", Align::right}, {"MB/token", Align::right}, {"test"},
               {"t/s", Align::right}, {"of read ceiling", Align::right}, {"greedy check"}});
  Json records = Json::array();
  for (std::size_t k = 0; k < tests.size(); ++k) {
    const BenchTest& t = tests[k];
    RunReport one = speed_report(run, m, r[k], t.decode(), t.tokens());
    rep.ok = rep.ok && one.ok;
    if (rep.rows.columns.empty()) rep.rows = one.rows;
    else rep.rows.rows.insert(rep.rows.rows.end(), one.rows.rows.begin(), one.rows.rows.end());
    for (auto& svg : one.svgs) rep.svgs.emplace_back(t.name + "_" + svg.first, std::move(svg.second));
    for (NoiseWarning& w : one.warnings) {
      w.text = cat(t.name, ": ", w.text);
      rep.warnings.push_back(std::move(w));
    }
    for (const RunReport::ArmValues& v : one.arm_values) rep.arm_values.push_back(v);
    for (std::size_t i = 0; i < m.arms.size(); ++i) {
      const ModelArm& a = m.arms[i];
      const ArmTiming& timing = r[k].arms[i];
      std::vector<double> ts, ns;
      for (double sec : timing.seconds) ts.push_back(t.tokens() / sec), ns.push_back(sec * 1e9);
      const auto [avg_ts, sd_ts] = mean_and_sd(ts);
      const auto [avg_ns, sd_ns] = mean_and_sd(ns);
      const Stat fraction = stat_of(r[k].bound_fractions(timing));
      const std::uint64_t bytes = a.model ? a.model->ternary_bytes_per_token() : 0;
      table.add({a.name, a.layout, a.kernel, threads_cell(a.threads), fixed_text(double(bytes) / 1e6, 2), t.name,
                 timing.verified ? cat(fixed_text(avg_ts, 2), " ± ", fixed_text(sd_ts, 2)) : "—",
                 fraction.valid ? fixed_text(fraction.median * 100, 1) + "%" : "—", check_cell(a, i == m.baseline)});
      records.push_back({{"model_filename", a.path}, {"arm", a.name}, {"layout", a.layout}, {"kernel", a.kernel},
                         {"n_threads", a.threads}, {"ternary_bytes_per_token", bytes}, {"test", t.name}, {"n_prompt", t.n_prompt},
                         {"n_gen", t.n_gen}, {"repetitions", ts.size()}, {"avg_ts", json_number(avg_ts)},
                         {"stddev_ts", json_number(sd_ts)}, {"avg_ns", json_number(avg_ns)}, {"stddev_ns", json_number(sd_ns)},
                         {"samples_ts", ts}, {"samples_ns", ns}, {"read_ceiling_fraction", stat_json(fraction)},
                         {"verified", timing.verified},
                         {"greedy_check", i == m.baseline ? "baseline" : a.failure.empty() ? "equal" : a.failure}});
    }
    js[t.name] = std::move(one.json);
    js["tests"].push_back(t.name);
    md << one.markdown << "\n";
  }
  js["records"] = std::move(records);
  rep.markdown = md.str() + "#### " + rep.title + ": llama-bench summary\n\n" + table.markdown() + arms_footer(m) +
                 "\nt/s: mean ± standard deviation over the timed repetitions; of read ceiling: ternary weight bytes streamed per "
                 "repetition / its time / that repetition's memory read ceiling on the arm's thread count, median.\n";
  rep.json = std::move(js);
  return rep;
}

std::int64_t units(const RunSpec& run) {
  return model_units(run, 5, 1) + std::int64_t(bench_tests(run).size() - 1) * measure_units(run.arms.size(), measure_options(run));
}

// Tokens one session holds at most: its longest test.
std::int64_t context_tokens(const RunSpec& run) {
  std::int64_t n = 0;
  for (const BenchTest& t : bench_tests(run)) n = std::max<std::int64_t>(n, t.tokens());
  return n;
}

}  // namespace

void register_model_bench_kind() {
  register_plan_notes("model-bench", memory_notes);
  KindInfo bench{"model-bench",
                 "llama-bench's pp and tg tests per arm (layout x kernel x threads x load): t/s as mean ± standard deviation over "
                 "repetitions, beside the read ceiling",
                 with(model_keys(), {{"tests", Type::string, false, "comma-separated ppN and tgN tests (default \"pp64,tg32\")"},
                                     key::requantise_scales.spec("LOSSY, by name: round the file's scales to each arm's layout's scale "
                                                                 "format where the exact repack refuses"),
                                     {"plan", Type::string, false,
                                      "auto (default: the wisdom file's measured choice, else the estimate), estimate (the ISA "
                                      "ladder) or measure: arms without a kernel time the candidates once, or read the wisdom file"}}),
                 {}, validate, run_model_bench, units};
  bench.model.context_tokens = context_tokens;
  bench.model.test_in_title = true;
  bench.small_overrides = timed_small_overrides({"preset=tiny", "verify_tokens=2", "tests=pp8,tg4"});
  register_kind(std::move(bench));
}

}  // namespace ternlab::experiments
