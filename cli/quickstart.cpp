// `ternlab quickstart`: the README's main job. (1) Packs one synthetic ternary matrix into every
// layout, checks every kernel against the integer oracle and prints bytes per weight and a short
// timing of each layout's best kernel. (2) Loads the small trained model committed in models/ (or, with
// --preset, a synthetic one written to a temporary folder) and runs the runner's prefill, decode and
// perplexity kinds with one arm per layout, side by side: tok/s, decode bandwidth fraction and
// perplexity on held-out text, which must be identical across layouts.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <iostream>

#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <unistd.h>

#include "cli/commands.hpp"
#include "common/table.hpp"
#include "common/error.hpp"
#include "common/strings.hpp"
#include "experiments/config.hpp"
#include "experiments/kinds.hpp"
#include "experiments/run_context.hpp"
#include "kernels/dispatch.hpp"
#include "kernels/catalog.hpp"
#include "kernels/oracle.hpp"
#include "kernels/peers/peer_matmul.hpp"
#include "kernels/testdata.hpp"
#include "layouts/registry.hpp"

namespace ternlab::cli {

namespace {

struct Options {
  std::int64_t rows = 1024, cols = 4096;
  int reps = 5;
  // The trained model committed in models/ (tools/train); --preset NAME runs a synthetic one instead.
  std::string model = "models/bonsai-kjv-py/bonsai-kjv-py.gguf";
  std::string text = "models/bonsai-kjv-py/heldout-prose.txt";
  std::string preset;
  int rounds = 3;
  bool kernels_only = false;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The runner's kinds on one TOML text each; results go to a temporary folder removed at the end.
experiments::RunReport run_kind(const std::string& toml, const std::string& origin, experiments::RunContext& ctx) {
  const experiments::Plan plan = experiments::load_plan_text(toml, origin, {});
  const experiments::RunSpec& run = plan.runs.front();
  return experiments::find_kind(run.kind, run.at("kind")).run(run, ctx);
}

int run_model_part(const Options& o) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / cat("ternlab-quickstart-", getpid());
  struct Cleanup {
    fs::path p;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(p, ec);
    }
  } cleanup{dir};
  // The layouts the SIMD kernels run that hold the model's fp16 scales exactly: the lossy scale
  // formats round them and have their own experiment (configs/model-tradeoff.toml); the model's
  // per-128 scales do not fit the peers' 256-weight and per-tensor scales (an exact repack refuses),
  // and a reference-only layout would time the reference kernel. run_quickstart's matrix part
  // checks them all. So the perplexities here stay identical.
  std::vector<const LayoutInfo*> exact;
  for (const LayoutInfo* L : all_layouts())
    if (L->holds_exact_fp16_per128_scales() && L->block_scales_128()) exact.push_back(L);
  std::vector<std::string> layouts;
  for (const LayoutInfo* L : exact) layouts.push_back(cat("\"", L->name, "\""));
  // One arm per layout, interleaved; small ceiling buffer and short samples keep this to seconds.
  const bool trained = o.preset.empty();
  if (trained && !fs::is_regular_file(o.model))
    fail("quickstart: no model file '", o.model, "' (run from the repository root, give --model PATH, or --preset tiny for a synthetic one)");
  if (trained && !fs::is_regular_file(o.text)) fail("quickstart: no held-out text '", o.text, "' (give --text PATH)");
  const std::string source = trained ? cat("model = \"", o.model, "\"\n") : cat("preset = \"", o.preset, "\"\n");
  const std::string common = cat(source, "seed = 2026\noutput = \"", dir.string(), "\"\nwarmup = 1\nceiling_mib = 256\nsample_ms = 5\nbaseline = \"pq2_0\"\n[[arm]]\nlayout = [",
                                 join(layouts), "]\n");
  std::cout << "\nmodel: " << (trained ? cat("the trained ", o.model, " (tools/train)") : cat("the synthetic '", o.preset, "' Bonsai 2 preset"))
            << ", every ternary weight repacked at load into each layout; "
            << "one arm per layout, interleaved in " << o.rounds << " rounds after 1 warm-up, 1 thread; every arm's greedy tokens "
            << "checked against pq2_0 before timing.\n" << std::flush;
  std::ostringstream log;
  experiments::Pools pools;
  experiments::Progress progress(0, false);
  experiments::RunContext ctx{pools, progress, log};
  const auto t0 = std::chrono::steady_clock::now();
  const auto speed = run_kind(cat("kind = \"speed\"\nprefill_tokens = 64\ndecode_tokens = 32\nrounds = ", o.rounds, "\n") + common,
                               "quickstart speed", ctx);
  const std::string px_source = trained ? cat("text = \"", o.text, "\"\ntokens = 512\nchunk = 64\n") : "tokens = 256\nchunk = 64\n";
  const auto px = run_kind("kind = \"perplexity\"\nrounds = 1\n" + px_source + common, "quickstart perplexity", ctx);
  const double seconds = seconds_since(t0);

  std::map<std::string, const experiments::RunReport::ArmValues*> by_speed, by_px;
  for (const auto& v : speed.arm_values) by_speed[v.arm] = &v;
  for (const auto& v : px.arm_values) by_px[v.arm] = &v;
  const auto cell = [](const std::map<std::string, const experiments::RunReport::ArmValues*>& m, const std::string& arm,
                       const std::string& key, double scale, int digits) -> std::string {
    const auto it = m.find(arm);
    if (it == m.end() || !std::isfinite(it->second->get(key))) return "FAILED";
    std::ostringstream os;
    os << std::fixed << std::setprecision(digits) << it->second->get(key) * scale;
    return os.str();
  };
  Table table({{"layout"}, {"bits/w", Align::right}, {"pp64 tok/s", Align::right}, {"tg32 tok/s", Align::right},
               {"tg32 vs pq2_0", Align::right}, {"decode bandwidth fraction", Align::right}, {"perplexity", Align::right},
               {"max |Δlogit|", Align::right}});
  std::set<std::string> perplexities;
  double max_diff = 0;
  const bool all_ok = speed.ok && px.ok;
  for (const LayoutInfo* L : exact) {
    const std::string arm(L->name);
    const std::string ppl = cell(by_px, arm, "perplexity", 1, 4);
    perplexities.insert(ppl);
    for (const auto* m : {&by_speed, &by_px})
      if (const auto it = m->find(arm); it != m->end()) max_diff = std::max(max_diff, it->second->get("max_logit_diff"));
    table.add({arm, fixed_text(L->bits_per_weight(), 3), cell(by_speed, arm, "prefill_tok_s", 1, 1), cell(by_speed, arm, "decode_tok_s", 1, 1),
               cell(by_speed, arm, "decode_speedup", 1, 2) + "×", cell(by_speed, arm, "decode_read_ceiling_fraction", 100, 1) + "%", ppl,
               cell(by_px, arm, "max_logit_diff", 1, 3)});
  }
  std::cout << "\n" << table.markdown();
  std::cout << "\ntok/s: median over rounds; decode bandwidth fraction = ternary weight bytes per token / time per token / the memory "
               "read ceiling measured beside the arms each round (a tiny model's weights sit in cache, so it can pass 100%); "
            << (trained ? cat("perplexity over the first 512 tokens of held-out text ", o.text, " in chunks of 64 (uniform guessing: the vocabulary size, ",
                              "so lower means the model predicts the text).\n")
                        : std::string("perplexity over 256 pseudo-random tokens in chunks of 64 (random weights: only the equality across layouts means something).\n"));
  std::cout << "perplexity " << (perplexities.size() == 1 ? "identical across layouts" : "DIFFERS across layouts")
            << "; max |logit difference| against pq2_0 over every greedy check: " << max_diff << "; model part took "
            << std::setprecision(1) << seconds << " s.\n";
  if (!all_ok || perplexities.size() != 1 || perplexities.count("FAILED")) {
    std::cerr << "ternlab quickstart: some layout failed the model checks\n" << speed.markdown << px.markdown;
    return 1;
  }
  return 0;
}

std::string peer_layouts() {
  std::vector<std::string> names;
  for (const peers::PeerFormat& p : peers::kPeerFormats) names.push_back(std::string(p.layout));
  return join(names);
}

int run_quickstart(const Options& o) {
  std::cout << "ternlab quickstart: a " << o.rows << " x " << o.cols
            << " synthetic ternary matrix (unit scales) in every layout, one q8_K activation row with d = 1\n\n";
  const TernaryMatrix w = make_weights(o.rows, o.cols, 2026, Fill::random, ScaleKind::unit);
  const UnitActivations a = make_unit_activations(1, o.cols, 2027);
  const Q8KBatch x = quantize_batch(a.f.data(), 1, o.cols);
  const std::vector<std::int64_t> want = oracle_int(w, a.i8, 1);

  Table table({{"layout"}, {"kernel"}, {"whose"}, {"bits/w", Align::right}, {"MB", Align::right}, {"oracle", Align::right},
               {"gemv ms", Align::right}, {"Gweights/s", Align::right}, {"GB/s", Align::right}});
  const double weights = double(o.rows) * double(o.cols);
  const auto median_seconds = [&](const auto& call) {
    std::vector<double> times;
    for (int r = 0; r < o.reps; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      call();
      times.push_back(seconds_since(t0));
    }
    std::nth_element(times.begin(), times.begin() + o.reps / 2, times.end());
    return times[std::size_t(o.reps / 2)];
  };
  const auto matches_oracle = [&](const std::vector<float>& y) {
    for (std::int64_t n = 0; n < o.rows; ++n)
      if (double(y[std::size_t(n)]) != double(want[std::size_t(n)])) return false;
    return true;
  };
  const auto add_row = [&](const LayoutInfo& L, const std::string& kernel, const std::string& whose, std::size_t bytes,
                           const std::string& check, double t) {
    table.add({std::string(L.name), kernel, whose, fixed_text(L.bits_per_weight(), 3), fixed_text(double(bytes) / 1e6, 2), check,
               fixed_text(t * 1e3, 3), fixed_text(weights / t / 1e9, 3), fixed_text(double(bytes) / t / 1e9, 3)});
  };
  int failures = 0, checked = 0;
  ThreadPool one_thread(1);
  for (const LayoutInfo* L : all_layouts()) {
    if (o.rows % L->rows != 0 || o.cols % L->k != 0) continue;
    const PackedMatrix p = pack(w, *L);
    if (unpack(p) != w) fail("quickstart: ", L->name, " does not round-trip");
    // A peer's format runs the peer's own algorithm first (a port of its kernel, named as the peer
    // only where measured within 10% of the original's build); ternlab's kernels for the same
    // bytes follow as ternlab's.
    const peers::PeerFormat* peer = peers::find_peer(L->name);
    if (peer) {
      const auto pm = peers::pack_peer(*peer, w, cat("quickstart ", L->name));
      std::vector<float> y(std::size_t(o.rows));
      const std::string failure = pm->apply_checked(one_thread, x, y.data(), o.rows);
      const bool exact = failure.empty() && matches_oracle(y);
      failures += failure.empty() ? 0 : 1;
      ++checked;
      const double t = median_seconds([&] { pm->apply(one_thread, x, y.data(), o.rows); });
      add_row(*L, peers::peer_kernel_name(*peer), peer->own_label(), pm->bytes(),
              !failure.empty() ? "FAIL" : exact ? "exact" : "peer-exact", t);
    }
    const std::string best = best_kernel(*L).variant.name();
    for (const KernelVariant& k : kernels_for(*L)) {
      std::vector<float> y(std::size_t(o.rows));
      k.gemv(p, x.row(0), y.data(), 0, p.row_groups());  // verify every kernel, time the best one
      const bool exact = matches_oracle(y);
      failures += exact ? 0 : 1;
      ++checked;
      if (k.name() != best && exact) continue;
      const double t = median_seconds([&] { k.gemv(p, x.row(0), y.data(), 0, p.row_groups()); });
      add_row(*L, k.name(), peer ? "ternlab's, on these bytes" : "ternlab's", p.bytes.size(), exact ? "exact" : "FAIL", t);
    }
  }
  std::cout << table.text();
  std::cout << "\n" << checked << " kernels checked against the oracle; each layout's best kernel (dispatch) timed: median of "
            << o.reps << " single-threaded gemv calls after one verified call. A peer's format (" << peer_layouts()
            << ") is timed first with the peer's own algorithm, ported (its byte layout, activations and dot products; named as the "
               "peer's own only where the port ran within 10% of the original's own build, otherwise '<format> after <peer>'s algorithm'; "
               "peer-exact: equal to the peer's own arithmetic, which rescales activations its own way), then with ternlab's "
               "best kernel for the same bytes; reference/scalar is ternlab's slow, obviously-right baseline, not the peer's speed.\n";
  if (failures) {
    std::cerr << "ternlab quickstart: " << failures << " kernel(s) disagree with the integer oracle\n";
    return 1;
  }
  return o.kernels_only ? 0 : run_model_part(o);
}

}  // namespace

void add_quickstart_command(CLI::App& app) {
  static Options o;
  auto* q = app.add_subcommand("quickstart", "Pack a synthetic matrix into every layout, check against the oracle, time");
  q->add_option("--rows", o.rows, "Weight rows")->capture_default_str()->check(CLI::PositiveNumber);
  q->add_option("--cols", o.cols, "Inner size (multiple of 256)")->capture_default_str()->check(CLI::PositiveNumber);
  q->add_option("--reps", o.reps, "Timed repetitions per kernel")->capture_default_str()->check(CLI::Range(1, 1000));
  q->add_option("--model", o.model, "Model of the model part (the trained one committed in models/)")->capture_default_str();
  q->add_option("--text", o.text, "Held-out text for the model part's perplexity")->capture_default_str();
  q->add_option("--preset", o.preset, "Run a synthetic preset instead of --model (tiny, small, ...: for scale)");
  q->add_option("--rounds", o.rounds, "Kept rounds of the model part")->capture_default_str()->check(CLI::Range(1, 1000));
  q->add_flag("--kernels-only", o.kernels_only, "Skip the model part");
  q->callback([] {
    if (const int rc = run_quickstart(o)) std::exit(rc);
  });
}

}  // namespace ternlab::cli
