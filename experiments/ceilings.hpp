// The two ceilings an arm is judged against, measured on the same threads as the arms:
//   memory read ceiling - a streaming sum over a buffer far larger than the caches (GB/s);
//   int8 compute ceiling - a register-only int8 multiply-accumulate loop on every thread (GMAC/s).
// Small interface on purpose: a kernel-side measurement (kernels/measure.hpp) can replace these.
#pragma once

#include <cstdint>
#include <string>

#include "common/aligned.hpp"
#include "kernels/thread_pool.hpp"

namespace ternlab::experiments {

class MemoryCeiling {
 public:
  // Allocates and touches `bytes` (rounded down to 4 KiB) once; reuse it for every round.
  explicit MemoryCeiling(std::int64_t bytes);
  std::int64_t bytes() const { return std::int64_t(buffer_.size()) * 8; }
  // One streaming pass split over the pool's threads as the kernels split rows; returns GB/s.
  double measure(ThreadPool& pool) const;
  // The sum one pass computes (checked against a closed form, so the read cannot be elided).
  std::uint64_t sum(ThreadPool& pool) const;
  std::uint64_t expected_sum() const;

 private:
  AlignedVector<std::uint64_t> buffer_;
};

// Register-only int8 dot loop: `per_thread` MACs on every pool thread; returns GMAC/s.
double measure_int8_compute(ThreadPool& pool, std::int64_t per_thread = std::int64_t(1) << 27);
// Which instruction the compute loop used, e.g. "avx2 vpmaddubsw" or "scalar".
std::string int8_compute_isa();

}  // namespace ternlab::experiments
