// Google Benchmark view of the kernels: every layout x kernel (kernels_for) on the shapes,
// plus the two ceilings, each as its own benchmark, for the library's repetitions, statistics and
// JSON output (--benchmark_format=json, tools/compare.py). Outputs are checked against the
// reference kernels before the first timed iteration; pools are built once, never in the loop.
//
// Google Benchmark runs benchmarks one after another, so a fraction of a ceiling taken minutes apart
// means little on a VM whose bandwidth moves in plateaus: the paired, interleaved figures come from
// `ternlab bench` and `ternlab run` (docs/kernels.md, docs/experiments.md).
//
//   build/ternlab_gbench --benchmark_filter=gemv/t2p --threads=1,2 --gemv=32768x8192
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/shape.hpp"
#include "common/error.hpp"
#include "kernels/dispatch.hpp"
#include "kernels/measure.hpp"
#include "kernels/testdata.hpp"
#include "layouts/stock.hpp"

namespace {

using namespace ternlab;

struct Shape {
  std::int64_t rows = 0, cols = 0;
};

Shape shape_of(const std::string& text, const std::string& flag) {
  const auto [rows, cols] = parse_shape(text, flag);
  return {rows, cols};
}

ThreadPool& pool(int threads) {
  static std::map<int, std::unique_ptr<ThreadPool>> pools;
  auto& p = pools[threads];
  if (!p) p = std::make_unique<ThreadPool>(threads);
  return *p;
}

// One packed matrix per (layout, shape), generated on first use and kept.
const PackedMatrix& weights(const LayoutInfo& L, Shape s) {
  static std::map<std::string, PackedMatrix> cache;
  const std::string key = cat(L.name, "/", s.rows, "x", s.cols);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, pack(make_weights(s.rows, s.cols, 2026), L)).first;
  return it->second;
}

void gemv_bench(benchmark::State& state, const LayoutInfo* L, KernelVariant k, Shape s, int threads) {
  const PackedMatrix& w = weights(*L, s);
  const Q8KBatch x = quantize_batch(make_float_activations(1, s.cols, 7).data(), 1, s.cols);
  std::vector<float> y(std::size_t(s.rows));
  ThreadPool& p = pool(threads);
  run_gemv(p, k, w, x, y);
  check_against_reference(w, k, y, x, s.rows);
  for (auto _ : state) {
    run_gemv(p, k, w, x, y);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetBytesProcessed(std::int64_t(state.iterations()) * std::int64_t(w.bytes.size()));
  state.counters["weights/s"] =
      benchmark::Counter(double(s.rows) * double(s.cols), benchmark::Counter::kIsIterationInvariantRate);
}

void gemm_bench(benchmark::State& state, const LayoutInfo* L, KernelVariant k, Shape s, int tokens, int threads) {
  const PackedMatrix& w = weights(*L, s);
  const Q8KBatch x = quantize_batch(make_float_activations(tokens, s.cols, 9).data(), tokens, s.cols);
  std::vector<float> y(std::size_t(s.rows * tokens));
  ThreadPool& p = pool(threads);
  run_gemm(p, k, w, x, y, s.rows);
  check_against_reference(w, k, y, x, s.rows);
  for (auto _ : state) {
    run_gemm(p, k, w, x, y, s.rows);
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["MAC/s"] = benchmark::Counter(double(s.rows) * double(s.cols) * tokens,
                                               benchmark::Counter::kIsIterationInvariantRate);
}

void read_ceiling_bench(benchmark::State& state, int threads, std::int64_t bytes) {
  ThreadPool& p = pool(threads);
  static std::map<std::int64_t, std::unique_ptr<MemoryCeiling>> buffers;
  auto& c = buffers[bytes];
  if (!c) c = std::make_unique<MemoryCeiling>(bytes, &p);
  if (c->sum(p) != c->expected_sum()) state.SkipWithError("memory ceiling: wrong sum");
  for (auto _ : state) benchmark::DoNotOptimize(c->sum(p));
  state.SetBytesProcessed(std::int64_t(state.iterations()) * c->bytes());
}

void compute_ceiling_bench(benchmark::State& state, int threads) {
  ThreadPool& p = pool(threads);
  ComputeCeiling c;
  double total = 0;
  for (auto _ : state) total += (c = int8_compute_ceiling(p)).gmacs;
  state.counters["GMAC/s"] = total / double(state.iterations());
  state.SetLabel(c.instruction);
}

std::vector<int> parse_ints(const std::string& text, const std::string& flag) {
  std::vector<int> out;
  std::size_t i = 0;
  while (i < text.size()) {
    const auto j = text.find(',', i);
    const std::string part = text.substr(i, j == std::string::npos ? std::string::npos : j - i);
    if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos || std::stoi(part) < 1)
      fail(flag, ": expected positive integers separated by commas, got '", text, "'");
    out.push_back(std::stoi(part));
    i = j == std::string::npos ? text.size() : j + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);  // consumes the --benchmark_* flags
  try {
    Shape gemv{32768, 8192}, gemm{17408, 5120};
    std::vector<int> threads{1, 2}, columns{4, 64};
    std::int64_t ceiling_mib = 1024;
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      const auto value = [&](const char* flag) { return a.substr(std::string(flag).size() + 1); };
      if (a.starts_with("--gemv=")) gemv = shape_of(value("--gemv"), "--gemv");
      else if (a.starts_with("--gemm=")) gemm = shape_of(value("--gemm"), "--gemm");
      else if (a.starts_with("--threads=")) threads = parse_ints(value("--threads"), "--threads");
      else if (a.starts_with("--cols=")) columns = parse_ints(value("--cols"), "--cols");
      else if (a.starts_with("--ceiling-mib=")) ceiling_mib = parse_ints(value("--ceiling-mib"), "--ceiling-mib")[0];
      else fail("unknown option '", a, "' (ternlab flags: --gemv=RxC --gemm=RxC --threads=1,2 --cols=4,64 "
                "--ceiling-mib=N; the rest are --benchmark_*)");
    }
    for (int t : threads) {
      benchmark::RegisterBenchmark(cat("ceiling/read/threads:", t).c_str(), read_ceiling_bench, t, ceiling_mib << 20)
          ->Unit(benchmark::kMillisecond)->UseRealTime();
      benchmark::RegisterBenchmark(cat("ceiling/int8/threads:", t).c_str(), compute_ceiling_bench, t)
          ->Unit(benchmark::kMillisecond)->UseRealTime();
    }
    for (const LayoutInfo* L : all_layouts())
      for (const KernelVariant& k : kernels_for(*L)) {
        if (k.strategy == Strategy::reference) continue;  // hundreds of times slower: `ternlab bench --reference`
        for (int t : threads) {
          if (gemv.rows % L->rows == 0)
            benchmark::RegisterBenchmark(cat("gemv/", L->name, "/", k.name(), "/threads:", t).c_str(), gemv_bench, L, k,
                                         gemv, t)
                ->Unit(benchmark::kMillisecond)->UseRealTime();
          for (int n : columns)
            if (gemm.rows % L->rows == 0)
              benchmark::RegisterBenchmark(cat("gemm", n, "/", L->name, "/", k.name(), "/threads:", t).c_str(),
                                           gemm_bench, L, k, gemm, n, t)
                  ->Unit(benchmark::kMillisecond)->UseRealTime();
        }
      }
  } catch (const Error& e) {
    std::cerr << "ternlab_gbench: " << e.what() << "\n";
    return 2;
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
