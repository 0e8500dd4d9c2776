// Memory a run will hold against the memory this machine has, read before anything is loaded: a
// run whose arms cannot fit together is refused in the plan instead of being killed by the
// out-of-memory killer minutes into loading.
#pragma once

#include <cstdint>
#include <string>

namespace ternlab::experiments {

// Slack on every estimate: allocator overhead, thread stacks, the program itself, and what the
// estimate does not itemise (docs/experiments.md, "Memory").
inline constexpr double kMemoryMarginShare = 0.10;
inline constexpr std::int64_t kMemoryMarginBytes = std::int64_t(256) << 20;

struct AvailableMemory {
  std::int64_t bytes = -1;  // -1: unknown (no /proc/meminfo): nothing is refused
  std::string source;       // "MemAvailable in /proc/meminfo" or "TERNLAB_MEMORY_LIMIT_MIB=512"
};

// TERNLAB_MEMORY_LIMIT_MIB when set (a whole number of MiB; anything else is an error naming it),
// else MemAvailable of /proc/meminfo.
AvailableMemory available_memory();
// `meminfo` as /proc/meminfo writes it: MemAvailable in bytes, -1 when absent.
std::int64_t parse_mem_available(const std::string& meminfo);

// The margin added to `bytes` of estimates.
std::int64_t memory_margin(std::int64_t bytes);
std::string gib_text(double bytes);  // "7.41 GiB"

}  // namespace ternlab::experiments
