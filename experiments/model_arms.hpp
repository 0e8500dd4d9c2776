// The interface every model kind shares: where the model comes from, one loaded Model per arm, the
// greedy check of every arm against the baseline arm before anything is timed, the memory estimate,
// the report pieces they share, and a model kind's registry entry. Implemented in model_arms.cpp
// (arms, validation, loading, checking, timing, report pieces), model_memory.cpp (the memory
// estimate) and speed_report.cpp (the pp/tg phase and report); each kind lives in its own
// experiments/<name>_kind.cpp (experiments/kinds.def).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <sstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/strings.hpp"
#include "experiments/arms.hpp"
#include "experiments/config.hpp"
#include "experiments/kinds.hpp"
#include "experiments/measure.hpp"
#include "experiments/results.hpp"
#include "kernels/planner.hpp"
#include "model/config.hpp"
#include "model/model.hpp"
#include "model/synth.hpp"

namespace ternlab::experiments {

struct RunContext;
struct TimingResult;
struct RunReport;

// Where the run's model lives: the `model` file, or the cache path of the synthetic `preset`.
struct ModelSource {
  std::string path;
  std::string preset;  // empty for a file
  std::uint64_t seed = 0;
  model::SynthOptions synth;  // how a preset is written (type, scale group, fold)
  int layers = 0;             // a preset's layer count instead of its own (0: the preset's)
  std::string describe() const {
    return preset.empty() ? cat("model ", path) : cat("synthetic preset ", preset, " (seed ", seed, ", ", path, ")");
  }
};

struct ModelArm {
  // layout: the layout's name, or for a mixture what each rule chose (Model::layout_text, after load).
  std::string name, layout, kernel, load, path;
  model::LayoutMap layout_map;  // empty: one layout for every matmul
  std::string rest_layout;      // with a map: the layout the tensors no rule matches take
  // The token batch a measured rule times its candidates at: 1 (decode) or the prefill chunk.
  int plan_tokens = 1;
  std::string wisdom;           // the run's `wisdom` key (empty: Wisdom::default_path())
  std::vector<model::TensorLayout> tensor_layouts;  // after load: every matmul's layout and kernel
  std::string baseline;  // the arm its ratios are taken against
  int threads = 1;
  int gdn_chunk = 0;  // model::LoadOptions::gdn_chunk
  double bits_per_weight = 0;
  bool requantise_scales = false;  // LOSSY load (model::LoadOptions::requantise_scales), by name only
  bool kernel_named = false;       // the arm's kernel key names one ("best" and none do not)
  // An arm without a named kernel: auto takes the wisdom file's measured choice where it holds one;
  // measure lets the planner time the candidates at load.
  PlanMode plan = PlanMode::automatic;
  std::unique_ptr<model::Model> model;
  std::string failure;  // non-empty: not timed
  std::vector<std::int32_t> tokens;
  double max_logit_diff = 0;
  int first_difference = -1;  // greedy step where the tokens first differ
};

struct ModelArms {
  ModelSource source;
  std::vector<ModelArm> arms;
  std::size_t baseline = 0;          // the greedy check's reference: every arm against this one
  Baselines ratios;                  // each arm's baseline for the ratios (matched per sweep point)
  bool interleaved = true;           // false: arms = "one-at-a-time"
  int prompt_len = 8, check_tokens = 4;
  std::vector<std::int32_t> prompt;  // the greedy check's prompt
  std::vector<std::vector<float>> base_logits;  // the baseline's, kept for the arms checked after it
  std::optional<model::ModelConfig> config;     // the baseline's, kept after its model is freed
  int vocab = 0;
  std::uint64_t ternary_bytes = 0;   // of the baseline's model, per decoded token
};

// The keys every model kind reads, each with its default and bounds (the only place they are stated).
namespace key {
inline constexpr IntegerKey verify_tokens{"verify_tokens", 4, 1, 4096};
inline constexpr IntegerKey prefill_chunk{"prefill_chunk", 64, 1, 1 << 16};
inline constexpr IntegerKey gdn_chunk{"gdn_chunk", 0, 0, 1 << 16};
inline constexpr BooleanKey requantise_scales{"requantise_scales", false, false};  // model-bench, tradeoff
}  // namespace key

// The keys every model kind accepts (model or preset, load, rounds, arms, ...).
std::vector<KeySpec> model_keys();
std::vector<KeySpec> with(std::vector<KeySpec> k, const std::vector<KeySpec>& extra);
std::uint64_t run_seed(const RunSpec& run);
ModelSource model_source(const RunSpec& run);
// The preset a source writes: its own, or its shapes with the source's layer count.
model::SynthPreset preset_of(const ModelSource& src);
// An arm's load mode (its `load`, else the run's, else mmap) and model file (its `model`, else the run's).
gguf::LoadMode arm_load(const RunSpec& run, const ArmSpec& arm);
std::string arm_model_path(const ArmSpec& arm, const ModelSource& src);
// The bytes a measured layout choice reads before each timed call: `mode` cold (twice the last-level
// cache, TERNLAB_COLD_WEIGHTS_MIB where set, `fallback_bytes` where the cache size is unknown) or
// warm (0). The CLI's --measure-weights and the experiments' `measure_weights` key both read it.
std::int64_t cold_measure_bytes(const std::string& mode, std::int64_t fallback_bytes);
// `measure_weights` (cold_measure_bytes), its errors naming the key.
std::int64_t measure_cold_bytes(const RunSpec& run);
// An arm's layout map (`layout_map`, parsed; empty when absent), errors naming the key.
model::LayoutMap arm_layout_map(const ArmSpec& arm);
// The layout of an arm's matmuls: its `layout`; with a `layout_map` and no `layout`, the file's own
// format (the layout the tensors no rule matches keep).
const LayoutInfo& model_arm_layout(const ArmSpec& arm, const ModelSource& src);
// `arms = "one-at-a-time"` (else interleaved).
bool one_at_a_time(const RunSpec& run);
// The common model keys, every arm, the kind's own keys (`own_keys`, may be empty) and the memory
// estimate, in that order, before anything loads.
void validate_model_kind(const RunSpec& run, const std::function<void(const RunSpec&)>& own_keys = nullptr);
// Refuses, before anything loads, a run whose arms cannot fit in the memory available (model_memory.cpp).
void check_memory(const RunSpec& run);
// The memory estimate against the memory available, for the printed plan.
std::string memory_notes(const RunSpec& run);
// A model kind's registry entry: the model keys and `own`, validated by validate_model_kind with
// `own_keys`; its plan notes (the memory estimate) are registered with it.
KindInfo model_kind(const std::string& name, const std::string& summary, const std::vector<KeySpec>& own,
                    std::function<void(const RunSpec&)> own_keys, std::function<RunReport(const RunSpec&, RunContext&)> run,
                    std::function<std::int64_t(const RunSpec&)> units);

// The arms as planned, nothing loaded (the synthetic preset is written once if missing).
ModelArms plan_arms(const RunSpec& run, RunContext& ctx, int prompt_len, int n);
// How an arm's model is loaded: its layout, kernel, load mode and threads, and the run's prefill chunk.
model::LoadOptions load_options(const RunSpec& run, const ModelArm& arm);
// Loads arm i (a load error fails that arm only).
void load_arm(const RunSpec& run, RunContext& ctx, ModelArms& m, std::size_t i);
// The greedy check of arm i against the baseline arm, which must be checked first.
void check_arm(const RunSpec& run, RunContext& ctx, ModelArms& m, std::size_t i);

// What a kind times of one loaded and checked arm: one setup per phase (speed: pp, then tg).
using Prepare = std::function<std::vector<ArmSetup>(std::size_t, ModelArm&)>;
std::vector<TimingResult> run_arms(const RunSpec& run, RunContext& ctx, ModelArms& m, const std::vector<MeasureOptions>& phases,
                                   const Prepare& prepare);

// Report pieces: the greedy-check cell, the model line, the failed arms and memory after a table,
// the ceilings of a timed result, the JSON heads of a run and an arm, an arm's ArmSetup without a call.
std::string check_cell(const ModelArm& a, bool is_baseline);
std::string model_line(const ModelArms& m);
std::string arms_footer(const ModelArms& m);
std::string ceilings_text(const TimingResult& r);
Json arm_json_head(const ModelArm& a);
Json run_json_head(const RunSpec& run, const std::string& title, const ModelArms& m);
ArmSetup setup_of(const ModelArm& a);
// One arm's pp n (decode false) or tg n call over `stream`, billed its ternary weight bytes per forward pass.
ArmSetup speed_setup(const ModelArm& a, bool decode, int n, int chunk, const std::vector<std::int32_t>& stream);
// The weights_fit_cache check on the arm whose calls (`tokens_per_call` tokens) read the fewest weight bytes.
void cache_check(const ModelArms& m, const TimingResult& r, int tokens_per_call, NoiseChecks& noise);
// The report of one pp n (decode false) or tg n phase: table, rows, summary object, plot, warnings.
RunReport speed_report(const RunSpec& run, const ModelArms& m, const TimingResult& r, bool decode, int n);
// The arms planned, checked and timed over one pp n (decode false) or tg n phase, and its report
// (experiments/speed_report.cpp): the prefill and decode kinds.
RunReport run_speed_phase(const RunSpec& run, RunContext& ctx, bool decode, int n);
// The greedy check alone (the untimed kinds): every arm loaded and checked, one at a time when asked.
ModelArms load_and_check_arms(const RunSpec& run, RunContext& ctx, int prompt_len, int n);
// The report of a model kind: the failed arms' reasons after its table and notes.
RunReport finish_model_report(RunReport rep, std::ostringstream& md, Json js, const ModelArms& m);
// Progress units of a model run: loading and checking each arm, then measuring them.
std::int64_t model_units(const RunSpec& run, int rounds, int warmup);

}  // namespace ternlab::experiments
