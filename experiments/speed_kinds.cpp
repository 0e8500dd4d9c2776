// The speed kinds, whole forward passes timed per arm (layout x kernel x threads x load), every
// arm's greedy tokens checked against the baseline arm's before anything is timed:
//   prefill - pp N: one N-token prompt from an empty context (gemm in prefill_chunk batches);
//   decode  - tg N: N single-token steps (gemv) from an empty context, plus the decode bandwidth
//             fraction: ternary weight bytes per token / time per token / memory read ceiling;
//   speed   - pp N then tg N over the same loaded arms.
// Their report (speed_report) serves model-bench too.
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

namespace {

// The kinds' own keys, each with its default and bounds.
namespace prefill_key {
constexpr IntegerKey tokens{"tokens", 64, 1, 1 << 20};
}
namespace decode_key {
constexpr IntegerKey tokens{"tokens", 32, 1, 1 << 20};
}
namespace speed_key {
constexpr IntegerKey prefill_tokens{"prefill_tokens", 64, 1, 1 << 20};
constexpr IntegerKey decode_tokens{"decode_tokens", 32, 1, 1 << 20};
}  // namespace speed_key

RunReport run_speed(const RunSpec& run, RunContext& ctx, bool decode) {
  const int n = int(decode ? decode_key::tokens(run) : prefill_key::tokens(run));
  const int chunk = int(key::prefill_chunk(run));
  ModelArms m = plan_arms(run, ctx, 8, int(key::verify_tokens(run)));
  std::vector<std::int32_t> stream;  // drawn once the baseline has told the vocabulary
  const auto prepare = [&](std::size_t, ModelArm& a) {
    if (stream.empty()) stream = model::random_tokens(n, std::max(m.vocab, 1), run_seed(run) + 1);
    return std::vector<ArmSetup>{speed_setup(a, decode, n, chunk, stream)};
  };
  const std::vector<TimingResult> r = run_arms(run, ctx, m, {measure_options(run)}, prepare);
  return speed_report(run, m, r.front(), decode, n);
}

// pp N then tg N over the same loaded arms: one report with both tables, arm values merged per arm.
RunReport run_prefill_decode(const RunSpec& run, RunContext& ctx) {
  const int pn = int(speed_key::prefill_tokens(run)), dn = int(speed_key::decode_tokens(run));
  const int chunk = int(key::prefill_chunk(run));
  ModelArms m = plan_arms(run, ctx, 8, int(key::verify_tokens(run)));
  std::vector<std::int32_t> pstream, dstream;
  const auto prepare = [&](std::size_t, ModelArm& a) {
    if (pstream.empty()) {
      pstream = model::random_tokens(pn, std::max(m.vocab, 1), run_seed(run) + 1);
      dstream = model::random_tokens(dn, std::max(m.vocab, 1), run_seed(run) + 1);
    }
    return std::vector<ArmSetup>{speed_setup(a, false, pn, chunk, pstream), speed_setup(a, true, dn, chunk, dstream)};
  };
  const std::vector<TimingResult> r = run_arms(run, ctx, m, {measure_options(run), measure_options(run)}, prepare);
  RunReport pp = speed_report(run, m, r[0], false, pn);
  RunReport tg = speed_report(run, m, r[1], true, dn);
  RunReport rep;
  rep.title = run.name();
  rep.ok = pp.ok && tg.ok;
  rep.markdown = pp.markdown + "\n" + tg.markdown;
  rep.rows = pp.rows;
  rep.rows.rows.insert(rep.rows.rows.end(), tg.rows.rows.begin(), tg.rows.rows.end());
  rep.json = Json{{"index", run.index}, {"name", rep.title}, {"kind", "speed"}, {"prefill", std::move(pp.json)}, {"decode", std::move(tg.json)}};
  rep.svgs = pp.svgs;
  rep.svgs.insert(rep.svgs.end(), tg.svgs.begin(), tg.svgs.end());
  rep.arm_values = pp.arm_values;
  for (const RunReport::ArmValues& v : tg.arm_values) {
    auto it = std::find_if(rep.arm_values.begin(), rep.arm_values.end(), [&](const auto& x) { return x.arm == v.arm; });
    if (it == rep.arm_values.end()) continue;  // an arm is listed only when both passes verified it
    it->values.insert(it->values.end(), v.values.begin(), v.values.end());
  }
  std::erase_if(rep.arm_values, [&](const auto& x) { return std::isnan(x.get("decode_tok_s")); });
  for (NoiseWarning& w : pp.warnings) w.text = cat("pp", pn, ": ", w.text);
  for (NoiseWarning& w : tg.warnings) w.text = cat("tg", dn, ": ", w.text);
  rep.warnings = pp.warnings;
  rep.warnings.insert(rep.warnings.end(), tg.warnings.begin(), tg.warnings.end());
  return rep;
}

}  // namespace

// Their small overrides take the tiny preset: micro's 260-row output matrix does not fit t2r's 16-row blocks.
void register_speed_kinds() {
  KindInfo prefill = model_kind("prefill", "pp N: prompt tokens/s of a whole model per arm (layout x kernel x threads x load)",
                                {prefill_key::tokens.spec("prompt length")}, [](const RunSpec& r) { prefill_key::tokens(r); },
                                [](const RunSpec& r, RunContext& c) { return run_speed(r, c, false); },
                                [](const RunSpec& r) { return model_units(r, 5, 1); });
  prefill.model.context_tokens = prefill_key::tokens;
  prefill.small_overrides = timed_small_overrides({"preset=tiny", "verify_tokens=2", "tokens=8"});
  register_kind(std::move(prefill));

  KindInfo decode = model_kind("decode", "tg N: decode tokens/s and the decode bandwidth fraction against the memory read ceiling",
                               {decode_key::tokens.spec("decoded tokens per call")}, [](const RunSpec& r) { decode_key::tokens(r); },
                               [](const RunSpec& r, RunContext& c) { return run_speed(r, c, true); },
                               [](const RunSpec& r) { return model_units(r, 5, 1); });
  decode.model.context_tokens = decode_key::tokens;
  decode.small_overrides = timed_small_overrides({"preset=tiny", "verify_tokens=2", "tokens=8"});
  register_kind(std::move(decode));

  KindInfo speed = model_kind(
      "speed", "pp N and tg N over the same loaded arms: prefill and decode tokens/s, decode bandwidth fraction",
      {speed_key::prefill_tokens.spec("prompt length of pp"), speed_key::decode_tokens.spec("decoded tokens of tg")},
      [](const RunSpec& r) {
        speed_key::prefill_tokens(r);
        speed_key::decode_tokens(r);
      },
      run_prefill_decode, [](const RunSpec& r) { return model_units(r, 5, 1) + measure_units(r.arms.size(), measure_options(r)); });
  speed.model.context_tokens = [](const RunSpec& r) { return std::max(speed_key::prefill_tokens(r), speed_key::decode_tokens(r)); };
  speed.model.test_in_title = true;
  speed.small_overrides = timed_small_overrides({"preset=tiny", "verify_tokens=2", "prefill_tokens=8", "decode_tokens=4"});
  register_kind(std::move(speed));
}

}  // namespace ternlab::experiments
