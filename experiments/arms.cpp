#include "experiments/arms.hpp"

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

// The selector `ternlab kernels` reports: best_kernel under the ISA ceiling, best_kernel_of (that
// strategy's richest ISA here) or find_kernel for "strategy/isa".
KernelVariant arm_kernel(const ArmSpec& arm, const LayoutInfo& L, bool need_gemm) {
  const Located at = arm.at("kernel");
  const std::string text = at ? as_string(at) : "best";
  const auto slash = text.find('/');
  if (slash != std::string::npos) {
    const std::string isa = text.substr(slash + 1);
    const Isa parsed = relocated(at, [&] { return parse_isa(isa); });
    const std::vector<Isa> here = supported_isas();
    if (!isa_supported(parsed))
      fail_at(at, "ISA '", isa, "' is not supported on this CPU (", cpu_features().model, "; supported here: ",
              join(here | ranges::views::transform(isa_name)), ")");
  }
  const auto choose = [&]() -> KernelVariant {
    if (text == "best") return best_kernel(L).variant;
    if (slash == std::string::npos) return best_kernel_of(L, text).variant;
    return find_kernel(L, text);
  };
  const KernelVariant k = at ? relocated(at, choose) : relocated(arm.at("layout"), choose);
  if (!k.gemv || (need_gemm && !k.gemm))
    fail_at(at ? at : arm.table, "kernel '", k.name(), "' for layout '", L.name, "' has no ", !k.gemv ? "gemv" : "gemm",
            " entry point (available: ", variant_names(kernels_for(L)), ")");
  return k;
}

int arm_threads(const RunSpec& run, const ArmSpec& arm) {
  const int fallback = int(run.integer("threads", 1, 1, 4096));
  const Located at = arm.at("threads");
  return at ? int(as_integer(at, 1, 4096)) : fallback;
}

void check_baseline(const RunSpec& run) {
  const Located at = run.at("baseline");
  if (!at) return;
  const std::string b = as_string(at);
  std::vector<std::string> names;
  for (const ArmSpec& a : run.arms) {
    if (a.name == b) return;
    names.push_back(a.name);
  }
  fail_at(at, "no arm is called '", b, "' (arms: ", join(names), ")");
}

void check_timed_run(const RunSpec& run) {
  run.integer("rounds", 5, 1, 100000);
  run.integer("warmup", 1, 0, 100000);
  run.integer("threads", 1, 1, 4096);
  run.integer("ceiling_mib", 1024, 1, 1 << 20);
  run.number("sample_ms", 20, 0.001, 1e6);
  run.boolean("pin", false);
  if (run.arms.empty()) fail(run.file, ": kind '", run.kind, "' needs at least one [[arm]] table");
  check_baseline(run);
}

MeasureOptions measure_options(const RunSpec& run, int rounds, int warmup) {
  MeasureOptions opt;
  opt.rounds = int(run.integer("rounds", rounds, 1, 100000));
  opt.warmup = int(run.integer("warmup", warmup, 0, 100000));
  opt.sample_seconds = run.number("sample_ms", 20, 0.001, 1e6) / 1e3;
  opt.ceiling_bytes = run.integer("ceiling_mib", 1024, 1, 1 << 20) << 20;
  opt.baseline = run.arms.empty() ? "" : run.string("baseline", run.arms.front().name);
  return opt;
}

}  // namespace ternlab::experiments
