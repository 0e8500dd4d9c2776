// The memory ceiling's read loops, one template for every x86 policy: a thread's range is read as
// S equal parts side by side (S independent streams keep more line fills in flight where one core's
// bandwidth is latency-bound), two vectors per stream per step, with an optional software prefetch
// PF bytes ahead of each stream. The 64-bit lane sums are checked against their closed form by the
// caller, so no read can be elided.
//
// Which shape reads fastest differs by machine, so the ceiling runs several (1, 2 and 4 streams,
// with and without a 2 KiB prefetch): over 1 GiB one prefetched stream led on the Sapphire
// Rapids-class VM, two streams on one thread of the Zen 4 VM (measured:
// docs/notebook/2026-12-02-sapphire-rapids-kernels.md, 2026-12-05-zen4-kernels.md).
//
// A template on the policy so each translation unit (compiled for its own target) gets its own
// instantiation. Include only after the policy's target pragma.
#pragma once

#include <cstdint>

namespace ternlab::isa {

template <class P, int S, int PF>
std::uint64_t stream_sum(const std::uint64_t* p, std::int64_t n) {
  constexpr std::int64_t kWords = P::kBytes / 8;  // 64-bit words per vector
  const std::int64_t part = n / S / (2 * kWords) * (2 * kWords);
  typename P::V acc[S][2];
  for (auto& a : acc) a[0] = a[1] = P::zero();
  for (std::int64_t i = 0; i < part; i += 2 * kWords)
    for (int s = 0; s < S; ++s) {
      const std::uint64_t* q = p + s * part + i;
      if constexpr (PF > 0)  // every 64-byte line of the step (two zmm loads span two lines)
        for (int line = 0; line < 2 * P::kBytes; line += 64) __builtin_prefetch(q + (PF + line) / 8);
      acc[s][0] = P::add64(acc[s][0], P::load(q));
      acc[s][1] = P::add64(acc[s][1], P::load(q + kWords));
    }
  std::uint64_t sum = 0;
  for (auto& a : acc) sum += P::sum64(P::add64(a[0], a[1]));
  for (std::int64_t i = S * part; i < n; ++i) sum += p[i];
  return sum;
}

}  // namespace ternlab::isa
