// The model experiment kinds: whole forward passes of a Bonsai 2 model (a GGUF file, or a synthetic
// preset written once into the output folder), one loaded Model per arm (layout x kernel x threads
// x load mode), every arm's greedy tokens checked against the baseline arm before anything is timed.
//   prefill    - pp N: one N-token prompt from an empty context (gemm in prefill_chunk batches);
//   decode     - tg N: N single-token steps (gemv) from an empty context, plus the decode bandwidth
//                fraction: ternary weight bytes per token / time per token / memory read ceiling;
//   perplexity - over a text file or a synthetic token stream, in chunks; equal across arms to 4 decimals;
//   greedy     - greedy continuations equal to the baseline arm's, with the max |logit difference|;
//   profile    - per-op wall time of one decode token (model::OpProfile).
#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <atomic>
#include <chrono>
#include <cstring>

#include "common/files.hpp"
#include "common/memory.hpp"
#include "experiments/memory.hpp"
#include "common/strings.hpp"
#include "common/table.hpp"
#include "experiments/arms.hpp"
#include "experiments/kinds.hpp"
#include "experiments/measure.hpp"
#include "experiments/model_arms.hpp"
#include "experiments/run_context.hpp"
#include "kernels/cpu.hpp"
#include "kernels/thread_pool.hpp"
#include "kernels/peers/peer_matmul.hpp"
#include "model/config.hpp"
#include "model/linear.hpp"
#include "model/experiments.hpp"
#include "model/sampler.hpp"
#include "model/synth.hpp"
#include "model/tokenizer.hpp"

namespace ternlab::experiments {

namespace {

namespace fs = std::filesystem;
using model::Model;

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
namespace perplexity_key {
constexpr IntegerKey tokens{"tokens", 256, 2, std::int64_t(1) << 30};
constexpr IntegerKey chunk{"chunk", 64, 2, 1 << 20};
}  // namespace perplexity_key
namespace greedy_key {
constexpr IntegerKey tokens{"tokens", 16, 1, 1 << 20};
constexpr IntegerKey prompt_tokens{"prompt_tokens", 8, 1, 1 << 20};
}  // namespace greedy_key
namespace profile_key {
constexpr IntegerKey prompt_tokens{"prompt_tokens", 16, 1, 1 << 20};
}
namespace faults_key {
constexpr IntegerKey tokens{"tokens", 8, 2, 1 << 16};
constexpr BooleanKey drop_cache{"drop_cache", true};
constexpr IntegerKey rounds = key::rounds(3), warmup = key::warmup(0);
}  // namespace faults_key

std::string preset_names() {
  std::vector<std::string> n;
  for (const auto& p : model::synth_presets()) n.push_back(p.name);
  return join(n);
}

}  // namespace

// --- keys and validation ------------------------------------------------------------------------

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
      {"arms", Type::string, false,
       "interleaved (default: every arm loaded, then timed round by round) or one-at-a-time (each arm loaded, timed beside its own "
       "ceilings and freed: for arms that cannot fit together; ratios then compare separate passes)"},
      {"arm.name", Type::string, false, "the arm's name in tables and plots"},
      {"arm.layout", Type::string, true, "a registered layout every ternary weight is repacked into at load"},
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

// The profile kind's barrier detour: a competing busy thread (or none), and pinned pool workers.
const std::vector<std::string> kDisturbances = {"none", "busy", "busy-niced"};

std::string arm_disturbance(const ArmSpec& a) {
  const Located at = a.at("disturb");
  if (!at) return "none";
  const std::string v = as_string(at);
  if (std::find(kDisturbances.begin(), kDisturbances.end(), v) == kDisturbances.end())
    fail_at(at, "'", v, "' is not a disturbance (", join(kDisturbances), ")");
  return v;
}
bool arm_pins_workers(const ArmSpec& a) {
  const Located at = a.at("pin_workers");
  return at ? as_boolean(at) : false;
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

namespace {

// --- memory -------------------------------------------------------------------------------------

// The tensors of a model as the estimate needs them: from the GGUF file's header, or from the
// preset's hyperparameters (its file may not be written yet).
struct ModelShape {
  struct Tensor {
    std::string name;
    bool ternary = false;
    std::int64_t rows = 0, cols = 0;  // ternary: output rows x input columns
    std::uint64_t stored = 0;         // bytes in the file
    std::int64_t elements = 0;
  };
  std::optional<model::ModelConfig> config;
  std::vector<Tensor> tensors;
  std::uint64_t file_bytes = 0;
  std::string unreadable;  // why the file's shapes are unknown (the load will say so for the arm)
};

std::uint64_t packed_bytes(const LayoutInfo& L, std::int64_t rows, std::int64_t cols) {
  return std::uint64_t((rows + L.rows - 1) / L.rows) * std::uint64_t((cols + L.k - 1) / L.k) * std::uint64_t(L.block_bytes());
}

// The preset a source writes: its own, or its shapes with `layers` layers.
model::SynthPreset preset_of(const ModelSource& src) {
  const model::SynthPreset& preset = model::find_preset(src.preset);
  return src.layers ? model::with_layers(preset, src.layers) : preset;
}

ModelShape shape_of(const std::string& path, const ModelSource& src) {
  ModelShape s;
  if (path == src.path && !src.preset.empty()) {
    const model::ModelConfig c = model::synth_config(preset_of(src), src.synth);
    const LayoutInfo& stored = find_layout(gguf::ternary_layout_name(std::uint32_t(src.synth.ternary_type), src.path));
    for (const model::TensorSpec& t : model::tensor_specs(c)) {
      std::int64_t n = 1;
      for (std::uint64_t e : t.ne) n *= std::int64_t(e);
      ModelShape::Tensor x{t.name, t.kind == model::Kind::ternary, 0, 0, 0, n};
      if (x.ternary) {
        x.cols = std::int64_t(t.ne[0]);
        x.rows = std::int64_t(t.ne[1]);
        x.stored = packed_bytes(stored, x.rows, x.cols);
      } else {
        x.stored = std::uint64_t(n) * (t.kind == model::Kind::bf16 ? 2 : 4);
      }
      s.file_bytes += x.stored;
      s.tensors.push_back(std::move(x));
    }
    s.config = c;
    return s;
  }
  try {
    const gguf::File f = gguf::File::open(path, gguf::LoadMode::mmap);
    s.file_bytes = f.file_size();
    s.config = model::ModelConfig::from_gguf(f);
    for (const gguf::TensorInfo& t : f.tensors) {
      ModelShape::Tensor x{t.name, gguf::is_ternary(t.tensor_type()), 0, 0, t.bytes, t.elements()};
      if (x.ternary) {
        x.cols = std::int64_t(t.ne[0]);
        x.rows = t.ne.size() > 1 ? std::int64_t(t.ne[1]) : 1;
      }
      s.tensors.push_back(std::move(x));
    }
  } catch (const Error& e) {
    s.unreadable = e.what();
    if (s.file_bytes == 0 && fs::is_regular_file(path)) s.file_bytes = fs::file_size(path);
  }
  return s;
}

// Tokens a session of this run holds at most: the greedy check's, or the kind's own.
std::int64_t context_tokens(const RunSpec& run, const ModelKindHooks& kind) {
  const std::int64_t check = 8 + key::verify_tokens(run);
  return kind.context_tokens ? std::max(check, kind.context_tokens(run)) : check;
}

// One arm's resident memory, by part (docs/experiments.md, "Memory").
struct ArmMemory {
  std::string arm;
  std::int64_t weights = 0;    // every ternary matrix but the embedding, repacked into the arm's layout
  std::int64_t embedding = 0;  // the embedding table, kept in the file's format
  std::int64_t floats = 0;     // norms, conv and gate tensors, widened to f32
  std::int64_t file = 0;       // load = "memory": the whole file on the heap
  std::int64_t repack = 0;     // the largest ternary tensor's source copy while it is repacked
  std::int64_t sessions = 0;   // two sessions (KV cache, conv and recurrent state) at the run's context
  std::int64_t scratch = 0;    // one chunk's activations, the logits, the greedy check's logits
  std::string unknown;         // the file could not be read: only its size is counted
  std::int64_t total() const { return weights + embedding + floats + file + repack + sessions + scratch; }
};

struct RunMemory {
  std::vector<ArmMemory> arms;
  std::int64_t ceiling = 0;  // the memory read ceiling's buffer (one at a time, whatever the arms)
  bool one_at_a_time = false;
  AvailableMemory available;
  // The arms held at once: all of them, or the largest alone.
  std::int64_t arms_bytes() const {
    std::int64_t sum = 0, most = 0;
    for (const ArmMemory& a : arms) {
      sum += a.total();
      most = std::max(most, a.total());
    }
    return one_at_a_time ? most : sum;
  }
  std::int64_t margin() const { return memory_margin(arms_bytes() + ceiling); }
  std::int64_t needed() const { return arms_bytes() + ceiling + margin(); }
  bool fits() const { return available.bytes < 0 || needed() <= available.bytes; }
};

RunMemory estimate_memory(const RunSpec& run) {
  RunMemory m;
  m.one_at_a_time = one_at_a_time(run);
  m.available = available_memory();
  const ModelKindHooks& kind = find_kind(run.kind, run.at("kind")).model;
  if (kind.read_ceiling) m.ceiling = key::ceiling_mib(run) << 20;
  const ModelSource src = model_source(run);
  const std::int64_t ctx = context_tokens(run, kind);
  const std::int64_t chunk = std::min<std::int64_t>(ctx, key::prefill_chunk(run));
  const std::int64_t verify = key::verify_tokens(run);
  std::map<std::string, ModelShape> shapes;
  for (const ArmSpec& a : run.arms) {
    const std::string path = arm_model_path(a, src);
    if (!shapes.count(path)) shapes.emplace(path, shape_of(path, src));
    const ModelShape& s = shapes.at(path);
    const LayoutInfo& L = arm_layout(a);
    ArmMemory e;
    e.arm = a.name;
    if (arm_load(run, a) == gguf::LoadMode::memory) e.file = std::int64_t(s.file_bytes);
    if (!s.config) {
      e.unknown = s.unreadable;
      e.weights = std::int64_t(s.file_bytes);
      m.arms.push_back(e);
      continue;
    }
    for (const ModelShape::Tensor& t : s.tensors) {
      if (!t.ternary) {
        e.floats += 4 * t.elements;
      } else if (t.name == "token_embd.weight") {
        e.embedding += std::int64_t(t.stored);
      } else {
        e.weights += std::int64_t(packed_bytes(L, t.rows, t.cols));
        e.repack = std::max(e.repack, std::int64_t(t.stored));
      }
    }
    const model::ModelConfig& c = *s.config;
    const std::int64_t gdn = c.recurrent_state_bytes();
    std::int64_t session = 0;
    for (int l = 0; l < c.n_layer; ++l)
      if (!c.is_gdn(l))  // values, and keys in whole tiles of positions (model::KeyCache)
        session += 4 * (ctx + model::KeyCache::padded(ctx)) * std::int64_t(c.n_head_kv) * c.head_dim;
    e.sessions = 2 * (session + gdn);
    if (kind.state_copies) e.sessions += kind.state_copies(run) * gdn;
    const std::int64_t width = std::max({c.n_embd, c.n_ff, c.conv_channels(), 2 * c.attn_dim()});
    const std::int64_t logit_rows = kind.logit_rows ? kind.logit_rows(run) : 1;
    e.scratch = 4 * chunk * 8 * width + 4 * std::int64_t(c.n_vocab) * (logit_rows + verify);
    m.arms.push_back(e);
  }
  return m;
}

std::string estimate_text(const RunMemory& m) {
  std::vector<std::string> per_arm;
  for (const ArmMemory& a : m.arms)
    per_arm.push_back(cat("'", a.arm, "' ", gib_text(double(a.total())), a.unknown.empty() ? "" : " (file size only: " + a.unknown + ")"));
  return cat(join(per_arm), "; ", m.one_at_a_time ? "one at a time, the largest arm " : "interleaved, all arms together ",
             gib_text(double(m.arms_bytes())), " + ceiling buffer ", gib_text(double(m.ceiling)), " + margin ",
             gib_text(double(m.margin())), " = ", gib_text(double(m.needed())));
}

std::string available_text(const AvailableMemory& a) {
  return a.bytes < 0 ? "unknown here (no /proc/meminfo): not checked" : cat(gib_text(double(a.bytes)), " available (", a.source, ")");
}

// Refuses, before anything loads, a run whose arms cannot fit in the memory available.
void check_memory(const RunSpec& run) {
  const RunMemory m = estimate_memory(run);
  if (m.fits()) return;
  const Located arms_at = run.at("arms");
  const Located& at = arms_at ? arms_at : run.arms.front().table;
  if (m.one_at_a_time)
    fail_at(at, "even one arm at a time needs more memory than there is: estimated ", estimate_text(m), ", against ",
            available_text(m.available), "; use a smaller model or preset, a smaller ceiling_mib, or a machine with more memory");
  RunMemory one = m;
  one.one_at_a_time = true;
  if (!one.fits())
    fail_at(at, "the ", m.arms.size(), " arms cannot fit in memory together, nor one at a time: estimated ", estimate_text(m),
            ", against ", available_text(m.available), "; one at a time would need ", gib_text(double(one.needed())),
            ": use a smaller model or preset, a smaller ceiling_mib, or a machine with more memory");
  fail_at(at, "the ", m.arms.size(), " arms cannot fit in memory together: estimated ", estimate_text(m), ", against ",
          available_text(m.available), "; keep fewer arms, or set arms = \"one-at-a-time\" to load, measure and free each arm in ",
          "turn (needs ", gib_text(double(one.needed())), "; marked not interleaved: its ratios compare separate passes)");
}

}  // namespace

std::string memory_notes(const RunSpec& run) {
  if (run.arms.empty()) return "";
  const RunMemory m = estimate_memory(run);
  return cat("    memory (estimate): ", estimate_text(m), "; ", available_text(m.available), "\n");
}

// A model arm's kernel, by name: a peer's own where the arm names one or runs a peer's format with
// none named ("best" included: a peer format's best kernel is the peer's), else ternlab's.
std::string model_arm_kernel(const ArmSpec& a, const LayoutInfo& L) {
  const Located at = a.at("kernel");
  const std::string named = at && as_string(at) != "best" ? as_string(at) : "";
  const peers::PeerFormat* peer = relocated(at ? at : a.at("layout"), [&] { return model::peer_for(std::string(L.name), named); });
  return peer ? peers::peer_kernel_name(*peer) : arm_kernel(a, L, true).name();
}

// How far a peer kernel's perplexity may sit from the baseline's. The peers keep their own float
// arithmetic (ggml sums a block's lanes in its order, BitNet rescales per token), so their logits
// differ in the last bits. On a random-weight preset, whose perplexities run to 10^6, that moved
// ggml TQ2_0's perplexity by 0.08% against ternlab's kernel on the same bytes; a wrong kernel moves
// it by far more than 1%.
constexpr double kPeerPerplexityTolerance = 1e-2;

void validate_model_kind(const RunSpec& run, const std::function<void(const RunSpec&)>& own_keys) {
  run_seed(run);
  key::verify_tokens(run);
  key::prefill_chunk(run);
  const ModelSource src = model_source(run);
  check_timed_run(run);
  for (const ArmSpec& a : run.arms) {
    model_arm_kernel(a, arm_layout(a));
    arm_threads(run, a);
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
    const LayoutInfo& L = arm_layout(a);
    ModelArm arm;
    arm.name = a.name;
    arm.baseline = run.arms[m.ratios.of[i]].name;
    arm.layout = std::string(L.name);
    arm.kernel = model_arm_kernel(a, L);
    arm.kernel_named = a.at("kernel") && as_string(a.at("kernel")) != "best";
    arm.threads = arm_threads(run, a);
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
  o.layout = arm.layout;
  o.kernel = arm.kernel;
  o.mode = gguf::parse_mode(arm.load);
  o.threads = arm.threads;
  o.requantise_scales = arm.requantise_scales;
  if (arm.plan == PlanMode::measure && !arm.kernel_named) {  // the planner chooses at load
    o.kernel = "";
    o.plan = PlanMode::measure;
  }
  o.prefill_chunk = int(key::prefill_chunk(run));
  return o;
}

// Loads arm i (a load error fails that arm only).
void load_arm(const RunSpec& run, RunContext& ctx, ModelArms& m, std::size_t i) {
  ModelArm& arm = m.arms[i];
  const model::LoadOptions o = load_options(run, arm);
  try {
    arm.model = Model::load(arm.path, o);
    arm.kernel = arm.model->kernel_name();  // what runs: the planner's choice where it measured
  } catch (const Error& e) {
    arm.failure = cat("load: ", e.what());
  }
  ctx.progress.step("load " + arm.name);
}

// The greedy check of arm i: `check_tokens` tokens after a `prompt_len`-token prompt, against the
// baseline arm, which must be checked first (its tokens and logits are kept for the others).
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
    if (a.model) a.tokens = model::greedy(*a.model, m.prompt, m.check_tokens, &m.base_logits);
  } else if (a.failure.empty()) {
    if (!m.config) {
      a.failure = "the baseline arm '" + base.name + "' did not load";
    } else if (a.model->config().n_vocab != m.vocab) {
      a.failure = cat("vocabulary ", a.model->config().n_vocab, " != baseline's ", m.vocab);
    } else {
      std::vector<std::vector<float>> logits;
      a.tokens = model::greedy(*a.model, m.prompt, m.check_tokens, &logits);
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

// The greedy check alone (untimed kinds): every arm loaded and checked, one at a time when asked.
ModelArms load_and_check(const RunSpec& run, RunContext& ctx, int prompt_len, int n) {
  ModelArms m = plan_arms(run, ctx, prompt_len, n);
  run_arms(run, ctx, m, {}, nullptr);
  if (!m.interleaved) return m;
  for (ModelArm& a : m.arms) a.model.reset();
  return m;
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
  return cat("memory read ceiling (streaming sum over ", sig(r.ceiling_bytes / (1 << 20)), " MiB, ",
             r.interleaved ? "each round beside the arms" : "each round of every arm's own pass, all passes together", "): ",
             join(t, "; "), "\n\n");
}

Json arm_json_head(const ModelArm& a) {
  return Json{{"name", a.name}, {"layout", a.layout}, {"kernel", a.kernel}, {"threads", a.threads},
              {"oversubscribed", oversubscribed(a.threads)}, {"baseline", a.baseline}, {"load", a.load}, {"model", a.path},
              {"verified", a.failure.empty()}, {"failure", a.failure}, {"max_logit_diff", json_number(a.max_logit_diff)}};
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
  s.options = "load=" + a.load;
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
  // as a decode does, without allocating and faulting in its state buffers again (preset mid, tg16,
  // t2r after pq2_0: 97.5 and 90.5 tok/s with a fresh session a call, 104 and 104 reset).
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

namespace {

// --- prefill and decode -------------------------------------------------------------------------

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

}  // namespace

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

// --- perplexity ---------------------------------------------------------------------------------

// The report of a model kind: the failed arms' reasons after its table and notes.
RunReport finish(RunReport rep, std::ostringstream& md, Json js, const ModelArms& m) {
  md << arms_footer(m);
  rep.markdown = md.str();
  rep.json = std::move(js);
  return rep;
}

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
  return finish(std::move(rep), md, std::move(js), m);
}

// --- greedy -------------------------------------------------------------------------------------

RunReport run_greedy(const RunSpec& run, RunContext& ctx) {
  const int n = int(greedy_key::tokens(run));
  const int prompt_len = int(greedy_key::prompt_tokens(run));
  const ModelArms m = load_and_check(run, ctx, prompt_len, n);
  RunReport rep;
  rep.title = run.name();
  std::ostringstream md;
  md << "### " << rep.title << "\n\n" << model_line(m);
  md << "kind greedy: " << n << " greedy tokens after a " << prompt_len << "-token pseudo-random prompt (seed " << run_seed(run)
     << "), every arm against the baseline '" << m.arms[m.baseline].name << "'; untimed.\n\n";
  Table table({{"arm"}, {"layout"}, {"kernel"}, {"thr", Align::right}, {"load"}, {"tokens equal", Align::right},
               {"first difference", Align::right}, {"max |Δlogit|", Align::right}, {"result"}});
  rep.rows.columns = {"run", "arm", "layout", "kernel", "threads", "load", "tokens_equal", "first_difference", "max_logit_diff",
                      "result", "tokens"};
  Json js = run_json_head(run, rep.title, m);
  js["tokens"] = n;
  js["prompt_tokens"] = prompt_len;
  js["arms"] = Json::array();
  const ModelArm& base = m.arms[m.baseline];
  for (std::size_t i = 0; i < m.arms.size(); ++i) {
    const ModelArm& a = m.arms[i];
    std::size_t equal = 0;
    while (equal < a.tokens.size() && equal < base.tokens.size() && a.tokens[equal] == base.tokens[equal]) ++equal;
    const bool ok = a.failure.empty();
    if (!ok) rep.ok = false;
    const std::string result = ok ? (i == m.baseline ? "baseline" : "equal") : "**FAILED**";
    table.add({a.name + (i == m.baseline ? " (baseline)" : ""), a.layout, a.kernel, threads_cell(a.threads), a.load,
               cat(equal, "/", n), a.first_difference >= 0 ? cat(a.first_difference) : "—",
               i == m.baseline ? "—" : sig(a.max_logit_diff), result});
    std::vector<std::string> toks;
    for (std::int32_t t : a.tokens) toks.push_back(cat(t));
    rep.rows.add({run.index, a.name, a.layout, a.kernel, a.threads, a.load, equal, a.first_difference, a.max_logit_diff,
                  ok ? "ok" : "failed", join(toks, " ")});
    Json arm = arm_json_head(a);
    arm["tokens_equal"] = equal;
    arm["first_difference"] = a.first_difference;
    arm["tokens"] = a.tokens;
    js["arms"].push_back(std::move(arm));
    if (ok) rep.arm_values.push_back({a.name, a.layout, {{"max_logit_diff", a.max_logit_diff}}});
  }
  md << table.markdown();
  return finish(std::move(rep), md, std::move(js), m);
}

// --- profile ------------------------------------------------------------------------------------

// A competing busy thread on one CPU, the barrier detour's disturbance: created once per arm before
// anything is timed, it spins only while that arm's calls run and sleeps otherwise. Niced to 19 it
// is the same load with the model at the higher priority (the blog's fix, from the other side).
class BusyThread {
 public:
  BusyThread(int cpu, bool niced) : thread_([this, cpu, niced] { loop(cpu, niced); }) {}
  ~BusyThread() {
    stop_.store(true, std::memory_order_release);
    set(true);
    thread_.join();
  }
  BusyThread(const BusyThread&) = delete;
  BusyThread& operator=(const BusyThread&) = delete;
  void set(bool on) {
    on_.store(on, std::memory_order_release);
    if (on) on_.notify_all();
  }

 private:
  void loop(int cpu, bool niced) {
    pin_current_thread(cpu);
    if (niced) setpriority(PRIO_PROCESS, id_t(syscall(SYS_gettid)), 19);
    while (!stop_.load(std::memory_order_acquire)) {
      on_.wait(false, std::memory_order_acquire);
      for (volatile std::uint64_t n = 0; on_.load(std::memory_order_relaxed) && !stop_.load(std::memory_order_relaxed);) n = n + 1;
    }
  }
  std::atomic<bool> on_{false}, stop_{false};
  std::thread thread_;  // last: starts after the flags exist
};


RunReport run_profile(const RunSpec& run, RunContext& ctx) {
  const int prompt_len = int(profile_key::prompt_tokens(run));
  const int verify_n = int(key::verify_tokens(run));
  ModelArms m = plan_arms(run, ctx, 8, verify_n);
  std::vector<std::int32_t> prompt;  // drawn once the baseline has told the vocabulary
  // Each arm decodes the same token after the same prefilled context: a snapshot assigned to the
  // call's session per call (outside the profiled forward call).
  struct Profiled {
    model::Session snapshot, session;
    std::vector<model::OpProfile> calls;
    double state_bytes = 0;  // the recurrent state a token reads, and again writes back
  };
  std::vector<std::shared_ptr<Profiled>> profiled(m.arms.size());
  const auto prepare = [&](std::size_t i, ModelArm& a) {
    if (prompt.empty()) prompt = model::random_tokens(prompt_len + 1, std::max(m.vocab, 1), run_seed(run) + 3);
    ArmSetup s = setup_of(a);
    auto p = std::make_shared<Profiled>();
    if (a.model && a.failure.empty()) {
      Model* model = a.model.get();
      // Worker t on CPU t; the calling thread (t = 0) stays free, as it also runs the other arms.
      if (arm_pins_workers(run.arms[i])) model->pool().run([](int t) {
          if (t > 0) pin_current_thread(t);
        });
      const std::string disturb = arm_disturbance(run.arms[i]);
      p->snapshot = model->new_session();
      model->forward(p->snapshot, std::span(prompt.data(), std::size_t(prompt_len)));
      const std::int32_t next = prompt.back();
      s.weight_bytes = s.bytes = double(model->ternary_bytes_per_token());
      p->state_bytes = double(model->config().recurrent_state_bytes());
      s.call = [model, p, next] {
        // Assigned into the last call's session, whose caches keep the capacity that call grew:
        // a fresh copy holds exactly its keys and values, so each call's first append moved
        // them all (megabytes at a long context), and the attention line measured that.
        p->session = p->snapshot;
        model::OpProfile prof;
        model->forward(p->session, std::span(&next, 1), false, &prof);
        p->calls.push_back(prof);
      };
      if (disturb != "none") {
        // On the last pool thread's CPU: the one a pinned worker cannot leave.
        auto busy = std::make_shared<BusyThread>(a.threads - 1, disturb == "busy-niced");
        s.call = [call = std::move(s.call), busy] {
          busy->set(true);
          call();
          busy->set(false);
        };
      }
    }
    profiled[i] = p;
    return std::vector<ArmSetup>{std::move(s)};
  };
  const TimingResult r = run_arms(run, ctx, m, {measure_options(run)}, prepare).front();

  RunReport rep;
  rep.title = run.name();
  constexpr int kOps = model::OpProfile::count;
  std::ostringstream md;
  md << "### " << rep.title << "\n\n" << model_line(m);
  md << "kind profile: wall time per op of one decode token after a " << prompt_len << "-token context, from model::OpProfile; "
     << r.rounds << " rounds kept after " << r.warmup << " warm-up; " << arms_order_text(r) << "; every arm's greedy tokens checked against the baseline "
     << "'" << m.arms[m.baseline].name << "' before timing (ratios against " << r.baseline_label
     << "). Cells: ms, median over rounds of the per-round mean.\n\n";
  md << ceilings_text(r);
  std::vector<Column> columns = {{"arm"}, {"layout"}, {"kernel"}, {"thr", Align::right}, {"greedy check"}};
  for (int op = 0; op < kOps; ++op) columns.push_back({model::OpProfile::name(op), Align::right});
  for (const char* c : {"total ms", "tok/s", "matmul share", "spread", "matmul GB/s", "matmul of read ceiling", "state GB/s",
                        "token bytes of read ceiling"})
    columns.push_back({c, Align::right});
  columns.push_back({ratio_header(r), Align::right});
  Table table(std::move(columns));
  NoiseChecks noise;
  noise.ceilings(r);
  cache_check(m, r, 1, noise);
  rep.rows.columns = {"run", "round", "arm", "layout", "kernel", "threads", "op", "seconds"};
  Json js = run_json_head(run, rep.title, m);
  js["prompt_tokens"] = prompt_len;
  js["rounds"] = r.rounds;
  js["arms"] = Json::array();
  // Per arm, per kept round: mean seconds per op, and the total.
  std::vector<std::vector<std::array<double, kOps>>> per_round(m.arms.size());
  for (std::size_t i = 0; i < m.arms.size(); ++i) {
    const ArmTiming& t = r.arms[i];
    const auto& calls = profiled[i]->calls;
    if (!t.verified || t.reps == 0) continue;
    for (int k = 0; k < r.rounds; ++k) {
      const std::size_t first = 1 + std::size_t(r.warmup + k) * std::size_t(t.reps);  // after the calibration call
      std::array<double, kOps> mean{};
      for (std::size_t c = first; c < first + std::size_t(t.reps) && c < calls.size(); ++c)
        for (int op = 0; op < kOps; ++op) mean[std::size_t(op)] += calls[c].seconds[std::size_t(op)] / t.reps;
      per_round[i].push_back(mean);
    }
  }
  const auto totals = [&](std::size_t i) {
    std::vector<double> v;
    for (const auto& a : per_round[i]) {
      double s = 0;
      for (double x : a) s += x;
      v.push_back(s);
    }
    return v;
  };
  std::vector<StackedBar> bars;
  for (std::size_t i = 0; i < m.arms.size(); ++i) {
    const ModelArm& a = m.arms[i];
    const ArmTiming& t = r.arms[i];
    if (!t.verified) rep.ok = false;
    std::vector<std::string> cells = {a.name + (m.ratios.is_baseline(i) ? " (baseline)" : ""), a.layout, a.kernel,
                                      threads_cell(a.threads), check_cell(a, i == m.baseline)};
    Json arm = arm_json_head(a);
    arm["ms"] = Json::object();
    for (int op = 0; op < kOps; ++op) {
      std::vector<double> v;
      for (const auto& round : per_round[i]) v.push_back(round[std::size_t(op)] * 1e3);
      const Stat s = stat_of(v);
      cells.push_back(s.valid ? sig(s.median) : "—");
      arm["ms"][model::OpProfile::name(op)] = stat_json(s);
    }
    const std::vector<double> tot = totals(i), base_totals = totals(m.ratios.of[i]);
    std::vector<double> gbps, frac, speed, toks, share, state_gbps, token_frac;
    const std::vector<double> ceils = r.ceiling_of(t);
    const double state_bytes = profiled[i]->state_bytes;
    for (std::size_t k = 0; k < per_round[i].size(); ++k) {
      const double mm = per_round[i][k][model::OpProfile::matmul], gdn = per_round[i][k][model::OpProfile::gdn];
      toks.push_back(1 / tot[k]);
      share.push_back(mm / tot[k]);
      gbps.push_back(t.setup.weight_bytes / mm / 1e9);
      if (state_bytes > 0 && gdn > 0) state_gbps.push_back(2 * state_bytes / gdn / 1e9);
      if (k < ceils.size()) {
        frac.push_back(gbps.back() / ceils[k]);
        token_frac.push_back((t.setup.weight_bytes + 2 * state_bytes) / tot[k] / 1e9 / ceils[k]);
      }
      if (k < base_totals.size()) speed.push_back(base_totals[k] / tot[k]);
      for (int op = 0; op < kOps; ++op)
        rep.rows.add({run.index, k, a.name, a.layout, a.kernel, a.threads, model::OpProfile::name(op), per_round[i][k][std::size_t(op)]});
    }
    const Stat total = stat_of(tot), g = stat_of(gbps), f = stat_of(frac), sp = stat_of(speed), ts = stat_of(toks),
               sh = stat_of(share), sg = stat_of(state_gbps), tf = stat_of(token_frac);
    if (t.verified && m.ratios.of[i] != i) noise.ratio(a.name, speed);
    noise.fraction(a.name, "its matmul fraction of the read ceiling", frac);
    for (std::string c : {with_range(total, "", 1e3), ts.valid ? sig(ts.median) : "—", with_range(sh, "%", 100), spread_cell(tot), g.valid ? sig(g.median) : "—", with_range(f, "%", 100),
                          sg.valid ? sig(sg.median) : "—", with_range(tf, "%", 100), with_range(sp, "×")})
      cells.push_back(std::move(c));
    table.add(std::move(cells));
    arm["total_ms"] = stat_json(Stat{total.median * 1e3, total.min * 1e3, total.max * 1e3, total.valid});
    arm["spread"] = json_number(spread(tot));
    arm["tok_s"] = stat_json(ts);
    arm["matmul_share"] = stat_json(sh);
    arm["disturb"] = arm_disturbance(run.arms[i]);
    arm["pin_workers"] = arm_pins_workers(run.arms[i]);
    arm["matmul_gbps"] = stat_json(g);
    arm["matmul_fraction_of_read_ceiling"] = stat_json(f);
    arm["state_bytes_per_token"] = json_number(state_bytes);
    arm["state_gbps"] = stat_json(sg);
    arm["token_bytes_fraction_of_read_ceiling"] = stat_json(tf);
    arm["speedup_vs_baseline"] = stat_json(sp);
    js["arms"].push_back(std::move(arm));
  }
  // The plot reads the arm rows just written, so it draws what summary.json says.
  std::vector<std::string> op_names;
  for (int op = 0; op < kOps; ++op) op_names.push_back(model::OpProfile::name(op));
  for (const Json& arm : js["arms"]) {
    const Stat total = stat_from(arm["total_ms"]);
    if (!total.valid) continue;
    StackedBar b{arm["name"].get<std::string>(), {}, "total " + sig(total.median) + " ms"};
    for (const std::string& op : op_names) b.parts.push_back(stat_from(arm["ms"][op]).median);
    bars.push_back(std::move(b));
  }
  md << table.markdown() << arms_footer(m);
  md << "\nmatmul GB/s = ternary weight bytes per token / matmul time; of read ceiling: against that round's memory read ceiling on the "
        "arm's thread count; state GB/s = the Gated DeltaNet state a token reads and writes back (twice its size) / the Gated "
        "DeltaNet time; token bytes of read ceiling = (weight bytes + twice the state) per token / total time, against the same "
        "ceiling: what a decode token must move, where the decode bandwidth fraction bills the weights alone; "
     << spread_note() << " of the totals; " << ratio_note(r) << ", of the totals.\n";
  if (!bars.empty())
    rep.svgs.emplace_back("decode_ms.svg", svg_stacked_bars(rep.title + ": one decode token by op", "ms", op_names, bars,
                                                            "each part: that op's median over kept rounds; total: median of per-round totals"));
  rep.warnings = std::move(noise.warnings);
  rep.markdown = md.str();
  rep.json = std::move(js);
  return rep;
}

// --- faults -------------------------------------------------------------------------------------

struct FaultCount {
  long minor = 0, major = 0;
};
// Process-wide (every pool thread's faults count): RUSAGE_SELF.
FaultCount faults_now() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return {u.ru_minflt, u.ru_majflt};
}

// The fraction of the file's pages in the page cache (mincore over a mapping that touches none), or
// -1 when the file cannot be mapped.
double cached_fraction(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  double out = -1;
  struct stat st {};
  if (fstat(fd, &st) == 0 && st.st_size > 0) {
    const auto size = std::size_t(st.st_size);
    void* p = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    if (p != MAP_FAILED) {
      const auto page = std::size_t(sysconf(_SC_PAGESIZE));
      std::vector<unsigned char> in((size + page - 1) / page);
      if (mincore(p, size, in.data()) == 0) {
        std::size_t n = 0;
        for (unsigned char c : in) n += c & 1u;
        out = double(n) / double(in.size());
      }
      munmap(p, size);
    }
  }
  ::close(fd);
  return out;
}

// Asks the kernel to evict the file's clean pages (no root needed; it may keep pages another process
// maps or that are dirty, so the fraction left is measured, never assumed).
void drop_page_cache(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, ": cannot open to drop its page cache (", std::strerror(errno), ")");
  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

// One arm, one round: load, the first decoded token, the later ones; wall time and page faults of each.
struct FaultSample {
  double cached_before_load = -1;  // page-cache fraction of the file after the drop (or as found)
  double load_s = 0, first_s = 0, later_s = 0;  // later: per token
  FaultCount load, first, later;                 // later: summed over the later tokens
  std::vector<std::int32_t> tokens;
  std::string failure;
};

FaultSample fault_sample(const RunSpec& run, const ModelArm& arm, bool drop, int n_tokens) {
  using clock = std::chrono::steady_clock;
  const auto secs = [](clock::time_point a, clock::time_point b) { return std::chrono::duration<double>(b - a).count(); };
  const auto minus = [](FaultCount a, FaultCount b) { return FaultCount{a.minor - b.minor, a.major - b.major}; };
  FaultSample s;
  if (drop) drop_page_cache(arm.path);
  s.cached_before_load = cached_fraction(arm.path);
  const model::LoadOptions o = load_options(run, arm);
  FaultCount f0 = faults_now();
  auto t0 = clock::now();
  std::unique_ptr<Model> model;
  try {
    model = Model::load(arm.path, o);
  } catch (const Error& e) {
    s.failure = cat("load: ", e.what());
    return s;
  }
  auto t1 = clock::now();
  FaultCount f1 = faults_now();
  s.load_s = secs(t0, t1);
  s.load = minus(f1, f0);
  model::Session session = model->new_session();
  std::int32_t next = model::random_tokens(1, model->config().n_vocab, run_seed(run) + 5).front();
  for (int i = 0; i < n_tokens; ++i) {
    const FaultCount fa = faults_now();
    const auto ta = clock::now();
    const std::vector<float> logits = model->forward(session, std::span(&next, 1));
    const auto tb = clock::now();
    const FaultCount d = minus(faults_now(), fa);
    next = model::argmax(logits);
    s.tokens.push_back(next);
    if (i == 0) {
      s.first_s = secs(ta, tb);
      s.first = d;
    } else {
      s.later_s += secs(ta, tb) / (n_tokens - 1);
      s.later.minor += d.minor;
      s.later.major += d.major;
    }
  }
  return s;
}

RunReport run_faults(const RunSpec& run, RunContext& ctx) {
  const int n_tokens = int(faults_key::tokens(run));
  const int rounds = int(faults_key::rounds(run));
  const int warmup = int(faults_key::warmup(run));
  const bool drop = faults_key::drop_cache(run);
  ModelArms m = plan_arms(run, ctx, 1, 1);
  // Rounds alternate the arm order, so neither load mode always runs on a cache the other warmed.
  std::vector<std::vector<FaultSample>> samples(m.arms.size());
  for (int r = 0; r < warmup + rounds; ++r)
    for (std::size_t j = 0; j < m.arms.size(); ++j) {
      const std::size_t i = r % 2 ? m.arms.size() - 1 - j : j;
      FaultSample sample = fault_sample(run, m.arms[i], drop, n_tokens);
      if (r >= warmup || !sample.failure.empty()) samples[i].push_back(std::move(sample));
      ctx.progress.step("faults " + m.arms[i].name);
    }
  // Verified: every arm's greedy tokens, every round, equal the baseline's first round.
  const std::vector<std::int32_t>& want = samples[m.baseline].front().tokens;
  for (std::size_t i = 0; i < m.arms.size(); ++i)
    for (const FaultSample& s : samples[i]) {
      if (!s.failure.empty() && m.arms[i].failure.empty()) m.arms[i].failure = s.failure;
      if (s.failure.empty() && s.tokens != want && m.arms[i].failure.empty())
        m.arms[i].failure = cat("greedy tokens differ from the baseline '", m.arms[m.baseline].name, "'");
    }

  RunReport rep;
  rep.title = run.name();
  std::ostringstream md;
  md << "### " << rep.title << "\n\n" << m.source.describe() << "\n\n";
  md << "kind faults: per arm and round, the model loaded " << (drop ? "after asking the kernel to drop the file from the page cache "
                                                                        "(posix_fadvise DONTNEED), "
                                                                      : "as the page cache stands, ")
     << "then " << n_tokens << " greedy decode tokens from an empty context; wall time and page faults (getrusage RUSAGE_SELF, "
     << "all threads) of the load, the first token and the later ones. " << rounds << " rounds kept after " << warmup
     << " warm-up, arm order reversed every other "
     << "round; cells are medians over rounds. Every arm's tokens checked against the baseline '" << m.arms[m.baseline].name << "'.\n\n";
  Table table({{"arm"}, {"layout"}, {"load"}, {"thr", Align::right}, {"tokens"}, {"cached at load", Align::right},
               {"load ms", Align::right}, {"load minor", Align::right}, {"load major", Align::right}, {"1st token ms", Align::right},
               {"1st minor", Align::right}, {"1st major", Align::right}, {"later ms/token", Align::right},
               {"later minor/token", Align::right}, {"later major/token", Align::right}});
  rep.rows.columns = {"run", "round", "arm", "layout", "load", "threads", "cached_at_load", "load_seconds", "load_minor", "load_major",
                      "first_seconds", "first_minor", "first_major", "later_seconds_per_token", "later_minor_per_token",
                      "later_major_per_token"};
  Json js = {{"index", run.index}, {"name", rep.title}, {"kind", run.kind}, {"model", m.source.path}, {"preset", m.source.preset},
             {"seed", m.source.seed}, {"baseline", m.arms[m.baseline].name}, {"tokens", n_tokens}, {"rounds", rounds},
             {"drop_cache", drop}, {"sweep", sweep_json(run)}, {"arms", Json::array()}};
  const double later_n = double(n_tokens - 1);
  for (std::size_t i = 0; i < m.arms.size(); ++i) {
    const ModelArm& a = m.arms[i];
    if (!a.failure.empty()) rep.ok = false;
    std::map<std::string, std::vector<double>> v;
    for (std::size_t r = 0; r < samples[i].size(); ++r) {
      const FaultSample& s = samples[i][r];
      if (!s.failure.empty()) continue;
      const std::vector<std::pair<std::string, double>> cells = {
          {"cached_at_load", s.cached_before_load}, {"load_ms", s.load_s * 1e3}, {"load_minor", double(s.load.minor)},
          {"load_major", double(s.load.major)}, {"first_ms", s.first_s * 1e3}, {"first_minor", double(s.first.minor)},
          {"first_major", double(s.first.major)}, {"later_ms", s.later_s * 1e3}, {"later_minor", s.later.minor / later_n},
          {"later_major", s.later.major / later_n}};
      for (const auto& [k, x] : cells) v[k].push_back(x);
      rep.rows.add({run.index, std::int64_t(r), a.name, a.layout, a.load, a.threads, s.cached_before_load, s.load_s,
                    std::int64_t(s.load.minor), std::int64_t(s.load.major), s.first_s, std::int64_t(s.first.minor),
                    std::int64_t(s.first.major), s.later_s, s.later.minor / later_n, s.later.major / later_n});
    }
    Json arm = arm_json_head(a);
    std::vector<std::string> row = {a.name, a.layout, a.load, threads_cell(a.threads), a.failure.empty() ? "= baseline" : "**FAILED**"};
    for (const char* k : {"cached_at_load", "load_ms", "load_minor", "load_major", "first_ms", "first_minor", "first_major", "later_ms",
                          "later_minor", "later_major"}) {
      const Stat st = stat_of(v[k]);
      arm[k] = stat_json(st);
      row.push_back(!st.valid ? "—" : std::string(k) == "cached_at_load" ? (st.median < 0 ? "?" : cat(fixed_text(100 * st.median, 0), "%")) : sig(st.median));
    }
    table.add(std::move(row));
    js["arms"].push_back(std::move(arm));
  }
  md << table.markdown();
  for (const ModelArm& a : m.arms)
    if (!a.failure.empty()) md << "\n- " << a.name << ": " << a.failure;
  md << "\ncached at load: the fraction of the file's pages in the page cache just before the load (mincore); "
     << (drop ? "above 0% means the drop did not take (pages mapped elsewhere or the kernel kept them). " : "")
     << "A major fault read the page from disk, a minor one found it in memory. The loader copies every tensor out of the "
        "file (the embedding table too) and releases the mapping's pages, so tokens after the load fault no page of the file.\n";
  rep.markdown = md.str();
  rep.json = std::move(js);
  return rep;
}

}  // namespace

namespace {

// A model kind's registry entry: the shared model keys and `own` keys, validated with its own keys
// before the memory estimate, which reads them.
KindInfo model_kind(const std::string& name, const std::string& summary, const std::vector<KeySpec>& own,
                    std::function<void(const RunSpec&)> own_keys, std::function<RunReport(const RunSpec&, RunContext&)> run,
                    std::function<std::int64_t(const RunSpec&)> units) {
  register_plan_notes(name, memory_notes);
  return {name, summary, with(model_keys(), own), {},
          [own_keys = std::move(own_keys)](const RunSpec& r) { validate_model_kind(r, own_keys); }, std::move(run), std::move(units)};
}

}  // namespace

// Their small overrides take the tiny preset: micro's 260-row output matrix does not fit t2r's 16-row blocks.
void register_model_kinds() {
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

  KindInfo greedy = model_kind(
      "greedy", "greedy-token equivalence of every arm with the baseline arm, max |logit difference| (untimed)",
      {greedy_key::tokens.spec("greedy tokens compared"), greedy_key::prompt_tokens.spec("pseudo-random prompt length")},
      [](const RunSpec& r) {
        greedy_key::tokens(r);
        greedy_key::prompt_tokens(r);
      },
      run_greedy, [](const RunSpec& r) { return std::int64_t(2 * r.arms.size()); });
  greedy.model.context_tokens = [](const RunSpec& r) { return greedy_key::prompt_tokens(r) + greedy_key::tokens(r); };
  greedy.model.read_ceiling = false;
  greedy.small_overrides = timed_small_overrides({"preset=tiny", "verify_tokens=2", "tokens=8", "prompt_tokens=4"});
  register_kind(std::move(greedy));

  KindInfo profile = model_kind(
      "profile", "per-op wall time of one decode token (matmul, quantize, Hadamard, GDN, attention, norms, other)",
      {profile_key::prompt_tokens.spec("context before the profiled token"),
       {"arm.disturb", Type::string, true,
        "none (default), busy (a competing busy thread on the last pool thread's CPU while the arm runs) "
        "or busy-niced (the same at nice 19)"},
       {"arm.pin_workers", Type::boolean, true, "pin the model's pool worker t to CPU t (default false)"}},
      [](const RunSpec& r) {
        profile_key::prompt_tokens(r);
        for (const ArmSpec& a : r.arms) {
          if (arm_disturbance(a) != "none" && arm_threads(r, a) < 2)
            fail_at(a.at("disturb"), "a disturbance needs at least 2 threads (it competes with the last pool thread)");
          arm_pins_workers(a);
        }
      },
      run_profile, [](const RunSpec& r) { return model_units(r, 5, 1); });
  profile.model.context_tokens = [](const RunSpec& r) { return profile_key::prompt_tokens(r) + 1; };
  profile.small_overrides = timed_small_overrides({"preset=tiny", "verify_tokens=2", "prompt_tokens=4"});
  register_kind(std::move(profile));

  KindInfo faults = model_kind(
      "faults", "page faults and wall time of the load, the first decoded token and later ones, per load mode (mmap, memory)",
      {faults_key::tokens.spec("greedy decode tokens after the load", "; at least 2"),
       faults_key::drop_cache.spec("evict the file from the page cache before each load")},
      [](const RunSpec& r) {
        faults_key::tokens(r);
        faults_key::drop_cache(r);
      },
      run_faults, [](const RunSpec& r) { return std::int64_t(r.arms.size()) * (faults_key::rounds(r) + faults_key::warmup(r)); });
  faults.small_overrides = timed_small_overrides({"preset=tiny", "tokens=3"});
  register_kind(std::move(faults));
}

}  // namespace ternlab::experiments
