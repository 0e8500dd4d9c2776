// The oracle kind: every arm against the integer oracle over a grid of cases (batch widths, rows,
// inner sizes, weight and activation patterns), untimed.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <ranges>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

#include "common/strings.hpp"
#include "common/table.hpp"
#include "experiments/arms.hpp"
#include "experiments/gemv_arms.hpp"
#include "experiments/kinds.hpp"
#include "experiments/matrix_kinds.hpp"
#include "experiments/matrix_kinds.hpp"
#include "experiments/measure.hpp"
#include "experiments/memory.hpp"
#include "experiments/run_context.hpp"
#include "kernels/catalog.hpp"
#include "kernels/cpu.hpp"
#include "kernels/dispatch.hpp"
#include "kernels/oracle.hpp"
#include "kernels/peers/i2s.hpp"
#include "kernels/peers/peers.hpp"
#include "kernels/peers/tq1.hpp"
#include "kernels/peers/tq2.hpp"
#include "kernels/testdata.hpp"
#include "layouts/registry.hpp"

namespace ternlab::experiments {

namespace {

using namespace kernel_kind;

std::vector<KeySpec> oracle_keys() {
  std::vector<KeySpec> k = common_keys();
  k.push_back({"cases.tokens", Type::integer, true, "batch widths (default [1, 2, 3, 4, 5, 7, 8])"});
  k.push_back({"cases.rows", Type::integer, true, "row counts (default [4, 8, 12])"});
  k.push_back({"cases.cols", Type::integer, true, "inner sizes (default [256, 512, 1024])"});
  k.push_back({"cases.weights", Type::string, true, "random, zero, all_plus, all_minus (default all)"});
  k.push_back({"cases.activations", Type::string, true, "random, extreme, constant, zero (default all)"});
  k.push_back({"cases.forced_max", Type::string, true,
               "where the activation generator forces the -127 that makes a block's scale 1: every-block (default), "
               "first-256 (only the first 256 values of each token: later blocks' scales differ, spurious mismatches)"});
  k.push_back({"arm.name", Type::string, false, "the arm's name"});
  k.push_back({"arm.layout", Type::string, true, "a registered layout"});
  k.push_back({"arm.kernel", Type::string, true, "best, a strategy or strategy/isa"});
  return k;
}

const std::map<std::string, Fill> kWeightFills = {{"random", Fill::random}, {"zero", Fill::zero}, {"all_plus", Fill::all_plus}, {"all_minus", Fill::all_minus}};
const std::map<std::string, ActFill> kActFills = {{"random", ActFill::random}, {"extreme", ActFill::extreme}, {"constant", ActFill::constant}, {"zero", ActFill::zero}};
const std::map<std::string, ForcedMax> kForcedMax = {{"every-block", ForcedMax::every_block}, {"first-256", ForcedMax::first_256_only}};

template <class T>
std::vector<T> grid_axis(const RunSpec& run, const std::string& key, std::vector<T> fallback,
                         const std::function<T(const Located&)>& read) {
  const Located at = run.at(key);
  if (!at) return fallback;
  std::vector<T> out;
  for (const toml::node* n : elements(at)) out.push_back(read(Located{n, at.origin, at.key, at.line}));
  return out;
}

struct Cases {
  std::vector<std::int64_t> tokens, rows, cols;
  std::vector<std::string> weights, acts, forced;
};

Cases oracle_cases(const RunSpec& run) {
  Cases c;
  const auto int_in = [](std::int64_t lo, std::int64_t hi) { return [=](const Located& v) { return as_integer(v, lo, hi); }; };
  c.tokens = grid_axis<std::int64_t>(run, "cases.tokens", {1, 2, 3, 4, 5, 7, 8}, int_in(1, 64));
  c.rows = grid_axis<std::int64_t>(run, "cases.rows", {4, 8, 12}, int_in(1, 4096));
  c.cols = grid_axis<std::int64_t>(run, "cases.cols", {256, 512, 1024}, [](const Located& v) {
    const std::int64_t x = as_integer(v, 128, 65536);
    if (x % kBlockK) fail_at(v, x, " is not a multiple of ", kBlockK);
    return x;
  });
  const auto name_in = [](const auto& table) {
    return [&table](const Located& v) {
      const std::string s = as_string(v);
      if (!table.count(s)) {
        std::vector<std::string> names;
        for (const auto& [k, x] : table) names.push_back(k);
        fail_at(v, "unknown value '", s, "' (known: ", join(names), ")");
      }
      return s;
    };
  };
  c.weights = grid_axis<std::string>(run, "cases.weights", {"random", "zero", "all_plus", "all_minus"}, name_in(kWeightFills));
  c.acts = grid_axis<std::string>(run, "cases.activations", {"random", "extreme", "constant", "zero"}, name_in(kActFills));
  c.forced = grid_axis<std::string>(run, "cases.forced_max", {"every-block"}, name_in(kForcedMax));
  return c;
}

void validate_oracle(const RunSpec& run) {
  key::seed(run);
  if (run.arms.empty()) fail(run.file, ": kind 'oracle' needs at least one [[arm]] table");
  oracle_cases(run);
  for (const ArmSpec& a : run.arms) arm_kernel(a, arm_layout(a), true);
}

std::int64_t oracle_units(const RunSpec& run) {
  const Cases c = oracle_cases(run);
  return std::int64_t(run.arms.size() * c.tokens.size() * c.rows.size() * c.cols.size() * c.weights.size() * c.acts.size() *
                      c.forced.size());
}

RunReport run_oracle(const RunSpec& run, RunContext& ctx) {
  const Cases c = oracle_cases(run);
  const auto seed = std::uint64_t(key::seed(run));
  RunReport rep;
  rep.title = run.name();
  std::ostringstream md;
  rep.rows.file = "cases.csv";
  rep.rows.columns = {"run", "arm", "layout", "kernel", "tokens", "rows", "cols", "weights", "activations", "forced_max", "result", "detail"};
  md << "### " << rep.title << "\n\nEvery arm's gemv (each token) and gemm (the batch) against the scalar integer oracle, "
     << "no tolerance: unit scales and activations whose every block quantises to d = 1. Row counts a layout cannot hold must be "
     << "rejected with an error.\n\n";
  const bool faulty_generator = std::find(c.forced.begin(), c.forced.end(), "first-256") != c.forced.end();
  if (faulty_generator)
    md << "With `forced_max = \"first-256\"` the generator pins the scale to 1 only in each token's first 256 values: a mismatch "
       << "past them is the test's fault (counted as spurious, not as a kernel failure); one inside them is a real mismatch.\n\n";
  std::vector<Column> cols_of_table = {{"arm"}, {"kernel"}, {"cases", Align::right}, {"exact", Align::right},
                                       {"rejected as expected", Align::right}, {"mismatches", Align::right}};
  if (faulty_generator) cols_of_table.push_back({"spurious (first-256)", Align::right});
  Table table(cols_of_table);
  std::map<std::pair<std::string, std::int64_t>, std::pair<int, int>> by_generator;  // (forced_max, cols) -> (cases, failing)
  Json js = {{"index", run.index}, {"name", rep.title}, {"kind", "oracle"}, {"sweep", sweep_json(run)}, {"arms", Json::array()}};
  std::vector<std::string> first_failures;
  for (std::size_t ai = 0; ai < run.arms.size(); ++ai) {
    const ArmSpec& a = run.arms[ai];
    const LayoutInfo& L = arm_layout(a);
    const KernelVariant k = arm_kernel(a, L, true);
    int cases = 0, exact = 0, rejected = 0, mismatched = 0, spurious = 0;
    for (std::int64_t tokens : c.tokens)
      for (std::int64_t rows : c.rows)
        for (std::int64_t cols : c.cols)
          for (const std::string& wf : c.weights)
            for (const std::string& af : c.acts)
            for (const std::string& fm : c.forced) {
              ++cases;
              std::string result = "exact", detail;
              const TernaryMatrix w = make_weights(rows, cols, seed + std::uint64_t(rows * 7 + cols), kWeightFills.at(wf));
              if (rows % L.rows != 0) {
                try {
                  pack(w, L);
                  result = "MISMATCH";
                  detail = cat(rows, " rows were accepted by ", L.name, " (row group ", L.rows, ")");
                } catch (const Error&) {
                  result = "rejected";
                }
              } else {
                const PackedMatrix p = pack(w, L);
                const UnitActivations u =
                    make_unit_activations(tokens, cols, seed + std::uint64_t(tokens), kActFills.at(af), kForcedMax.at(fm));
                const Q8KBatch x = quantize_batch(u.f.data(), tokens, cols);
                const std::vector<std::int64_t> want = oracle_int(w, u.i8, tokens);
                std::vector<float> y(std::size_t(tokens * rows), std::numeric_limits<float>::quiet_NaN());
                for (std::int64_t t = 0; t < tokens; ++t) k.gemv(p, x.row(t), y.data() + t * rows, 0, p.row_groups());
                detail = compare_exact(y, want, rows);
                if (detail.empty()) {
                  std::fill(y.begin(), y.end(), std::numeric_limits<float>::quiet_NaN());
                  k.gemm(p, x, y.data(), rows, 0, p.row_groups());
                  detail = compare_exact(y, want, rows);
                  if (!detail.empty()) detail = "gemm: " + detail;
                } else {
                  detail = "gemv: " + detail;
                }
                if (!detail.empty()) result = kForcedMax.at(fm) == ForcedMax::first_256_only && cols > kQK ? "spurious" : "MISMATCH";
                auto& g = by_generator[{fm, cols}];
                ++g.first;
                if (!detail.empty()) ++g.second;
              }
              if (result == "spurious") ++spurious;
              if (result == "exact") ++exact;
              if (result == "rejected") ++rejected;
              if (result == "MISMATCH") {
                ++mismatched;
                if (first_failures.size() < 10)
                  first_failures.push_back(cat(a.name, " tokens=", tokens, " rows=", rows, " cols=", cols, " weights=", wf,
                                               " activations=", af, ": ", detail));
              }
              rep.rows.add({run.index, a.name, std::string(L.name), k.name(), tokens, rows, cols, wf, af, fm, result, detail});
              ctx.progress.step("oracle " + a.name);
            }
    std::vector<std::string> row = {a.name, k.name(), cat(cases), cat(exact), cat(rejected), mismatched ? cat("**", mismatched, "**") : "0"};
    if (faulty_generator) row.push_back(cat(spurious));
    table.add(row);
    js["arms"].push_back(Json{{"name", a.name}, {"layout", std::string(L.name)}, {"kernel", k.name()}, {"cases", cases},
                              {"exact", exact}, {"rejected_as_expected", rejected}, {"mismatches", mismatched},
                              {"spurious", spurious}});
    if (mismatched) rep.ok = false;
  }
  md << table.markdown();
  if (faulty_generator) {
    // Where the failures fall: only past the first 256 values, and only with the faulty generator.
    Table where({{"forced_max"}, {"cols", Align::right}, {"cases", Align::right}, {"failing", Align::right}});
    Json jw = Json::array();
    for (const auto& [key, g] : by_generator) {
      where.add({key.first, cat(key.second), cat(g.first), cat(g.second)});
      jw.push_back(Json{{"forced_max", key.first}, {"cols", key.second}, {"cases", g.first}, {"failing", g.second}});
    }
    md << "\nFailing cases (all arms) by activation generator and inner size:\n\n" << where.markdown();
    js["by_generator"] = std::move(jw);
  }
  md << "\ncases: tokens " << join(c.tokens | std::views::transform([](auto v) { return cat(v); })) << " x rows "
     << join(c.rows | std::views::transform([](auto v) { return cat(v); })) << " x cols "
     << join(c.cols | std::views::transform([](auto v) { return cat(v); })) << " x weights " << join(c.weights)
     << " x activations " << join(c.acts) << (c.forced.size() > 1 || c.forced.front() != "every-block" ? " x forced_max " + join(c.forced) : "")
     << "\n";
  for (const std::string& f : first_failures) md << "\n- mismatch: " << f;
  if (!first_failures.empty()) md << "\n";
  rep.markdown = md.str();
  rep.json = std::move(js);
  return rep;
}

}  // namespace

void register_oracle_kind() {
  KindInfo oracle{"oracle", "every arm against the integer oracle over a grid of cases (untimed)", oracle_keys(), {"cases"},
                  validate_oracle, run_oracle, oracle_units};
  oracle.small_overrides = {"cases.tokens=[1,5]", "cases.cols=256"};
  register_kind(std::move(oracle));
}

}  // namespace ternlab::experiments
