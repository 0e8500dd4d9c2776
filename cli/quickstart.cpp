// `ternlab quickstart`: the README's main job. Packs one synthetic ternary matrix into every layout,
// checks every kernel against the integer oracle, and prints a side-by-side table of bytes per
// weight and a short kernel timing.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <iostream>

#include "cli/commands.hpp"
#include "common/error.hpp"
#include "kernels/catalog.hpp"
#include "kernels/oracle.hpp"
#include "kernels/testdata.hpp"
#include "layouts/stock.hpp"

namespace ternlab::cli {

namespace {

struct Options {
  std::int64_t rows = 1024, cols = 4096;
  int reps = 5;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int run_quickstart(const Options& o) {
  std::cout << "ternlab quickstart: a " << o.rows << " x " << o.cols
            << " synthetic ternary matrix (unit scales) in every layout, one q8_K activation row with d = 1\n\n";
  const TernaryMatrix w = make_weights(o.rows, o.cols, 2026, Fill::random, ScaleKind::unit);
  const UnitActivations a = make_unit_activations(1, o.cols, 2027);
  const Q8KBatch x = quantize_batch(a.f.data(), 1, o.cols);
  const std::vector<std::int64_t> want = oracle_int(w, a.i8, 1);

  std::cout << std::left << std::setw(8) << "layout" << std::setw(22) << "kernel" << std::right << std::setw(10)
            << "bits/w" << std::setw(12) << "MB" << std::setw(9) << "oracle" << std::setw(12) << "gemv ms"
            << std::setw(12) << "Gweights/s" << std::setw(10) << "GB/s" << "\n";
  int failures = 0;
  for (const LayoutInfo* L : all_layouts()) {
    if (o.rows % L->rows != 0) continue;
    const PackedMatrix p = pack(w, *L);
    if (unpack(p) != w) fail("quickstart: ", L->name, " does not round-trip");
    for (const KernelVariant& k : kernels_for(*L)) {
      std::vector<float> y(std::size_t(o.rows));
      k.gemv(p, x.row(0), y.data(), 0, p.row_groups());  // verify before timing
      bool exact = true;
      for (std::int64_t n = 0; n < o.rows; ++n) exact = exact && double(y[std::size_t(n)]) == double(want[std::size_t(n)]);
      failures += exact ? 0 : 1;
      std::vector<double> times;
      for (int r = 0; r < o.reps; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        k.gemv(p, x.row(0), y.data(), 0, p.row_groups());
        times.push_back(seconds_since(t0));
      }
      std::nth_element(times.begin(), times.begin() + o.reps / 2, times.end());
      const double t = times[std::size_t(o.reps / 2)];
      const double weights = double(o.rows) * double(o.cols);
      std::cout << std::left << std::setw(8) << L->name << std::setw(22) << k.name() << std::right << std::fixed
                << std::setprecision(3) << std::setw(10) << L->bits_per_weight() << std::setprecision(2)
                << std::setw(12) << double(p.bytes.size()) / 1e6 << std::setw(9) << (exact ? "exact" : "FAIL")
                << std::setprecision(3) << std::setw(12) << t * 1e3 << std::setw(12) << weights / t / 1e9
                << std::setw(10) << double(p.bytes.size()) / t / 1e9 << "\n";
    }
  }
  std::cout << "\ntimes: median of " << o.reps << " single-threaded gemv calls after one verified call.\n";
  if (failures) {
    std::cerr << "ternlab quickstart: " << failures << " kernel(s) disagree with the integer oracle\n";
    return 1;
  }
  return 0;
}

}  // namespace

void add_quickstart_command(CLI::App& app) {
  static Options o;
  auto* q = app.add_subcommand("quickstart", "Pack a synthetic matrix into every layout, check against the oracle, time");
  q->add_option("--rows", o.rows, "Weight rows")->capture_default_str()->check(CLI::PositiveNumber);
  q->add_option("--cols", o.cols, "Inner size (multiple of 256)")->capture_default_str()->check(CLI::PositiveNumber);
  q->add_option("--reps", o.reps, "Timed repetitions per kernel")->capture_default_str()->check(CLI::Range(1, 1000));
  q->callback([] {
    if (const int rc = run_quickstart(o)) std::exit(rc);
  });
}

}  // namespace ternlab::cli
