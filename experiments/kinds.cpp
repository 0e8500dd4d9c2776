#include "experiments/kinds.hpp"

#include <algorithm>
#include <map>

#include "common/strings.hpp"

namespace ternlab::experiments {

namespace {
std::map<std::string, KindInfo>& registry() {
  static std::map<std::string, KindInfo> r;
  return r;
}
void register_builtin_kinds();
}  // namespace

#define TERNLAB_KIND(name) void register_##name##_kind();
#include "experiments/kinds.def"
#undef TERNLAB_KIND

std::vector<KeySpec> common_keys() {
  return {
      {"kind", Type::string, false, "bandwidth, gemv, gemm, oracle, ..."},
      {"name", Type::string, false, "names the results folder (default: the file's stem)"},
      {"description", Type::string, false, "free text, copied into the summary"},
      {"output", Type::string, false, "folder that receives <name>-<UTC time>/ (default results)"},
      {"seed", Type::integer, true, "seed of the synthetic weights and activations"},
  };
}

std::vector<KeySpec> matrix_keys() {
  return {
      {"rounds", Type::integer, true, "kept rounds (default 5)"},
      {"warmup", Type::integer, true, "discarded rounds before them (default 1)"},
      {"threads", Type::integer, true, "default thread count of every arm (default 1)"},
      {"baseline", Type::string, false, "arm the ratios are taken against (default: the first arm)"},
      {"control", Type::boolean, true, "add the no-weights control arm (default true)"},
      {"ceiling_mib", Type::integer, true, "buffer of the memory read ceiling (default 1024 MiB)"},
      {"weights", Type::string, true,
       "warm: one copy of each arm's weights, held by a cache between calls where it fits (default); cold: copies cycled that together hold "
       "twice the last-level cache, so every call reads them from memory"},
      {"weight_copies", Type::integer, true, "copies of each arm's weights its calls cycle through, instead of weights (default 1)"},
      {"sample_ms", Type::number, true, "each timed sample repeats the call for about this long (default 20)"},
      {"pin", Type::boolean, true, "pin pool threads to CPUs (default false)"},
      {"shape.rows", Type::integer, true, "weight rows (default 256)"},
      {"shape.cols", Type::integer, true, "inner size, a multiple of 128 (default 1024)"},
      {"arm.name", Type::string, false, "the arm's name in tables and plots"},
      {"arm.layout", Type::string, true, "a registered layout (gemv, gemm: or a peer format, i2_s for BitNet's I2_S, tq2_0 and tq1_0 for ggml's TQ2_0 and TQ1_0)"},
      {"arm.kernel", Type::string, true, "best, a strategy (reference, slot-mask, ...) or strategy/isa"},
      {"arm.threads", Type::integer, true, "threads of a persistent pool (default: the top-level threads)"},
      {"arm.spawn", Type::boolean, true, "spawn fresh threads on every call instead of using the pool"},
  };
}

std::vector<std::string> timed_small_overrides(const std::vector<std::string>& extra) {
  std::vector<std::string> s = {"rounds=1", "warmup=0", "ceiling_mib=1", "sample_ms=0.01"};
  s.insert(s.end(), extra.begin(), extra.end());
  return s;
}

namespace {
std::map<std::string, std::function<std::string(const RunSpec&)>>& notes_registry() {
  static std::map<std::string, std::function<std::string(const RunSpec&)>> r;
  return r;
}
}  // namespace

void register_plan_notes(const std::string& kind, std::function<std::string(const RunSpec&)> notes) {
  notes_registry()[kind] = std::move(notes);
}

std::string plan_notes(const RunSpec& run) {
  find_kind(run.kind, run.at("kind"));  // registers the built-in kinds and their notes
  const auto it = notes_registry().find(run.kind);
  return it == notes_registry().end() || !it->second ? "" : it->second(run);
}

void register_kind(KindInfo kind) {
  const std::string name = kind.name;
  registry()[name] = std::move(kind);
}

const KindInfo& find_kind(const std::string& name, const Located& at) {
  register_builtin_kinds();
  const auto it = registry().find(name);
  if (it == registry().end()) fail_at(at, "unknown experiment kind '", name, "' (known: ", join(kind_names()), ")");
  return it->second;
}

std::vector<std::string> kind_names() {
  register_builtin_kinds();
  std::vector<std::string> n;
  for (const auto& [k, v] : registry()) n.push_back(k);
  return n;
}

namespace {
void register_builtin_kinds() {
  static const bool once = [] {
#define TERNLAB_KIND(name) register_##name##_kind();
#include "experiments/kinds.def"
#undef TERNLAB_KIND
    return true;
  }();
  (void)once;
}
}  // namespace

}  // namespace ternlab::experiments
