// The experiment kind `speculative`: decode tok/s with and without speculative decoding
// (model/speculative.hpp) per arm (layout x kernel x threads), over a grid of drafters, draft lengths
// and (controlled drafter) corruption probabilities inside one run, so one loaded model serves the
// whole sweep. Per arm, the plain decode (the same loop with no drafts) and every grid point are
// timed interleaved, round by round, beside the memory read ceiling; every call's tokens must equal
// plain greedy decoding (model::greedy), or the run fails. Reports acceptance, tokens per
// verification pass, the split of decode time into draft, verify and rollback, the speedup over the
// plain decode of the same round, and a plot of speedup against acceptance, one line per draft length.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <utility>

#include "common/strings.hpp"
#include "common/files.hpp"
#include "common/table.hpp"
#include "experiments/arms.hpp"
#include "experiments/kinds.hpp"
#include "experiments/measure.hpp"
#include "experiments/model_arms.hpp"
#include "experiments/report.hpp"
#include "experiments/run_context.hpp"
#include "model/experiments.hpp"
#include "model/speculative.hpp"
#include "model/tokenizer.hpp"

namespace ternlab::experiments {

namespace {

namespace fs = std::filesystem;
using model::Model;

constexpr std::int64_t kMaxTokens = 1 << 20;
// The kind's own keys, each with its default and bounds.
namespace speculative_key {
constexpr IntegerKey tokens{"tokens", 32, 2, kMaxTokens};
constexpr IntegerKey prompt_tokens{"prompt_tokens", 16, 1, kMaxTokens};
constexpr IntegerKey ngram{"ngram", 3, 1, 64};
constexpr IntegerKey draft_seed{"draft_seed", 1, 0, std::numeric_limits<std::int64_t>::max()};
}  // namespace speculative_key

// One point of the [speculate] grid.
struct Point {
  std::string drafter;
  int draft_len = 2;
  double corrupt = std::numeric_limits<double>::quiet_NaN();  // controlled only
  std::string label() const {
    return std::isnan(corrupt) ? cat(drafter, " k=", draft_len) : cat(drafter, " k=", draft_len, " p=", corrupt);
  }
};

// The elements of a grid key (one value or an array), each keeping the key's location.
std::vector<Located> grid_values(const RunSpec& run, const std::string& key) {
  std::vector<Located> out;
  const Located at = run.at(key);
  if (!at) return out;
  for (const toml::node* n : elements(at)) out.push_back(Located{n, at.origin, at.key, at.line});
  return out;
}

// The largest verification batch: the model's gemm batch (Model::max_batch) is its prefill chunk.
int max_batch(const RunSpec& run) { return int(key::prefill_chunk(run)); }

// drafters x draft lengths, x corruption probabilities for the controlled drafter only. Bad
// drafter names and draft lengths fail naming the file, line and key.
std::vector<Point> grid(const RunSpec& run) {
  std::vector<std::string> drafters;
  for (const Located& v : grid_values(run, "speculate.drafter")) {
    const std::string name = as_string(v);
    const auto& known = model::drafter_names();
    if (std::find(known.begin(), known.end(), name) == known.end())
      fail_at(v, "unknown drafter '", name, "' (known: ", join(known), ")");
    drafters.push_back(name);
  }
  if (drafters.empty()) drafters = {"prompt-lookup"};
  std::vector<int> lens;
  const int batch = max_batch(run);
  for (const Located& v : grid_values(run, "speculate.draft_len")) {
    const std::int64_t k = as_integer(v, std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max());
    if (k < 1) fail_at(v, "draft length must be at least 1, got ", k);
    if (k + 1 > batch)
      fail_at(v, "draft length ", k, " is too long: a verification pass (drafts + 1 tokens) must fit one gemm batch of ", batch,
              " tokens (prefill_chunk), so at most ", batch - 1);
    lens.push_back(int(k));
  }
  if (lens.empty()) lens = {2};
  std::vector<double> corrupts;
  for (const Located& v : grid_values(run, "speculate.corrupt")) corrupts.push_back(as_number(v, 0.0, 1.0));
  if (corrupts.empty()) corrupts = {0.5};
  std::vector<Point> out;
  for (const std::string& d : drafters)
    for (int k : lens) {
      if (d != "controlled") {
        out.push_back({d, k});
        continue;
      }
      for (double p : corrupts) out.push_back({d, k, p});
    }
  return out;
}

model::Rollback rollback_of(const RunSpec& run) {
  const Located at = run.at("rollback");
  if (!at) return model::Rollback::ring;
  return relocated(at, [&] { return model::parse_rollback(as_string(at)); });
}

int tokens_of(const RunSpec& run) { return int(speculative_key::tokens(run)); }

void validate(const RunSpec& run) {
  validate_model_kind(run);
  tokens_of(run);
  speculative_key::prompt_tokens(run);
  speculative_key::ngram(run);
  speculative_key::draft_seed(run);
  rollback_of(run);
  const Located text = run.at("prompt"), file = run.at("prompt_file");
  if (text && file) fail_at(file, "give either 'prompt' (text) or 'prompt_file' (a text file), not both");
  if (text && as_string(text).empty()) fail_at(text, "the prompt is empty");
  if (file && !fs::is_regular_file(as_string(file))) fail_at(file, "no such prompt file '", as_string(file), "'");
  grid(run);
}

// A drafter that never drafts: the same decode loop as the speculative arms, one token a pass.
class NoDrafter final : public model::Drafter {
 public:
  std::string name() const override { return "none"; }
  std::vector<std::int32_t> draft(std::span<const std::int32_t>, int) override { return {}; }
};

// Every call of one timed setup: its statistics, and whether its tokens were plain greedy's.
struct Calls {
  std::vector<model::SpeculativeStats> stats;
  int different = 0;  // calls whose tokens differed from plain greedy decoding
};

struct Timed {
  std::size_t arm = 0;         // index into ModelArms::arms
  std::optional<Point> point;  // empty: the plain decode
  std::shared_ptr<Calls> calls = std::make_shared<Calls>();
  std::string name() const { return point ? point->label() : "plain"; }
};

// Tokens one session holds at most: the prompt, the generated tokens and one verification batch.
std::int64_t context_tokens(const RunSpec& run) {
  std::int64_t prompt = speculative_key::prompt_tokens(run);
  // A prompt's token count is unknown before its tokenizer loads: at most one token per byte.
  if (const Located t = run.at("prompt")) prompt = std::int64_t(as_string(t).size());
  if (const Located f = run.at("prompt_file"); f && fs::is_regular_file(as_string(f))) prompt = std::int64_t(fs::file_size(as_string(f)));
  return prompt + speculative_key::tokens(run) + max_batch(run);
}

// The rollback ring's slots (copies of every GDN layer's state): one per draft of the longest.
std::int64_t ring_slots(const RunSpec& run) {
  int most = 0;
  for (const Point& p : grid(run)) most = std::max(most, p.draft_len);
  return most;
}

RunReport run_speculative(const RunSpec& run, RunContext& ctx) {
  const int n = tokens_of(run);
  const int verify_n = int(key::verify_tokens(run));
  const std::vector<Point> points = grid(run);
  const model::Rollback rollback = rollback_of(run);
  const int ngram = int(speculative_key::ngram(run));
  const std::uint64_t draft_seed = std::uint64_t(speculative_key::draft_seed(run));
  ModelArms m = plan_arms(run, ctx, 8, verify_n);

  std::vector<std::int32_t> prompt;  // from the baseline's tokenizer, or pseudo-random tokens
  std::string prompt_source;
  std::vector<std::vector<std::int32_t>> reference(m.arms.size());  // each arm's plain greedy tokens
  std::vector<Timed> timed;
  // The plain decode and every grid point of arm i, each checked once against plain greedy here and
  // on every call after.
  const auto prepare = [&](std::size_t i) {
    ModelArm& a = m.arms[i];
    if (prompt.empty()) {
      const Located text = run.at("prompt"), file = run.at("prompt_file");
      if ((text || file) && a.model) {
        const std::string s = text ? as_string(text) : read_text(as_string(file));
        prompt = relocated(text ? text : file, [&] { return model::Tokenizer::from_gguf(a.model->file()).encode(s); });
        if (prompt.empty()) fail_at(text ? text : file, "the prompt encodes to no tokens");
        prompt_source = text ? cat("a ", prompt.size(), "-token prompt (", sig(double(s.size())), " bytes of text)")
                             : cat("the ", prompt.size(), "-token prompt file ", as_string(file));
      } else if (!text && !file) {
        const int len = int(speculative_key::prompt_tokens(run));
        prompt = model::random_tokens(len, std::max(m.vocab, 1), run_seed(run) + 4);
        prompt_source = cat("a ", len, "-token pseudo-random prompt (seed ", run_seed(run) + 4, ")");
      }
    }
    if (a.model && a.failure.empty()) {
      relocated(run.at("prefill_chunk"), [&] {
        for (const Point& p : points) model::check_draft_len(*a.model, p.draft_len, "speculate.draft_len");
        return 0;
      });
      reference[i] = model::greedy(*a.model, prompt, n);
    }
    std::vector<ArmSetup> setups;
    for (std::size_t g = 0; g <= points.size(); ++g) {
      Timed t;
      t.arm = i;
      if (g > 0) t.point = points[g - 1];
      ArmSetup s = setup_of(a);
      s.name = cat(a.name, " ", t.name());
      s.baseline = cat(a.name, " plain");
      s.options = cat(s.options, " ", t.name());
      if (a.model && a.failure.empty()) {
        Model* model = a.model.get();
        const int vocab = model->config().n_vocab;
        model::DrafterOptions d;
        if (t.point) {
          d.name = t.point->drafter;
          d.ngram = ngram;
          d.corrupt = std::isnan(t.point->corrupt) ? 0.0 : t.point->corrupt;
          d.seed = draft_seed;
          d.continuation = reference[i];
          d.prompt_tokens = int(prompt.size());
        }
        const model::SpeculativeOptions o{t.point ? t.point->draft_len : 1, rollback, -1};
        // A fresh drafter per call: the junk and controlled drafters draw the same drafts every round.
        auto once = [model, d, o, vocab, n, p = prompt, ref = reference[i], plain = !t.point](model::SpeculativeStats& st) {
          NoDrafter none;
          std::unique_ptr<model::Drafter> drafter = plain ? nullptr : model::make_drafter(d, vocab);
          return model::generate_speculative(*model, p, n, plain ? static_cast<model::Drafter&>(none) : *drafter, o, &st) == ref;
        };
        s.verify = [once, name = s.name] {
          model::SpeculativeStats st;
          return once(st) ? std::string() : cat(name, ": the tokens differ from plain greedy decoding");
        };
        s.call = [once, calls = t.calls] {
          model::SpeculativeStats st;
          if (!once(st)) ++calls->different;
          calls->stats.push_back(st);
        };
      }
      setups.push_back(std::move(s));
      timed.push_back(std::move(t));
    }
    return setups;
  };

  MeasureOptions opt = measure_options(run, 3, 1);
  opt.sample_seconds = 0;  // one generation per sample: every call's statistics are kept
  std::vector<std::size_t> order{m.baseline};
  for (std::size_t i = 0; i < m.arms.size(); ++i)
    if (i != m.baseline) order.push_back(i);
  // Each pass times the plain decode and the grid of its arms interleaved; one pass for all the arms
  // (the default), or one per arm, loaded, timed and freed in turn (arms = "one-at-a-time").
  std::vector<TimingResult> passes;
  const auto measure = [&](const std::vector<std::size_t>& arms) {
    std::vector<ArmSetup> setups;
    for (std::size_t i : arms)
      for (ArmSetup& s : prepare(i)) setups.push_back(std::move(s));
    MeasureOptions o = opt;
    o.baseline = setups.front().name;
    passes.push_back(measure_arms(std::move(setups), o, ctx.pools, ctx.progress));
  };
  if (m.interleaved) {
    for (std::size_t i = 0; i < m.arms.size(); ++i) load_arm(run, ctx, m, i);
    for (std::size_t i : order) check_arm(run, ctx, m, i);
    measure(order);
  } else {
    for (std::size_t i : order) {
      load_arm(run, ctx, m, i);
      check_arm(run, ctx, m, i);
      measure({i});
      m.arms[i].model.reset();
    }
  }
  std::vector<const ArmTiming*> timing;  // parallel to `timed`
  for (const TimingResult& r : passes)
    for (const ArmTiming& t : r.arms) timing.push_back(&t);

  RunReport rep;
  rep.title = run.name();
  std::ostringstream md;
  md << "### " << rep.title << "\n\n" << model_line(m);
  md << "kind speculative: " << n << " greedy tokens after " << prompt_source << ", decoded plainly (one token a forward pass) and "
     << "speculatively (drafts verified in one batched pass, rollback " << (rollback == model::Rollback::ring ? "ring" : "recompute")
     << "), interleaved in each of " << opt.rounds << " rounds kept after " << opt.warmup << " warm-up ("
     << (m.interleaved ? "all arms in one pass" : "one pass per arm") << "); every call's tokens equal to plain greedy decoding "
     << "(model::greedy) or the run fails; tok/s and the split count decode after the first token (the prompt's prefill excluded); "
     << "speedup = plain decode seconds / speculative decode seconds of the same round.\n\n";
  if (!passes.empty()) md << ceilings_text(passes.front());
  Table table({{"arm"}, {"drafter"}, {"k", Align::right}, {"p", Align::right}, {"accepted", Align::right}, {"acceptance", Align::right},
               {"tokens/pass", Align::right}, {"decode tok/s", Align::right}, {"spread", Align::right},
               {"speedup vs plain", Align::right}, {"draft ms", Align::right}, {"verify ms", Align::right},
               {"rollback ms", Align::right}, {"identical", Align::right}});
  rep.rows.columns = {"run", "round", "arm", "layout", "kernel", "threads", "drafter", "draft_len", "corrupt", "tokens", "drafted",
                      "accepted", "acceptance", "passes", "tokens_per_pass", "rollbacks", "decode_seconds", "tok_s", "draft_seconds",
                      "verify_seconds", "rollback_seconds", "speedup_vs_plain"};
  Json js = run_json_head(run, rep.title, m);
  js["tokens"] = n;
  js["prompt_tokens"] = prompt.size();
  js["rollback"] = rollback == model::Rollback::ring ? "ring" : "recompute";
  js["rounds"] = opt.rounds;
  js["arms"] = Json::array();
  NoiseChecks noise;
  for (const TimingResult& r : passes) noise.ceilings(r);

  // Per kept round of one setup: its decode statistics (the last `rounds` calls).
  const auto kept = [&](std::size_t s) {
    const auto& all = timed[s].calls->stats;
    const std::size_t k = std::min(all.size(), std::size_t(opt.rounds));
    return std::vector<model::SpeculativeStats>(all.end() - std::ptrdiff_t(k), all.end());
  };
  std::size_t s = 0;
  while (s < timed.size()) {
    const std::size_t i = timed[s].arm;
    const ModelArm& a = m.arms[i];
    const std::vector<model::SpeculativeStats> plain = kept(s);
    Json arm = arm_json_head(a);
    arm["points"] = Json::array();
    std::vector<double> plain_tok;
    for (const auto& st : plain) plain_tok.push_back(st.decode_tok_s());
    for (; s < timed.size() && timed[s].arm == i; ++s) {
      const Timed& t = timed[s];
      const ArmTiming& at = *timing[s];
      std::string failure = at.failure;
      if (failure.empty() && t.calls->different > 0)
        failure = cat(t.calls->different, " of ", t.calls->stats.size(), " calls gave tokens different from plain greedy decoding");
      if (!failure.empty()) rep.ok = false;
      const std::vector<model::SpeculativeStats> st = kept(s);
      std::vector<double> tok, speed, draft_ms, verify_ms, rollback_ms;
      for (std::size_t k = 0; k < st.size(); ++k) {
        tok.push_back(st[k].decode_tok_s());
        if (k < plain.size() && st[k].decode_seconds() > 0) speed.push_back(plain[k].decode_seconds() / st[k].decode_seconds());
        draft_ms.push_back(st[k].draft_seconds * 1e3);
        verify_ms.push_back(st[k].verify_seconds * 1e3);
        rollback_ms.push_back(st[k].rollback_seconds * 1e3);
        rep.rows.add({run.index, k, a.name, a.layout, a.kernel, a.threads, t.point ? t.point->drafter : "none",
                      t.point ? t.point->draft_len : 0, t.point ? Cell(t.point->corrupt) : Cell(), st[k].tokens, st[k].drafted,
                      st[k].accepted, st[k].drafted ? Cell(st[k].acceptance()) : Cell(), st[k].passes, st[k].tokens_per_pass(),
                      st[k].rollbacks, st[k].decode_seconds(), tok.back(), st[k].draft_seconds, st[k].verify_seconds,
                      st[k].rollback_seconds, cell_at(speed, k)});
      }
      // Acceptance and passes are the same every round (the drafters are seeded): the last round's.
      const model::SpeculativeStats last = st.empty() ? model::SpeculativeStats{} : st.back();
      const Stat tok_s = stat_of(tok), sp = stat_of(speed);
      if (failure.empty() && t.point) noise.ratio(a.name + " " + t.name(), speed);
      const bool has_drafts = t.point.has_value();
      table.add({a.name, t.point ? t.point->drafter : "none (plain)", t.point ? cat(t.point->draft_len) : "—",
                 t.point && !std::isnan(t.point->corrupt) ? sig(t.point->corrupt) : "—",
                 has_drafts && !st.empty() ? cat(last.accepted, "/", last.drafted) : "—",
                 has_drafts && last.drafted ? sig(100 * last.acceptance()) + "%" : "—",
                 st.empty() ? "—" : sig(last.tokens_per_pass()), with_range(tok_s), spread_cell(tok), has_drafts ? with_range(sp, "×") : "1 (reference)",
                 with_range(stat_of(draft_ms)), with_range(stat_of(verify_ms)), with_range(stat_of(rollback_ms)),
                 failure.empty() ? "yes" : "**NO**"});
      Json p{{"drafter", t.point ? t.point->drafter : "none"},
             {"draft_len", t.point ? t.point->draft_len : 0},
             {"corrupt", t.point ? json_number(t.point->corrupt) : Json()},
             {"identical", failure.empty()},
             {"failure", failure},
             {"drafted", last.drafted},
             {"accepted", last.accepted},
             {"acceptance", last.drafted ? json_number(last.acceptance()) : Json()},
             {"passes", last.passes},
             {"tokens_per_pass", json_number(last.tokens_per_pass())},
             {"rollbacks", last.rollbacks},
             {"tok_s", stat_json(tok_s)},
             {"spread", json_number(spread(tok))},
             {"speedup_vs_plain", has_drafts ? stat_json(sp) : Json()},
             {"draft_ms", stat_json(stat_of(draft_ms))},
             {"verify_ms", stat_json(stat_of(verify_ms))},
             {"rollback_ms", stat_json(stat_of(rollback_ms))}};
      arm["points"].push_back(std::move(p));
    }
    if (a.failure.empty() && !plain_tok.empty())
      rep.arm_values.push_back({a.name, a.layout, {{"decode_tok_s", stat_of(plain_tok).median}}});
    js["arms"].push_back(std::move(arm));
  }
  md << table.markdown() << arms_footer(m);
  md << "\naccepted: drafts accepted / drafts verified (the same every round: the drafters are seeded); tokens/pass: tokens emitted "
        "per forward pass after the prompt; tok/s, speedup and ms: median over kept rounds [min–max]; "
     << spread_note() << ", of tok/s; ms: decode time in drafting, verification passes and rollback (the ring's state copies "
        "included), per generation.\n";

  // The plot reads the points just written, so it draws what summary.json says.
  std::map<std::string, LineSeries> lines;
  for (const Json& arm : js["arms"])
    for (const Json& p : arm["points"]) {
      const Stat sp = stat_from(p["speedup_vs_plain"]);
      const double acc = number_of(p["acceptance"]);
      if (!sp.valid || std::isnan(acc) || p["identical"] != true) continue;
      const std::string label = cat(arm["name"].get<std::string>(), " k=", p["draft_len"].get<int>());
      LineSeries& l = lines[label];
      l.label = label;
      l.points.push_back({p["drafter"].get<std::string>(), acc * 100, sp.median, sp.min, sp.max});
    }
  if (!lines.empty()) {
    std::vector<LineSeries> series;
    for (auto& [k, l] : lines) series.push_back(std::move(l));
    rep.svgs.emplace_back("speedup.svg", svg_lines(rep.title + ": decode speedup vs acceptance", "acceptance (% of drafts)",
                                                   "speedup vs plain decode", series, {{"no speedup", 1, 1, 1}}));
  }
  rep.warnings = std::move(noise.warnings);
  rep.markdown = md.str();
  rep.json = std::move(js);
  return rep;
}

std::int64_t units(const RunSpec& run) {
  MeasureOptions o = measure_options(run, 3, 1);
  return std::int64_t(2 * run.arms.size()) + measure_units(run.arms.size() * (1 + grid(run).size()), o);
}

}  // namespace

void register_speculative_kind() {
  register_plan_notes("speculative", memory_notes);
  KindInfo speculative{
      "speculative",
      "decode tok/s with and without speculative decoding per arm over drafters x draft lengths x acceptance; "
      "acceptance, tokens per pass, draft/verify/rollback time",
      with(model_keys(),
           {speculative_key::tokens.spec("greedy tokens generated per call, the first from the prompt"),
            {"prompt", Type::string, true, "prompt text, tokenized with the model's tokenizer"},
            {"prompt_file", Type::string, true, "a text file whose contents are the prompt"},
            speculative_key::prompt_tokens.spec("without prompt or prompt_file: a pseudo-random prompt this long"),
            speculative_key::ngram.spec("prompt-lookup: longest n-gram matched"),
            speculative_key::draft_seed.spec("junk, controlled: seed of the drafts"),
            {"rollback", Type::string, true, "ring (default) or recompute"},
            {"speculate.drafter", Type::string, true, "drafters: prompt-lookup, oracle, junk, controlled (default prompt-lookup)"},
            {"speculate.draft_len", Type::integer, true, "drafts per verification pass, 1 .. prefill_chunk - 1 (default 2)"},
            {"speculate.corrupt", Type::number, true, "controlled: probability that a draft is replaced (default 0.5)"}}),
      {"speculate"}, validate, run_speculative, units};
  speculative.model.context_tokens = context_tokens;
  speculative.model.state_copies = ring_slots;
  speculative.small_overrides =
      timed_small_overrides({"verify_tokens=2", "tokens=8", "prompt_tokens=4", "speculate.draft_len=2", "speculate.corrupt=0.5"});
  register_kind(std::move(speculative));
}

}  // namespace ternlab::experiments
