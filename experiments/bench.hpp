// `ternlab bench` as a front end over the experiment runner: its flags become experiment configs
// (one gemv, one gemm) that `ternlab run` runs the same way, so bench, `ternlab run` and every
// config share one measuring harness (verification, interleaving, ceilings, medians, results
// folder). `ternlab bench --print-config` prints the configs instead of running them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "experiments/results.hpp"

namespace ternlab::experiments {

struct BenchSpec {
  std::vector<int> threads{1, 2};
  std::vector<std::int64_t> cols{4, 64};  // gemm token counts
  std::vector<std::string> layouts;       // empty: every layout and every peer (kernels/peers/peers.hpp)
  std::string gemv_shape = "32768x8192", gemm_shape = "17408x5120", only = "all", output = "results";
  int rounds = 3;
  double min_seconds = 0.1;  // per timed sample
  std::int64_t ceiling_mib = 1024;
  std::string weights = "cold";  // the kinds' `weights`: cold cycles copies beyond the last-level cache
  bool with_reference = false, pin = false;
};

struct BenchConfig {
  std::string kind;  // "gemv" or "gemm"
  std::string toml;
};

// One config per kind --only selects. Arms: every layout that splits the shape (a --layouts name
// that does not is an error naming it) x every kernel variant at or below the ISA ceiling (the
// scalar reference only with --reference), then the peers (kPeerFormats) where the CPU has AVX2 and
// the columns are a whole number of the peer's blocks.
std::vector<BenchConfig> bench_configs(const BenchSpec& spec);

// The comparisons bench prints after the runner's tables, from the summary.json objects of its
// runs: every arm against pq2_0's unpack arm of the same ISA, and against the best peer arm, per
// kind, thread count and token count (medians of Gweights/s for gemv, GMAC/s for gemm).
std::string bench_ratios(const std::vector<Json>& summaries);

}  // namespace ternlab::experiments
