#include "experiments/memory.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/error.hpp"
#include "common/strings.hpp"
#include "experiments/report.hpp"

namespace ternlab::experiments {

std::int64_t parse_mem_available(const std::string& meminfo) {
  std::istringstream in(meminfo);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    std::istringstream fields(line.substr(13));
    std::int64_t kib = -1;
    std::string unit;
    fields >> kib >> unit;
    if (!fields || kib < 0 || unit != "kB") return -1;
    return kib * 1024;
  }
  return -1;
}

AvailableMemory available_memory() {
  AvailableMemory a;
  if (const char* env = std::getenv("TERNLAB_MEMORY_LIMIT_MIB"); env && *env) {
    char* end = nullptr;
    const long long mib = std::strtoll(env, &end, 10);
    if (*end != '\0' || mib < 1 || mib > (std::int64_t(1) << 40))
      fail("TERNLAB_MEMORY_LIMIT_MIB='", env, "': expected a whole number of MiB (1 or more)");
    a.bytes = std::int64_t(mib) << 20;
    a.source = cat("TERNLAB_MEMORY_LIMIT_MIB=", env);
    return a;
  }
  std::ifstream f("/proc/meminfo");
  if (!f) return a;
  std::ostringstream text;
  text << f.rdbuf();
  a.bytes = parse_mem_available(text.str());
  if (a.bytes >= 0) a.source = "MemAvailable in /proc/meminfo";
  return a;
}

std::int64_t memory_margin(std::int64_t bytes) { return std::int64_t(double(bytes) * kMemoryMarginShare) + kMemoryMarginBytes; }

std::string gib_text(double bytes) { return sig(bytes / double(std::int64_t(1) << 30)) + " GiB"; }

}  // namespace ternlab::experiments
