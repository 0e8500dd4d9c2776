// The core clock of the hand-built timing tools (strip_throughput.cpp, tile_bounds.cpp): seconds a
// cycle, from a chain of dependent 64-bit multiplies, three cycles each on every x86 core since
// Nehalem and on Zen. (A chain of adds of a constant is no clock: Golden Cove folds them at rename,
// and such a chain read 14.7 GHz on the Xeon guest.)
#pragma once

#include <chrono>
#include <cstdint>

inline double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

[[gnu::noinline]] inline double seconds_per_cycle() {
  constexpr long kMultiplies = 50'000'000;
  std::uint64_t x = 3;
  const double t = now_seconds();
  for (long i = 0; i < kMultiplies; ++i) asm volatile("imul %0, %0\n imul %0, %0\n imul %0, %0\n imul %0, %0" : "+r"(x));
  return (now_seconds() - t) / (kMultiplies * 4.0 * 3.0);
}
