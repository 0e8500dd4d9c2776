// The two ceilings every kernel measurement is reported against, measured on the caller's
// persistent pool (threads are never created inside a timed region):
//   read_ceiling_gbs      - a plain streaming sum over a buffer of >= 1 GiB (far beyond cache):
//                           what memory can deliver to these threads right now;
//   int8_compute_ceiling  - a register-only loop of the widest int8 dot instruction available
//                           (vpdpbusd zmm, else vpmaddubsw ymm, else a scalar loop), per thread.
// The VM's bandwidth moves in plateaus, so callers take a ceiling right beside each timed pass.
#pragma once

#include <cstddef>
#include <string>

#include "kernels/cpu.hpp"
#include "kernels/thread_pool.hpp"

namespace ternlab {

inline constexpr std::size_t kCeilingBytes = std::size_t(1) << 30;

// GB/s (1e9 bytes) of one streaming read pass over `bytes` (allocated and touched once, reused).
double read_ceiling_gbs(ThreadPool& pool, std::size_t bytes = kCeilingBytes);

struct ComputeCeiling {
  double gmacs = 0;          // int8 multiply-accumulates per second, all threads, 1e9
  std::string instruction;   // e.g. "vpdpbusd zmm"
};
// The widest instruction at or below `ceiling` (default best_isa()).
ComputeCeiling int8_compute_ceiling(ThreadPool& pool, Isa ceiling);
ComputeCeiling int8_compute_ceiling(ThreadPool& pool);

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
