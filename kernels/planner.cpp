#include "kernels/planner.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <utility>
#include <toml++/toml.h>

#include "common/error.hpp"
#include "common/files.hpp"
#include "common/strings.hpp"
#include "kernels/measure.hpp"
#include "kernels/testdata.hpp"

namespace ternlab {

namespace {
constexpr std::pair<PlanMode, const char*> kPlanModes[] = {
    {PlanMode::automatic, "auto"}, {PlanMode::estimate, "estimate"}, {PlanMode::measure, "measure"}};
}  // namespace

PlanMode parse_plan_mode(const std::string& s) {
  for (const auto& [m, n] : kPlanModes)
    if (s == n) return m;
  fail("unknown plan mode '", s, "' (known: auto, estimate, measure)");
}

const char* plan_mode_name(PlanMode m) {
  for (const auto& [mode, n] : kPlanModes)
    if (mode == m) return n;
  return "?";
}

PlanKey plan_key(const LayoutInfo& layout, std::int64_t rows, std::int64_t cols, std::int64_t tokens, int threads) {
  return {cat(cpu_features().model, " (", feature_string(), ")"),
          std::string(layout.name),
          tokens == 1 ? std::string("gemv") : cat("gemm", tokens),
          rows,
          cols,
          threads,
          std::string(isa_name(best_isa()))};
}

// --- wisdom ---------------------------------------------------------------------------------------

std::filesystem::path Wisdom::default_path() {
  if (const char* p = std::getenv("TERNLAB_WISDOM"); p && *p) return p;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::filesystem::path(x) / "ternlab" / "wisdom.toml";
  const char* home = std::getenv("HOME");
  return std::filesystem::path(home && *home ? home : ".") / ".cache" / "ternlab" / "wisdom.toml";
}

namespace {

template <class T>
T need(const toml::table& t, const char* key, const std::filesystem::path& file) {
  const auto v = t[key].value<T>();
  if (!v) {
    const auto line = t.source().begin.line;
    fail("wisdom file ", file.string(), ":", line, ": [[choice]] lacks '", key, "' or it has the wrong type");
  }
  return *v;
}

}  // namespace

Wisdom::Wisdom(std::filesystem::path path) : path_(std::move(path)) {
  if (!std::filesystem::exists(path_)) return;
  toml::table doc;
  try {
    doc = toml::parse_file(path_.string());
  } catch (const toml::parse_error& e) {
    fail("wisdom file ", path_.string(), ":", e.source().begin.line, ": ", e.description());
  }
  const toml::array* choices = doc["choice"].as_array();
  if (!choices) return;
  for (const toml::node& n : *choices) {
    const toml::table* t = n.as_table();
    if (!t) fail("wisdom file ", path_.string(), ": 'choice' must be an array of tables");
    WisdomEntry e;
    e.key = {need<std::string>(*t, "cpu", path_),
             need<std::string>(*t, "layout", path_),
             need<std::string>(*t, "op", path_),
             need<std::int64_t>(*t, "rows", path_),
             need<std::int64_t>(*t, "cols", path_),
             int(need<std::int64_t>(*t, "threads", path_)),
             need<std::string>(*t, "ceiling", path_)};
    e.variant = need<std::string>(*t, "variant", path_);
    e.rate = need<double>(*t, "rate", path_);
    e.runners_up = (*t)["runners_up"].value_or(std::string());
    entries_.push_back(std::move(e));
  }
}

const WisdomEntry* Wisdom::find(const PlanKey& key) const {
  for (const WisdomEntry& e : entries_)
    if (e.key == key) return &e;
  return nullptr;
}

void Wisdom::record(WisdomEntry e) {
  for (WisdomEntry& old : entries_)
    if (old.key == e.key) {
      old = std::move(e);
      return;
    }
  entries_.push_back(std::move(e));
}

void Wisdom::save() const {
  toml::array choices;
  for (const WisdomEntry& e : entries_)
    choices.push_back(toml::table{{"cpu", e.key.cpu},
                                  {"layout", e.key.layout},
                                  {"op", e.key.op},
                                  {"rows", e.key.rows},
                                  {"cols", e.key.cols},
                                  {"threads", e.key.threads},
                                  {"ceiling", e.key.ceiling},
                                  {"variant", e.variant},
                                  {"rate", e.rate},
                                  {"runners_up", e.runners_up}});
  const toml::table doc{{"choice", std::move(choices)}};
  std::error_code ec;
  if (path_.has_parent_path()) std::filesystem::create_directories(path_.parent_path(), ec);
  write_atomically(path_, [&](std::ostream& out) {
    out << "# ternlab wisdom: kernel variants measured fastest on this machine (kernels/planner.hpp)\n" << doc << "\n";
  });
}

// --- the planner ----------------------------------------------------------------------------------

namespace {

}  // namespace

std::vector<MeasuredVariant> measure_variants(const PackedMatrix& w, std::int64_t tokens, ThreadPool& pool, int rounds,
                                              double min_seconds) {
  // Candidates: every variant at or below the ceiling but the reference (the baseline, not a choice).
  std::vector<KernelVariant> cand = kernels_under_ceiling(*w.layout);
  std::erase_if(cand, [](const KernelVariant& k) { return k.strategy == Strategy::reference; });
  if (cand.empty()) return {};
  const std::vector<float> xf = make_float_activations(tokens, w.cols, 17);
  const Q8KBatch x = quantize_batch(xf.data(), tokens, w.cols);
  std::vector<float> y(std::size_t(tokens * w.rows));
  const auto run = [&](const KernelVariant& k) {
    if (tokens == 1)
      run_gemv(pool, k, w, x, y);
    else
      run_gemm(pool, k, w, x, y, w.rows);
  };
  for (const KernelVariant& k : cand) {
    run(k);
    check_against_reference(w, k, y, x, w.rows);  // never time a wrong kernel
  }
  std::vector<std::vector<double>> rates(cand.size());
  const double work = double(w.rows) * double(w.cols) * double(tokens) / 1e9;
  for (int r = 0; r < rounds; ++r)
    for (std::size_t i = 0; i < cand.size(); ++i) {
      int reps = 0;
      double total = 0;
      while (total < min_seconds || reps < 2) {  // at least two calls and min_seconds a pass
        total += seconds_of([&] { run(cand[i]); });
        ++reps;
      }
      rates[i].push_back(work * reps / total);
    }
  std::vector<MeasuredVariant> out;
  for (std::size_t i = 0; i < cand.size(); ++i) out.push_back({cand[i], median(rates[i])});
  return out;
}

std::optional<KernelChoice> wisdom_choice(const LayoutInfo& layout, const PlanKey& key, const Wisdom& wisdom) {
  const WisdomEntry* e = wisdom.find(key);
  if (!e) return std::nullopt;
  const std::vector<KernelVariant> all = kernels_under_ceiling(layout);  // an entry above --isa is not taken
  const auto it = std::find_if(all.begin(), all.end(), [&](const KernelVariant& k) { return k.name() == e->variant; });
  if (it == all.end()) return std::nullopt;
  KernelChoice c{*it, {}};
  c.notes.push_back(cat(e->variant, ": chosen from wisdom ", wisdom.path().string(), " (measured ", e->rate,
                        key.op.starts_with("gemv") ? " Gweights/s" : " GMAC/s", e->runners_up.empty() ? "" : "; others: " + e->runners_up,
                        ")"));
  return c;
}

KernelChoice plan_kernel(const PackedMatrix& w, std::int64_t tokens, ThreadPool& pool, PlanMode mode, Wisdom* wisdom,
                         int rounds) {
  const LayoutInfo& L = *w.layout;
  KernelChoice estimate = best_kernel(L);
  if (mode == PlanMode::estimate) return estimate;

  const PlanKey key = plan_key(L, w.rows, w.cols, tokens, pool.size());
  if (wisdom)
    if (std::optional<KernelChoice> c = wisdom_choice(L, key, *wisdom)) return std::move(*c);
  if (mode == PlanMode::automatic) {
    estimate.notes.insert(estimate.notes.begin(), cat("no measured choice for ", key.op, " ", key.rows, " x ", key.cols, " on ",
                                                      key.threads, " thread(s)", wisdom ? " in " + wisdom->path().string() : "",
                                                      ": the estimate (--plan measure times the candidates)"));
    return estimate;
  }

  const std::vector<MeasuredVariant> measured = measure_variants(w, tokens, pool, rounds);
  if (measured.empty()) return estimate;
  std::size_t best = 0;
  for (std::size_t i = 0; i < measured.size(); ++i)
    if (measured[i].rate > measured[best].rate) best = i;
  std::vector<KernelVariant> cand;
  std::vector<double> med;
  for (const MeasuredVariant& m : measured) {
    cand.push_back(m.variant);
    med.push_back(m.rate);
  }
  KernelChoice c{cand[best], {}};
  std::ostringstream others;
  const char* unit = tokens == 1 ? " Gweights/s" : " GMAC/s";
  for (std::size_t i = 0; i < cand.size(); ++i) {
    c.notes.push_back(cat(cand[i].name(), ": measured ", med[i], unit,
                          i == best ? ", the fastest: chosen" : cat(", passed over, ", cand[best].name(), " is faster")));
    if (i != best) others << (others.tellp() > 0 ? ", " : "") << cand[i].name() << " " << med[i];
  }
  if (c.variant.name() != estimate.variant.name())
    c.notes.push_back(cat("the estimate (", estimate.variant.name(),
                          ", the ISA ladder and this CPU's guesses) would have been slower here"));
  if (wisdom) {
    wisdom->record({key, c.variant.name(), med[best], others.str()});
    wisdom->save();
    c.notes.push_back(cat("recorded in wisdom ", wisdom->path().string()));
  }
  return c;
}

}  // namespace ternlab
