// Pieces every timed kind shares: reading an arm's layout, kernel selector and threads (errors
// relocated to the key that caused them), checking the baseline names an arm, and the measurement
// options (rounds, warm-up, sample length, ceiling buffer) read from the run.
#pragma once

#include <string>

#include "experiments/config.hpp"
#include "experiments/measure.hpp"
#include "kernels/catalog.hpp"
#include "layouts/registry.hpp"

namespace ternlab::experiments {

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
// `baseline`, when given, names one of the arms.
void check_baseline(const RunSpec& run);
// The keys every timed kind reads (rounds, warmup, threads, ceiling_mib, sample_ms, pin), at least one
// arm and the baseline: checked for the whole plan before anything runs.
void check_timed_run(const RunSpec& run);
// rounds, warmup, sample_ms, ceiling_mib and baseline of a run; the defaults are the kind's.
MeasureOptions measure_options(const RunSpec& run, int rounds = 5, int warmup = 1);

}  // namespace ternlab::experiments
