// `ternlab kernels`: the kernel variants each layout has on this CPU and the one dispatch picks.
// `ternlab bench`:   every layout x strategy x ISA (and the peers' arms) on the default shapes (gemv
//                    32768 x 8192, gemm 17408 x 5120 at 4 and 64 columns), 1 and 2 threads: its
//                    flags become experiment configs that the runner of `ternlab run` measures
//                    (verified, interleaved, against per-round memory and int8 compute ceilings).
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <cmath>
#include <cstring>
#include <functional>
#include <span>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "common/error.hpp"
#include "common/shape.hpp"
#include "common/strings.hpp"
#include "common/table.hpp"
#include "experiments/bench.hpp"
#include "experiments/runner.hpp"
#include "kernels/dispatch.hpp"
#include "kernels/measure.hpp"
#include "kernels/peers/i2s.hpp"
#include "kernels/peers/peer_matmul.hpp"
#include "kernels/planner.hpp"
#include "kernels/testdata.hpp"
#include "layouts/matrix.hpp"
#include "layouts/registry.hpp"

namespace ternlab::cli {

namespace {

void apply_isa(const std::string& isa) {
  if (!isa.empty()) set_isa_ceiling(parse_isa(isa));
}

struct KernelsOptions {
  std::string isa, plan = "auto", shape = "32768x8192", wisdom;
  std::vector<std::string> layouts;
  std::int64_t tokens = 1;
  int threads = 1;
  bool explain = false, json = false, check_estimate = false;
  int rounds = 3;
};

// `ternlab kernels --check-estimate`: the estimate's per-CPU rules against measurement. Per layout,
// every candidate (verified against the reference first) is timed in interleaved rounds on a
// matrix of --shape, beside the read ceiling (gemv) or the int8 compute ceiling (gemm) measured
// before and after; the table gives the estimate's pick, the fastest, and the estimate's rate as a
// fraction of the fastest. A benchmark: nothing is recorded in the wisdom file.
void check_estimate(const KernelsOptions& o) {
  apply_isa(o.isa);
  const auto [rows, cols] = parse_shape(o.shape, "kernels --shape");
  if (o.tokens < 1) fail("kernels: --tokens must be at least 1");
  if (o.rounds < 1) fail("kernels: --rounds must be at least 1");
  ThreadPool pool(o.threads);
  const bool gemv = o.tokens == 1;
  const char* unit = gemv ? "Gweights/s" : "GMAC/s";
  const auto ceiling = [&] {
    return gemv ? cat(fixed_text(read_ceiling(pool).gbs, 1), " GB/s read")
                : cat(fixed_text(int8_compute_ceiling(pool).gmacs, 1), " GMAC/s int8");
  };
  const CpuFeatures& cpu = cpu_features();
  const std::string before = ceiling();
  std::cerr << "cpu: " << cpu_description() << "; " << feature_string() << "; ceiling " << isa_name(best_isa()) << "\n"
            << "estimate's guesses here: splits 512-bit ops " << (cpu.splits_512bit_ops ? "yes" : "no")
            << ", GFNI slots " << (cpu.prefers_gfni_slots ? "yes" : "no") << ", hardware prefetch "
            << (cpu.prefers_hardware_prefetch ? "yes" : "no") << "\n"
            << (gemv ? std::string("gemv") : cat("gemm, ", o.tokens, " tokens")) << " on " << rows << " x " << cols << ", "
            << o.threads << " thread(s), " << o.rounds << " interleaved rounds (median)\n";
  Table table({{"layout"}, {"estimate"}, {unit, Align::right}, {"fastest"}, {unit, Align::right}, {"estimate / fastest", Align::right}});
  nlohmann::ordered_json json = {{"cpu", cpu_description()}, {"features", feature_string()}, {"op", gemv ? "gemv" : cat("gemm", o.tokens)},
                                 {"rows", rows}, {"cols", cols}, {"threads", o.threads}, {"layouts", nlohmann::ordered_json::array()}};
  int near = 0, checked = 0;
  for (const LayoutInfo* L : all_layouts()) {
    if (!o.layouts.empty() && std::find(o.layouts.begin(), o.layouts.end(), L->name) == o.layouts.end()) continue;
    if (rows % L->rows || !L->block_scales_128() || peers::find_peer(L->name)) continue;  // peers run their own kernel
    TernaryMatrix m = make_weights(rows, cols, 2026, Fill::random, ScaleKind::random);
    if (L->scale_format() != ScaleFormat::fp16) m = requantise_scales(m, L->scale_format(), "kernels --check-estimate weights");
    const PackedMatrix w = pack(m, *L);
    const std::vector<MeasuredVariant> measured = measure_variants(w, o.tokens, pool, o.rounds);
    if (measured.size() < 2) continue;  // one candidate: nothing to choose
    const std::string estimate = best_kernel(*L).variant.name();
    const MeasuredVariant* best = &measured.front();
    const MeasuredVariant* est = nullptr;
    for (const MeasuredVariant& v : measured) {
      if (v.rate > best->rate) best = &v;
      if (v.variant.name() == estimate) est = &v;
    }
    if (!est) continue;  // the estimate is named-only or above the ceiling: not a candidate
    const double frac = est->rate / best->rate;
    ++checked;
    near += frac >= 0.95;
    table.add({std::string(L->name), estimate, fixed_text(est->rate, 1), best->variant.name(), fixed_text(best->rate, 1),
               fixed_text(frac, 3)});
    json["layouts"].push_back({{"layout", std::string(L->name)}, {"estimate", estimate}, {"estimate_rate", est->rate},
                               {"fastest", best->variant.name()}, {"fastest_rate", best->rate}, {"fraction", frac}});
    std::cerr << "  " << L->name << " done\n";
  }
  const std::string after = ceiling();
  json["ceiling_before"] = before;
  json["ceiling_after"] = after;
  json["within_5_percent"] = near;
  json["checked"] = checked;
  if (o.json) {
    std::cout << json.dump(1) << "\n";
    return;
  }
  std::cout << table.text() << "ceiling before " << before << ", after " << after << "; the estimate is within 5% of the fastest on "
            << near << " of " << checked << " layouts\n";
}

// `ternlab kernels`: per layout, the variants and the one chosen. With --plan measure the planner
// times every candidate on a matrix of --shape and records its choice in the wisdom file;
// --explain also lists what the wisdom file holds for this CPU.
void list_kernels(const KernelsOptions& o) {
  apply_isa(o.isa);
  const PlanMode mode = parse_plan_mode(o.plan);
  const auto [rows, cols] = parse_shape(o.shape, "kernels --shape");
  if (o.tokens < 1) fail("kernels: --tokens must be at least 1");
  Wisdom wisdom(o.wisdom.empty() ? Wisdom::default_path() : std::filesystem::path(o.wisdom));
  // With --json everything goes into one object on standard output instead.
  std::ostringstream text;
  nlohmann::ordered_json json = {{"cpu", cpu_description()}, {"features", feature_string()}, {"ceiling", isa_name(best_isa())},
                                 {"plan", plan_mode_name(mode)}, {"layouts", nlohmann::ordered_json::array()}};
  text << "cpu: " << cpu_description() << "; " << feature_string() << "; ceiling " << isa_name(best_isa())
       << ", plan: " << plan_mode_name(mode);
  if (mode == PlanMode::measure)
    text << " (" << (o.tokens == 1 ? std::string("gemv") : cat("gemm, ", o.tokens, " tokens")) << " on " << rows
         << " x " << cols << ", " << o.threads << " thread(s))";
  text << "\n";
  ThreadPool pool(o.threads);
  const bool notes = o.explain || mode == PlanMode::measure;
  Table listing({{"layout"}, {"variants (* = chosen)"}});
  Table why({{"layout"}, {"why"}});  // one row per note, under the listing
  for (const LayoutInfo* L : all_layouts()) {
    if (!o.layouts.empty() && std::find(o.layouts.begin(), o.layouts.end(), L->name) == o.layouts.end()) continue;
    KernelChoice c;
    if (mode == PlanMode::measure) {
      if (rows % L->rows) {
        listing.add({std::string(L->name), cat("(not measured: ", rows, " rows are not whole ", L->rows, "-row blocks)")});
        json["layouts"].push_back({{"layout", std::string(L->name)}, {"not_measured", cat(rows, " rows are not whole ", L->rows, "-row blocks")}});
        continue;
      }
      if (!L->block_scales_128()) {  // one candidate, nothing to measure
        listing.add({std::string(L->name), cat("(not measured: reference/scalar only, ", L->block_scales_why_not(), ")")});
        json["layouts"].push_back({{"layout", std::string(L->name)}, {"not_measured", cat("reference/scalar only, ", L->block_scales_why_not())}});
        continue;
      }
      // Timing only: random fp16 scales, rounded (lossily, by name) where the layout stores another format.
      TernaryMatrix m = make_weights(rows, cols, 2026, Fill::random, ScaleKind::random);
      if (L->scale_format() != ScaleFormat::fp16) m = requantise_scales(m, L->scale_format(), "kernels --plan weights");
      const PackedMatrix w = pack(m, *L);
      c = plan_kernel(w, o.tokens, pool, mode, &wisdom);
    } else {
      c = best_kernel(*L);
      if (mode == PlanMode::automatic)
        if (std::optional<KernelChoice> from = wisdom_choice(*L, plan_key(*L, rows, cols, o.tokens, o.threads), wisdom))
          c = std::move(*from);
    }
    // A peer's format runs the peer's own kernel wherever ternlab meets it (model, bench, quickstart);
    // ternlab's kernels for its bytes are listed after it as ternlab's, the planner's pick unmarked.
    const peers::PeerFormat* peer = peers::find_peer(L->name);
    const std::string chosen = peer ? peers::peer_kernel_name(*peer) : c.variant.name();
    if (peer) {
      for (std::string& n : c.notes)
        if (n == c.variant.name() + ": chosen") n = c.variant.name() + ": ternlab's choice for these bytes, where --kernel asks for ternlab's";
      c.notes.insert(c.notes.begin(), cat(chosen, ": ", peer->label, "'s own algorithm, ", peer->port_note(), "; it runs ", L->name,
                                          " unless --kernel names one of ternlab's (best of ternlab's here: ", c.variant.name(), ")"));
    }
    std::vector<std::string> variants, names;
    for (const KernelVariant& k : kernels_for(*L)) {
      variants.push_back((k.name() == chosen ? "*" : "") + k.name());
      names.push_back(k.name());
    }
    listing.add({std::string(L->name), peer ? cat("*", chosen, " (", peer->own_label(), ") | ternlab's: ", join(variants, "  "))
                                            : join(variants, "  ")});
    nlohmann::ordered_json entry = {{"layout", std::string(L->name)}, {"variants", names}, {"chosen", chosen}};
    if (peer) entry["peer_kernel"] = {{"name", chosen}, {"of", std::string(peer->label)}, {"ternlab_best", c.variant.name()}};
    entry["why"] = notes ? c.notes : std::vector<std::string>{};
    json["layouts"].push_back(std::move(entry));
    if (notes)
      for (const std::string& n : c.notes) why.add({std::string(L->name), n});
  }
  if (o.json) {
    std::cout << json.dump(1) << "\n";
    return;
  }
  std::cout << text.str() << listing.text();
  if (why.rows()) std::cout << "\n" << why.text();
  std::cout << "(* = chosen " << (mode == PlanMode::measure     ? "by measuring"
                                  : mode == PlanMode::automatic ? "from the wisdom file where it holds this shape, else by best_kernel"
                                                                : "by best_kernel under the ceiling")
            << "; --isa lowers the ceiling, --plan measure times the candidates)\n";
  if (o.explain) {
    const PlanKey here = plan_key(**all_layouts().begin(), 0, 0, 1, 1);
    Table table({{"layout"}, {"op"}, {"shape", Align::right}, {"thr", Align::right}, {"ceiling"}, {"chosen"},
                 {"rate", Align::right}, {"runners-up"}});
    for (const WisdomEntry& e : wisdom.entries())
      if (e.key.cpu == here.cpu)
        table.add({e.key.layout, e.key.op, cat(e.key.rows, " x ", e.key.cols), cat(e.key.threads), e.key.ceiling, e.variant,
                   cat(e.rate, e.key.op.starts_with("gemv") ? " Gweights/s" : " GMAC/s"), e.runners_up});
    if (table.rows())
      std::cout << "\nwisdom " << wisdom.path().string() << ", this CPU:\n" << table.text("  ");
    else
      std::cout << "\nwisdom " << wisdom.path().string() << ": nothing measured on this CPU yet\n";
  }
}

// `ternlab bench`: the flags become experiment configs (experiments/bench.hpp), run by the same
// runner as `ternlab run`; after its tables, the ratios to pq2_0's unpack arm and to the best peer arm.
int bench(const experiments::BenchSpec& spec, bool print_config) {
  const std::vector<experiments::BenchConfig> configs = experiments::bench_configs(spec);
  if (print_config) {
    for (std::size_t i = 0; i < configs.size(); ++i) std::cout << (i ? "\n" : "") << configs[i].toml;
    return 0;
  }
  std::vector<experiments::Json> summaries;
  int exit_code = 0;
  for (const experiments::BenchConfig& c : configs) {
    const experiments::RunOutcome o = experiments::run_experiment_text(c.toml, cat("bench-", c.kind), {}, std::cout);
    exit_code = std::max(exit_code, o.exit_code);
    std::ifstream in(std::filesystem::path(o.folder) / "summary.json");
    summaries.push_back(experiments::Json::parse(in));
  }
  std::cout << experiments::bench_ratios(summaries);
  if (exit_code) std::cerr << "ternlab bench: some arm failed verification (see the tables)\n";
  return exit_code;
}

}  // namespace

void add_kernel_commands(CLI::App& app) {
  auto* list = app.add_subcommand("kernels", "List the kernel variants of each layout on this CPU and the chosen one");
  static KernelsOptions ko;
  list->add_option("--isa", ko.isa, "ISA ceiling (" + isa_names() + ")");
  list->add_flag("--explain", ko.explain, "Say why each candidate was taken or passed over; list the wisdom file");
  list->add_flag("--json", ko.json, "Print the variants, the chosen one and the reasons as JSON");
  list->add_option("--plan", ko.plan, "auto (the wisdom file's measured choice for --shape, --tokens and --threads, else the estimate), estimate (the ISA ladder) or measure (time every candidate, record wisdom)")
      ->capture_default_str();
  list->add_option("--shape", ko.shape, "Matrix the planner measures, ROWSxCOLS")->capture_default_str();
  list->add_option("--tokens", ko.tokens, "Tokens the planner measures with (1: gemv, more: gemm)")->capture_default_str();
  list->add_option("--threads", ko.threads, "Threads the planner measures on")->capture_default_str();
  list->add_option("--layouts", ko.layouts, "Only these layouts")->delimiter(',')->check(known_layouts());
  list->add_option("--wisdom", ko.wisdom, "Wisdom file (default: $TERNLAB_WISDOM or ~/.cache/ternlab/wisdom.toml)");
  add_census_command(*list);
  add_ceilings_command(*list);
  list->add_flag("--check-estimate", ko.check_estimate,
                 "Benchmark the estimate against measurement: time every candidate of each layout on --shape, --tokens "
                 "and --threads, and give the estimate's rate as a fraction of the fastest (nothing recorded)");
  list->add_option("--rounds", ko.rounds, "Interleaved rounds of --check-estimate (median)")->capture_default_str();
  list->callback([list] {
    if (list->got_subcommand("census") || list->got_subcommand("ceilings")) return;
    if (ko.check_estimate)
      check_estimate(ko);
    else
      list_kernels(ko);
  });

  auto* b = app.add_subcommand("bench", "Kernel benchmark: gemv/gemm per layout x strategy x ISA vs measured ceilings, through the runner");
  static experiments::BenchSpec o;
  static std::string isa;
  static bool print_config = false;
  b->add_option("--threads", o.threads, "Thread counts (persistent pools; one run each)")->delimiter(',');
  b->add_option("--cols", o.cols, "gemm column (token) counts")->delimiter(',');
  b->add_option("--layouts", o.layouts, "Only these layouts (i2_s, tq2_0, tq1_0: the peer arms of BitNet's I2_S, ggml's TQ2_0 and TQ1_0)")->delimiter(',')->check(known_layouts());
  b->add_option("--gemv", o.gemv_shape, "gemv shape ROWSxCOLS");
  b->add_option("--gemm", o.gemm_shape, "gemm weight shape ROWSxCOLS");
  b->add_option("--isa", isa, "ISA ceiling: arms above it are left out");
  b->add_option("--only", o.only, "all, gemv or gemm")->check(CLI::IsMember({"all", "gemv", "gemm"}));
  b->add_option("--rounds", o.rounds, "Interleaved rounds kept (median reported)");
  b->add_option("--min-seconds", o.min_seconds, "Duration of each timed sample (sample_ms in the config)");
  b->add_option("--ceiling-mib", o.ceiling_mib, "Streaming-read ceiling buffer size (MiB, >= 1024 for a real ceiling)");
  b->add_option("--weights", o.weights,
                "cold: each arm cycles copies of its weights that together hold twice the last-level cache (at least 256 MiB), so calls read "
                "them from memory (default); warm: one copy, which a cache may hold")
      ->check(CLI::IsMember({"cold", "warm"}));
  add_output_option(b, o.output, "Folder that receives the results folders")->capture_default_str();
  b->add_flag("--reference", o.with_reference, "Also time the scalar reference kernels (slow)");
  b->add_flag("--pin", o.pin, "Pin pool threads to CPUs");
  b->add_flag("--print-config", print_config, "Print the generated experiment configs and stop");
  b->callback([] {
    apply_isa(isa);
    if (const int rc = bench(o, print_config)) std::exit(rc);
  });
}

}  // namespace ternlab::cli
