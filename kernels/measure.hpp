// The two ceilings every kernel measurement is reported against (`ternlab bench` and `ternlab run`),
// measured on the caller's persistent pool (threads are never created inside a timed region):
//   memory read ceiling   - the best of several streaming sums over an owned buffer far beyond the
//                           caches (>= 1 GiB for a real ceiling): vector loads at each ISA's width,
//                           one to four independent streams per thread, with and without software
//                           prefetch, each over its own part of the buffer. What memory can deliver
//                           to these threads right now; every sum is checked against its closed
//                           form, so the reads cannot be elided;
//   int8 compute ceiling  - the best of register-only loops of every int8 dot instruction at or below
//                           the ISA ceiling: vpdpbusd zmm and ymm (AVX-512 VNNI), vpmaddubsw ymm
//                           (AVX2), smmla and sdot (aarch64), else a scalar loop; per thread,
//                           summed over threads.
// The VM's bandwidth moves in plateaus, so callers take a ceiling right beside each timed pass.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/aligned.hpp"
#include "kernels/cpu.hpp"
#include "kernels/thread_pool.hpp"

namespace ternlab {

inline constexpr std::size_t kCeilingBytes = std::size_t(1) << 30;

struct ReadCeiling {
  double gbs = 0;    // the best loop's GB/s (1e9 bytes)
  std::string loop;  // which loop it was, e.g. "avx512 zmm, 4 streams"
};

class MemoryCeiling {
 public:
  // Allocates `bytes` (rounded down to 4 KiB, at least 4 KiB) and touches every page once, on the
  // pool's threads when one is given (so pages sit where those threads read them); reuse it.
  explicit MemoryCeiling(std::int64_t bytes, ThreadPool* first_touch = nullptr);
  std::int64_t bytes() const { return std::int64_t(buffer_.size()) * 8; }
  // One pass of every read loop, each over its own part of the buffer (a different part each
  // call), split over the pool's threads as the kernels split rows; the best GB/s and its loop.
  // Throws if a sum differs from its closed form.
  ReadCeiling measure_best(ThreadPool& pool) const;
  // The same pass, every loop's GB/s in the order of loops().
  std::vector<ReadCeiling> measure_each(ThreadPool& pool) const;
  double measure(ThreadPool& pool) const { return measure_best(pool).gbs; }
  // The whole buffer's sum through the first loop, and its closed form (word i holds i).
  std::uint64_t sum(ThreadPool& pool) const;
  std::uint64_t expected_sum() const;
  // The read loops this CPU runs, in the order measure_best tries them.
  static std::vector<std::string> loops();

 private:
  std::uint64_t sum_words(ThreadPool& pool, int loop, std::int64_t a, std::int64_t b) const;
  AlignedVector<std::uint64_t> buffer_;
  mutable int next_part_ = 0;
};

// GB/s of one checked streaming pass over `bytes`, using a process-wide MemoryCeiling that is
// allocated and touched once and reused while callers ask for the same size (`ternlab bench` does).
double read_ceiling_gbs(ThreadPool& pool, std::size_t bytes = kCeilingBytes);
// The same, with the loop that set it.
ReadCeiling read_ceiling(ThreadPool& pool, std::size_t bytes = kCeilingBytes);

struct ComputeCeiling {
  double gmacs = 0;          // int8 multiply-accumulates per second, all threads, 1e9
  std::string instruction;   // e.g. "vpdpbusd zmm"
};
// Every int8 dot loop supported here and at or below `ceiling` (default best_isa()), each run for
// about `macs_per_thread` MACs on every thread (<= 0: a fixed 20M iterations of the loop); the best
// GMAC/s and the instruction that reached it.
ComputeCeiling int8_compute_ceiling(ThreadPool& pool, Isa ceiling, std::int64_t macs_per_thread = 0);
// The same loops, each one's GMAC/s, widest first (the order of int8_compute_instruction).
std::vector<ComputeCeiling> int8_compute_each(ThreadPool& pool, Isa ceiling, std::int64_t macs_per_thread = 0);
ComputeCeiling int8_compute_ceiling(ThreadPool& pool);
// The instructions int8_compute_ceiling would try ("best of vpdpbusd zmm, ..."), without running them.
std::string int8_compute_instruction(Isa ceiling);
std::string int8_compute_instruction();

// Seconds a job that does nothing takes through the pool, handed to every worker and waited for:
// the fastest of `batches` batches of `jobs` back-to-back jobs, per job (the first batch may find
// the workers asleep; the fastest is the spinning handoff). 0 on one thread, which hands nothing
// over. What each split of work over the threads costs before any work: it moves with where the
// threads' cores sit (one cache line's trip between two cores in one core complex or two).
double pool_handoff_seconds(ThreadPool& pool, int jobs = 200, int batches = 5);

// The upper median of a run's rates (the element at size / 2 once sorted; 0 when empty).
double median(std::vector<double> v);

// Seconds of wall time for fn(), on a monotonic clock.
template <class F>
double seconds_of(F&& fn);

}  // namespace ternlab

#include <chrono>
template <class F>
double ternlab::seconds_of(F&& fn) {
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
