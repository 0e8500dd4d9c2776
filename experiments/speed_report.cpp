// What the speed kinds (prefill_kind.cpp, decode_kind.cpp, speed_kind.cpp) and model-bench share:
// one timed pp N or tg N phase over planned arms, its report (speed_report) and the cache check.
#include <algorithm>
#include <cmath>
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
#include "kernels/cpu.hpp"
#include "model/experiments.hpp"

namespace ternlab::experiments {

// The weights_fit_cache check on the arm whose calls (`tokens_per_call` tokens) read the fewest weight bytes.
void cache_check(const ModelArms& m, const TimingResult& r, int tokens_per_call, NoiseChecks& noise) {
  std::size_t fewest = m.arms.size();
  for (std::size_t i = 0; i < m.arms.size(); ++i)
    if (r.arms[i].setup.weight_bytes > 0 &&
        (fewest == m.arms.size() || r.arms[i].setup.weight_bytes < r.arms[fewest].setup.weight_bytes))
      fewest = i;
  if (fewest < m.arms.size())
    noise.weights_in_cache(m.arms[fewest].name, r.arms[fewest].setup.weight_bytes / tokens_per_call,
                           last_level_cache_bytes());
}

// The pp n or tg n table of the timed arms.
RunReport speed_report(const RunSpec& run, const ModelArms& m, const TimingResult& r, bool decode, int n) {
  const int verify_n = int(key::verify_tokens(run));
  const int chunk = int(key::prefill_chunk(run));
  RunReport rep;
  const std::string label = cat(decode ? "tg" : "pp", n);
  rep.title = find_kind(run.kind, run.at("kind")).model.test_in_title ? cat(run.name(), " ", label) : run.name();
  const std::string prefix = decode ? "decode_" : "prefill_";
  std::ostringstream md;
  md << "### " << rep.title << "\n\n" << model_line(m);
  md << "kind " << run.kind << ": " << label << " = "
     << (decode ? cat(n, " single-token forward passes (gemv) from an empty context, teacher-forced pseudo-random tokens")
                : cat("one ", n, "-token pseudo-random prompt from an empty context (gemm, ", chunk, " tokens per batch)"))
     << "; " << r.rounds << " rounds kept after " << r.warmup << " warm-up; " << arms_order_text(r) << "; baseline '"
     << m.arms[m.baseline].name << "' (ratios against " << r.baseline_label << "); every arm's greedy tokens (" << verify_n
     << " after an 8-token prompt) checked against the baseline's before timing.\n\n";
  md << ceilings_text(r);
  Table table({{"arm"}, {"layout"}, {"kernel"}, {"thr", Align::right}, {"load"}, {"greedy check"}, {"ms/" + label, Align::right},
               {"spread", Align::right}, {"tok/s", Align::right}, {"weight GB/s", Align::right},
               {decode ? "decode bandwidth fraction" : "of read ceiling", Align::right}, {ratio_header(r), Align::right}});
  rep.rows.columns = {"run", "test", "round", "arm", "layout", "kernel", "threads", "load", "tokens", "seconds", "tok_s",
                      "weight_bytes", "gbps", "ceiling_gbps", "fraction_of_ceiling", "speedup_vs_baseline"};
  Json js = run_json_head(run, rep.title, m);
  js["test"] = label;
  js["tokens"] = n;
  js["rounds"] = r.rounds;
  js["warmup"] = r.warmup;
  js["ceiling_gbps"] = stats_by_threads(r.ceiling_gbps);
  js["ceiling_loops"] = loops_json(r.ceiling_loops);
  js["handoff_us"] = stats_by_threads(r.handoff_us);
  js["arms"] = Json::array();
  std::vector<BarItem> bars;
  NoiseChecks noise;
  noise.ceilings(r);
  if (decode) cache_check(m, r, n, noise);
  for (std::size_t i = 0; i < m.arms.size(); ++i) {
    const ModelArm& a = m.arms[i];
    const ArmTiming& t = r.arms[i];
    const Stat secs = stat_of(t.seconds);
    if (t.verified && m.ratios.of[i] != i) noise.ratio(a.name, r.speedups(t));
    noise.fraction(a.name, decode ? "its decode bandwidth fraction" : "its fraction of the read ceiling", r.bound_fractions(t));
    std::vector<double> toks;
    for (double sec : t.seconds) toks.push_back(n / sec);
    const Stat tok = stat_of(toks), gb = stat_of(r.gbps(t)), frac = stat_of(r.bound_fractions(t)), speed = stat_of(r.speedups(t));
    if (!t.verified) rep.ok = false;
    table.add({a.name + (m.ratios.is_baseline(i) ? " (baseline)" : ""), a.layout, a.kernel, threads_cell(a.threads), a.load,
               check_cell(a, i == m.baseline), with_range(secs, "", 1e3), spread_cell(t.seconds), with_range(tok),
               gb.valid ? sig(gb.median) : "—", with_range(frac, "%", 100), with_range(speed, "×")});
    Json arm = arm_json_head(a);
    arm["calls_per_sample"] = t.reps;
    arm["seconds_per_call"] = stat_json(secs);
    arm["spread"] = json_number(spread(t.seconds));
    arm["tok_s"] = stat_json(tok);
    arm["weight_bytes_per_call"] = json_number(t.setup.weight_bytes);
    arm["gbps"] = stat_json(gb);
    arm["fraction_of_read_ceiling"] = stat_json(frac);
    arm["speedup_vs_baseline"] = stat_json(speed);
    js["arms"].push_back(std::move(arm));
    const auto gbs = r.gbps(t);
    const auto fracs = r.bound_fractions(t);
    const auto speeds = r.speedups(t);
    const auto ceils = r.ceiling_of(t);
    for (std::size_t k = 0; k < t.seconds.size(); ++k)
      rep.rows.add({run.index, label, k, a.name, a.layout, a.kernel, a.threads, a.load, n, t.seconds[k], toks[k],
                    t.setup.weight_bytes, cell_at(gbs, k), cell_at(ceils, k), cell_at(fracs, k), cell_at(speeds, k)});
    RunReport::ArmValues v{a.name, a.layout, {{prefix + "tok_s", tok.median}, {prefix + "speedup", speed.median}, {"max_logit_diff", a.max_logit_diff}}};
    if (frac.valid) v.values.emplace_back(prefix + "read_ceiling_fraction", frac.median);
    if (t.verified) rep.arm_values.push_back(std::move(v));
  }
  // The plot reads the arm rows just written, so it draws what summary.json says.
  for (const Json& arm : js["arms"]) {
    const Stat tok = stat_from(arm["tok_s"]), speed = stat_from(arm["speedup_vs_baseline"]), frac = stat_from(arm["fraction_of_read_ceiling"]);
    if (arm["verified"] != true || !tok.valid) continue;
    // The note's ratio is a median of per-round ratios, so it can disagree with the bars' ratio.
    std::string note = frac.valid ? sig(frac.median * 100) + "% of read ceiling" : "";
    if (speed.valid) note += cat(note.empty() ? "" : " · ", sig(speed.median), "× vs baseline (median of per-round ratios)");
    // The tok/s this arm would reach streaming its weight bytes at its paired ceiling's median.
    const double wb = number_of(arm["weight_bytes_per_call"]);
    const auto c = r.ceiling_gbps.find(arm["threads"].get<int>());
    const double limit = decode && wb > 0 && c != r.ceiling_gbps.end() ? n * stat_of(c->second).median * 1e9 / wb : std::numeric_limits<double>::quiet_NaN();
    bars.push_back({arm["name"].get<std::string>(), tok.median, tok.min, tok.max, note, limit});
  }
  md << table.markdown();
  md << arms_footer(m);
  md << "\nms and tok/s: median over kept rounds [min–max]; " << spread_note() << "; weight GB/s = ternary weight bytes streamed per call / time";
  md << (decode ? "; decode bandwidth fraction = ternary weight bytes per token / time per token / that round's memory read ceiling on the "
                  "arm's thread count (above 100% the ceiling was no upper bound for the arm: warned, not explained)"
                : "; of read ceiling = the same against that round's ceiling (prefill reads each weight once per batch)");
  md << "; " << ratio_note(r) << ".\n";
  if (!bars.empty())
    rep.svgs.emplace_back(prefix + "tok_s.svg",
                          svg_bars(rep.title + ": " + label + " tokens/s", "tok/s", bars, {},
                                   decode ? "bar: median over kept rounds; whisker: min–max; red tick: the tok/s at the arm's paired memory read ceiling"
                                          : "bar: median over kept rounds; whisker: min–max"));
  rep.warnings = std::move(noise.warnings);
  rep.markdown = md.str();
  rep.json = std::move(js);
  return rep;
}

RunReport run_speed_phase(const RunSpec& run, RunContext& ctx, bool decode, int n) {
  const int chunk = int(key::prefill_chunk(run));
  ModelArms m = plan_arms(run, ctx, 8, int(key::verify_tokens(run)));
  // A measured layout map times what the phase runs: a gemv a token, or gemms of one chunk.
  for (ModelArm& a : m.arms) a.plan_tokens = decode ? 1 : std::min(chunk, n);
  std::vector<std::int32_t> stream;  // drawn once the baseline has told the vocabulary
  const auto prepare = [&](std::size_t, ModelArm& a) {
    if (stream.empty()) stream = model::random_tokens(n, std::max(m.vocab, 1), run_seed(run) + 1);
    return std::vector<ArmSetup>{speed_setup(a, decode, n, chunk, stream)};
  };
  const std::vector<TimingResult> r = run_arms(run, ctx, m, {measure_options(run)}, prepare);
  return speed_report(run, m, r.front(), decode, n);
}

}  // namespace ternlab::experiments
