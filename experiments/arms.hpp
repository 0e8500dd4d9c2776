// Pieces every timed kind shares: reading an arm's layout, kernel selector and threads (errors
// relocated to the key that caused them), checking the baseline names an arm, and the measurement
// options (rounds, warm-up, sample length, ceiling buffer) read from the run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "experiments/config.hpp"
#include "experiments/measure.hpp"
#include "kernels/catalog.hpp"
#include "layouts/registry.hpp"

namespace ternlab::experiments {

// The keys every timed kind shares. rounds and warmup keep their bounds; the default is the kind's.
namespace key {
inline constexpr IntegerKey seed{"seed", 2026, 0, std::numeric_limits<std::int64_t>::max()};
inline constexpr IntegerKey threads{"threads", 1, 1, 4096};
inline constexpr IntegerKey ceiling_mib{"ceiling_mib", 1024, 1, 1 << 20};
inline constexpr NumberKey sample_ms{"sample_ms", 20, 0.001, 1e6};
inline constexpr BooleanKey pin{"pin", false};
inline constexpr BooleanKey control{"control", true};  // the kernel kinds' no-weights control arm
constexpr IntegerKey rounds(std::int64_t fallback) { return {"rounds", fallback, 1, 100000}; }
constexpr IntegerKey warmup(std::int64_t fallback) { return {"warmup", fallback, 0, 100000}; }
}  // namespace key

// Runs f(); a ternlab::Error it throws is re-thrown naming `at` (file, line, key).
template <class F>
decltype(auto) relocated(const Located& at, F&& f) {
  try {
    return f();
  } catch (const Error& e) {
    fail_at(at, e.what());
  }
}

// The arm's `layout` key (required).
const LayoutInfo& arm_layout(const ArmSpec& arm);
// The arm's `kernel` key: "best" (default), "strategy" (its richest ISA here) or "strategy/isa";
// fails when the ISA is not supported here or the kernel lacks the gemv (or gemm) entry point.
KernelVariant arm_kernel(const ArmSpec& arm, const LayoutInfo& L, bool need_gemm);
// The arm's `threads`, else the run's `threads` (default 1).
int arm_threads(const RunSpec& run, const ArmSpec& arm);
// The arm each arm's ratios are taken against. Without `baseline`: the first arm, for every arm.
// `baseline` names an arm in full ("pq2_0 load=mmap": every arm against that one) or by its
// identity ("pq2_0"). An identity several arms share because the baseline's [[arm]] is swept is
// matched per arm at the same sweep point: each arm takes the one whose swept keys hold the arm's
// own values (its key, else the run's). No match, or more than one, fails naming the file, line
// and key, what matched and what did not.
struct Baselines {
  std::string declared;          // as written, or the first arm's name
  std::vector<std::size_t> of;   // per arm of the run: the index of its baseline arm
  std::size_t primary = 0;       // the first baseline arm: the reference of the greedy check
  std::string label;             // "'pq2_0'", or "'pq2_0' at each arm's load (pq2_0 load=mmap, pq2_0 load=memory)"
  bool is_baseline(std::size_t arm) const;
};
Baselines resolve_baselines(const RunSpec& run);
// `baseline`, when given, names one of the arms (resolve_baselines succeeds).
void check_baseline(const RunSpec& run);
// The keys every timed kind reads (rounds, warmup, threads, ceiling_mib, sample_ms, pin), at least one
// arm and the baseline: checked for the whole plan before anything runs.
void check_timed_run(const RunSpec& run);
// rounds, warmup, sample_ms, ceiling_mib and baseline of a run; the defaults are the kind's.
MeasureOptions measure_options(const RunSpec& run, int rounds = 5, int warmup = 1);

}  // namespace ternlab::experiments
