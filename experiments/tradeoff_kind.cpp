// The `tradeoff` kind: perplexity against bits per weight, and against decode tokens/s, across the
// declared layouts, exact and lossy, on one model. Every arm loads the model into its layout; a
// layout whose scale format cannot hold the file's scales (bf16, e4m3, e8m0 against fp16) loads
// only through the named lossy path (`requantise_scales = true`), which reports what moved. Each
// arm's perplexity is measured on every held-out text, and its decode tok/s timed with the arms
// interleaved and the memory read ceiling measured beside them. The exact arms hold the same
// weights, so their perplexities must agree (to 4 decimals, as the perplexity kind): a difference
// fails the run. Bits per weight come from each layout's declaration.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/files.hpp"
#include "common/strings.hpp"
#include "common/table.hpp"
#include "experiments/arms.hpp"
#include "experiments/kinds.hpp"
#include "experiments/measure.hpp"
#include "experiments/model_arms.hpp"
#include "experiments/run_context.hpp"
#include "layouts/matrix.hpp"
#include "layouts/registry.hpp"
#include "model/experiments.hpp"
#include "model/tokenizer.hpp"

namespace ternlab::experiments {

namespace {

namespace fs = std::filesystem;

constexpr std::int64_t kMaxTokens = std::int64_t(1) << 30;
// The kind's own keys, each with its default and bounds.
namespace tradeoff_key {
constexpr IntegerKey tokens{"tokens", 256, 2, kMaxTokens};
constexpr IntegerKey chunk{"chunk", 64, 2, 1 << 20};
constexpr IntegerKey decode_tokens{"decode_tokens", 32, 1, 1 << 20};
}  // namespace tradeoff_key

struct Text {
  std::string name, path;  // name: the file's stem, used in columns and plots
  std::vector<std::int32_t> tokens;
  std::int64_t predicted = 0;
};

std::vector<Located> text_entries(const RunSpec& run) {
  const Located at = run.at("texts.files");
  if (!at) fail(run.file, ": kind 'tradeoff' needs [texts] files = [\"held-out.txt\", ...] (texts to measure perplexity on)");
  std::vector<Located> out;
  for (const toml::node* n : elements(at)) out.push_back(Located{n, at.origin, at.key, at.line});
  if (out.empty()) fail_at(at, "names no text file");
  return out;
}

std::vector<Text> texts_of(const RunSpec& run) {
  std::vector<Text> out;
  for (const Located& e : text_entries(run)) {
    Text t;
    t.path = as_string(e);
    t.name = fs::path(t.path).stem().string();
    if (!fs::is_regular_file(t.path)) fail_at(e, "no such text file '", t.path, "'");
    for (const Text& o : out)
      if (o.name == t.name) fail_at(e, "two texts are called '", t.name, "' ('", o.path, "' and '", t.path, "'); give them different file names");
    out.push_back(std::move(t));
  }
  return out;
}

bool lossy_format(const LayoutInfo& L) { return !L.holds_exact_fp16_per128_scales(); }

void validate_tradeoff(const RunSpec& run) {
  model_source(run);
  tradeoff_key::tokens(run);
  tradeoff_key::chunk(run);
  tradeoff_key::decode_tokens(run);
  texts_of(run);
  if (const Located at = run.at("arms"); at && as_string(at) != "interleaved")
    fail_at(at, "kind 'tradeoff' interleaves its arms (its perplexities and tok/s are compared across arms); only arms = \"interleaved\"");
  const bool requantise = key::requantise_scales(run);
  for (const ArmSpec& a : run.arms) {
    const LayoutInfo& L = arm_layout(a);
    if (lossy_format(L) && !requantise)
      fail_at(a.at("layout"), "layout '", L.name, "' ", L.lossy_scales_why(), " (lossy); set requantise_scales = true to load it through the named "
              "requantising path, or drop the arm");
  }
  const Baselines b = resolve_baselines(run);
  const LayoutInfo& base = arm_layout(run.arms[b.primary]);
  if (lossy_format(base))
    fail_at(run.at("baseline") ? run.at("baseline") : run.arms[b.primary].at("layout"), "the baseline arm '", run.arms[b.primary].name,
            "' has the lossy layout '", base.name, "': the baseline must hold the model exactly (an fp16-scale layout such as pq2_0)");
  validate_model_kind(run);
}

std::string percent(double v) { return std::isfinite(v) ? fixed_text(100 * v, 2) + "%" : "—"; }

RunReport run_tradeoff(const RunSpec& run, RunContext& ctx) {
  const int chunk = int(tradeoff_key::chunk(run));
  const int dn = int(tradeoff_key::decode_tokens(run));
  const std::int64_t cap = tradeoff_key::tokens(run);
  const int verify_n = int(key::verify_tokens(run));
  const bool requantise = key::requantise_scales(run);
  std::vector<Text> texts = texts_of(run);
  ModelArms m = plan_arms(run, ctx, 8, verify_n);
  const std::size_t n = m.arms.size();
  for (ModelArm& a : m.arms) a.requantise_scales = requantise;
  for (std::size_t i = 0; i < n; ++i) load_arm(run, ctx, m, i);

  // Exact: the load moved no scale. Only exact arms are held to the baseline's greedy tokens and
  // perplexity; a lossy arm's are its result.
  std::vector<ScaleRequantisation> moved(n);
  std::vector<bool> exact(n, false);
  for (std::size_t i = 0; i < n; ++i)
    if (m.arms[i].model) {
      moved[i] = m.arms[i].model->scale_requantisation();
      exact[i] = moved[i].changed == 0;
    }
  ModelArm& base = m.arms[m.baseline];
  if (base.model && !exact[m.baseline]) base.failure = "the baseline's load moved scales: it must hold the model exactly";
  check_arm(run, ctx, m, m.baseline);
  for (std::size_t i = 0; i < n; ++i) {
    if (i == m.baseline) continue;
    if (exact[i] || !m.arms[i].failure.empty()) check_arm(run, ctx, m, i);
    else ctx.progress.step("greedy check " + m.arms[i].name + " (lossy: not compared)");
  }

  // Perplexity per arm and text, the texts tokenised once with the baseline's tokenizer; an exact arm
  // that failed its greedy check is measured too, so a disagreement is reported in both ways.
  std::vector<std::vector<double>> ppl(n, std::vector<double>(texts.size(), std::numeric_limits<double>::quiet_NaN()));
  if (base.model) {
    const model::Tokenizer tok = model::Tokenizer::from_gguf(base.model->file());
    for (Text& t : texts) {
      t.tokens = tok.encode(read_text(t.path));
      if (std::int64_t(t.tokens.size()) > cap) t.tokens.resize(std::size_t(cap));
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    ModelArm& a = m.arms[i];
    for (std::size_t k = 0; k < texts.size(); ++k) {
      ctx.progress.step(cat("perplexity ", a.name, " ", texts[k].name));
      if (!a.model || !m.config || a.model->config().n_vocab != m.vocab) continue;
      if (texts[k].tokens.size() < 2) {
        a.failure = cat("text ", texts[k].path, " has ", texts[k].tokens.size(), " tokens (at least 2 are needed)");
        continue;
      }
      const model::Perplexity p = model::perplexity(*a.model, texts[k].tokens, chunk);
      ppl[i][k] = p.value();
      texts[k].predicted = p.predicted;
      if (!std::isfinite(ppl[i][k]))
        a.failure += cat(a.failure.empty() ? "" : "; ", "perplexity on ", texts[k].name, " is not finite (", ppl[i][k], ")");
    }
  }
  // The exact arms hold the same trits and scales, and the kernels promise bit-identical floats.
  for (std::size_t i = 0; i < n; ++i) {
    ModelArm& a = m.arms[i];
    if (i == m.baseline || !exact[i] || !a.model) continue;
    for (std::size_t k = 0; k < texts.size(); ++k)
      if (fixed_text(ppl[i][k], 4) != fixed_text(ppl[m.baseline][k], 4)) {
        a.failure += cat(a.failure.empty() ? "" : "; ", "EXACT LAYOUTS DISAGREE: perplexity on ", texts[k].name, " is ",
                         fixed_text(ppl[i][k], 6), ", the baseline's ", fixed_text(ppl[m.baseline][k], 6),
                         " (an exact layout holds the same weights)");
        break;
      }
  }

  // Decode tok/s, interleaved, the memory read ceiling beside the arms every round.
  const std::vector<std::int32_t> stream = model::random_tokens(dn, std::max(m.vocab, 1), run_seed(run) + 1);
  std::vector<ArmSetup> setups;
  for (const ModelArm& a : m.arms) setups.push_back(speed_setup(a, true, dn, chunk, stream));
  const TimingResult r = measure_arms(std::move(setups), measure_options(run), ctx.pools, ctx.progress);

  RunReport rep;
  rep.title = run.name();
  rep.rows.file = "tradeoff.csv";
  std::ostringstream md;
  md << "### " << rep.title << "\n\n" << model_line(m);
  std::vector<std::string> text_words;
  for (const Text& t : texts) text_words.push_back(cat(t.name, " (", t.path, ", ", t.tokens.size(), " tokens)"));
  md << "kind tradeoff: perplexity on " << join(text_words, ", ") << " in chunks of " << chunk
     << " tokens, each from a fresh state; tg" << dn << " decode tok/s over " << r.rounds << " rounds kept after " << r.warmup
     << " warm-up, " << arms_order_text(r) << "; bits per weight from each layout's declaration. Exact arms (no scale moved at load) "
     << "must share the baseline '" << base.name << "''s greedy tokens and perplexities to 4 decimals; lossy arms ("
     << (requantise ? "requantise_scales = true: scales rounded to the layout's format" : "none: requantise_scales is off")
     << ") report theirs.\n\n";
  md << ceilings_text(r);
  std::vector<Column> cols = {{"arm"}, {"layout"}, {"scales"}, {"bits/w", Align::right}, {"kernel"}, {"thr", Align::right},
                                     {"exact"}};
  for (const Text& t : texts) cols.push_back({"ppl " + t.name, Align::right});
  for (const std::string& h : {std::string("tg") + std::to_string(dn) + " tok/s", std::string("decode bandwidth fraction"), ratio_header(r)})
    cols.push_back({h, Align::right});
  Table table(cols);
  rep.rows.columns = {"run", "arm", "layout", "scale_format", "bits_per_weight", "kernel", "threads", "exact", "verified",
                      "scales", "scales_changed", "max_rel_error", "mean_rel_error"};
  for (const Text& t : texts) rep.rows.columns.push_back("perplexity_" + t.name);
  for (const char* c : {"tok_s", "tok_s_min", "tok_s_max", "fraction_of_read_ceiling", "speedup_vs_baseline"}) rep.rows.columns.push_back(c);
  Json js = run_json_head(run, rep.title, m);
  js["chunk"] = chunk;
  js["decode_tokens"] = dn;
  js["rounds"] = r.rounds;
  js["warmup"] = r.warmup;
  js["requantise_scales"] = requantise;
  js["ceiling_gbps"] = stats_by_threads(r.ceiling_gbps);
  js["ceiling_loops"] = loops_json(r.ceiling_loops);
  js["handoff_us"] = stats_by_threads(r.handoff_us);
  js["texts"] = Json::array();
  for (const Text& t : texts)
    js["texts"].push_back(Json{{"name", t.name}, {"file", t.path}, {"tokens", t.tokens.size()}, {"predicted", t.predicted}});
  js["arms"] = Json::array();
  NoiseChecks noise;
  noise.ceilings(r);
  for (std::size_t i = 0; i < n; ++i) {
    const ModelArm& a = m.arms[i];
    const ArmTiming& t = r.arms[i];
    const LayoutInfo& L = find_layout(a.layout);
    if (!t.verified) rep.ok = false;
    std::vector<double> toks;
    for (double sec : t.seconds) toks.push_back(dn / sec);
    const Stat tok = stat_of(toks), frac = stat_of(r.bound_fractions(t)), speed = stat_of(r.speedups(t));
    if (t.verified && m.ratios.of[i] != i) noise.ratio(a.name, r.speedups(t));
    noise.fraction(a.name, "its decode bandwidth fraction", r.bound_fractions(t));
    const std::string exact_cell =
        !a.model ? "—"
        : exact[i] ? (i == m.baseline ? "yes (baseline)" : cat("yes, ", check_cell(a, false)))
                   : cat("no: ", moved[i].changed, "/", moved[i].scales, " scales moved, max ", percent(moved[i].max_rel_error), ", mean ",
                         percent(moved[i].mean_rel_error));
    std::vector<std::string> row = {a.name + (m.ratios.is_baseline(i) ? " (baseline)" : ""), a.layout,
                                    std::string(scale_format_name(L.scale_format())), fixed_text(a.bits_per_weight, 4), a.kernel,
                                    threads_cell(a.threads), t.verified ? exact_cell : "**FAILED**"};
    for (std::size_t k = 0; k < texts.size(); ++k) {
      const double base_ppl = ppl[m.baseline][k];
      std::string c = std::isfinite(ppl[i][k]) ? fixed_text(ppl[i][k], 4) : "—";
      if (std::isfinite(ppl[i][k]) && !exact[i] && std::isfinite(base_ppl))
        c += cat(" (", ppl[i][k] >= base_ppl ? "+" : "", fixed_text(100 * (ppl[i][k] / base_ppl - 1), 2), "%)");
      row.push_back(c);
    }
    row.push_back(with_range(tok));
    row.push_back(with_range(frac, "%", 100));
    row.push_back(with_range(speed, "×"));
    table.add(row);

    std::vector<Cell> cells = {run.index, a.name, a.layout, std::string(scale_format_name(L.scale_format())), a.bits_per_weight, a.kernel,
                               a.threads, exact[i] ? "yes" : "no", t.verified ? "yes" : "no", moved[i].scales, moved[i].changed,
                               moved[i].max_rel_error, moved[i].mean_rel_error};
    for (std::size_t k = 0; k < texts.size(); ++k) cells.emplace_back(ppl[i][k]);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (double v : {tok.valid ? tok.median : nan, tok.valid ? tok.min : nan, tok.valid ? tok.max : nan, frac.valid ? frac.median : nan,
                     speed.valid ? speed.median : nan})
      cells.emplace_back(v);
    rep.rows.add(std::move(cells));

    Json arm = arm_json_head(a);
    arm["scale_format"] = scale_format_name(L.scale_format());
    arm["bits_per_weight"] = a.bits_per_weight;
    arm["exact"] = bool(exact[i]);
    arm["requantisation"] = Json{{"scales", moved[i].scales}, {"changed", moved[i].changed},
                                 {"max_rel_error", json_number(moved[i].max_rel_error)},
                                 {"mean_rel_error", json_number(moved[i].mean_rel_error)}, {"worst", moved[i].worst}};
    arm["perplexity"] = Json::object();
    for (std::size_t k = 0; k < texts.size(); ++k) arm["perplexity"][texts[k].name] = json_number(ppl[i][k]);
    arm["calls_per_sample"] = t.reps;
    arm["seconds_per_call"] = stat_json(stat_of(t.seconds));
    arm["spread"] = json_number(spread(t.seconds));
    arm["tok_s"] = stat_json(tok);
    arm["fraction_of_read_ceiling"] = stat_json(frac);
    arm["speedup_vs_baseline"] = stat_json(speed);
    js["arms"].push_back(std::move(arm));
    if (t.verified) {
      RunReport::ArmValues v{a.name, a.layout, {{"bits_per_weight", a.bits_per_weight}, {"decode_tok_s", tok.median}}};
      for (std::size_t k = 0; k < texts.size(); ++k) v.values.emplace_back("perplexity_" + texts[k].name, ppl[i][k]);
      rep.arm_values.push_back(std::move(v));
    }
  }
  md << table.markdown();
  md << arms_footer(m);
  md << "\nexact: the model's scales held as they are (the layout's scale format has every one), so perplexity and greedy tokens must "
        "equal the baseline's; otherwise the scales moved and their relative error |new - old| / |old| is given (mean over all scales). "
        "Perplexity of a lossy arm: in brackets its change against the baseline's. tok/s: median over kept rounds [min–max]; decode "
        "bandwidth fraction = ternary weight bytes per token / time per token / that round's memory read ceiling; "
     << ratio_note(r) << ".\n";

  // The plots read the arm objects just written, so they draw what summary.json says.
  std::vector<LineSeries> by_bits, by_speed;
  std::vector<RuleLine> rules;
  for (std::size_t k = 0; k < texts.size(); ++k) {
    LineSeries ex{texts[k].name + ": exact (reference)", {}}, lo{texts[k].name + ": lossy scales", {}}, sp{texts[k].name, {}};
    for (const Json& arm : js["arms"]) {
      const double p = number_of(arm["perplexity"][texts[k].name]);
      if (arm["verified"] != true || !std::isfinite(p)) continue;
      const std::string label = arm["name"].get<std::string>();
      const ScatterPoint pt{label, number_of(arm["bits_per_weight"]), p, p, p};
      (arm["exact"] == true ? ex : lo).points.push_back(pt);
      if (const Stat tok = stat_from(arm["tok_s"]); tok.valid) sp.points.push_back({label, tok.median, p, p, p});
    }
    if (!ex.points.empty()) {
      rules.push_back({cat(texts[k].name, " exact: ", fixed_text(ex.points.front().y, 2)), ex.points.front().y, 0, 0});
      by_bits.push_back(std::move(ex));
    }
    if (!lo.points.empty()) by_bits.push_back(std::move(lo));
    if (!sp.points.empty()) by_speed.push_back(std::move(sp));
  }
  if (!by_bits.empty())
    rep.svgs.emplace_back("perplexity_bits.svg", svg_lines(rep.title + ": perplexity against bits per weight", "bits per weight (declared)",
                                                          "perplexity", by_bits, rules, "one point per arm; dashed: the exact layouts'",
                                                          false));
  if (!by_speed.empty())
    rep.svgs.emplace_back("perplexity_tok_s.svg",
                          svg_lines(rep.title + ": perplexity against decode tok/s", cat("tg", dn, " tok/s (median over kept rounds)"),
                                    "perplexity", by_speed, rules, "one point per arm", false));
  rep.warnings = std::move(noise.warnings);
  rep.markdown = md.str();
  rep.json = std::move(js);
  return rep;
}

std::int64_t tradeoff_units(const RunSpec& run) {
  std::int64_t n_texts = 0;
  if (const Located at = run.at("texts.files")) n_texts = std::int64_t(elements(at).size());
  return model_units(run, 5, 1) + n_texts * std::int64_t(run.arms.size());
}

}  // namespace

void register_tradeoff_kind() {
  register_plan_notes("tradeoff", memory_notes);
  KindInfo tradeoff{"tradeoff",
                    "perplexity on held-out texts against bits per weight and decode tok/s, per layout (exact and, by name, lossy scale formats)",
                    with(model_keys(),
                         {{"texts.files", Type::string, true, "held-out text files, tokenised with the model's tokenizer (perplexity per file)"},
                          tradeoff_key::tokens.spec("use each text's first N tokens"),
                          tradeoff_key::chunk.spec("perplexity tokens per chunk, each from a fresh state"),
                          tradeoff_key::decode_tokens.spec("decoded tokens of each timed tg call"),
                          key::requantise_scales.spec("LOSSY, by name: load layouts whose scale format cannot hold the file's scales by "
                                                      "rounding them",
                                                      ": such an arm is refused")}),
                    {"texts"}, validate_tradeoff, run_tradeoff, tradeoff_units};
  tradeoff.model.context_tokens = [](const RunSpec& r) { return std::max(tradeoff_key::chunk(r), tradeoff_key::decode_tokens(r)); };
  tradeoff.model.logit_rows = tradeoff_key::chunk;  // every position of a perplexity chunk is scored
  tradeoff.small_overrides = timed_small_overrides({"verify_tokens=2", "tokens=16", "decode_tokens=4"});
  register_kind(std::move(tradeoff));
}

}  // namespace ternlab::experiments
