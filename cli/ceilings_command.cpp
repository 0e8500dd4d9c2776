// `ternlab kernels ceilings`: every loop behind the two ceilings the benchmarks report against,
// each timed on its own, round after round, so a reader can see which loop sets the ceiling on
// this machine and how far the others fall short (the ceiling is only as good as its best loop).
#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cli/commands.hpp"
#include "common/error.hpp"
#include "common/strings.hpp"
#include "common/table.hpp"
#include "kernels/thread_pool.hpp"
#include "experiments/measure.hpp"
#include "experiments/progress.hpp"
#include "experiments/report.hpp"
#include "kernels/cpu.hpp"
#include "kernels/measure.hpp"

namespace ternlab::cli {

namespace {

struct CeilingsOptions {
  std::vector<int> threads;
  int rounds = 5;
  int mib = 1024;
};

// Per loop name, in first-seen order: every round's value and how many rounds it was the best.
struct LoopRounds {
  std::vector<std::string> order;
  std::map<std::string, std::vector<double>> values;
  std::map<std::string, int> best;
  void add_round(const std::vector<std::pair<std::string, double>>& round) {
    const auto top = std::max_element(round.begin(), round.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
    for (const auto& [name, v] : round) {
      if (!values.count(name)) order.push_back(name);
      values[name].push_back(v);
    }
    if (top != round.end()) ++best[top->first];
  }
};

void add_rows(Table& t, int threads, const LoopRounds& r, int rounds, const std::string& unit) {
  for (const std::string& name : r.order) {
    const auto b = r.best.find(name);
    t.add({std::to_string(threads), name, experiments::with_range(experiments::stat_of(r.values.at(name)), " " + unit),
           cat(b == r.best.end() ? 0 : b->second, " of ", rounds)});
  }
}

void ceilings(const CeilingsOptions& o) {
  if (o.rounds < 1) fail("ternlab kernels ceilings: --rounds ", o.rounds, " must be at least 1");
  if (o.mib < 64) fail("ternlab kernels ceilings: --mib ", o.mib, " is too small to read from memory (at least 64)");
  std::vector<int> counts = o.threads;
  if (counts.empty()) counts = {1, std::max(1, int(std::thread::hardware_concurrency()))};
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  for (int n : counts)
    if (n < 1) fail("ternlab kernels ceilings: --threads ", n, " must be at least 1");

  std::cout << experiments::machine_markdown(experiments::this_machine()) << "\n";
  std::map<int, std::unique_ptr<ThreadPool>> pools;
  for (int n : counts) pools[n] = std::make_unique<ThreadPool>(n);
  // First touch on the widest pool, as the benchmarks do, so pages sit where the most threads read them.
  const MemoryCeiling buffer(std::int64_t(o.mib) << 20, pools.rbegin()->second.get());
  std::map<int, LoopRounds> reads, dots;
  experiments::Progress progress(std::int64_t(o.rounds + 1) * std::int64_t(counts.size()));
  for (int round = 0; round <= o.rounds; ++round) {  // round 0 warms clocks and code, not kept
    for (int n : counts) {
      std::vector<std::pair<std::string, double>> read, dot;
      for (const ReadCeiling& r : buffer.measure_each(*pools[n])) read.emplace_back(r.loop, r.gbs);
      for (const ComputeCeiling& c : int8_compute_each(*pools[n], best_isa())) dot.emplace_back(c.instruction, c.gmacs);
      if (round > 0) {
        reads[n].add_round(read);
        dots[n].add_round(dot);
      }
      progress.step(round == 0 ? cat("warm-up, ", n, " thr") : cat("round ", round, ", ", n, " thr"));
    }
  }
  progress.finish();

  std::cout << "memory read loops: each round, one pass of every loop over its own part of the " << o.mib
            << " MiB buffer (a different part each round); the ceiling is the best loop of each round\n\n";
  Table reads_table({{"thr", Align::right}, {"read loop"}, {"GB/s median [min–max]", Align::right}, {"best in", Align::right}});
  for (int n : counts) add_rows(reads_table, n, reads[n], o.rounds, "GB/s");
  std::cout << reads_table.text("  ") << "\n";
  std::cout << "int8 multiply-accumulate loops: register-only, every thread, the same rounds\n\n";
  Table dots_table({{"thr", Align::right}, {"instruction"}, {"GMAC/s median [min–max]", Align::right}, {"best in", Align::right}});
  for (int n : counts) add_rows(dots_table, n, dots[n], o.rounds, "GMAC/s");
  std::cout << dots_table.text("  ");
}

}  // namespace

void add_ceilings_command(CLI::App& kernels) {
  auto* c = kernels.add_subcommand("ceilings", "Time every read loop and int8 loop behind the ceilings: which sets them here");
  static CeilingsOptions o;
  c->add_option("--threads", o.threads, "Thread counts (default: 1 and every logical core)")->delimiter(',');
  c->add_option("--rounds", o.rounds, "Kept rounds, after one warm-up round")->capture_default_str();
  c->add_option("--mib", o.mib, "The read buffer in MiB (well over the last-level cache)")->capture_default_str();
  c->callback([] { ceilings(o); });
}

}  // namespace ternlab::cli
