// The measurement method (after the lattice-layouts paper): all arms in one process, interleaved in
// a fixed order within each round, warm-up rounds discarded; every arm verified against the exact
// oracle before any timing (a failing arm is reported, never timed); the memory read ceiling and the
// int8 compute ceiling measured in every round right beside the arms, on each thread count in use;
// ratios against a baseline arm as the median of per-round ratios with their min-max range.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernels/measure.hpp"
#include "experiments/progress.hpp"
#include "kernels/thread_pool.hpp"

namespace ternlab::experiments {

// The bytes a cold arm's weight copies must fill together: twice the last-level cache `llc`, and
// never under kColdSetFloor. A set only twice a 32 MiB L3 (one 71 MB gemv copy) let t2r's gemv
// read past the memory ceiling on the Zen 4 guest, where 640 MiB did not, and 256 MiB read as 640
// did in an A/B (measured: docs/notebook/2026-12-04-zen4-kernels.md): the few
// copies a small cache asks for are made enough that nothing of the set stays cached between calls.
inline constexpr std::int64_t kColdSetFloor = std::int64_t{256} << 20;
inline std::int64_t cold_set_bytes(std::int64_t llc) { return std::max(2 * llc, kColdSetFloor); }

// One persistent pool per thread count, created before any timing and reused by every arm.
class Pools {
 public:
  explicit Pools(bool pin = false) : pin_(pin) {}
  ThreadPool& get(int threads);
  std::vector<int> thread_counts() const;

 private:
  bool pin_;
  std::map<int, std::unique_ptr<ThreadPool>> pools_;
};

struct ArmSetup {
  std::string name, layout, kernel, options;
  std::string baseline;         // the arm its ratios are taken against; empty: the run's baseline
  int threads = 1;
  bool control = false;         // the no-weights control: same threads and partition, no weight bytes
  double bits_per_weight = 0;   // 0 where no weights are read
  double bytes = 0;             // bytes billed per call (weights + activations + outputs)
  double weight_bytes = 0;
  double weights = 0;           // weights touched per call
  double macs = 0;              // multiply-accumulates per call
  std::function<void()> call;   // one call of the arm (threads come from a persistent pool unless spawning)
  std::function<std::string()> verify;  // runs the arm once and compares; "" when exact
  std::string check;            // what verify holds it to, for the table (empty: "exact", the oracle's integers)
};

struct Stat {
  double median = 0, min = 0, max = 0;
  bool valid = false;
};
Stat stat_of(std::vector<double> v);
// Which read loops set a thread count's ceiling over the kept rounds, the most frequent first:
// "avx512 zmm, 2 streams in 4 of 5 rounds; avx512 zmm, 4 streams in 1".
std::string loops_text(const std::vector<std::string>& per_round);

struct ArmTiming {
  ArmSetup setup;
  bool verified = false;
  std::string failure;
  int reps = 0;                  // calls per timed sample
  std::vector<double> seconds;   // per kept round: seconds per call
  // One arm at a time: the ceilings of this arm's own pass, taken beside it (empty when the arms
  // were interleaved and share the run's ceilings).
  std::vector<double> own_ceiling_gbps, own_compute_gmacs;
};

struct TimingResult {
  std::vector<ArmTiming> arms;   // in dispatch order; the control last
  std::string baseline;          // arm name (the first baseline arm when each arm has its own)
  std::string baseline_label;    // the baseline in words, for the report
  int rounds = 0, warmup = 0;
  double ceiling_bytes = 0;
  std::map<int, std::vector<double>> ceiling_gbps;    // thread count -> per kept round
  std::map<int, std::vector<std::string>> ceiling_loops;  // thread count -> per kept round: the read loop that set it
  std::map<int, std::vector<double>> compute_gmacs;   // thread count -> per kept round
  // thread count (2 or more) -> per kept round: microseconds an empty job takes through the pool
  // (pool_handoff_seconds), the cost of each split before any work
  std::map<int, std::vector<double>> handoff_us;
  // false: each arm was measured in its own pass (merge_passes); round i of two arms are then
  // different moments, and the run-level ceilings above hold every pass's rounds in turn.
  bool interleaved = true;

  const ArmTiming* find(const std::string& name) const;
  // Whether some arm's ratios are taken against this one.
  bool is_baseline(const std::string& name) const;
  // Per kept round: the arm's baseline's seconds / arm seconds (> 1: the arm is faster).
  std::vector<double> speedups(const ArmTiming& arm) const;
  // Per kept round: achieved GB/s / that round's memory ceiling on the arm's thread count.
  std::vector<double> bound_fractions(const ArmTiming& arm) const;
  std::vector<double> gbps(const ArmTiming& arm) const;
  // The ceilings paired with the arm's rounds: its own pass's, else the run's on its thread count
  // (empty when none was measured).
  std::vector<double> ceiling_of(const ArmTiming& arm) const;
  std::vector<double> compute_of(const ArmTiming& arm) const;
};

// One TimingResult from passes of one arm each, in arm order: every arm keeps its pass's ceilings
// as its own, the run-level ceilings concatenate the passes' rounds, and `interleaved` is false.
// `baseline` and `baseline_label` as in MeasureOptions.
TimingResult merge_passes(std::vector<TimingResult> passes, const std::string& baseline, const std::string& baseline_label);

struct MeasureOptions {
  int rounds = 5, warmup = 1;
  double sample_seconds = 0.02;   // each timed sample repeats the call to last about this long
  std::int64_t ceiling_bytes = std::int64_t(1) << 30;
  std::int64_t compute_macs = std::int64_t(1) << 24;  // per thread per round
  std::string baseline;           // arm name; empty: the first arm
  std::string baseline_label;     // the baseline in words; empty: the baseline's name
  std::vector<std::string> arm_baselines;  // per arm in order: its baseline's name (arms past the end: `baseline`)
};

// Verifies, calibrates and times the arms. Pools must already hold every thread count in use.
TimingResult measure_arms(std::vector<ArmSetup> arms, const MeasureOptions& opt, Pools& pools, Progress& progress);

// Progress units measure_arms will step through.
std::int64_t measure_units(std::size_t arms, const MeasureOptions& opt);

}  // namespace ternlab::experiments
