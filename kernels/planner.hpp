// Choosing the fastest kernel variant for a layout on this machine, not the widest ISA: a planner
// in the manner of FFTW's.
//
//   auto      (the default) the wisdom file's measured choice where it holds this CPU, layout,
//             operation, shape, threads and ceiling; the estimate otherwise. Nothing runs.
//   estimate  dispatch's ladder (best_kernel: the richest ISA under the ceiling, then the strategy
//             preference and this CPU's guesses). Nothing runs; it is right where a wider ISA is
//             faster, which is not always so (t2w's AVX2 gemv out-ran its AVX-512 one on Zen 4 and
//             on Sapphire Rapids).
//   measure   every candidate at or below the ceiling runs the real matrix: its output is checked
//             against the reference kernel first, then the candidates are timed in interleaved
//             rounds on the caller's pool, and the fastest median wins.
//
// Measured choices are kept in a wisdom file (TOML: one [[choice]] per CPU, layout, operation,
// shape, threads and ISA ceiling), read back by later plans so a load measures once per machine;
// `ternlab kernels --explain` lists what it holds for this CPU.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kernels/dispatch.hpp"

namespace ternlab {

enum class PlanMode { automatic, estimate, measure };
PlanMode parse_plan_mode(const std::string& s);  // "auto", "estimate" or "measure"; throws listing them
const char* plan_mode_name(PlanMode m);

// What a measured choice was measured for.
struct PlanKey {
  std::string cpu;     // model and features, as `ternlab version` prints them
  std::string layout;
  std::string op;      // "gemv" or "gemm<tokens>"
  std::int64_t rows = 0, cols = 0;
  int threads = 1;
  std::string ceiling;  // the ISA ceiling the candidates were drawn under
  bool operator==(const PlanKey&) const = default;
};
PlanKey plan_key(const LayoutInfo& layout, std::int64_t rows, std::int64_t cols, std::int64_t tokens, int threads);

struct WisdomEntry {
  PlanKey key;
  std::string variant;  // "strategy/isa"
  double rate = 0;      // its median, Gweights/s (gemv) or GMAC/s (gemm)
  std::string runners_up;  // the other candidates' medians, for the record
};

class Wisdom {
 public:
  // $TERNLAB_WISDOM, else $XDG_CACHE_HOME/ternlab/wisdom.toml, else ~/.cache/ternlab/wisdom.toml.
  static std::filesystem::path default_path();
  // Reads `path` if it exists; a malformed file is an error naming the file, line and key.
  explicit Wisdom(std::filesystem::path path);
  const WisdomEntry* find(const PlanKey& key) const;
  void record(WisdomEntry e);  // replaces an entry with the same key
  // Writes the file whole (a temporary beside it, then renamed): never half-written.
  void save() const;
  const std::vector<WisdomEntry>& entries() const { return entries_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  std::vector<WisdomEntry> entries_;
};

// Every variant at or below the ceiling but the reference, each checked against the reference kernel
// first (a wrong one throws), then timed in `rounds` interleaved rounds on `pool`, each pass at least
// two calls and `min_seconds`: the median rate, Gweights/s (gemv, tokens 1) or GMAC/s (gemm), in the
// catalog's order.
struct MeasuredVariant {
  KernelVariant variant;
  double rate = 0;
};
std::vector<MeasuredVariant> measure_variants(const PackedMatrix& w, std::int64_t tokens, ThreadPool& pool, int rounds,
                                              double min_seconds = 0.02);

// Wisdom's choice for `key` among the variants this CPU lists under the ceiling, with a note naming
// the file and the measured rate; none where it holds no entry or its variant is no longer listed.
std::optional<KernelChoice> wisdom_choice(const LayoutInfo& layout, const PlanKey& key, const Wisdom& wisdom);

// The variant for `w` (a packed matrix of the real shape) driven with `tokens` tokens (1: gemv)
// on `pool`. measure: wisdom's choice if it holds one for this key and the variant still exists,
// else the candidates are measured (`rounds` interleaved rounds) and the choice recorded in wisdom
// (saved). auto: wisdom's choice where it holds one, else best_kernel; never measures or writes.
// estimate: best_kernel. The notes say what was measured or read, and why each candidate was
// passed over.
KernelChoice plan_kernel(const PackedMatrix& w, std::int64_t tokens, ThreadPool& pool, PlanMode mode,
                         Wisdom* wisdom, int rounds = 3);

}  // namespace ternlab
