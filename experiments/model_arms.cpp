// The arms every model kind shares (model_arms.hpp): the model keys, where the model comes from,
// reading each arm, validation before anything loads, one loaded Model per arm, the greedy check of
// every arm against the baseline arm, the timing of the arms (interleaved or one at a time), the
// report pieces the kinds share, and a model kind's registry entry.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <span>
#include <sstream>
#include <utility>

#include "common/files.hpp"
#include "common/memory.hpp"
#include "common/strings.hpp"
#include "kernels/cpu.hpp"
#include "experiments/arms.hpp"
#include "experiments/kinds.hpp"
#include "experiments/measure.hpp"
#include "experiments/model_arms.hpp"
#include "experiments/report.hpp"
#include "experiments/run_context.hpp"
#include "kernels/peers/peer_matmul.hpp"
#include "model/config.hpp"
#include "model/experiments.hpp"
#include "model/linear.hpp"
#include "model/synth.hpp"

namespace ternlab::experiments {

namespace {

namespace fs = std::filesystem;
using model::Model;

std::string preset_names() {
  std::vector<std::string> n;
  for (const auto& p : model::synth_presets()) n.push_back(p.name);
  return join(n);
}

}  // namespace

// --- keys and validation ------------------------------------------------------------------------

namespace {
int arm_gdn_chunk(const RunSpec& run, const ArmSpec& a) {
  const Located at = a.at("gdn_chunk");
  return at ? int(as_integer(at, key::gdn_chunk.lo, key::gdn_chunk.hi)) : int(key::gdn_chunk(run));
}
}  // namespace

std::vector<KeySpec> model_keys() {
  std::vector<KeySpec> k = common_keys();
  const std::vector<KeySpec> more = {
      {"model", Type::string, true, "path to a Bonsai 2 GGUF file (or give preset)"},
      {"preset", Type::string, true, "synthesize this preset (micro, tiny, small, mid, bonsai-27b) into <output>/models/, cached by preset+seed"},
      {"synth_type", Type::string, true, "with preset: the ternary tensors' GGUF type (pq2_0 default, ptq1_0, tq2_0, tq1_0: ggml's, what llama.cpp runs)"},
      {"synth_scale_group", Type::integer, true, "with preset: weights under one scale, 128 (default) or 256 (what tq2_0/tq1_0 hold)"},
      {"synth_unfolded", Type::boolean, true, "with preset: no Hadamard fold, so upstream llama.cpp computes the same function (default false)"},
      {"synth_layers", Type::integer, true, "with preset: this many layers of the preset's shapes (default: the preset's own count)"},
      {"load", Type::string, true, "mmap (default) or memory: how the GGUF file is read"},
      {"rounds", Type::integer, true, "kept rounds (default 5)"},
      {"warmup", Type::integer, true, "discarded rounds before them (default 1)"},
      {"threads", Type::integer, true, "default thread count of every arm (default 1)"},
      {"baseline", Type::string, false, "arm the ratios and the greedy check are taken against (default: the first arm)"},
      {"ceiling_mib", Type::integer, true, "buffer of the memory read ceiling (default 1024 MiB)"},
      {"sample_ms", Type::number, true, "each timed sample repeats the call for about this long (default 20)"},
      {"pin", Type::boolean, true, "pin the ceiling's pool threads to CPUs (default false)"},
      key::verify_tokens.spec("greedy tokens every arm must share with the baseline before timing"),
      key::prefill_chunk.spec("prompt tokens per gemm batch"),
      key::gdn_chunk.spec("tokens a chunk of the Gated DeltaNet's chunked form (spec §7.4.7; 64 in HF and llama.cpp), which then runs "
                          "every forward call of more than one token; 0 (default): token by token, bit-exact against decoding"),
      {"arm.gdn_chunk", Type::integer, true, "the arm's gdn_chunk (default: the top-level one)"},
      {"arms", Type::string, false,
       "interleaved (default: every arm loaded, then timed round by round) or one-at-a-time (each arm loaded, timed beside its own "
       "ceilings and freed: for arms that cannot fit together; ratios then compare separate passes)"},
      {"arm.name", Type::string, false, "the arm's name in tables and plots"},
      {"arm.layout", Type::string, true, "a registered layout every ternary weight is repacked into at load"},
      {"arm.layout_map", Type::string, true,
       "mixed layouts per tensor: \"ffn_*=b3r, *=t2r\" (glob patterns over matmul tensor names, first match wins; a pattern without '.' "
       "sees short names such as ffn_down, with '.' the whole GGUF name); a target \"t2r|b3r\" or \"measure\" is chosen per shape by "
       "timing the candidates (decode: gemv, prefill: gemm of prefill_chunk tokens) at the arm's threads, kept in the wisdom file; "
       "tensors no pattern matches take the arm's layout, else the file's format (docs/model.md, \"Mixed layouts\")"},
      {"measure_weights", Type::string, false,
       "how a measured layout_map rule rates its candidates: cold (default: each timed call after reading twice the last-level cache, "
       "so the weights come from memory, as when a model past the cache decodes) or warm (the planner's timing, calls after calls on "
       "one copy, which the cache holds where it fits)"},
      {"wisdom", Type::string, false, "the planner's wisdom file, for measured kernels and layout maps (default $TERNLAB_WISDOM, else ~/.cache/ternlab/wisdom.toml)"},
      {"arm.kernel", Type::string, true, "best, a strategy (reference, slot-mask, ...), strategy/isa, or a peer's own kernel (bitnet-i2s, ggml-tq2_0, ggml-tq1_0: its format's default)"},
      {"arm.threads", Type::integer, true, "threads of the arm's model (default: the top-level threads)"},
      {"arm.load", Type::string, true, "mmap or memory for this arm (default: the top-level load)"},
      {"arm.model", Type::string, true, "a different GGUF file for this arm (e.g. the same weights saved as PTQ1_0)"},
  };
  k.insert(k.end(), more.begin(), more.end());
  return k;
}

std::vector<KeySpec> with(std::vector<KeySpec> k, const std::vector<KeySpec>& extra) {
  k.insert(k.end(), extra.begin(), extra.end());
  return k;
}

std::uint64_t run_seed(const RunSpec& run) { return std::uint64_t(key::seed(run)); }

ModelSource model_source(const RunSpec& run) {
  Located m = run.at("model");
  Located p = run.at("preset");
  // A model named on the command line replaces the file's preset (`--set model=real.gguf`), a preset the file's model;
  // both in one file, or both on the command line, are ambiguous.
  if (m && p && m.line == 0 && p.line != 0) p = Located{};
  if (m && p && p.line == 0 && m.line != 0) m = Located{};  // and a preset on the command line the file's model
  if (m && p) fail_at(p, "give either 'model' (a GGUF file) or 'preset' (a synthetic model), not both");
  if (!m && !p)
    fail(run.file, ": kind '", run.kind, "' needs model = \"file.gguf\" or preset = \"tiny\" (presets: ", preset_names(), ")");
  ModelSource s;
  s.seed = run_seed(run);
  if (m) {
    s.path = as_string(m);
    if (!fs::is_regular_file(s.path)) fail_at(m, "no such model file '", s.path, "'");
    return s;
  }
  s.preset = as_string(p);
  relocated(p, [&] { return model::find_preset(s.preset); });
  const std::string type = run.string("synth_type", "pq2_0");
  s.synth.seed = s.seed;
  s.synth.ternary_type = int(relocated(run.at("synth_type"), [&] { return gguf::ternary_type_id(type, "synth_type"); }));
  s.synth.scale_group = int(run.integer("synth_scale_group", 128, 128, 256));
  if (s.synth.scale_group != 128 && s.synth.scale_group != 256)
    fail_at(run.at("synth_scale_group"), "a scale group is 128 or 256 weights, not ", s.synth.scale_group);
  const LayoutInfo& stored = find_layout(type);
  if (stored.scale_group() > s.synth.scale_group)
    fail_at(run.at("synth_type"), type, " holds one scale per ", stored.scale_group(), " weights: set synth_scale_group = ",
            stored.scale_group());
  s.synth.unfolded = run.boolean("synth_unfolded", false);
  s.layers = int(run.integer("synth_layers", 0, 0, 4096));
  // The default file keeps its old name, so a cached synthesis is found again.
  std::string variant;
  if (type != "pq2_0") variant += "-" + type;
  if (s.synth.scale_group != 128) variant += cat("-g", s.synth.scale_group);
  if (s.synth.unfolded) variant += "-unfolded";
  if (s.layers) variant += cat("-L", s.layers);
  s.path = (fs::path(run.string("output", "results")) / "models" / cat(s.preset, "-seed", s.seed, variant, ".gguf")).string();
  return s;
}

gguf::LoadMode load_mode(const Located& at) {
  const std::string v = as_string(at);
  if (v != "mmap" && v != "memory") fail_at(at, "'", v, "' is not a load mode (mmap or memory)");
  return gguf::parse_mode(v);
}

gguf::LoadMode arm_load(const RunSpec& run, const ArmSpec& arm) {
  if (const Located at = arm.at("load")) return load_mode(at);
  if (const Located at = run.at("load")) return load_mode(at);
  return gguf::LoadMode::mmap;
}

std::string arm_model_path(const ArmSpec& arm, const ModelSource& src) {
  const Located at = arm.at("model");
  if (!at) return src.path;
  const std::string p = as_string(at);
  if (!fs::is_regular_file(p)) fail_at(at, "no such model file '", p, "'");
  return p;
}

// `arms`: "interleaved" (default) or "one-at-a-time".
bool one_at_a_time(const RunSpec& run) {
  const Located at = run.at("arms");
  if (!at) return false;
  const std::string v = as_string(at);
  if (v != "interleaved" && v != "one-at-a-time") fail_at(at, "'", v, "' is not an arm schedule (interleaved or one-at-a-time)");
  return v == "one-at-a-time";
}

// The preset a source writes: its own, or its shapes with `layers` layers.
model::SynthPreset preset_of(const ModelSource& src) {
  const model::SynthPreset& preset = model::find_preset(src.preset);
  return src.layers ? model::with_layers(preset, src.layers) : preset;
}

// A model arm's kernel, by name: a peer's own where the arm names one or runs a peer's format with
// none named ("best" included: a peer format's best kernel is the peer's), else ternlab's.
std::string model_arm_kernel(const ArmSpec& a, const LayoutInfo& L) {
  const Located at = a.at("kernel");
  const std::string named = at && as_string(at) != "best" ? as_string(at) : "";
  const peers::PeerFormat* peer = relocated(at ? at : a.at("layout"), [&] { return model::peer_for(std::string(L.name), named); });
  return peer ? peers::peer_kernel_name(*peer) : arm_kernel(a, L, true).name();
}

// `measure_weights`: the bytes a cold measurement reads before each call (0: warm). The set is the
// kernel kinds' cold set (twice the last-level cache), or TERNLAB_COLD_WEIGHTS_MIB where set.
std::int64_t cold_measure_bytes(const std::string& mode, std::int64_t fallback_bytes) {
  if (mode == "warm") return 0;
  if (mode != "cold") fail("'", mode, "' is not a measurement (cold: weights from memory, warm: one copy)");
  if (const char* env = std::getenv("TERNLAB_COLD_WEIGHTS_MIB")) {
    char* end = nullptr;
    const long long mib = std::strtoll(env, &end, 10);
    if (end == env || *end != '\0' || mib < 1 || mib > (1 << 20))
      fail("TERNLAB_COLD_WEIGHTS_MIB=", env, " is not a whole number of MiB from 1 to 1048576");
    return std::int64_t(mib) << 20;
  }
  const std::int64_t llc = last_level_cache_bytes();
  return llc > 0 ? cold_set_bytes(llc) : fallback_bytes;
}

std::int64_t measure_cold_bytes(const RunSpec& run) {
  const Located at = run.at("measure_weights");
  const std::string mode = at ? as_string(at) : "cold";
  if (mode != "cold" && mode != "warm") fail_at(at, "'", mode, "' is not a measurement (cold: weights from memory, warm: one copy)");
  return cold_measure_bytes(mode, key::ceiling_mib(run) << 20);
}

model::LayoutMap arm_layout_map(const ArmSpec& arm) {
  const Located at = arm.at("layout_map");
  if (!at) return {};
  return relocated(at, [&] { return model::parse_layout_map(as_string(at)); });
}

const LayoutInfo& model_arm_layout(const ArmSpec& arm, const ModelSource& src) {
  if (arm.at("layout") || !arm.at("layout_map")) return arm_layout(arm);
  if (!src.preset.empty()) return find_layout(gguf::ternary_layout_name(std::uint32_t(src.synth.ternary_type), src.path));
  const gguf::File f = gguf::File::open(arm_model_path(arm, src), gguf::LoadMode::mmap);
  return find_layout(gguf::ternary_layout_name(std::uint32_t(model::ModelConfig::from_gguf(f).ternary_type), f.source));
}

namespace {

// The model's matmul tensors as an arm's map sees them, from the preset's hyperparameters (its file
// may not be written yet) or the file's header.
std::vector<std::string> arm_matmul_tensors(const ArmSpec& arm, const ModelSource& src) {
  const std::string path = arm_model_path(arm, src);
  if (path == src.path && !src.preset.empty()) return model::matmul_tensors(model::synth_config(preset_of(src), src.synth));
  return model::matmul_tensors(model::ModelConfig::from_gguf(gguf::File::open(path, gguf::LoadMode::mmap)));
}

// A map is checked before anything loads: its layouts (arm_layout_map), the rest's layout, and its
// patterns against the model's tensor names, every error naming the file, line and key.
void check_arm_layout_map(const RunSpec& run, const ArmSpec& a, const ModelSource& src) {
  const model::LayoutMap map = arm_layout_map(a);
  if (map.empty()) return;
  const Located at = a.at("layout_map");
  if (a.at("kernel") && peers::find_peer_kernel(as_string(a.at("kernel"))))
    fail_at(a.at("kernel"), "a peer's kernel runs its own format only, not a mixture of layouts");
  if (run.at("requantise_scales") && as_boolean(run.at("requantise_scales")))
    fail_at(at, "a mixture takes exact layouts only: requantise_scales has nothing to round");
  const LayoutInfo& rest = model_arm_layout(a, src);
  if (!rest.holds_exact_fp16_per128_scales())
    fail_at(a.at("layout"), "the tensors no pattern of layout_map matches take layout ", rest.name, ", which ", rest.lossy_scales_why(),
            "; a mixture takes exact layouts only");
  relocated(at, [&] { model::check_layout_map(map, arm_matmul_tensors(a, src), true, arm_model_path(a, src)); });
}

}  // namespace

void validate_model_kind(const RunSpec& run, const std::function<void(const RunSpec&)>& own_keys) {
  run_seed(run);
  key::verify_tokens(run);
  key::prefill_chunk(run);
  const ModelSource src = model_source(run);
  check_timed_run(run);
  run.string("wisdom", "");
  measure_cold_bytes(run);
  for (const ArmSpec& a : run.arms) {
    check_arm_layout_map(run, a, src);
    model_arm_kernel(a, model_arm_layout(a, src));
    arm_threads(run, a);
    arm_gdn_chunk(run, a);
    arm_load(run, a);
    arm_model_path(a, src);
  }
  if (own_keys) own_keys(run);
  check_memory(run);
}

// --- loading and verification -------------------------------------------------------------------

// Writes the preset once per (preset, seed) under <output>/models/; a partial file never keeps the name.
void ensure_model(const ModelSource& src, std::ostream& log) {
  if (src.preset.empty() || fs::exists(src.path)) return;
  fs::create_directories(fs::path(src.path).parent_path());
  log << "synthesizing preset " << src.preset << " (seed " << src.seed << ", "
      << gguf::traits_of(std::uint32_t(src.synth.ternary_type), src.path).name << ", scale group " << src.synth.scale_group
      << (src.synth.unfolded ? ", unfolded" : "") << (src.layers ? cat(", ", src.layers, " layers") : std::string()) << ") into " << src.path << "\n" << std::flush;
  replace_file_atomically(src.path, [&](const fs::path& partial) {
    model::write_synthetic(preset_of(src), partial.string(), src.synth);
  });
}

// The arms as planned, nothing loaded: names, layouts, kernels, threads, load modes and files.
ModelArms plan_arms(const RunSpec& run, RunContext& ctx, int prompt_len, int n) {
  ModelArms m;
  m.source = model_source(run);
  ensure_model(m.source, ctx.log);
  m.ratios = resolve_baselines(run);
  m.baseline = m.ratios.primary;
  m.interleaved = !one_at_a_time(run);
  m.prompt_len = prompt_len;
  m.check_tokens = n;
  for (std::size_t i = 0; i < run.arms.size(); ++i) {
    const ArmSpec& a = run.arms[i];
    const LayoutInfo& L = model_arm_layout(a, m.source);
    ModelArm arm;
    arm.name = a.name;
    arm.baseline = run.arms[m.ratios.of[i]].name;
    arm.layout = std::string(L.name);
    arm.layout_map = arm_layout_map(a);
    if (!arm.layout_map.empty()) {
      arm.rest_layout = arm.layout;
      arm.layout = arm.layout_map.text();  // until the load says what each rule chose
    }
    arm.wisdom = run.string("wisdom", "");
    arm.kernel = model_arm_kernel(a, L);
    arm.kernel_named = a.at("kernel") && as_string(a.at("kernel")) != "best";
    arm.threads = arm_threads(run, a);
    arm.gdn_chunk = arm_gdn_chunk(run, a);
    arm.bits_per_weight = L.bits_per_weight();
    arm.load = gguf::mode_name(arm_load(run, a));
    arm.path = arm_model_path(a, m.source);
    m.arms.push_back(std::move(arm));
  }
  return m;
}

// How an arm's model is loaded: its layout, kernel, load mode and threads, and the run's prefill chunk.
model::LoadOptions load_options(const RunSpec& run, const ModelArm& arm) {
  model::LoadOptions o;
  o.layout = arm.layout_map.empty() ? arm.layout : arm.rest_layout;
  o.layout_map = arm.layout_map;
  o.plan_tokens = arm.plan_tokens;
  // A measured map times its candidates as the run times its arms: samples of sample_ms, up to 3 rounds.
  o.plan_rounds = int(std::min<std::int64_t>(3, run.integer("rounds", 3, 1, 100000)));
  o.plan_seconds = key::sample_ms(run) / 1000;
  if (arm.layout_map.measured()) o.plan_cold_bytes = measure_cold_bytes(run);
  o.wisdom = arm.wisdom;
  o.kernel = arm.kernel;
  o.mode = gguf::parse_mode(arm.load);
  o.threads = arm.threads;
  o.requantise_scales = arm.requantise_scales;
  if (arm.plan != PlanMode::estimate && !arm.kernel_named) {  // the planner chooses at load (wisdom, or measuring)
    o.kernel = "";
    o.plan = arm.plan;
  }
  o.prefill_chunk = int(key::prefill_chunk(run));
  o.gdn_chunk = arm.gdn_chunk;
  return o;
}

// Loads arm i (a load error fails that arm only).
void load_arm(const RunSpec& run, RunContext& ctx, ModelArms& m, std::size_t i) {
  ModelArm& arm = m.arms[i];
  const model::LoadOptions o = load_options(run, arm);
  try {
    arm.model = Model::load(arm.path, o);
    arm.kernel = arm.model->kernel_name();  // what runs: the planner's choice where it measured
    if (arm.model->mixed()) {  // what each rule chose, and the bits of the mixture
      arm.layout = arm.model->layout_text();
      arm.bits_per_weight = arm.model->bits_per_weight();
      arm.tensor_layouts = arm.model->tensor_layouts();
      for (const std::string& n : arm.model->layout_notes()) ctx.log << arm.name << ": " << n << "\n";
    }
  } catch (const Error& e) {
    arm.failure = cat("load: ", e.what());
  }
  ctx.progress.step("load " + arm.name);
}

// The greedy check of arm i: `check_tokens` tokens after a `prompt_len`-token prompt, against the
// baseline arm, which must be checked first (its tokens and logits are kept for the others). The
// prompt's Gated DeltaNet runs token by token in every arm: the check is of the weights and
// kernels, bit for bit, and arms that differ in gdn_chunk alone would otherwise differ by the
// chunked form's rounding (bounded by its own tests), enough to flip a near-tie of a synthetic model.
void check_arm(const RunSpec& run, RunContext& ctx, ModelArms& m, std::size_t i) {
  ModelArm& a = m.arms[i];
  const ModelArm& base = m.arms[m.baseline];
  if (i == m.baseline) {
    if (a.model) {
      m.vocab = a.model->config().n_vocab;
      m.ternary_bytes = a.model->ternary_bytes_per_token();
      m.config = a.model->config();
    }
    m.prompt = model::random_tokens(m.prompt_len, std::max(m.vocab, 1), run_seed(run));
    if (a.model) a.tokens = model::greedy(*a.model, m.prompt, m.check_tokens, &m.base_logits, true);
  } else if (a.failure.empty()) {
    if (!m.config) {
      a.failure = "the baseline arm '" + base.name + "' did not load";
    } else if (a.model->config().n_vocab != m.vocab) {
      a.failure = cat("vocabulary ", a.model->config().n_vocab, " != baseline's ", m.vocab);
    } else {
      std::vector<std::vector<float>> logits;
      a.tokens = model::greedy(*a.model, m.prompt, m.check_tokens, &logits, true);
      for (std::size_t t = 0; t < a.tokens.size(); ++t) {
        for (int v = 0; v < m.vocab; ++v)
          a.max_logit_diff = std::max(a.max_logit_diff, double(std::fabs(logits[t][std::size_t(v)] - m.base_logits[t][std::size_t(v)])));
        if (a.tokens[t] != base.tokens[t]) {
          a.first_difference = int(t);
          a.failure = cat("greedy token ", t, " is ", a.tokens[t], ", the baseline's is ", base.tokens[t],
                          " (max |logit difference| ", a.max_logit_diff, ")");
          break;
        }
      }
    }
  }
  ctx.progress.step("greedy check " + a.name);
}

// Loads, checks and times the arms; returns one TimingResult per phase. Interleaved (the default):
// every arm loaded and checked, then each phase times all of them round by round. One at a time:
// the baseline first, then each arm in order is loaded, checked, timed in its own pass beside its
// own ceilings, and freed before the next; the passes merge into one result per phase, marked not
// interleaved. `prepare` sees the baseline first in both modes.
std::vector<TimingResult> run_arms(const RunSpec& run, RunContext& ctx, ModelArms& m, const std::vector<MeasureOptions>& phases,
                                   const Prepare& prepare) {
  std::vector<std::size_t> order{m.baseline};
  for (std::size_t i = 0; i < m.arms.size(); ++i)
    if (i != m.baseline) order.push_back(i);
  std::vector<std::vector<ArmSetup>> setups(m.arms.size());
  const auto ready = [&](std::size_t i) {
    if (prepare) setups[i] = prepare(i, m.arms[i]);
    setups[i].resize(phases.size());
  };
  std::vector<TimingResult> out;
  if (m.interleaved) {
    for (std::size_t i = 0; i < m.arms.size(); ++i) load_arm(run, ctx, m, i);
    for (std::size_t i : order) check_arm(run, ctx, m, i);
    for (std::size_t i : order) ready(i);
    for (std::size_t p = 0; p < phases.size(); ++p) {
      std::vector<ArmSetup> s;
      for (auto& v : setups) s.push_back(std::move(v[p]));
      out.push_back(measure_arms(std::move(s), phases[p], ctx.pools, ctx.progress));
    }
    return out;
  }
  std::vector<std::vector<TimingResult>> passes(phases.size(), std::vector<TimingResult>(m.arms.size()));
  for (std::size_t i : order) {
    load_arm(run, ctx, m, i);
    check_arm(run, ctx, m, i);
    ready(i);
    for (std::size_t p = 0; p < phases.size(); ++p) {
      if (!m.arms[i].failure.empty()) {  // never timed: no pass of ceilings for it either
        TimingResult none;
        none.rounds = phases[p].rounds;
        none.warmup = phases[p].warmup;
        ArmTiming t;
        t.setup = std::move(setups[i][p]);
        t.failure = m.arms[i].failure;
        none.arms.push_back(std::move(t));
        for (std::int64_t u = 0; u < measure_units(1, phases[p]); ++u) ctx.progress.step("skip " + m.arms[i].name);
        passes[p][i] = std::move(none);
        continue;
      }
      passes[p][i] = measure_arms({std::move(setups[i][p])}, phases[p], ctx.pools, ctx.progress);
    }
    m.arms[i].model.reset();  // freed before the next arm loads
  }
  for (std::size_t p = 0; p < phases.size(); ++p)
    out.push_back(merge_passes(std::move(passes[p]), phases[p].baseline, phases[p].baseline_label));
  return out;
}

std::string check_cell(const ModelArm& a, bool is_baseline) {
  if (!a.failure.empty()) return "**FAILED**";
  return is_baseline ? "baseline" : cat("equal (max \\|Δlogit\\| ", sig(a.max_logit_diff), ")");
}

std::string model_line(const ModelArms& m) {
  if (!m.config) return m.source.describe() + "\n\n";
  const model::ModelConfig& c = *m.config;
  return cat(m.source.describe(), ": ", c.n_layer, " layers, hidden ", c.n_embd, ", vocab ", c.n_vocab, "; ",
             sig(double(m.ternary_bytes) / 1e6), " MB of ternary weights streamed per decoded token in the baseline's layout ",
             m.arms[m.baseline].layout, ".\n\n");
}

// After each model table: the arms that failed verification, and what holding them all cost.
std::string arms_footer(const ModelArms& m) {
  std::string s;
  for (const ModelArm& a : m.arms)
    if (!a.failure.empty()) s += cat("\n**", a.name, " failed verification and was not timed:** ", a.failure, "\n");
  std::vector<int> threads;
  for (const ModelArm& a : m.arms) threads.push_back(a.threads);
  s += oversubscribed_note(threads);
  if (const std::int64_t rss = peak_rss_bytes(); rss > 0)
    s += cat("\npeak resident memory of the run so far: ", sig(double(rss) / double(1 << 30)), " GiB (",
             m.interleaved ? "every arm's model" : "one arm's model at a time", ", the file's touched pages and the ceiling buffer together).\n");
  return s;
}

std::string ceilings_text(const TimingResult& r) {
  std::vector<std::string> t;
  for (const auto& [n, v] : r.ceiling_gbps) t.push_back(ceiling_text(r, n, v));
  std::vector<std::string> c;
  for (const auto& [n, v] : r.compute_gmacs) c.push_back(cat(n, " thr ", with_range(stat_of(v), " GMAC/s")));
  return cat("memory read ceiling (streaming sum over ", sig(r.ceiling_bytes / (1 << 20)), " MiB, ",
             r.interleaved ? "each round beside the arms" : "each round of every arm's own pass, all passes together", "): ",
             join(t, "; "),
             c.empty() ? std::string() : cat("  \nint8 compute ceiling (register-only loop, the same rounds): ", join(c, "; ")), "\n\n");
}

Json arm_json_head(const ModelArm& a) {
  Json j{{"name", a.name}, {"layout", a.layout}, {"kernel", a.kernel}, {"threads", a.threads},
         {"gdn_chunk", a.gdn_chunk}, {"oversubscribed", oversubscribed(a.threads)}, {"baseline", a.baseline}, {"load", a.load}, {"model", a.path},
         {"verified", a.failure.empty()}, {"failure", a.failure}, {"max_logit_diff", json_number(a.max_logit_diff)}};
  if (a.layout_map.empty()) return j;
  j["layout_map"] = a.layout_map.text();
  j["rest_layout"] = a.rest_layout;
  j["bits_per_weight"] = json_number(a.bits_per_weight);
  Json tensors = Json::array();  // which layout and kernel each matmul got
  for (const model::TensorLayout& t : a.tensor_layouts)
    tensors.push_back(Json{{"tensor", t.tensor}, {"layout", t.layout}, {"kernel", t.kernel}, {"rule", t.rule}, {"rows", t.rows},
                           {"cols", t.cols}, {"bytes", t.bytes}});
  j["tensor_layouts"] = std::move(tensors);
  return j;
}

Json run_json_head(const RunSpec& run, const std::string& title, const ModelArms& m) {
  return Json{{"index", run.index}, {"name", title}, {"kind", run.kind}, {"model", m.source.path}, {"preset", m.source.preset},
              {"seed", m.source.seed}, {"baseline", m.arms[m.baseline].name}, {"ternary_bytes_per_token", m.ternary_bytes},
              {"interleaved", m.interleaved}, {"arm_order", m.interleaved ? "interleaved" : "one-at-a-time"},
              {"ratios", m.interleaved ? "same rounds" : "separate passes"}, {"sweep", sweep_json(run)}};
}

ArmSetup setup_of(const ModelArm& a) {
  ArmSetup s;
  s.name = a.name;
  s.layout = a.layout;
  s.kernel = a.kernel;
  s.threads = a.threads;
  s.options = "load=" + a.load + (a.gdn_chunk != key::gdn_chunk.fallback ? cat(", gdn_chunk=", a.gdn_chunk) : std::string());
  s.bits_per_weight = a.bits_per_weight;
  s.baseline = a.baseline;
  const std::string failure = a.failure;
  s.verify = [failure] { return failure; };
  return s;
}

// One arm's pp n (decode false) or tg n call, over `stream`.
ArmSetup speed_setup(const ModelArm& a, bool decode, int n, int chunk, const std::vector<std::int32_t>& stream) {
  ArmSetup s = setup_of(a);
  if (!a.model) return s;
  Model* model = a.model.get();
  // Weights are streamed once per forward call: every token in decode, every chunk in prefill.
  const std::int64_t passes = decode ? n : (n + chunk - 1) / chunk;
  s.weight_bytes = s.bytes = double(model->ternary_bytes_per_token()) * double(passes);
  // One session per arm, reset at the start of every call: a call starts from an empty context,
  // as a decode does, without allocating and faulting in its state buffers again, which slowed the
  // later arm (measured: docs/notebook/2026-12-03-sapphire-rapids-kernels.md).
  auto session = std::make_shared<model::Session>(model->new_session());
  if (decode) {
    s.call = [model, stream, session] {
      model->reset_session(*session);
      for (const std::int32_t& t : stream) model->forward(*session, std::span(&t, 1));
    };
  } else {
    s.call = [model, stream, session] {
      model->reset_session(*session);
      model->forward(*session, stream);
    };
  }
  return s;
}

std::int64_t model_units(const RunSpec& run, int rounds, int warmup) {
  MeasureOptions o = measure_options(run, rounds, warmup);
  return std::int64_t(2 * run.arms.size()) + measure_units(run.arms.size(), o);
}

// The kind's own keys are validated before the memory estimate, which reads them.
KindInfo model_kind(const std::string& name, const std::string& summary, const std::vector<KeySpec>& own,
                    std::function<void(const RunSpec&)> own_keys, std::function<RunReport(const RunSpec&, RunContext&)> run,
                    std::function<std::int64_t(const RunSpec&)> units) {
  register_plan_notes(name, memory_notes);
  return {name, summary, with(model_keys(), own), {},
          [own_keys = std::move(own_keys)](const RunSpec& r) { validate_model_kind(r, own_keys); }, std::move(run), std::move(units)};
}

// The greedy check alone (untimed kinds): every arm loaded and checked, one at a time when asked.
ModelArms load_and_check_arms(const RunSpec& run, RunContext& ctx, int prompt_len, int n) {
  ModelArms m = plan_arms(run, ctx, prompt_len, n);
  run_arms(run, ctx, m, {}, nullptr);
  if (!m.interleaved) return m;
  for (ModelArm& a : m.arms) a.model.reset();
  return m;
}

// The report of a model kind: the failed arms' reasons after its table and notes.
RunReport finish_model_report(RunReport rep, std::ostringstream& md, Json js, const ModelArms& m) {
  md << arms_footer(m);
  rep.markdown = md.str();
  rep.json = std::move(js);
  return rep;
}

}  // namespace ternlab::experiments
