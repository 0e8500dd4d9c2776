// `ternlab explore plan` and `ternlab explore run` (explore/explore.hpp).
#include "explore/explore.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <numeric>
#include <ostream>
#include <set>
#include <sstream>

#include "common/error.hpp"
#include "common/files.hpp"
#include "common/strings.hpp"
#include "common/table.hpp"
#include "experiments/measure.hpp"
#include "experiments/results.hpp"
#include "experiments/runner.hpp"
#include "explore/families.hpp"
#include "explore/space.hpp"
#include "kernels/cpu.hpp"
#include "kernels/testdata.hpp"
#include "layouts/matrix.hpp"

#ifndef TERNLAB_SOURCE_DIR
#define TERNLAB_SOURCE_DIR ""
#endif
#ifndef TERNLAB_CXX_COMPILER
#define TERNLAB_CXX_COMPILER "c++"
#endif

namespace ternlab::explore {
namespace fs = std::filesystem;
using experiments::Json;

namespace {

struct Shape {
  std::int64_t rows = 0, cols = 0;
};
Shape parse_shape(const std::string& text, const std::string& file, const std::string& key) {
  Shape s;
  char x = 0;
  std::istringstream in(text);
  if (!(in >> s.rows >> x >> s.cols) || x != 'x' || s.rows < 1 || s.cols < 1 || !in.eof())
    fail(file, ": key '", key, "': '", text, "' is not ROWSxCOLS");
  if (s.cols % 256 != 0) fail(file, ": key '", key, "': ", s.cols, " columns are not a whole number of 256-value activation blocks");
  return s;
}

// The layouts a round measures, candidates first, each a row group that divides the shape's rows.
void check_rows(const Shape& s, const std::vector<const LayoutInfo*>& layouts, const std::string& file, const std::string& key) {
  for (const LayoutInfo* l : layouts)
    if (s.rows % l->rows != 0)
      fail(file, ": key '", key, "': ", s.rows, " rows are not a whole number of ", l->name, "'s ", l->rows, "-row blocks");
}

std::vector<const LayoutInfo*> compare_layouts(const Space& s) {
  std::vector<const LayoutInfo*> v;
  for (const std::string& name : s.compare) v.push_back(&find_layout(name));
  return v;
}


std::string quoted(const std::string& s) { return cat("'", s, "'"); }
std::string unit_of(const std::string& kind) { return kind == "gemv" ? "Gweights/s" : kind == "gemm" ? "GMAC/s" : "tokens/s"; }

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string numbers(const std::vector<std::int64_t>& v) {
  std::vector<std::string> t;
  for (std::int64_t x : v) t.push_back(std::to_string(x));
  return join(t);
}

// The leaders' decode of a synthetic model (the decode kind: one token at a time, greedy, every arm
// checked against the first's tokens).
std::string decode_toml(const std::string& name, const fs::path& output, const MeasureSpec& m, const std::vector<std::string>& arms) {
  std::ostringstream t;
  t << "# Written by `ternlab explore run`: " << name << ".\n"
    << "kind = \"decode\"\nname = \"" << name << "\"\noutput = " << quoted(output.string()) << "\nseed = 2026\n"
    << "preset = " << quoted(m.decode) << "\ntokens = " << m.decode_tokens << "\nrounds = " << m.rounds << "\nwarmup = 1\n"
    << "threads = [" << numbers(m.threads) << "]\nceiling_mib = " << m.ceiling_mib << "\nsample_ms = " << std::llround(m.sample_ms) << "\n";
  for (const std::string& a : arms) t << "\n[[arm]]\nname = " << quoted(a) << "\nlayout = " << quoted(a) << "\n";
  return t.str();
}

std::string round_toml(const std::string& kind, const std::string& name, const fs::path& output, const Shape& shape,
                       const MeasureSpec& m, bool first, const std::vector<std::string>& arms) {
  std::ostringstream t;
  t << "# Written by `ternlab explore run`: " << name << ".\n"
    << "kind = \"" << kind << "\"\nname = \"" << name << "\"\noutput = " << quoted(output.string()) << "\nseed = 2026\n"
    << "rounds = " << (first ? m.first_rounds : m.rounds) << "\nwarmup = 1\n"
    << "threads = [" << numbers(m.threads) << "]\n"
    << "ceiling_mib = " << m.ceiling_mib << "\nweights = " << quoted(m.weights) << "\n"
    << "sample_ms = " << std::llround(first ? m.first_sample_ms : m.sample_ms) << "\n\n[shape]\nrows = " << shape.rows
    << "\ncols = " << shape.cols << "\n";
  if (kind == "gemm") t << "tokens = [" << numbers(m.gemm_tokens) << "]\n";
  for (const std::string& a : arms) t << "\n[[arm]]\nname = " << quoted(a) << "\nlayout = " << quoted(a) << "\n";
  return t.str();
}

// One arm's rate in one run of a round (a thread count, and for gemm a token count).
struct Rate {
  double median = 0, min = 0, max = 0;
};
struct RunRates {
  std::string label;  // "1 thread", "1 thread, 64 tokens"
  double ceiling = 0;  // the paired ceiling: read GB/s (gemv, decode) or int8 GMAC/s (gemm), median; the mean over batches
  std::vector<double> ceilings;  // one per batch of the round
  std::map<std::string, Rate> arms;
  std::map<std::string, std::string> failures;
};
struct Round {
  std::string name, kind;
  std::vector<std::string> folders;  // one per batch of arms
  std::vector<RunRates> runs;
  double seconds = 0;
};

Round read_round(const std::string& name, const std::string& kind, const std::string& folder) {
  std::ifstream in(fs::path(folder) / "summary.json");
  const Json j = Json::parse(in);
  Round r{name, kind, {folder}, {}, 0};
  const char* metric = kind == "gemv" ? "gweights_per_s" : kind == "gemm" ? "gmacs_per_s" : "tok_s";
  for (const Json& run : j.at("runs")) {
    RunRates rr;
    // The run's thread count: a sweep point where threads is a list, else its parameter.
    std::string threads = "1";
    for (const char* where : {"sweep", "params"})
      if (run.contains(where) && run.at(where).contains("threads")) {
        threads = run.at(where).at("threads").get<std::string>();
        break;
      }
    const Json params = run.value("params", Json::object());
    rr.label = cat(threads, threads == "1" ? " thread" : " threads");
    if (params.contains("shape.tokens")) rr.label += cat(", ", params.at("shape.tokens").get<std::string>(), " tokens");
    const Json ceilings = run.value(kind == "gemm" ? "compute_gmacs" : "ceiling_gbps", Json::object());
    if (ceilings.is_object() && ceilings.contains(threads)) rr.ceiling = ceilings.at(threads).at("median").get<double>();
    rr.ceilings = {rr.ceiling};
    for (const Json& a : run.at("arms")) {
      const std::string arm = a.at("name").get<std::string>();
      if (a.value("control", false)) continue;  // the no-weights control: no rate
      const std::string failure = a.value("failure", std::string());
      if (!a.value("verified", true) || !failure.empty()) {
        rr.failures[arm] = failure.empty() ? "not verified" : failure;
        continue;
      }
      const Json& v = a.at(metric);
      if (!v.is_object()) {
        rr.failures[arm] = cat("no ", metric, " in summary.json");
        continue;
      }
      rr.arms[arm] = {v.at("median").get<double>(), v.at("min").get<double>(), v.at("max").get<double>()};
    }
    r.runs.push_back(std::move(rr));
  }
  return r;
}

// The geometric mean of an arm's medians over a round's runs (0 where it failed any).
double score(const Round& r, const std::string& arm) {
  double log_sum = 0;
  for (const RunRates& rr : r.runs) {
    const auto it = rr.arms.find(arm);
    if (it == rr.arms.end() || it->second.median <= 0) return 0;
    log_sum += std::log(it->second.median);
  }
  return std::exp(log_sum / double(r.runs.size()));
}

std::vector<std::string> ranked(const Round& r, const std::vector<std::string>& arms) {
  std::vector<std::string> v;
  for (const std::string& a : arms)
    if (score(r, a) > 0) v.push_back(a);
  std::stable_sort(v.begin(), v.end(), [&](const std::string& a, const std::string& b) { return score(r, a) > score(r, b); });
  return v;
}

// The arms one experiment of a round holds: each allocates its weights (for cold weights, copies
// beyond the last-level cache) before the first is timed, so a large round runs in batches that
// fit half the memory available now, the compare layouts in every batch.
std::size_t arms_per_batch(const MeasureSpec& m, const Shape& shape, std::size_t compare) {
  if (m.batch > 0) return std::size_t(m.batch);
  const std::int64_t llc = last_level_cache_bytes();
  // Its copies, plus the matrix it was packed from and its float view for verification (5 bytes a
  // weight), measured near 400 MiB an arm at 4096 x 4096, cold, against a 256 MiB set.
  const std::int64_t per_arm = (m.weights == "cold" ? (llc > 0 ? experiments::cold_set_bytes(llc) : m.ceiling_mib << 20) : 0) +
                               shape.rows * shape.cols * 5;
  const std::int64_t available = std::int64_t(::sysconf(_SC_AVPHYS_PAGES)) * std::int64_t(::sysconf(_SC_PAGESIZE));
  const std::int64_t fit = available / 2 / std::max<std::int64_t>(1, per_arm) - std::int64_t(compare);
  return std::size_t(std::clamp<std::int64_t>(fit, 4, 64));
}

Round run_one(const fs::path& dir, const std::string& name, const std::string& kind, const Shape& shape, const MeasureSpec& m,
              bool first, const std::vector<std::string>& arms, int progress, std::ostream& out) {
  out << "\n== " << name << ": " << kind << " " << shape.rows << " x " << shape.cols << ", " << arms.size() << " arms ==\n";
  experiments::RunOptions ro;
  ro.progress = progress;
  const std::string toml =
      kind == "decode" ? decode_toml(name, dir / "rounds", m, arms) : round_toml(kind, name, dir / "rounds", shape, m, first, arms);
  // The round's config stays in the folder: `ternlab run --explore DIR` on it measures the same arms.
  fs::create_directories(dir / "configs");
  const fs::path config = dir / "configs" / cat(name, ".toml");
  write_file_atomically(config, toml);
  const experiments::RunOutcome o = experiments::run_experiment_file(config.string(), ro, out);
  return read_round(name, kind, o.folder);
}

Round run_round(const fs::path& dir, const std::string& name, const std::string& kind, const Shape& shape, const MeasureSpec& m,
                bool first, const std::vector<std::string>& candidates, const std::vector<std::string>& compare, int progress,
                std::ostream& out) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::size_t batch = kind == "decode" ? candidates.size() : arms_per_batch(m, shape, compare.size());
  const std::size_t batches = std::max<std::size_t>(1, (candidates.size() + batch - 1) / batch);
  Round r{name, kind, {}, {}, 0};
  for (std::size_t b = 0; b < batches; ++b) {
    std::vector<std::string> arms(candidates.begin() + std::ptrdiff_t(b * candidates.size() / batches),
                                  candidates.begin() + std::ptrdiff_t((b + 1) * candidates.size() / batches));
    arms.insert(arms.end(), compare.begin(), compare.end());
    const Round part = run_one(dir, batches > 1 ? cat(name, "-part-", b + 1) : name, kind, shape, m, first, arms, progress, out);
    r.folders.push_back(part.folders.front());
    for (const RunRates& pr : part.runs) {
      auto it = std::find_if(r.runs.begin(), r.runs.end(), [&](const RunRates& x) { return x.label == pr.label; });
      if (it == r.runs.end()) {
        r.runs.push_back(pr);
        continue;
      }
      // The compare layouts ran in every batch: their rates are the first batch's (the others are
      // in their batches' folders), the ceiling the batches' mean.
      for (const auto& [a, rate] : pr.arms) it->arms.emplace(a, rate);
      for (const auto& [a, why] : pr.failures) it->failures.emplace(a, why);
      it->ceilings.push_back(pr.ceiling);
      it->ceiling = std::accumulate(it->ceilings.begin(), it->ceilings.end(), 0.0) / double(it->ceilings.size());
    }
  }
  r.seconds = seconds_since(t0);
  out << name << " took " << fixed_text(r.seconds, 1) << " s" << (batches > 1 ? cat(" in ", batches, " batches") : std::string()) << "\n";
  return r;
}


// The run's estimate: the runner times every arm (rounds + warmup) times a sample per thread count,
// measures a ceiling per run, and before that packs each arm's weights and, for cold weights, fills
// copies of them beyond the last-level cache; the packing and the filling are measured here once.
struct Estimate {
  double pack_seconds = 0, fill_seconds = 0, total_seconds = 0;
  std::vector<double> rounds;  // seconds per round
  std::string text;
};
Estimate estimate(const SpacePlan& plan, const Shape& gemv, const Shape& gemm) {
  const MeasureSpec& m = plan.space.measure;
  Estimate e;
  if (!plan.candidates.empty()) {
    const TernaryMatrix w = make_weights(gemv.rows, gemv.cols, 1);
    const auto t0 = std::chrono::steady_clock::now();
    (void)pack(w, find_layout(plan.candidates.front()->name));
    e.pack_seconds = seconds_since(t0);
  }
  if (m.weights == "cold") {
    const std::int64_t llc = last_level_cache_bytes();
    const std::int64_t set = llc > 0 ? experiments::cold_set_bytes(llc) : m.ceiling_mib << 20;
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::uint8_t> copies(std::size_t(set), 1);  // fresh pages, filled: what each arm's copies cost
    e.fill_seconds = seconds_since(t0) + (copies[std::size_t(set) / 2] == 7 ? 1 : 0);
  }
  const double n = double(plan.candidates.size()), cmp = double(plan.space.compare.size());
  const double threads = double(m.threads.size()), ceiling = 3.0;  // about 3 s a run for its ceilings
  const double kept = std::ceil(n * m.keep), leaders = std::min(double(m.leaders), kept);
  const double gemm_scale = double(gemm.rows * gemm.cols) / double(gemv.rows * gemv.cols);
  const double arm = e.pack_seconds + 2 * e.fill_seconds;
  const double r1 = (n + cmp) * (arm + threads * double(m.first_rounds + 1) * m.first_sample_ms / 1000) + threads * ceiling;
  const double r2 = (kept + cmp) * (arm + threads * double(m.rounds + 1) * m.sample_ms / 1000) + threads * ceiling;
  const double tokens = double(m.gemm_tokens.size());
  const double r3 = (leaders + cmp) * tokens * (arm * gemm_scale + threads * double(m.rounds + 1) * m.sample_ms / 1000) + threads * tokens * ceiling;
  e.rounds = {r1, r2, r3};
  e.total_seconds = r1 + r2 + r3;
  e.text = cat("estimate: about ", std::llround(e.total_seconds), " s (round 1: ", std::llround(r1), " s for ", n + cmp,
               " arms; round 2: ", std::llround(r2), " s for ", kept + cmp, "; round 3: ", std::llround(r3), " s for ", leaders + cmp,
               " arms x ", m.gemm_tokens.size(), " token counts), at ", threads, " thread count(s); an arm's weights take ",
               fixed_text(arm, 2), " s to pack and fill (measured just now)",
               m.decode == "none" ? std::string() : cat(", plus the ", m.decode, " model's decode round (not estimated: it synthesizes the model first)"),
               ", plus about 1 s a candidate to compile its header alone");
  return e;
}

Json point_json(const std::vector<std::pair<std::string, Value>>& point) {
  Json j = Json::object();
  for (const auto& [k, v] : point) {
    if (std::holds_alternative<std::int64_t>(v)) j[k] = std::get<std::int64_t>(v);
    else j[k] = std::get<std::string>(v);
  }
  return j;
}


}  // namespace

void plan_command(const fs::path& space_path, const fs::path& dir, const PlanOptions& opt, std::ostream& out) {
  const Space space = load_space(space_path);
  const SpacePlan plan = enumerate(space);
  const Shape gemv = parse_shape(space.measure.gemv, space.file, "measure.gemv");
  const Shape gemm = parse_shape(space.measure.gemm, space.file, "measure.gemm");
  register_candidates(plan);
  std::vector<const LayoutInfo*> layouts = compare_layouts(space);
  for (const auto& c : plan.candidates) layouts.push_back(&find_layout(c->name));
  check_rows(gemv, layouts, space.file, "measure.gemv");
  check_rows(gemm, layouts, space.file, "measure.gemm");
  if (plan.candidates.empty())
    fail("explore plan: ", space.file, " has no candidate; every combination was refused: ", join(refusal_summary(plan), "; "));
  if (fs::exists(dir) && !fs::is_empty(dir)) fail("explore plan: '", dir.string(), "' exists and is not empty; name a new folder");

  out << "space " << space.name << " (" << space.file << "), family " << space.family << ": " << plan.candidates.size()
      << " candidates, " << plan.refused.size() << " combinations refused\n";
  for (const std::string& s : refusal_summary(plan)) out << "  refused by " << s << "\n";
  const Estimate est = estimate(plan, gemv, gemm);
  out << est.text << "\n";

  // Everything goes to a hidden sibling first and is renamed into place, so an interrupted plan
  // leaves no half-written folder.
  const fs::path target = fs::absolute(dir);
  const fs::path tmp = target.parent_path() / cat(".", target.filename().string(), ".partial-", ::getpid());
  fs::remove_all(tmp);
  fs::create_directories(tmp / "layouts");
  write_file_atomically(tmp / "space.toml", read_text(space_path));
  Json j;
  j["space"] = space.name;
  j["family"] = space.family;
  j["file"] = space_path.string();
  j["compare"] = space.compare;
  j["estimate_seconds"] = est.total_seconds;
  j["estimate"] = est.text;
  j["candidates"] = Json::array();
  std::ostringstream md;
  md << "# Layout space " << space.name << "\n\nFamily " << space.family << " (" << find_family(space.family).summary << "), from `"
     << space_path.string() << "`: " << plan.candidates.size() << " candidates, " << plan.refused.size() << " combinations refused.\n\n"
     << est.text << ".\n\n| candidate | bits/weight | block bytes | same as |\n|---|--:|--:|---|\n";
  for (const auto& c : plan.candidates) {
    const std::string file = cat(c->name, ".hpp");
    write_file_atomically(tmp / "layouts" / file, header_text(*c, space_path.filename().string()));
    j["candidates"].push_back({{"name", c->name},
                               {"point", point_json(c->point)},
                               {"bits_per_weight", c->facts.bits_per_weight},
                               {"block_bytes", c->facts.block_bytes},
                               {"same_as", c->same_as},
                               {"header", cat("layouts/", file)}});
    md << "| " << c->name << " | " << fixed_text(c->facts.bits_per_weight, 3) << " | " << c->facts.block_bytes << " | "
       << c->same_as << " |\n";
  }
  j["refused"] = Json::array();
  md << "\n## Refused\n\n";
  if (plan.refused.empty()) md << "None.\n";
  for (const Refusal& r : plan.refused) {
    j["refused"].push_back({{"point", point_json(r.point)}, {"by", r.by}, {"reason", r.reason}});
    std::vector<std::string> said;
    for (const auto& [k, v] : r.point) said.push_back(cat(k, "=", value_text(v)));
    md << "- " << join(said, " ") << ": " << r.by << " " << r.reason << "\n";
  }
  write_file_atomically(tmp / "plan.json", j.dump(2) + "\n");
  write_file_atomically(tmp / "plan.md", md.str());
  fs::rename(tmp, target);
  out << "wrote " << target.string() << ": plan.json, plan.md, space.toml, " << plan.candidates.size() << " headers in layouts/\n";

  if (!opt.configure) return;
  const std::string source = TERNLAB_SOURCE_DIR;
  if (source.empty() || !fs::exists(fs::path(source) / "CMakeLists.txt")) {
    out << "no build folder configured: the source tree this binary was built from ('" << source << "') is not here\n";
    return;
  }
  const fs::path build = target / "build";
  const std::string cmd = cat("cmake -S '", source, "' -B '", build.string(), "' -DCMAKE_BUILD_TYPE=Release -DTERNLAB_LAYOUT_DIRS='",
                              (target / "layouts").string(), "' > '", (target / "configure.log").string(), "' 2>&1");
  if (std::system(cmd.c_str()) != 0)
    out << "configuring " << build.string() << " failed; see " << (target / "configure.log").string() << "\n";
  else
    out << "configured " << build.string() << " (TERNLAB_LAYOUT_DIRS=" << (target / "layouts").string()
        << "): `cmake --build " << build.string() << "` builds ternlab with every candidate compiled in\n";
}

namespace {

std::string xml_escape(const std::string& t) {
  std::string o;
  for (char c : t) o += c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : std::string(1, c);
  return o;
}

// Bits per weight against the rate: every candidate a dot, the hand-designed layouts green and
// named, the Pareto front (no other point has as few bits and more speed, or fewer bits and as
// much) a blue line through its named points. The x axis spans the bits measured (a space of one
// width is drawn around that width).
std::string pareto_svg(const std::string& title, const std::string& ylabel, const std::vector<const LayoutInfo*>& candidates,
                       const std::vector<const LayoutInfo*>& hand, const std::function<double(const std::string&)>& rate) {
  struct Pt {
    std::string name;
    double x, y;
    bool hand;
  };
  std::vector<Pt> pts;
  for (const LayoutInfo* l : candidates)
    if (const double r = rate(std::string(l->name)); r > 0) pts.push_back({std::string(l->name), l->bits_per_weight(), r, false});
  for (const LayoutInfo* l : hand)
    if (const double r = rate(std::string(l->name)); r > 0) pts.push_back({std::string(l->name), l->bits_per_weight(), r, true});
  std::vector<Pt> front;
  for (const Pt& p : pts)
    if (std::none_of(pts.begin(), pts.end(), [&](const Pt& q) { return q.x <= p.x && q.y >= p.y && (q.x < p.x || q.y > p.y); }))
      front.push_back(p);
  std::sort(front.begin(), front.end(), [](const Pt& a, const Pt& b) { return a.x < b.x; });
  double x0 = 1e9, x1 = -1e9, y1 = 0;
  for (const Pt& p : pts) x0 = std::min(x0, p.x), x1 = std::max(x1, p.x), y1 = std::max(y1, p.y);
  if (pts.empty()) x0 = 1, x1 = 3;
  const double pad = std::max(0.25, (x1 - x0) * 0.15);
  x0 -= pad, x1 += pad, y1 = y1 > 0 ? y1 * 1.15 : 1;
  const double W = 820, H = 440, L = 70, R = 260, T = 40, B = 50;
  const auto sx = [&](double x) { return L + (x - x0) / (x1 - x0) * (W - L - R); };
  const auto sy = [&](double y) { return H - B - y / y1 * (H - T - B); };
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H << "\" font-family=\"sans-serif\" font-size=\"11\">\n"
    << "<text x=\"" << W / 2 << "\" y=\"20\" text-anchor=\"middle\" font-size=\"14\" font-weight=\"bold\">" << xml_escape(title) << "</text>\n"
    << "<rect x=\"" << L << "\" y=\"" << T << "\" width=\"" << W - L - R << "\" height=\"" << H - T - B << "\" fill=\"none\" stroke=\"#999\"/>\n";
  for (int i = 0; i <= 5; ++i) {
    const double y = y1 * i / 5, x = x0 + (x1 - x0) * i / 5;
    o << "<line x1=\"" << L << "\" x2=\"" << W - R << "\" y1=\"" << sy(y) << "\" y2=\"" << sy(y) << "\" stroke=\"#eee\"/>"
      << "<text x=\"" << L - 6 << "\" y=\"" << sy(y) + 4 << "\" text-anchor=\"end\">" << fixed_text(y, y1 < 10 ? 2 : 0) << "</text>"
      << "<text x=\"" << sx(x) << "\" y=\"" << H - B + 16 << "\" text-anchor=\"middle\">" << fixed_text(x, 3) << "</text>\n";
  }
  o << "<text x=\"" << (L + W - R) / 2 << "\" y=\"" << H - 12 << "\" text-anchor=\"middle\">bits per weight</text>\n"
    << "<text transform=\"translate(16," << (T + H - B) / 2 << ") rotate(-90)\" text-anchor=\"middle\">" << xml_escape(ylabel)
    << " (median)</text>\n";
  if (front.size() > 1) {
    o << "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"1.5\" points=\"";
    for (const Pt& p : front) o << sx(p.x) << "," << sy(p.y) << " ";
    o << "\"/>\n";
  }
  for (const Pt& p : pts)
    o << "<circle cx=\"" << sx(p.x) << "\" cy=\"" << sy(p.y) << "\" r=\"" << (p.hand ? 5 : 3.5) << "\" fill=\""
      << (p.hand ? "#2ca02c" : "#ff7f0e") << "\" fill-opacity=\"0.8\"><title>" << xml_escape(p.name) << ": " << fixed_text(p.y, 1)
      << "</title></circle>\n";
  // Names of the front and the hand-designed layouts, in a column right of the plot, each joined
  // to its point (points of one width would otherwise pile their names on each other).
  std::vector<Pt> named = front;
  for (const Pt& p : pts)
    if (p.hand && std::none_of(named.begin(), named.end(), [&](const Pt& q) { return q.name == p.name; })) named.push_back(p);
  std::sort(named.begin(), named.end(), [](const Pt& a, const Pt& b) { return a.y > b.y; });
  double ly = T + 10;
  for (const Pt& p : named) {
    ly = std::max(ly, std::min(sy(p.y), H - B - 10.0));
    const bool on_front = std::any_of(front.begin(), front.end(), [&](const Pt& q) { return q.name == p.name; });
    o << "<line x1=\"" << sx(p.x) << "\" y1=\"" << sy(p.y) << "\" x2=\"" << W - R + 8 << "\" y2=\"" << ly - 4 << "\" stroke=\"#ccc\"/>"
      << "<text x=\"" << W - R + 12 << "\" y=\"" << ly << "\" fill=\"" << (p.hand ? "#2ca02c" : "#1f77b4") << "\">" << xml_escape(p.name)
      << " " << fixed_text(p.y, 1) << (on_front ? " (front)" : "") << "</text>\n";
    ly += 14;
  }
  o << "<text x=\"" << L + 8 << "\" y=\"" << T + 14 << "\" fill=\"#ff7f0e\">&#9679; candidate</text>"
    << "<text x=\"" << L + 90 << "\" y=\"" << T + 14 << "\" fill=\"#2ca02c\">&#9679; hand-designed</text>"
    << "<text x=\"" << L + 190 << "\" y=\"" << T + 14 << "\" fill=\"#1f77b4\">&#8212; Pareto front</text>\n</svg>\n";
  return o.str();
}

}  // namespace

std::vector<std::string> register_planned(const fs::path& dir) {
  if (!fs::exists(dir / "plan.json") || !fs::exists(dir / "space.toml"))
    fail("'", dir.string(), "' holds no plan (plan.json and space.toml); run `ternlab explore plan` first");
  const Json planned = Json::parse(read_text(dir / "plan.json"));
  std::vector<std::string> names = register_candidates(enumerate(load_space(dir / "space.toml"))), planned_names;
  for (const Json& c : planned.at("candidates")) planned_names.push_back(c.at("name").get<std::string>());
  if (names != planned_names)
    fail((dir / "space.toml").string(), " now gives other candidates than plan.json lists; plan the space again");
  return names;
}

int run_command(const fs::path& plan_in, const RunOptions& opt, std::ostream& out) {
  const fs::path plan_dir = fs::weakly_canonical(fs::absolute(plan_in));
  if (!fs::exists(plan_dir / "plan.json") || !fs::exists(plan_dir / "space.toml"))
    fail("explore run: '", plan_dir.string(), "' holds no plan (plan.json and space.toml); run `ternlab explore plan` first");
  // The run's own folder: the plan's, or one below it (a machine's, on a cluster).
  const fs::path dir = opt.out.empty() ? plan_dir : fs::weakly_canonical(fs::absolute(opt.out));
  if (const std::string rel = fs::relative(dir, plan_dir).string(); rel.empty() || rel.starts_with(".."))
    fail("explore run: --out '", opt.out, "' is not inside the plan's folder '", plan_dir.string(), "' (a run writes only inside it)");
  fs::create_directories(dir);
  const Json planned = Json::parse(read_text(plan_dir / "plan.json"));
  const std::vector<std::string> names = register_planned(plan_dir);
  const Space space = load_space(plan_dir / "space.toml");
  const SpacePlan plan = enumerate(space);
  const MeasureSpec& m = space.measure;
  const Shape gemv = parse_shape(m.gemv, space.file, "measure.gemv"), gemm = parse_shape(m.gemm, space.file, "measure.gemm");
  if (fs::exists(dir / "rounds")) fail("explore run: '", (dir / "rounds").string(), "' exists: this plan was run; plan it again into a new folder");
  out << "explore " << space.name << ": " << names.size() << " candidates, compared with " << (space.compare.empty() ? "nothing" : join(space.compare)) << "\n"
      << planned.at("estimate").get<std::string>() << "\n";

  // Each header compiled alone: the declaration's compile-time check, and what it costs.
  std::map<std::string, double> compile_seconds;
  std::map<std::string, std::string> compile_failed;
  if (opt.compile_check) {
    const std::string source = TERNLAB_SOURCE_DIR;
    if (source.empty() || !fs::exists(fs::path(source) / "layouts" / "dsl.hpp")) {
      out << "no compile check: the source tree this binary was built from ('" << source << "') is not here\n";
    } else {
      fs::create_directories(dir / "compile");
      for (const std::string& n : names) {
        const fs::path log = dir / "compile" / cat(n, ".log");
        const std::string cmd = cat("'", TERNLAB_CXX_COMPILER, "' -std=c++20 -fsyntax-only -I'", source, "' -include '",
                                    (plan_dir / "layouts" / cat(n, ".hpp")).string(), "' -x c++ /dev/null > '", log.string(), "' 2>&1");
        const auto t0 = std::chrono::steady_clock::now();
        const int rc = std::system(cmd.c_str());
        compile_seconds[n] = seconds_since(t0);
        if (rc != 0) compile_failed[n] = log.string();
      }
      double total = 0;
      for (const auto& [n, s] : compile_seconds) total += s;
      out << "compiled " << names.size() << " headers alone in " << fixed_text(total, 1) << " s ("
          << fixed_text(total / double(std::max<std::size_t>(1, names.size())), 2) << " s each on average)"
          << (compile_failed.empty() ? "" : cat("; ", compile_failed.size(), " failed")) << "\n";
    }
  }
  std::vector<std::string> pool;
  for (const std::string& n : names)
    if (!compile_failed.count(n)) pool.push_back(n);

  std::vector<Round> rounds;
  rounds.push_back(run_round(dir, "round-1-gemv", "gemv", gemv, m, true, pool, space.compare, opt.progress, out));
  std::vector<std::string> r1 = ranked(rounds[0], pool);
  const std::size_t keep = std::max<std::size_t>(1, std::size_t(std::ceil(double(pool.size()) * m.keep)));
  std::vector<std::string> kept(r1.begin(), r1.begin() + std::ptrdiff_t(std::min(keep, r1.size())));
  std::vector<std::string> leaders;
  if (!kept.empty()) {
    rounds.push_back(run_round(dir, "round-2-gemv", "gemv", gemv, m, false, kept, space.compare, opt.progress, out));
    const std::vector<std::string> r2 = ranked(rounds[1], kept);
    leaders.assign(r2.begin(), r2.begin() + std::ptrdiff_t(std::min<std::size_t>(std::size_t(m.leaders), r2.size())));
    if (!leaders.empty()) rounds.push_back(run_round(dir, "round-3-gemm", "gemm", gemm, m, false, leaders, space.compare, opt.progress, out));
    if (!leaders.empty() && m.decode != "none")
      rounds.push_back(run_round(dir, "round-4-decode", "decode", gemm, m, false, leaders, space.compare, opt.progress, out));
  }

  // explore.json: every candidate's fate and rates, the rounds' folders and ceilings.
  Json j;
  j["space"] = space.name;
  j["family"] = space.family;
  j["machine"] = Json::parse(read_text(fs::path(rounds[0].folders.front()) / "summary.json")).at("machine");
  j["rounds"] = Json::array();
  for (const Round& r : rounds) {
    Json folders = Json::array();
    for (const std::string& f : r.folders) folders.push_back(fs::relative(f, dir).string());
    Json jr{{"name", r.name}, {"kind", r.kind}, {"folders", folders}, {"seconds", r.seconds}, {"runs", Json::array()}};
    for (const RunRates& rr : r.runs) {
      Json arms = Json::object();
      for (const auto& [a, rate] : rr.arms) arms[a] = {{"median", rate.median}, {"min", rate.min}, {"max", rate.max}};
      jr["runs"].push_back({{"label", rr.label}, {"ceiling", rr.ceiling}, {"ceilings", rr.ceilings}, {"arms", arms}, {"failures", rr.failures}});
    }
    j["rounds"].push_back(jr);
  }
  int exit_code = 0;
  j["candidates"] = Json::array();
  for (const auto& c : plan.candidates) {
    std::string fate = "leader";
    if (compile_failed.count(c->name)) fate = cat("its header failed to compile alone (", compile_failed[c->name], ")");
    else if (std::find(r1.begin(), r1.end(), c->name) == r1.end()) fate = "failed verification in round 1", exit_code = 1;
    else if (std::find(kept.begin(), kept.end(), c->name) == kept.end()) fate = "left after round 1";
    else if (std::find(leaders.begin(), leaders.end(), c->name) == leaders.end()) fate = "left after round 2";
    Json jc{{"name", c->name}, {"point", point_json(c->point)}, {"bits_per_weight", c->facts.bits_per_weight},
            {"same_as", c->same_as}, {"fate", fate}};
    if (compile_seconds.count(c->name)) jc["compile_seconds"] = compile_seconds[c->name];
    for (const Round& r : rounds)
      if (const double s = score(r, c->name); s > 0) jc[r.name] = s;
    j["candidates"].push_back(jc);
  }
  write_file_atomically(dir / "explore.json", j.dump(2) + "\n");

  // The page: the plots first, then each round's table.
  std::vector<const LayoutInfo*> cand_layouts, hand = compare_layouts(space);
  for (const std::string& n : names) cand_layouts.push_back(&find_layout(n));
  std::ostringstream html;
  html << "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>explore " << space.name
       << "</title><style>body{font-family:sans-serif;max-width:70em;margin:2em auto}table{border-collapse:collapse}"
          "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}td:first-child{text-align:left}</style></head><body>\n"
       << "<h1>Layout space " << space.name << "</h1>\n<p>Family " << space.family << ", " << names.size() << " candidates ("
       << planned.at("refused").size() << " combinations refused: the plan's plan.md), machine " << j["machine"].value("cpu", std::string("?"))
       << ". Every arm was verified against the oracle before it was timed.</p>\n";
  for (const Round& r : rounds) {
    for (const RunRates& rr : r.runs) {
      const std::string unit = unit_of(r.kind);
      html << pareto_svg(cat(r.name, ", ", rr.label), unit, cand_layouts, hand, [&](const std::string& a) {
        const auto it = rr.arms.find(a);
        return it == rr.arms.end() ? 0.0 : it->second.median;
      });
    }
  }
  for (const Round& r : rounds) {
    std::vector<std::string> folders;
    for (const std::string& f : r.folders) folders.push_back(fs::relative(f, dir).string());
    html << "<h2>" << r.name << " (" << r.kind << ", results: " << join(folders) << ")</h2>\n";
    for (const RunRates& rr : r.runs) {
      const std::string unit = unit_of(r.kind);
      std::vector<std::string> each;
      for (double c : rr.ceilings) each.push_back(fixed_text(c, 1));
      html << "<h3>" << rr.label << "; paired ceiling " << fixed_text(rr.ceiling, 1) << (r.kind == "gemm" ? " GMAC/s int8" : " GB/s read")
           << (rr.ceilings.size() > 1 ? cat(" (mean of the batches' ", join(each), ")") : std::string())
           << "</h3>\n<table><tr><th>arm</th><th>bits/weight</th><th>" << unit << " (median)</th><th>min</th><th>max</th></tr>\n";
      std::vector<std::pair<std::string, Rate>> rows(rr.arms.begin(), rr.arms.end());
      std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.median > b.second.median; });
      for (const auto& [a, rate] : rows)
        html << "<tr><td>" << a << (std::find(space.compare.begin(), space.compare.end(), a) != space.compare.end() ? " (hand-designed)" : "")
             << "</td><td>" << fixed_text(find_layout(a).bits_per_weight(), 3) << "</td><td>" << fixed_text(rate.median, 1) << "</td><td>"
             << fixed_text(rate.min, 1) << "</td><td>" << fixed_text(rate.max, 1) << "</td></tr>\n";
      for (const auto& [a, why] : rr.failures) html << "<tr><td>" << a << "</td><td colspan=4>failed: " << why << "</td></tr>\n";
      html << "</table>\n";
    }
  }
  html << "</body></html>\n";
  write_file_atomically(dir / "index.html", html.str());

  out << "\nleaders: " << (leaders.empty() ? "none" : join(leaders)) << "\nwrote " << (dir / "explore.json").string() << " and "
      << (dir / "index.html").string() << "\n";
  return exit_code;
}

namespace {

// A value for one `#SBATCH` line: a newline would end the directive and start a command.
std::string sbatch_value(const std::string& what, const std::string& v) {
  if (v.find_first_of("\n\r") != std::string::npos) fail("explore slurm: ", what, " '", v, "' holds a line break");
  return v;
}
std::string shell_quoted(const std::string& s) {
  std::string o = "'";
  for (char c : s) o += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return o + "'";
}

}  // namespace

void slurm_command(const fs::path& dir_in, const SlurmJob& job, std::ostream& out) {
  const fs::path dir = fs::weakly_canonical(fs::absolute(dir_in));
  if (!fs::exists(dir / "plan.json") || !fs::exists(dir / "space.toml"))
    fail("explore slurm: '", dir.string(), "' holds no plan (plan.json and space.toml); run `ternlab explore plan` first");
  const Space space = load_space(dir / "space.toml");
  std::int64_t threads = 1;
  for (std::int64_t t : space.measure.threads) threads = std::max(threads, t);
  std::string ternlab = job.ternlab;
  if (ternlab.empty()) ternlab = fs::read_symlink("/proc/self/exe").string();
  std::ostringstream o;
  o << "#!/bin/bash\n# Written by `ternlab explore slurm`: the layout space " << space.name << " (" << (dir / "plan.md").string()
    << ") on the node this job gets.\n# Submit it once per CPU model, e.g. sbatch --constraint=zen4 " << (dir / "explore.sbatch").string()
    << "\n# then: ternlab explore report " << dir.string() << "\n"
    << "#SBATCH --job-name=ternlab-explore-" << sbatch_value("name", space.name) << "\n"
    << "#SBATCH --output=" << (dir / "logs" / "explore-%j.log").string() << "\n"
    << "#SBATCH --time=" << sbatch_value("--time", job.time) << "\n"
    << "#SBATCH --cpus-per-task=" << (job.cpus_per_task > 0 ? std::int64_t(job.cpus_per_task) : threads) << "\n";
  if (job.exclusive) o << "#SBATCH --exclusive\n";
  if (!job.partition.empty()) o << "#SBATCH --partition=" << sbatch_value("--partition", job.partition) << "\n";
  if (!job.constraint.empty()) o << "#SBATCH --constraint=" << sbatch_value("--constraint", job.constraint) << "\n";
  for (const std::string& e : job.extra) o << "#SBATCH " << sbatch_value("--sbatch", e) << "\n";
  o << "set -euo pipefail\n"
    << "exec " << shell_quoted(ternlab) << " explore run " << shell_quoted(dir.string()) << " --out "
    << shell_quoted(dir.string()) << "/machines/\"${SLURM_JOB_ID:-local}-$(hostname -s)\"\n";
  fs::create_directories(dir / "logs");
  write_file_atomically(dir / "explore.sbatch", o.str());
  fs::permissions(dir / "explore.sbatch", fs::perms::owner_exec, fs::perm_options::add);
  out << "wrote " << (dir / "explore.sbatch").string() << "\nslurm: sbatch --constraint=<CPU model> " << (dir / "explore.sbatch").string()
      << "   (once per model)\nthen:  ternlab explore report " << dir.string() << "\n";
}

int report_command(const fs::path& dir_in, std::ostream& out) {
  const fs::path dir = fs::weakly_canonical(fs::absolute(dir_in));
  if (!fs::exists(dir / "plan.json")) fail("explore report: '", dir.string(), "' holds no plan (plan.json); run `ternlab explore plan` first");
  const Json plan = Json::parse(read_text(dir / "plan.json"));
  std::set<std::string> compare;
  for (const Json& c : plan.at("compare")) compare.insert(c.get<std::string>());
  std::vector<fs::path> runs;
  if (fs::exists(dir / "explore.json")) runs.push_back(dir);
  if (fs::is_directory(dir / "machines"))
    for (const auto& e : fs::directory_iterator(dir / "machines"))
      if (fs::exists(e.path() / "explore.json")) runs.push_back(e.path());
  std::sort(runs.begin(), runs.end());
  if (runs.empty()) fail("explore report: no run of '", dir.string(), "' yet (no explore.json in it or in machines/*)");
  Json rows = Json::array();
  std::ostringstream md;
  md << "| machine | run | round | best candidate | rate | best hand-designed | rate | ratio |\n|---|---|---|---|--:|---|--:|--:|\n";
  for (const fs::path& r : runs) {
    const Json j = Json::parse(read_text(r / "explore.json"));
    const std::string cpu = j.at("machine").value("cpu", std::string("?"));
    const std::string where = fs::relative(r, dir).string();
    Json row{{"machine", cpu}, {"run", where}, {"rounds", Json::array()}, {"leaders", Json::array()}};
    for (const Json& c : j.at("candidates"))
      if (c.at("fate") == "leader") row["leaders"].push_back(c.at("name"));
    for (const Json& round : j.at("rounds"))
      for (const Json& run : round.at("runs")) {
        std::string best_c, best_h;
        double rate_c = 0, rate_h = 0;
        for (const auto& [arm, v] : run.at("arms").items()) {
          const double m = v.at("median").get<double>();
          if (compare.count(arm)) {
            if (m > rate_h) rate_h = m, best_h = arm;
          } else if (m > rate_c) {
            rate_c = m, best_c = arm;
          }
        }
        const std::string label = cat(round.at("name").get<std::string>(), ", ", run.at("label").get<std::string>());
        row["rounds"].push_back({{"round", label}, {"best_candidate", best_c}, {"rate", rate_c}, {"best_hand_designed", best_h},
                                 {"hand_rate", rate_h}, {"ceiling", run.at("ceiling")}});
        md << "| " << cpu << " | " << where << " | " << label << " | " << best_c << " | " << fixed_text(rate_c, 1) << " | "
           << (best_h.empty() ? "-" : best_h) << " | " << (best_h.empty() ? "-" : fixed_text(rate_h, 1)) << " | "
           << (rate_h > 0 ? fixed_text(rate_c / rate_h, 2) : "-") << " |\n";
      }
    rows.push_back(row);
  }
  write_file_atomically(dir / "machines.json", rows.dump(2) + "\n");
  std::ostringstream html;
  html << "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>explore " << xml_escape(plan.at("space").get<std::string>())
       << " by machine</title><style>body{font-family:sans-serif;max-width:80em;margin:2em auto}table{border-collapse:collapse}"
          "td,th{border:1px solid #ccc;padding:2px 6px}</style></head><body>\n<h1>Layout space "
       << xml_escape(plan.at("space").get<std::string>()) << ", by machine</h1>\n<p>Each round's fastest candidate against the fastest "
       << "hand-designed layout of the same round on the same machine (rates: Gweights/s for gemv, GMAC/s for gemm, tokens/s for "
          "decode). Each run's page: its folder's index.html; every arm side by side: <code>ternlab report</code> on the runs' "
          "rounds folders.</p>\n<table><tr><th>machine</th><th>run</th><th>round</th><th>best candidate</th><th>rate</th>"
          "<th>best hand-designed</th><th>rate</th><th>ratio</th></tr>\n";
  for (const Json& row : rows)
    for (const Json& rd : row.at("rounds")) {
      const double rc = rd.at("rate").get<double>(), rh = rd.at("hand_rate").get<double>();
      html << "<tr><td>" << xml_escape(row.at("machine").get<std::string>()) << "</td><td><a href=\"" << row.at("run").get<std::string>()
           << "/index.html\">" << row.at("run").get<std::string>() << "</a></td><td>" << rd.at("round").get<std::string>() << "</td><td>"
           << rd.at("best_candidate").get<std::string>() << "</td><td>" << fixed_text(rc, 1) << "</td><td>"
           << rd.at("best_hand_designed").get<std::string>() << "</td><td>" << (rh > 0 ? fixed_text(rh, 1) : "-") << "</td><td>"
           << (rh > 0 ? fixed_text(rc / rh, 2) : "-") << "</td></tr>\n";
    }
  html << "</table>\n</body></html>\n";
  write_file_atomically(dir / "machines.html", html.str());
  out << md.str() << "\nwrote " << (dir / "machines.html").string() << " and " << (dir / "machines.json").string() << "\n";
  return int(runs.size());
}

}  // namespace ternlab::explore
