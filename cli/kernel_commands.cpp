// `ternlab kernels`: the kernel variants each layout has on this CPU and the one dispatch picks.
// `ternlab bench`:   every layout x strategy x ISA on the shapes (gemv 32768 x 8192, gemm
//                    17408 x 5120 at 4 and 64 columns), 1 and 2 threads, each pass reported against
//                    a memory (gemv) or int8 compute (gemm) ceiling measured right beside it.
// Arms are interleaved within each round, pools are created before any timing, and every arm's
// output is checked bit for bit against the reference kernel before it is timed.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <span>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

#include "cli/commands.hpp"
#include "common/error.hpp"
#include "common/strings.hpp"
#include "common/table.hpp"
#include "kernels/dispatch.hpp"
#include "kernels/measure.hpp"
#include "kernels/peers/i2s.hpp"
#include "kernels/planner.hpp"
#include "kernels/testdata.hpp"
#include "layouts/stock.hpp"

namespace ternlab::cli {

namespace {

// A bench table: layout, kernel and threads, then the figure columns, then the defect flag.
Table bench_table(std::initializer_list<const char*> figures) {
  std::vector<Column> c = {{"layout"}, {"kernel"}, {"thr", Align::right}};
  for (const char* f : figures) c.push_back({f, Align::right});
  c.push_back({""});
  return Table(std::move(c));
}

void apply_isa(const std::string& isa) {
  if (!isa.empty()) set_isa_ceiling(parse_isa(isa));
}

std::pair<std::int64_t, std::int64_t> parse_shape(const std::string& s) {
  const auto x = s.find('x');
  if (x == std::string::npos) fail("shape '", s, "' must read ROWSxCOLS, e.g. 32768x8192");
  try {
    return {std::stoll(s.substr(0, x)), std::stoll(s.substr(x + 1))};
  } catch (const std::exception&) {
    fail("shape '", s, "' must read ROWSxCOLS, e.g. 32768x8192");
  }
}

struct KernelsOptions {
  std::string isa, plan = "estimate", shape = "32768x8192", wisdom;
  std::vector<std::string> layouts;
  std::int64_t tokens = 1;
  int threads = 1;
  bool explain = false;
};

// `ternlab kernels`: per layout, the variants and the one chosen. With --plan measure the planner
// times every candidate on a matrix of --shape and records its choice in the wisdom file;
// --explain also lists what the wisdom file holds for this CPU.
void list_kernels(const KernelsOptions& o) {
  apply_isa(o.isa);
  const PlanMode mode = parse_plan_mode(o.plan);
  const auto [rows, cols] = parse_shape(o.shape);
  if (o.tokens < 1) fail("kernels: --tokens must be at least 1");
  Wisdom wisdom(o.wisdom.empty() ? Wisdom::default_path() : std::filesystem::path(o.wisdom));
  std::cout << "cpu: " << cpu_features().model << " (" << feature_string() << "), ceiling " << isa_name(best_isa())
            << ", plan: " << plan_mode_name(mode);
  if (mode == PlanMode::measure)
    std::cout << " (" << (o.tokens == 1 ? std::string("gemv") : cat("gemm, ", o.tokens, " tokens")) << " on " << rows
              << " x " << cols << ", " << o.threads << " thread(s))";
  std::cout << "\n";
  ThreadPool pool(o.threads);
  for (const LayoutInfo* L : all_layouts()) {
    if (!o.layouts.empty() && std::find(o.layouts.begin(), o.layouts.end(), L->name) == o.layouts.end()) continue;
    KernelChoice c;
    if (mode == PlanMode::measure) {
      if (rows % L->rows) {
        std::cout << std::left << std::setw(8) << L->name << "  (not measured: " << rows << " rows are not whole "
                  << L->rows << "-row blocks)\n";
        continue;
      }
      const PackedMatrix w = pack(make_weights(rows, cols, 2026, Fill::random, ScaleKind::random), *L);
      c = plan_kernel(w, o.tokens, pool, mode, &wisdom);
    } else {
      c = best_kernel(*L);
    }
    std::cout << std::left << std::setw(8) << L->name;
    for (const KernelVariant& k : kernels_for(*L))
      std::cout << "  " << (k.name() == c.variant.name() ? "*" : " ") << k.name();
    std::cout << "\n";
    if (o.explain || mode == PlanMode::measure)
      for (const std::string& n : c.notes) std::cout << "          " << n << "\n";
  }
  std::cout << "(* = chosen " << (mode == PlanMode::measure ? "by measuring" : "by best_kernel under the ceiling")
            << "; --isa lowers the ceiling, --plan measure times the candidates)\n";
  if (o.explain) {
    const PlanKey here = plan_key(**all_layouts().begin(), 0, 0, 1, 1);
    Table table({{"layout"}, {"op"}, {"shape", Align::right}, {"thr", Align::right}, {"ceiling"}, {"chosen"},
                 {"rate", Align::right}, {"runners-up"}});
    for (const WisdomEntry& e : wisdom.entries())
      if (e.key.cpu == here.cpu)
        table.add({e.key.layout, e.key.op, cat(e.key.rows, " x ", e.key.cols), cat(e.key.threads), e.key.ceiling, e.variant,
                   cat(e.rate, e.key.op == "gemv" ? " Gweights/s" : " GMAC/s"), e.runners_up});
    if (table.rows())
      std::cout << "\nwisdom " << wisdom.path().string() << ", this CPU:\n" << table.text("  ");
    else
      std::cout << "\nwisdom " << wisdom.path().string() << ": nothing measured on this CPU yet\n";
  }
}

struct BenchOptions {
  std::vector<int> threads{1, 2};
  std::vector<std::int64_t> cols{4, 64};
  std::vector<std::string> layouts;
  std::string gemv_shape = "32768x8192", gemm_shape = "17408x5120", isa, only = "all";
  int rounds = 3;
  double min_seconds = 0.1;  // per timed pass
  std::size_t ceiling_mib = 1024;
  bool with_reference = false, pin = false;
};

// A benchmark's activations in every form an arm reads: q8_K for ternlab's kernels, I8_S for
// BitNet's I2_S arm (both quantised from the same floats).
struct Acts {
  Q8KBatch q8;
  peers::I8sActs i8;
};

// One arm: what it is called, the weight bytes one pass streams, and how it runs and checks a
// gemv (one token) or gemm (tokens x ldy outputs).
struct Arm {
  std::string layout, kernel;
  std::size_t bytes = 0;
  std::function<void(ThreadPool&, const Acts&, std::span<float>, std::int64_t ldy)> gemv, gemm;
  std::function<void(const Acts&, std::span<const float>, std::int64_t ldy)> check;
};

// The peer formats `--layouts` accepts beside the registered layouts.
constexpr const char* kPeerI2s = "i2_s";

// Refuses, before anything is measured, a --layouts name that is neither a layout nor a peer, and
// a layout whose blocks do not split the rows x cols matrix.
void check_layouts(const BenchOptions& o, std::int64_t rows, std::int64_t cols) {
  for (const std::string& name : o.layouts)
    if (name != kPeerI2s) {
      const LayoutInfo& L = find_layout(name);  // throws naming the known layouts
      if (rows % L.rows)
        fail("bench: layout '", name, "' holds ", L.rows, "-row blocks; the ", rows, " x ", cols,
             " matrix does not split into them (rows must be a multiple of ", L.rows, ")");
    }
}

// Kernel arms for one weight matrix: every layout that can hold it x every variant under the
// ceiling, and BitNet's I2_S arm (check_layouts has vetted o.layouts).
std::vector<Arm> make_arms(const BenchOptions& o, std::int64_t rows, std::int64_t cols) {
  const auto wanted = [&](std::string_view name) {
    return o.layouts.empty() || std::find(o.layouts.begin(), o.layouts.end(), name) != o.layouts.end();
  };
  std::cerr << "bench: generating a " << rows << " x " << cols << " ternary matrix\n";
  const TernaryMatrix m = make_weights(rows, cols, 2026, Fill::random, ScaleKind::random);
  std::vector<Arm> arms;
  for (const LayoutInfo* L : all_layouts()) {
    if (!wanted(L->name) || rows % L->rows) continue;
    const auto w = std::make_shared<const PackedMatrix>(pack(m, *L));
    for (const KernelVariant& k : kernels_for(*L)) {
      if (k.strategy == "reference" && !o.with_reference) continue;
      if (int(parse_isa(k.isa)) > int(best_isa()) && parse_isa(k.isa) != Isa::scalar) continue;
      arms.push_back({std::string(L->name), k.name(), w->bytes.size(),
                      [w, k](ThreadPool& pool, const Acts& x, std::span<float> y, std::int64_t) {
                        run_gemv(pool, k, *w, x.q8, y);
                      },
                      [w, k](ThreadPool& pool, const Acts& x, std::span<float> y, std::int64_t ldy) {
                        run_gemm(pool, k, *w, x.q8, y, ldy);
                      },
                      [w, k](const Acts& x, std::span<const float> y, std::int64_t ldy) {
                        check_against_reference(*w, k, y, x.q8, ldy);
                      }});
    }
  }
  if (wanted(kPeerI2s) && isa_supported(Isa::avx2)) {
    const auto w = std::make_shared<const peers::I2sMatrix>(peers::pack_i2s(m, "bench"));
    arms.push_back({"I2_S", "bitnet-i2s/avx2", w->bytes.size(),
                    [w](ThreadPool& pool, const Acts& x, std::span<float> y, std::int64_t) {
                      peers::run_i2s_gemv(pool, *w, x.i8, y.data());
                    },
                    [w](ThreadPool& pool, const Acts& x, std::span<float> y, std::int64_t ldy) {
                      peers::run_i2s_gemm(pool, *w, x.i8, y.data(), ldy);
                    },
                    [w](const Acts& x, std::span<const float> y, std::int64_t ldy) { peers::check_i2s(*w, x.i8, y, ldy); }});
  }
  return arms;
}

Acts make_acts(std::int64_t tokens, std::int64_t cols, std::uint64_t seed) {
  const std::vector<float> xf = make_float_activations(tokens, cols, seed);
  return {quantize_batch(xf.data(), tokens, cols), peers::quantize_i8s(xf.data(), tokens, cols)};
}

// Bitwise check of an arm's output against the reference kernel on the first and last row groups.
// Mean seconds per call over back-to-back calls lasting at least min_seconds.
template <class F>
double time_pass(F&& run, double min_seconds) {
  run();  // warm: page tables, caches of the activations
  int reps = 0;
  double total = 0;
  while (total < min_seconds) {
    total += seconds_of(run);
    ++reps;
  }
  return total / reps;
}

// A pass above the ceiling measured beside it means the ceiling is no upper bound (or the pass ran
// from cache): flagged, never hidden.
std::string defect_mark(const std::vector<double>& fractions) {
  const auto over = std::count_if(fractions.begin(), fractions.end(), [](double f) { return f > 1.0; });
  return over ? cat("CEILING DEFECT: ", over, " of ", fractions.size(), " passes above 100%") : "";
}

struct Row {
  std::vector<double> rate, frac, ceiling;  // per round
};

// One arm's pass in one round: its rate, the ceiling measured beside it, and the pass's fraction of it.
struct Sample {
  double rate, ceiling, frac;
};

// Rounds x arms, interleaved: each round times every arm once, in order; pass(arm) times one arm.
template <class Pass>
std::vector<Row> interleaved_rounds(const std::vector<Arm>& arms, int rounds, Pass&& pass) {
  std::vector<Row> res(arms.size());
  for (int r = 0; r < rounds; ++r)
    for (std::size_t i = 0; i < arms.size(); ++i) {
      const Sample s = pass(arms[i]);
      res[i].rate.push_back(s.rate);
      res[i].ceiling.push_back(s.ceiling);
      res[i].frac.push_back(s.frac);
    }
  return res;
}

void bench(const BenchOptions& o) {
  apply_isa(o.isa);
  for (const auto& [kind, shape] : {std::pair{"gemv", o.gemv_shape}, std::pair{"gemm", o.gemm_shape}})
    if (o.only == "all" || o.only == kind) {
      const auto [rows, cols] = parse_shape(shape);
      check_layouts(o, rows, cols);
    }
  std::vector<std::unique_ptr<ThreadPool>> pools;
  for (int t : o.threads) pools.push_back(std::make_unique<ThreadPool>(t, o.pin));
  const std::size_t ceiling_bytes = o.ceiling_mib << 20;
  std::cout << "machine: " << cpu_features().model << " (" << feature_string() << "), ceiling ISA "
            << isa_name(best_isa()) << ", threads pinned: " << (o.pin ? "yes" : "no") << "\n";
  for (auto& p : pools) {
    const ComputeCeiling c = int8_compute_ceiling(*p);
    std::cout << "int8 compute ceiling, " << p->size() << " thread(s): " << std::fixed << std::setprecision(1)
              << c.gmacs << " GMAC/s (" << c.instruction << ")\n";
  }
  // Rates keyed by "kind|layout|kernel|threads|cols" for the summary ratios.
  std::map<std::string, double> med;

  if (o.only == "all" || o.only == "gemv") {
    const auto [rows, cols] = parse_shape(o.gemv_shape);
    std::vector<Arm> arms = make_arms(o, rows, cols);
    const Acts x = make_acts(1, cols, 7);
    std::vector<float> y(static_cast<std::size_t>(rows));
    for (const Arm& a : arms) {
      a.gemv(*pools.front(), x, y, rows);
      a.check(x, y, rows);
    }
    std::map<std::string, int> ceiling_loops;  // how often each read loop set the ceiling
    std::cout << "\ngemv " << rows << " x " << cols << " (outputs verified against reference), median of "
              << o.rounds << " rounds; ceiling = streaming read of " << o.ceiling_mib
              << " MiB beside each pass, the best of " << MemoryCeiling::loops().size()
              << " read loops (" << join(MemoryCeiling::loops(), "; ") << ")\n";
    Table table = bench_table({"Gweights/s", "GB/s", "ceil GB/s", "of ceil"});
    for (std::size_t pi = 0; pi < pools.size(); ++pi) {
      ThreadPool& pool = *pools[pi];
      const std::vector<Row> res = interleaved_rounds(arms, o.rounds, [&](const Arm& a) {
        const ReadCeiling before = read_ceiling(pool, ceiling_bytes);
        const double s = time_pass([&] { a.gemv(pool, x, y, rows); }, o.min_seconds);
        const ReadCeiling after = read_ceiling(pool, ceiling_bytes);
        ++ceiling_loops[before.loop], ++ceiling_loops[after.loop];
        const double gbs = double(a.bytes) / s / 1e9, ceil = (before.gbs + after.gbs) / 2;
        return Sample{double(rows) * double(cols) / s / 1e9, ceil, gbs / ceil};
      });
      for (std::size_t i = 0; i < arms.size(); ++i) {
        const Arm& a = arms[i];
        const double gw = median(res[i].rate);
        const double bpw = double(a.bytes) / (double(rows) * double(cols));
        table.add({a.layout, a.kernel, cat(pool.size()), fixed_text(gw, 1), fixed_text(gw * bpw, 1),
                   fixed_text(median(res[i].ceiling), 1), fixed_text(100 * median(res[i].frac), 0) + "%", defect_mark(res[i].frac)});
        med[cat("gemv|", a.layout, "|", a.kernel, "|", pool.size())] = gw;
      }
    }
    std::cout << table.text() << "the read ceiling was set by:";
    for (const auto& [loop, n] : ceiling_loops) std::cout << " " << loop << " (" << n << "x)";
    std::cout << "\n";
  }

  if (o.only == "all" || o.only == "gemm") {
    const auto [rows, cols] = parse_shape(o.gemm_shape);
    std::vector<Arm> arms = make_arms(o, rows, cols);
    for (std::int64_t tokens : o.cols) {
      const Acts x = make_acts(tokens, cols, 9);
      std::vector<float> y(std::size_t(rows * tokens));
      for (const Arm& a : arms) {
        a.gemm(*pools.front(), x, y, rows);
        a.check(x, y, rows);
      }
      std::cout << "\ngemm " << rows << " x " << cols << " x " << tokens
                << " columns (outputs verified), median of " << o.rounds
                << " rounds; ceiling = int8 dot loop beside each pass\n";
      Table table = bench_table({"GMAC/s", "ceil GMAC/s", "of ceil"});
      for (std::size_t pi = 0; pi < pools.size(); ++pi) {
        ThreadPool& pool = *pools[pi];
        const std::vector<Row> res = interleaved_rounds(arms, o.rounds, [&](const Arm& a) {
          const double s = time_pass([&] { a.gemm(pool, x, y, rows); }, o.min_seconds);
          const double ceil = int8_compute_ceiling(pool).gmacs;
          const double gmacs = double(rows) * double(cols) * double(tokens) / s / 1e9;
          return Sample{gmacs, ceil, gmacs / ceil};
        });
        for (std::size_t i = 0; i < arms.size(); ++i) {
          const Arm& a = arms[i];
          table.add({a.layout, a.kernel, cat(pool.size()), fixed_text(median(res[i].rate), 1), fixed_text(median(res[i].ceiling), 1),
                     fixed_text(100 * median(res[i].frac), 0) + "%", defect_mark(res[i].frac)});
          med[cat("gemm", tokens, "|", a.layout, "|", a.kernel, "|", pool.size())] = median(res[i].rate);
        }
      }
      std::cout << table.text();
    }
  }

  // The comparisons, from the medians above: every arm against the (tiled) unpack arm of
  // pq2_0 on the same ISA, threads and shape; pq2_0's unpack-vecdot line shows what tiling is worth.
  const auto ratio_table = [] {
    return Table({{"kind"}, {"layout"}, {"kernel"}, {"thr", Align::right}, {"ratio", Align::right}});
  };
  std::cout << "\nratios to the stock pq2_0 unpack arm (same ISA, threads, shape):\n";
  Table to_unpack = ratio_table();
  for (const auto& [key, rate] : med) {
    std::istringstream is(key);
    std::string kind, layout, kernel, thr;
    std::getline(is, kind, '|'), std::getline(is, layout, '|'), std::getline(is, kernel, '|'), std::getline(is, thr);
    if (layout == "pq2_0" && kernel.starts_with("unpack/")) continue;  // the baseline itself
    const std::string isa = kernel.substr(kernel.find('/') + 1);
    const auto base = med.find(cat(kind, "|pq2_0|unpack/", isa, "|", thr));
    if (base == med.end() || base->second <= 0) continue;
    to_unpack.add({kind, layout, kernel, thr, fixed_text(rate / base->second, 2) + "x"});
  }
  std::cout << to_unpack.text("  ");
  // Against the best peer arm (BitNet's I2_S) of the same kind, threads and shape.
  Table to_peer = ratio_table();
  for (const auto& [key, rate] : med) {
    std::istringstream is(key);
    std::string kind, layout, kernel, thr;
    std::getline(is, kind, '|'), std::getline(is, layout, '|'), std::getline(is, kernel, '|'), std::getline(is, thr);
    const auto peer = med.find(cat(kind, "|I2_S|bitnet-i2s/avx2|", thr));
    if (layout == "I2_S" || peer == med.end() || peer->second <= 0) continue;
    to_peer.add({kind, layout, kernel, thr, fixed_text(rate / peer->second, 2) + "x"});
  }
  if (to_peer.rows()) std::cout << "\nratios to the best peer arm (BitNet I2_S, same threads and shape):\n" << to_peer.text("  ");
}

}  // namespace

void add_kernel_commands(CLI::App& app) {
  auto* list = app.add_subcommand("kernels", "List the kernel variants of each layout on this CPU and the chosen one");
  static KernelsOptions ko;
  list->add_option("--isa", ko.isa, "ISA ceiling (scalar, avx2, avx512vnni, neon, dotprod, i8mm)");
  list->add_flag("--explain", ko.explain, "Say why each candidate was taken or passed over; list the wisdom file");
  list->add_option("--plan", ko.plan, "estimate (the ISA ladder) or measure (time every candidate, record wisdom)")
      ->capture_default_str();
  list->add_option("--shape", ko.shape, "Matrix the planner measures, ROWSxCOLS")->capture_default_str();
  list->add_option("--tokens", ko.tokens, "Tokens the planner measures with (1: gemv, more: gemm)")->capture_default_str();
  list->add_option("--threads", ko.threads, "Threads the planner measures on")->capture_default_str();
  list->add_option("--layouts", ko.layouts, "Only these layouts")->delimiter(',');
  list->add_option("--wisdom", ko.wisdom, "Wisdom file (default: $TERNLAB_WISDOM or ~/.cache/ternlab/wisdom.toml)");
  list->callback([] { list_kernels(ko); });

  auto* b = app.add_subcommand("bench", "Kernel benchmark: gemv/gemm per layout x strategy x ISA vs measured ceilings");
  static BenchOptions o;
  b->add_option("--threads", o.threads, "Thread counts (persistent pools)")->delimiter(',');
  b->add_option("--cols", o.cols, "gemm column counts")->delimiter(',');
  b->add_option("--layouts", o.layouts, "Only these layouts (and i2_s: BitNet's I2_S peer arm)")->delimiter(',');
  b->add_option("--gemv", o.gemv_shape, "gemv shape ROWSxCOLS");
  b->add_option("--gemm", o.gemm_shape, "gemm weight shape ROWSxCOLS");
  b->add_option("--isa", o.isa, "ISA ceiling: arms above it are left out");
  b->add_option("--only", o.only, "all, gemv or gemm")->check(CLI::IsMember({"all", "gemv", "gemm"}));
  b->add_option("--rounds", o.rounds, "Interleaved rounds (median reported)");
  b->add_option("--min-seconds", o.min_seconds, "Minimum duration of each timed pass");
  b->add_option("--ceiling-mib", o.ceiling_mib, "Streaming-read ceiling buffer size (MiB, >= 1024 for the issue)");
  b->add_flag("--reference", o.with_reference, "Also time the scalar reference kernels (slow)");
  b->add_flag("--pin", o.pin, "Pin pool threads to CPUs");
  b->callback([] { bench(o); });
}

}  // namespace ternlab::cli
