// The perplexity kind: perplexity per arm over a text file or a synthetic token stream, in chunks;
// equal across arms to 4 decimals (a peer's own kernel within a tolerance), each pass timed.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
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
#include "kernels/peers/peer_matmul.hpp"
#include "model/experiments.hpp"
#include "model/tokenizer.hpp"

namespace ternlab::experiments {

namespace {

namespace fs = std::filesystem;
using model::Model;

namespace perplexity_key {
constexpr IntegerKey tokens{"tokens", 256, 2, std::int64_t(1) << 30};
constexpr IntegerKey chunk{"chunk", 64, 2, 1 << 20};
}  // namespace perplexity_key

// How far a peer kernel's perplexity may sit from the baseline's. The peers keep their own float
// arithmetic (ggml sums a block's lanes in its order, BitNet rescales per token), so their logits
// differ in the last bits, and a random-weight preset's perplexity (near 10^6) by a fraction of a
// percent (measured: docs/notebook/2026-12-05-zen4-peers.md); a wrong kernel moves it by far more.
constexpr double kPeerPerplexityTolerance = 1e-2;

RunReport run_perplexity(const RunSpec& run, RunContext& ctx) {
  const int chunk = int(perplexity_key::chunk(run));
  const int verify_n = int(key::verify_tokens(run));
  ModelArms m = plan_arms(run, ctx, 8, verify_n);
  std::vector<std::int32_t> stream;
  std::string source;
  std::vector<double> ppl(m.arms.size(), std::numeric_limits<double>::quiet_NaN());
  std::vector<std::int64_t> predicted(m.arms.size(), 0);
  // The baseline comes first: it draws the stream (the text file through its tokenizer, else
  // pseudo-random tokens) and sets the perplexity every other arm must match.
  const auto prepare = [&](std::size_t i, ModelArm& a) {
    if (i == m.baseline) {
      const Located text_at = run.at("text");
      if (text_at && a.model) {
        std::ifstream f(as_string(text_at), std::ios::binary);
        std::stringstream ss;
        ss << f.rdbuf();
        stream = model::Tokenizer::from_gguf(a.model->file()).encode(ss.str());
        if (run.at("tokens") && stream.size() > std::size_t(perplexity_key::tokens(run)))
          stream.resize(std::size_t(perplexity_key::tokens(run)));
        source = cat("text file ", as_string(text_at), " (", stream.size(), " tokens)");
      } else {
        stream = model::random_tokens(int(perplexity_key::tokens(run)), std::max(m.vocab, 1), run_seed(run) + 2);
        source = cat(stream.size(), " pseudo-random tokens (seed ", run_seed(run) + 2, ")");
      }
    }
    if (a.failure.empty()) {
      const model::Perplexity p = model::perplexity(*a.model, stream, chunk);
      ppl[i] = p.value();
      predicted[i] = p.predicted;
      const bool peer_arithmetic = peers::find_peer_kernel(a.kernel) || peers::find_peer_kernel(m.arms[m.baseline].kernel);
      if (i != m.baseline && !peer_arithmetic && fixed_text(ppl[i], 4) != fixed_text(ppl[m.baseline], 4))
        a.failure = cat("perplexity ", fixed_text(ppl[i], 6), " differs from the baseline's ", fixed_text(ppl[m.baseline], 6), " at 4 decimals");
      if (i != m.baseline && peer_arithmetic && !(std::fabs(ppl[i] / ppl[m.baseline] - 1) <= kPeerPerplexityTolerance))
        a.failure = cat("perplexity ", fixed_text(ppl[i], 6), " differs from the baseline's ", fixed_text(ppl[m.baseline], 6), " by more than ",
                        kPeerPerplexityTolerance * 100, "% (a peer's kernel rounds its own way, but not by this much)");
    }
    ArmSetup s = setup_of(a);
    if (a.model) {
      Model* model = a.model.get();
      s.call = [model, stream = stream, chunk] { model::perplexity(*model, stream, chunk); };
    }
    return std::vector<ArmSetup>{std::move(s)};
  };
  const TimingResult r = run_arms(run, ctx, m, {measure_options(run, 1, 0)}, prepare).front();

  RunReport rep;
  rep.title = run.name();
  std::ostringstream md;
  md << "### " << rep.title << "\n\n" << model_line(m);
  md << "kind perplexity over " << source << " in chunks of " << chunk << " tokens, each from a fresh state; every arm must match the "
     << "baseline '" << m.arms[m.baseline].name << "' to 4 decimals (the kernels promise bit-identical floats; a peer's own kernel, "
     << "which rounds in its own order, within " << kPeerPerplexityTolerance * 100 << "%) and share its greedy tokens; "
     << r.rounds << " timed passes kept after " << r.warmup << " warm-up; " << arms_order_text(r) << "; ratios against " << r.baseline_label << ".\n\n";
  Table table({{"arm"}, {"layout"}, {"kernel"}, {"thr", Align::right}, {"load"}, {"greedy check"}, {"perplexity", Align::right},
               {"predicted tokens", Align::right}, {"s/pass", Align::right}, {"spread", Align::right}, {"tok/s", Align::right},
               {ratio_header(r), Align::right}});
  NoiseChecks noise;
  noise.ceilings(r);
  rep.rows.columns = {"run", "round", "arm", "layout", "kernel", "threads", "load", "perplexity", "predicted", "seconds",
                      "speedup_vs_baseline"};
  Json js = run_json_head(run, rep.title, m);
  js["chunk"] = chunk;
  js["stream_tokens"] = stream.size();
  js["arms"] = Json::array();
  for (std::size_t i = 0; i < m.arms.size(); ++i) {
    const ModelArm& a = m.arms[i];
    const ArmTiming& t = r.arms[i];
    const Stat secs = stat_of(t.seconds), speed = stat_of(r.speedups(t));
    if (!t.verified) rep.ok = false;
    const bool have = std::isfinite(ppl[i]);
    if (t.verified && m.ratios.of[i] != i) noise.ratio(a.name, r.speedups(t));
    table.add({a.name + (m.ratios.is_baseline(i) ? " (baseline)" : ""), a.layout, a.kernel, threads_cell(a.threads), a.load,
               check_cell(a, i == m.baseline), have ? fixed_text(ppl[i], 4) : "—", cat(predicted[i]), with_range(secs),
               spread_cell(t.seconds), secs.valid ? sig(double(stream.size()) / secs.median) : "—", with_range(speed, "×")});
    Json arm = arm_json_head(a);
    arm["perplexity"] = json_number(ppl[i]);
    arm["predicted"] = predicted[i];
    arm["seconds_per_pass"] = stat_json(secs);
    arm["spread"] = json_number(spread(t.seconds));
    arm["speedup_vs_baseline"] = stat_json(speed);
    js["arms"].push_back(std::move(arm));
    const std::vector<double> speeds = r.speedups(t);
    for (std::size_t k = 0; k < t.seconds.size(); ++k)
      rep.rows.add({run.index, k, a.name, a.layout, a.kernel, a.threads, a.load, ppl[i], predicted[i], t.seconds[k], cell_at(speeds, k)});
    if (have && t.verified) rep.arm_values.push_back({a.name, a.layout, {{"perplexity", ppl[i]}, {"max_logit_diff", a.max_logit_diff}}});
  }
  md << table.markdown() << "\ns/pass: median over kept rounds [min–max]; " << spread_note() << "; " << ratio_note(r) << ".\n";
  rep.warnings = std::move(noise.warnings);
  return finish_model_report(std::move(rep), md, std::move(js), m);
}

}  // namespace

// Its small overrides take the tiny preset: micro's 260-row output matrix does not fit t2r's 16-row blocks.
void register_perplexity_kind() {
  KindInfo perplexity = model_kind(
      "perplexity", "perplexity per arm over a text file or a synthetic stream; equal across arms to 4 decimals",
      {perplexity_key::tokens.spec("stream length", "; caps a text file's tokens"),
       perplexity_key::chunk.spec("tokens per chunk, each from a fresh state"),
       {"text", Type::string, true, "a text file, tokenized with the model's tokenizer"}},
      [](const RunSpec& r) {
        perplexity_key::tokens(r);
        perplexity_key::chunk(r);
        if (const Located t = r.at("text"); t && !fs::is_regular_file(as_string(t))) fail_at(t, "no such text file '", as_string(t), "'");
      },
      run_perplexity, [](const RunSpec& r) { return model_units(r, 1, 0); });
  perplexity.model.context_tokens = perplexity_key::chunk;
  perplexity.model.logit_rows = perplexity_key::chunk;  // every position of a chunk is scored
  perplexity.small_overrides = timed_small_overrides({"preset=tiny", "verify_tokens=2", "tokens=8"});
  register_kind(std::move(perplexity));
}

}  // namespace ternlab::experiments
