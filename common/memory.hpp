// Peak resident memory of this process: what a full-size model in a given layout really costs
// (mmap'd file pages that were touched count, as they do for the kernel's OOM accounting).
#pragma once

#include <cstdint>

#if defined(__linux__)
#include <sys/resource.h>
#endif

namespace ternlab {

// Bytes; 0 where the platform does not say.
inline std::int64_t peak_rss_bytes() {
#if defined(__linux__)
  rusage u{};
  if (getrusage(RUSAGE_SELF, &u) == 0) return std::int64_t(u.ru_maxrss) * 1024;  // Linux reports KiB
#endif
  return 0;
}

}  // namespace ternlab
