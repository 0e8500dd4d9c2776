#include "experiments/arms.hpp"

#include <algorithm>

#include <range/v3/view/transform.hpp>

#include "common/strings.hpp"
#include "kernels/cpu.hpp"
#include "kernels/dispatch.hpp"

namespace ternlab::experiments {

namespace {
std::string variant_names(const std::vector<KernelVariant>& v) {
  std::vector<std::string> n;
  for (const KernelVariant& k : v) n.push_back(k.name());
  return join(n);
}
}  // namespace

const LayoutInfo& arm_layout(const ArmSpec& arm) {
  const Located at = arm.at("layout");
  if (!at) fail_at(arm.table, "arm '", arm.name, "' needs a layout (one of: ", layout_names(), ")");
  const std::string name = as_string(at);
  return relocated(at, [&]() -> const LayoutInfo& { return find_layout(name); });
}

// The selector `ternlab kernels` reports (select_kernel): best_kernel under the ISA ceiling,
// best_kernel_of (that strategy's richest ISA here) or the variant "strategy/isa", each checked
// against this CPU and the ceiling there.
KernelVariant arm_kernel(const ArmSpec& arm, const LayoutInfo& L, bool need_gemm) {
  const Located at = arm.at("kernel");
  const std::string text = at ? as_string(at) : "best";
  const auto choose = [&]() -> KernelVariant { return select_kernel(L, text); };
  const KernelVariant k = at ? relocated(at, choose) : relocated(arm.at("layout"), choose);
  if (!k.gemv || (need_gemm && !k.gemm))
    fail_at(at ? at : arm.table, "kernel '", k.name(), "' for layout '", L.name, "' has no ", !k.gemv ? "gemv" : "gemm",
            " entry point (available: ", variant_names(kernels_for(L)), ")");
  return k;
}

int arm_threads(const RunSpec& run, const ArmSpec& arm) {
  const int fallback = int(key::threads(run));
  const Located at = arm.at("threads");
  return at ? int(as_integer(at, 1, 4096)) : fallback;
}

bool Baselines::is_baseline(std::size_t arm) const { return std::find(of.begin(), of.end(), arm) != of.end(); }

namespace {
// The value an arm runs with for `key`: its own, else the run's; "" when neither sets it.
std::string value_at(const RunSpec& run, const ArmSpec& arm, const std::string& key) {
  if (const Located at = arm.at(key)) return plain_text(*at.node);
  if (const Located at = run.at(key)) return plain_text(*at.node);
  return "";
}

std::string quoted_names(const RunSpec& run, const std::vector<std::size_t>& arms) {
  std::vector<std::string> n;
  for (std::size_t i : arms) n.push_back("'" + run.arms[i].name + "'");
  return join(n);
}
}  // namespace

Baselines resolve_baselines(const RunSpec& run) {
  Baselines b;
  if (run.arms.empty()) return b;
  const Located at = run.at("baseline");
  b.of.assign(run.arms.size(), 0);
  b.declared = at ? as_string(at) : run.arms.front().name;
  const auto one = [&](std::size_t i) {
    std::fill(b.of.begin(), b.of.end(), i);
    b.primary = i;
    b.label = "'" + run.arms[i].name + "'";
    return b;
  };
  // 1. The full name of one arm: every arm against it.
  // No baseline given: the first arm, for every arm (a sweep in the first [[arm]] compares its elements).
  if (!at) return one(0);
  for (std::size_t i = 0; i < run.arms.size(); ++i)
    if (run.arms[i].name == b.declared) return one(i);
  // 2. A declared identity.
  std::vector<std::size_t> cands;
  for (std::size_t i = 0; i < run.arms.size(); ++i)
    if (run.arms[i].identity == b.declared) cands.push_back(i);
  if (cands.empty()) {
    std::vector<std::string> names, ids;
    for (const ArmSpec& a : run.arms) {
      names.push_back(a.name);
      if (std::find(ids.begin(), ids.end(), a.identity) == ids.end()) ids.push_back(a.identity);
    }
    const std::string declared = ids == names ? "" : cat("; declared arms: ", join(ids));
    fail_at(at, "no arm is called '", b.declared, "' (arms: ", join(names), declared, ")");
  }
  if (cands.size() == 1) return one(cands.front());
  // 3. The baseline's [[arm]] is swept: match each arm at its own sweep point.
  std::vector<std::string> keys;
  for (std::size_t c : cands)
    for (const auto& [k, v] : run.arms[c].point)
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
  b.primary = cands.front();
  b.label = cat("'", b.declared, "' at each arm's ", join(keys, ", "), " (", quoted_names(run, cands), ")");
  for (std::size_t i = 0; i < run.arms.size(); ++i) {
    std::vector<std::size_t> match;
    for (std::size_t c : cands)
      if (std::all_of(run.arms[c].point.begin(), run.arms[c].point.end(),
                      [&](const auto& kv) { return value_at(run, run.arms[i], kv.first) == kv.second; }))
        match.push_back(c);
    if (match.size() == 1) {
      b.of[i] = match.front();
      continue;
    }
    if (match.empty()) {
      std::vector<std::string> has;
      for (const std::string& k : keys) {
        const std::string v = value_at(run, run.arms[i], k);
        has.push_back(v.empty() ? k + " unset" : k + "=" + v);
      }
      fail_at(at, "'", b.declared, "' names ", cands.size(), " arms (", quoted_names(run, cands), "), each compared with the arms at its own ",
              join(keys, ", "), "; arm '", run.arms[i].name, "' has ", join(has), ", which matches none of them (name one arm in full, e.g. ",
              "baseline = \"", run.arms[cands.front()].name, "\", to compare every arm with it)");
    }
    fail_at(at, "'", b.declared, "' is ambiguous: arms ", quoted_names(run, match), " all match arm '", run.arms[i].name,
            "' (name one arm in full, e.g. baseline = \"", run.arms[match.front()].name, "\")");
  }
  return b;
}

void check_baseline(const RunSpec& run) { resolve_baselines(run); }

void check_timed_run(const RunSpec& run) {
  key::rounds(5)(run);
  key::warmup(1)(run);
  key::threads(run);
  key::ceiling_mib(run);
  key::sample_ms(run);
  key::pin(run);
  if (run.arms.empty()) fail(run.file, ": kind '", run.kind, "' needs at least one [[arm]] table");
  check_baseline(run);
}

MeasureOptions measure_options(const RunSpec& run, int rounds, int warmup) {
  MeasureOptions opt;
  opt.rounds = int(key::rounds(rounds)(run));
  opt.warmup = int(key::warmup(warmup)(run));
  opt.sample_seconds = key::sample_ms(run) / 1e3;
  opt.ceiling_bytes = key::ceiling_mib(run) << 20;
  if (!run.arms.empty()) {
    const Baselines b = resolve_baselines(run);
    opt.baseline = run.arms[b.primary].name;
    opt.baseline_label = b.label;
    for (std::size_t i : b.of) opt.arm_baselines.push_back(run.arms[i].name);
  }
  return opt;
}

}  // namespace ternlab::experiments
