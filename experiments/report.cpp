#include "experiments/report.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cmath>
#include <ctime>
#include <iomanip>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "common/error.hpp"
#include "common/table.hpp"
#include "common/xml.hpp"
#include "common/strings.hpp"
#include "kernels/measure.hpp"
#include "experiments/config.hpp"
#include "experiments/kinds.hpp"
#include "experiments/measure.hpp"
#include "kernels/cpu.hpp"

#if defined(TERNLAB_HAVE_GIT_HEADER)
#include "ternlab_git.hpp"  // generated at build time (cmake/git_version.cmake)
#else
#define TERNLAB_GIT ""
#endif
#ifndef TERNLAB_CXX
#define TERNLAB_CXX "unknown"
#endif
#ifndef TERNLAB_CXX_FLAGS
#define TERNLAB_CXX_FLAGS "unknown"
#endif
#ifndef TERNLAB_BUILD_TYPE
#define TERNLAB_BUILD_TYPE "unknown"
#endif

namespace ternlab::experiments {

namespace {

std::string fixed(double v, int digits) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(digits) << v;
  return os.str();
}

// 1-2-5 ticks covering [0, hi].
std::vector<double> linear_ticks(double hi) {
  const double raw = hi / 5;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  const double step = raw / p < 1.5 ? p : raw / p < 3.5 ? 2 * p : raw / p < 7.5 ? 5 * p : 10 * p;
  std::vector<double> t;
  for (double v = 0; v <= hi * 1.0001; v += step) t.push_back(v);
  return t;
}

const char* kPalette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

std::string svg_head(int w, int h, const std::string& title) {
  return cat("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"", w,
             "\" height=\"", h, "\" viewBox=\"0 0 ", w, " ", h, "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"12\">\n",
             "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"", w / 2,
             "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\">", xml_escape(title), "</text>\n");
}

}  // namespace

// Three significant digits, whatever the magnitude.
std::string sig(double v) {
  if (!std::isfinite(v)) return "—";
  const double a = std::fabs(v);
  if (a == 0) return "0";
  const int digits = std::clamp(2 - int(std::floor(std::log10(a))), 0, 9);
  return fixed(v, digits);
}

std::string with_range(const Stat& s, const std::string& suffix, double scale) {
  if (!s.valid) return "—";
  return sig(s.median * scale) + suffix + " [" + sig(s.min * scale) + "–" + sig(s.max * scale) + "]";
}

std::string ceiling_text(const TimingResult& r, int threads, const std::vector<double>& gbps) {
  std::string s = cat(threads, " thr ", with_range(stat_of(gbps), " GB/s"));
  const auto it = r.ceiling_loops.find(threads);
  if (it != r.ceiling_loops.end() && !it->second.empty()) s += cat(" (set by ", loops_text(it->second), ")");
  if (const auto h = r.handoff_us.find(threads); h != r.handoff_us.end() && !h->second.empty())
    s += cat(", an empty pool job ", with_range(stat_of(h->second), " us"));
  return s;
}

Json stats_by_threads(const std::map<int, std::vector<double>>& per_round) {
  Json o = Json::object();
  for (const auto& [n, v] : per_round) o[std::to_string(n)] = stat_json(stat_of(v));
  return o;
}

Json loops_json(const std::map<int, std::vector<std::string>>& loops) {
  Json o = Json::object();
  for (const auto& [n, v] : loops) o[std::to_string(n)] = v;
  return o;
}

Machine this_machine() {
  Machine m;
  m.cpu = cpu_description();
  m.features = feature_string();
  m.cores = logical_cores();
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  m.memory_bytes = pages > 0 && page > 0 ? std::int64_t(pages) * page : 0;
  m.compiler = TERNLAB_CXX;
  m.flags = TERNLAB_CXX_FLAGS;
  m.build_type = TERNLAB_BUILD_TYPE;
  m.git = TERNLAB_GIT[0] ? TERNLAB_GIT : "unknown";
  m.int8_loop = int8_compute_instruction();
  m.hostname = host_name();
  m.started_utc = utc_now();
  return m;
}

std::string host_name() {
  char host[256] = {};
  return gethostname(host, sizeof host - 1) == 0 ? host : "";
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return buf;
}

bool process_gone(const std::string& host, long pid) {
  return host == host_name() && pid > 0 && kill(pid_t(pid), 0) != 0 && errno == ESRCH;
}

Json sweep_json(const RunSpec& run) {
  Json o = Json::object();
  for (const auto& [k, v] : run.sweep_point) o[k] = v;
  return o;
}

Json machine_json(const Machine& m) {
  return Json{{"cpu", m.cpu}, {"features", m.features}, {"cores", m.cores}, {"memory_bytes", m.memory_bytes}, {"hostname", m.hostname}, {"compiler", m.compiler},
              {"flags", m.flags}, {"build_type", m.build_type}, {"git", m.git}, {"int8_compute_loop", m.int8_loop},
              {"started_utc", m.started_utc}};
}

std::vector<std::pair<std::string, const Json*>> run_tests(const Json& run) {
  std::vector<std::pair<std::string, const Json*>> tests;
  if (run.contains("arms")) tests.emplace_back("", &run);
  for (const auto& [k, v] : run.items())
    if (v.is_object() && v.contains("arms")) tests.emplace_back(k, &v);
  return tests;
}

std::vector<ArmSpeedup> arm_speedups(const Json& run) {
  std::vector<ArmSpeedup> out;
  for (const auto& [test, obj] : run_tests(run))
    for (const Json& arm : (*obj)["arms"]) {
      if (arm.value("control", false) || !arm.contains("name")) continue;
      ArmSpeedup a;
      a.name = (test.empty() ? test : test + ": ") + (arm["name"].is_string() ? arm["name"].get<std::string>() : arm["name"].dump());
      a.verified = arm.value("verified", true);
      if (arm.contains("speedup_vs_baseline")) {
        const Stat s = stat_from(arm["speedup_vs_baseline"]);
        a.median = s.median, a.min = s.min, a.max = s.max, a.valid = s.valid;
      }
      out.push_back(std::move(a));
    }
  return out;
}

std::string machine_markdown(const Machine& m) {
  return cat("machine: ", m.cpu, " (", m.cores, " logical cores; ", m.features, "), ", m.compiler, " ", m.build_type,
             " [", m.flags, "], git ", m.git, ", started ", m.started_utc, "\n");
}

double spread(const std::vector<double>& v) {
  if (v.size() < 2) return std::numeric_limits<double>::quiet_NaN();
  double mean = 0;
  for (double x : v) mean += x;
  mean /= double(v.size());
  if (!(mean > 0)) return std::numeric_limits<double>::quiet_NaN();
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  return std::sqrt(ss / double(v.size() - 1)) / mean;
}

std::string spread_cell(const std::vector<double>& v) {
  const double cv = spread(v);
  return std::isfinite(cv) ? sig(cv * 100) + "%" : "—";
}

void NoiseChecks::ceiling(const std::string& what, const std::vector<double>& per_round, const std::string& unit) {
  const Stat s = stat_of(per_round);
  if (per_round.size() < 2 || !(s.median > 0)) return;
  const double moved = (s.max - s.min) / s.median;
  if (moved > kCeilingDriftShare)
    warnings.push_back({"ceiling_drift", "",
                        cat(what, " moved by ", sig(moved * 100), "% within the run (", sig(s.min), "–", sig(s.max), " ", unit,
                            ", median ", sig(s.median), "; the limit is ", sig(kCeilingDriftShare * 100),
                            "%): the machine changed under the arms, so their ratios and fractions are not steady; "
                            "repeat on a quieter machine")});
}

void NoiseChecks::ceilings(const TimingResult& r) {
  for (const auto& [n, v] : r.ceiling_gbps) ceiling(cat("the memory read ceiling on ", n, n == 1 ? " thread" : " threads"), v, "GB/s");
  for (const auto& [n, v] : r.compute_gmacs)
    ceiling(cat("the int8 compute ceiling on ", n, n == 1 ? " thread" : " threads"), v, "GMAC/s");
}

void NoiseChecks::ratio(const std::string& arm, const std::vector<double>& per_round) {
  const Stat s = stat_of(per_round);
  if (s.valid && s.min < 1.0 && s.max > 1.0)
    warnings.push_back({"ratio_crosses_one", arm,
                        cat("arm '", arm, "': its ratio against its baseline ranges over ", sig(s.min), "–", sig(s.max),
                            "× (median ", sig(s.median), "×), across 1.0: faster in some rounds, slower in others, so the run "
                            "does not say which is faster")});
}

void NoiseChecks::fraction(const std::string& arm, const std::string& what, const std::vector<double>& per_round) {
  const Stat s = stat_of(per_round);
  if (s.valid && s.max > kFractionLimit)
    warnings.push_back({"fraction_over_100", arm,
                        cat("arm '", arm, "': ", what, " reached ", sig(s.max * 100), "% (median ", sig(s.median * 100),
                            "%), above ", sig(kFractionLimit * 100), "%: the ceiling was not an upper bound for this arm "
                            "(its bytes came partly from cache, or the ceiling measured low), so this is no fraction of it")});
}

void NoiseChecks::weights_in_cache(const std::string& arm, double bytes_per_token, std::int64_t cache_bytes) {
  if (cache_bytes <= 0 || !(bytes_per_token > 0) || bytes_per_token >= kCacheWeightsFactor * double(cache_bytes)) return;
  warnings.push_back({"weights_fit_cache", arm,
                      cat("arm '", arm, "' reads ", sig(bytes_per_token / 1e6), " MB of weights a token, under ",
                          kCacheWeightsFactor, "x the ", sig(double(cache_bytes) / (1 << 20)),
                          " MiB last-level cache: part of them can stay cached from token to token, so its fraction of "
                          "the memory read ceiling measures the cache too and depends on what ran before it; a larger "
                          "model (preset bonsai-27b) measures the memory")});
}

std::string warnings_markdown(const std::vector<NoiseWarning>& w) {
  if (w.empty()) return "";
  std::string s = cat("\n**noise warnings (", w.size(), "):**\n\n");
  for (const NoiseWarning& x : w) s += "- warning: " + x.text + "\n";
  return s;
}

Json warnings_json(const std::vector<NoiseWarning>& w) {
  Json a = Json::array();
  for (const NoiseWarning& x : w) a.push_back(Json{{"check", x.check}, {"arm", x.arm}, {"text", x.text}});
  return a;
}

int logical_cores() { return std::max(1, int(std::thread::hardware_concurrency())); }

bool oversubscribed(int threads) { return threads > logical_cores(); }

std::string threads_cell(int threads) { return oversubscribed(threads) ? cat(threads, " (> ", logical_cores(), " cores)") : cat(threads); }

std::string oversubscribed_note(const std::vector<int>& threads) {
  for (int t : threads)
    if (oversubscribed(t))
      return cat("\n**oversubscribed:** a thread count marked (> ", logical_cores(), " cores) exceeds this machine's logical cores; ",
                 "those threads time-slice, so the arm's timings measure the scheduler as much as the kernel.\n");
  return "";
}

std::string arms_order_text(const TimingResult& r) {
  return r.interleaved ? "arms interleaved in the order below"
                       : "arms NOT interleaved (arms = \"one-at-a-time\"): each arm loaded, measured in its own pass beside its own "
                         "ceilings, and freed before the next";
}

std::string ratio_header(const TimingResult& r) { return r.interleaved ? "vs baseline" : "vs baseline (separate passes)"; }

std::string ratio_note(const TimingResult& r) {
  return r.interleaved ? "vs baseline = median of per-round time ratios (> 1 is faster)"
                       : "vs baseline (separate passes) = median of time ratios of round i of the baseline's pass and round i of "
                         "the arm's pass (> 1 is faster): different moments, not one round, so the ratios carry any change of the "
                         "machine between passes";
}

std::string spread_note() { return "spread = coefficient of variation of the per-round times (standard deviation / mean)"; }

RunReport report_timing(const RunSpec& run, const TimingResult& r) {
  RunReport rep;
  rep.title = run.name();
  const ArmTiming* base = r.find(r.baseline);

  std::ostringstream md;
  md << "### " << rep.title << "\n\n";
  md << "kind " << run.kind << "; " << r.rounds << " rounds kept after " << r.warmup << " warm-up; " << arms_order_text(r) << "; "
     << "baseline " << r.baseline_label << "; every arm verified against the exact oracle before timing.\n\n";
  std::vector<std::string> ceil_text, comp_text;
  for (const auto& [n, v] : r.ceiling_gbps) ceil_text.push_back(ceiling_text(r, n, v));
  for (const auto& [n, v] : r.compute_gmacs) comp_text.push_back(cat(n, " thr ", with_range(stat_of(v), " GMAC/s")));
  md << "memory read ceiling (streaming sum over " << sig(r.ceiling_bytes / (1 << 20)) << " MiB, each round): "
     << join(ceil_text, "; ") << "  \nint8 compute ceiling (register-only loop, each round): " << join(comp_text, "; ") << "\n\n";
  Table table({{"arm"}, {"kernel"}, {"thr", Align::right}, {"bits/w", Align::right}, {"MB/call", Align::right}, {"oracle"},
               {"ms/call", Align::right}, {"spread", Align::right}, {"Gweights/s", Align::right}, {"GB/s", Align::right},
               {"GMAC/s", Align::right}, {"of int8 ceiling", Align::right}, {"of byte bound", Align::right},
               {ratio_header(r), Align::right}});
  rep.rows.columns = {"run", "round", "arm", "layout", "kernel", "threads", "options", "bits_per_weight", "bytes", "weights", "macs",
                      "reps", "seconds", "gbps", "ceiling_gbps", "fraction_of_bound", "speedup_vs_baseline", "compute_ceiling_gmacs"};
  Json params = Json::object();
  for (const auto& [k, v] : run.params) params[k] = value_text(*v.node);
  Json js = {{"index", run.index}, {"name", rep.title}, {"kind", run.kind}, {"sweep", sweep_json(run)}, {"params", params},
             {"baseline", r.baseline}, {"interleaved", r.interleaved}, {"rounds", r.rounds}, {"warmup", r.warmup},
             {"ceiling_bytes", json_number(r.ceiling_bytes)}, {"ceiling_gbps", stats_by_threads(r.ceiling_gbps)},
             {"ceiling_loops", loops_json(r.ceiling_loops)}, {"handoff_us", stats_by_threads(r.handoff_us)},
             {"compute_gmacs", stats_by_threads(r.compute_gmacs)}, {"arms", Json::array()}};

  // A compute-bound kind (gemm) plots GMAC/s against the int8 ceiling; the others GB/s against the memory ceiling.
  const bool compute_bound = find_kind(run.kind, run.at("kind")).compute_bound;
  std::vector<BarItem> bars, speed_bars;
  std::vector<ScatterPoint> points;
  std::vector<RuleLine> control_rules;
  std::set<std::string> layouts;
  NoiseChecks noise;
  noise.ceilings(r);
  for (const ArmTiming& a : r.arms) {
    const ArmSetup& s = a.setup;
    const Stat secs = stat_of(a.seconds);
    const Stat gb = stat_of(r.gbps(a));
    const Stat frac = stat_of(r.bound_fractions(a));
    const Stat speed = stat_of(r.speedups(a));
    const Stat gw = s.weights > 0 && secs.valid ? Stat{s.weights / secs.median / 1e9, s.weights / secs.max / 1e9, s.weights / secs.min / 1e9, true} : Stat{};
    const Stat gm = s.macs > 0 && secs.valid ? Stat{s.macs / secs.median / 1e9, s.macs / secs.max / 1e9, s.macs / secs.min / 1e9, true} : Stat{};
    // GMAC/s over the int8 compute ceiling taken in the same round (the gemm figure to read).
    std::vector<double> compute_fracs;
    if (const std::vector<double> c = r.compute_of(a); s.macs > 0)
      for (std::size_t i = 0; i < a.seconds.size() && i < c.size(); ++i)
        if (a.seconds[i] > 0 && c[i] > 0) compute_fracs.push_back(s.macs / a.seconds[i] / 1e9 / c[i]);
    const Stat cfrac = stat_of(compute_fracs);
    const std::string oracle = s.control ? "—" : a.verified ? (s.check.empty() ? "exact" : s.check) : "**FAILED**";
    if (!a.verified) rep.ok = false;
    table.add({s.name + (r.is_baseline(s.name) ? " (baseline)" : ""), s.kernel.empty() ? "—" : s.kernel, threads_cell(s.threads),
               s.bits_per_weight > 0 ? fixed(s.bits_per_weight, 3) : "—", s.bytes > 0 ? sig(s.bytes / 1e6) : "—", oracle,
               with_range(secs, "", 1e3), spread_cell(a.seconds), gw.valid ? sig(gw.median) : "—",
               s.bytes > 0 && gb.valid ? sig(gb.median) : "—", gm.valid ? sig(gm.median) : "—",
               cfrac.valid ? with_range(cfrac, "%", 100) : "—", frac.valid ? with_range(frac, "%", 100) : "—",
               speed.valid ? with_range(speed, "×") : "—"});
    js["arms"].push_back(Json{{"name", s.name}, {"layout", s.layout}, {"kernel", s.kernel}, {"threads", s.threads},
                              {"oversubscribed", oversubscribed(s.threads)}, {"options", s.options},
                              {"baseline", s.baseline.empty() ? r.baseline : s.baseline}, {"control", s.control},
                              {"verified", a.verified}, {"failure", a.failure}, {"bits_per_weight", json_number(s.bits_per_weight)},
                              {"bytes_per_call", json_number(s.bytes)}, {"weight_bytes_per_call", json_number(s.weight_bytes)},
                              {"weights_per_call", json_number(s.weights)}, {"macs_per_call", json_number(s.macs)},
                              {"calls_per_sample", a.reps}, {"seconds_per_call", stat_json(secs)},
                              {"spread", json_number(spread(a.seconds))}, {"gbps", stat_json(gb)}, {"gweights_per_s", stat_json(gw)},
                              {"gmacs_per_s", stat_json(gm)}, {"fraction_of_compute_ceiling", stat_json(cfrac)},
                              {"fraction_of_byte_bound", stat_json(frac)}, {"speedup_vs_baseline", stat_json(speed)}});
    const auto speeds = r.speedups(a);
    const auto fracs = r.bound_fractions(a);
    const auto gbs = r.gbps(a);
    const auto ceils = r.ceiling_of(a);
    const auto comps = r.compute_of(a);
    if (a.verified && s.name != (s.baseline.empty() ? r.baseline : s.baseline)) noise.ratio(s.name, speeds);
    noise.fraction(s.name, "its fraction of the byte bound", fracs);
    noise.fraction(s.name, "its fraction of the int8 compute ceiling", compute_fracs);
    for (std::size_t i = 0; i < a.seconds.size(); ++i)
      rep.rows.add({run.index, i, s.name, s.layout, s.kernel, s.threads, s.options, s.bits_per_weight, s.bytes, s.weights, s.macs,
                    a.reps, a.seconds[i], cell_at(gbs, i), cell_at(ceils, i), cell_at(fracs, i), cell_at(speeds, i),
                    cell_at(comps, i)});
  }
  // The plots read the arm rows just written, so they draw what summary.json says.
  for (const Json& arm : js["arms"]) {
    const std::string name = arm["name"];
    const Stat speed = stat_from(arm["speedup_vs_baseline"]);
    if (arm["control"] == true) {
      if (speed.valid) control_rules.push_back({"no-weights control (" + sig(speed.median) + "×)", speed.median, speed.min, speed.max});
      continue;
    }
    if (arm["verified"] != true) continue;
    const Stat gb = stat_from(arm["gbps"]), frac = stat_from(arm["fraction_of_byte_bound"]);
    const Stat gm = stat_from(arm["gmacs_per_s"]), cfrac = stat_from(arm["fraction_of_compute_ceiling"]);
    const double bits = number_of(arm["bits_per_weight"]);
    if (compute_bound && gm.valid)
      bars.push_back({name, gm.median, gm.min, gm.max, cfrac.valid ? sig(cfrac.median * 100) + "% of int8 ceiling" : ""});
    else if (!compute_bound && number_of(arm["bytes_per_call"]) > 0 && gb.valid)
      bars.push_back({name, gb.median, gb.min, gb.max, frac.valid ? sig(frac.median * 100) + "% of bound" : ""});
    if (bits > 0 && speed.valid) points.push_back({name, bits, speed.median, speed.min, speed.max});
    if (speed.valid) speed_bars.push_back({name, speed.median, speed.min, speed.max, ""});
    layouts.insert(arm["layout"].get<std::string>());
  }
  md << table.markdown();
  std::vector<int> thread_counts;
  for (const ArmTiming& a : r.arms) {
    if (!a.verified) md << "\n**" << a.setup.name << " failed verification and was not timed:** " << a.failure << "\n";
    thread_counts.push_back(a.setup.threads);
  }
  md << oversubscribed_note(thread_counts);
  md << "\nms/call, of int8 ceiling, of byte bound and vs baseline: median over kept rounds [min–max]; " << spread_note()
     << "; of int8 ceiling = "
        "GMAC/s / that round's int8 compute ceiling on the arm's thread count; of byte bound = bytes billed per call "
        "(weights + activations + outputs, each once) / time / that round's memory ceiling on the arm's thread count; "
     << ratio_note(r) << ".\n";
  rep.warnings = std::move(noise.warnings);

  std::vector<RuleLine> ceilings;
  for (const auto& [n, v] : compute_bound ? r.compute_gmacs : r.ceiling_gbps) {
    const Stat c = stat_of(v);
    ceilings.push_back({cat(compute_bound ? "int8 compute ceiling, " : "memory read ceiling, ", n, " thr"), c.median, c.min, c.max});
  }
  if (!bars.empty() && compute_bound)
    rep.svgs.emplace_back("gmacs.svg", svg_bars(rep.title + ": int8 multiply-accumulates", "GMAC/s", bars, ceilings));
  else if (!bars.empty())
    rep.svgs.emplace_back("gbps.svg", svg_bars(rep.title + ": achieved bandwidth", "GB/s", bars, ceilings));
  if ((compute_bound || layouts.size() == 1) && speed_bars.size() > 1) {
    // Arms of one layout differ by an option (spawned threads, leftover handling), not by bits per
    // weight: one bar each, since a bits-per-weight axis would only scatter them by jitter. A
    // compute-bound kind gets bars too: its byte bound is no bound for a compute-bound kernel.
    rep.svgs.emplace_back("speedup.svg", svg_bars(rep.title + ": speedup vs " + r.baseline, "× vs baseline", speed_bars, {},
                                                  r.interleaved ? "bar: median of per-round time ratios, > 1 is faster; whisker: min–max"
                                                                : "bar: median of ratios of rounds of separate passes; whisker: min–max"));
  } else if (base && base->verified && base->setup.weights > 0 && !points.empty()) {
    // The byte bound: the speedup an arm of b bits/weight would reach streaming its bytes at the baseline's ceiling.
    const Stat tb = stat_of(base->seconds);
    const auto c_it = r.ceiling_gbps.find(base->setup.threads);
    const double ceil = c_it != r.ceiling_gbps.end() ? stat_of(c_it->second).median * 1e9 : 0;
    const double other = base->setup.bytes - base->setup.weight_bytes, w = base->setup.weights;
    const auto bound = [=](double b) { return tb.median / ((w * b / 8 + other) / ceil); };
    rep.svgs.emplace_back("speedup.svg", svg_scatter(rep.title + ": speedup vs bits per weight", "bits per weight",
                                                     "speedup vs " + r.baseline + " (log scale)", points, bound,
                                                     cat("byte bound (", base->setup.threads, "-thread ceiling)"), control_rules));
  }
  rep.markdown = md.str();
  rep.json = std::move(js);
  return rep;
}

std::string svg_bars(const std::string& title, const std::string& unit, const std::vector<BarItem>& bars,
                     const std::vector<RuleLine>& rules, const std::string& caption) {
  // Labels left, bars in the middle, values in their own column on the right (never under a band).
  // The value column grows with its longest note (about 7 px a character at 12 px), so notes never clip.
  std::size_t note_chars = 0;
  for (const BarItem& b : bars) note_chars = std::max(note_chars, display_width(b.note) + 16);
  const int left = 230, top = 44, row = 30, plot_w = 550, right = std::max(220, 7 * int(note_chars) + 20);
  const int w = left + plot_w + right;
  const int h = top + row * int(bars.size()) + 60 + 18 * int(rules.size());
  double hi = 0;
  for (const BarItem& b : bars) hi = std::max({hi, b.max, std::isfinite(b.limit) ? b.limit : 0.0});
  for (const RuleLine& r : rules) hi = std::max(hi, r.max);
  hi = hi > 0 ? hi * 1.05 : 1;
  const auto X = [&](double v) { return left + plot_w * v / hi; };
  const int bottom = top + row * int(bars.size());
  const auto color_of = [](std::size_t i) { return i % 2 ? "#8b0000" : "#d62728"; };
  std::ostringstream s;
  s << svg_head(w, h, title);
  for (double t : linear_ticks(hi)) {
    s << "<line x1=\"" << fixed(X(t), 1) << "\" y1=\"" << top << "\" x2=\"" << fixed(X(t), 1) << "\" y2=\"" << bottom
      << "\" stroke=\"#e5e5e5\"/>\n<text x=\"" << fixed(X(t), 1) << "\" y=\"" << bottom + 16 << "\" text-anchor=\"middle\" fill=\"#555\">"
      << sig(t) << "</text>\n";
  }
  s << "<text x=\"" << left + plot_w / 2 << "\" y=\"" << bottom + 34 << "\" text-anchor=\"middle\">" << xml_escape(unit) << " ("
    << xml_escape(caption) << ")</text>\n";
  for (std::size_t i = 0; i < rules.size(); ++i)  // ranges first, under the bars
    s << "<rect x=\"" << fixed(X(rules[i].min), 1) << "\" y=\"" << top << "\" width=\""
      << fixed(std::max(1.0, X(rules[i].max) - X(rules[i].min)), 1) << "\" height=\"" << bottom - top << "\" fill=\"" << color_of(i)
      << "\" fill-opacity=\"0.10\"/>\n";
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const BarItem& b = bars[i];
    const int y = top + row * int(i);
    s << "<text x=\"" << left - 8 << "\" y=\"" << y + row / 2 + 4 << "\" text-anchor=\"end\">" << xml_escape(b.label) << "</text>\n";
    s << "<rect x=\"" << left << "\" y=\"" << y + 5 << "\" width=\"" << fixed(X(b.median) - left, 1) << "\" height=\"" << row - 10
      << "\" fill=\"" << kPalette[i % 10] << "\"/>\n";
    s << "<line x1=\"" << fixed(X(b.min), 1) << "\" y1=\"" << y + row / 2 << "\" x2=\"" << fixed(X(b.max), 1) << "\" y2=\""
      << y + row / 2 << "\" stroke=\"black\" stroke-width=\"1.5\"/>\n";
    if (std::isfinite(b.limit))  // this bar's own bound, e.g. the tok/s its arm's paired ceiling allows
      s << "<line x1=\"" << fixed(X(b.limit), 1) << "\" y1=\"" << y + 1 << "\" x2=\"" << fixed(X(b.limit), 1) << "\" y2=\""
        << y + row - 1 << "\" stroke=\"#d62728\" stroke-width=\"3\"/>\n";
    s << "<text x=\"" << left + plot_w + 10 << "\" y=\"" << y + row / 2 + 4 << "\" fill=\"#333\">" << sig(b.median) << " " << xml_escape(unit)
      << (b.note.empty() ? "" : " · " + xml_escape(b.note)) << "</text>\n";
  }
  for (std::size_t i = 0; i < rules.size(); ++i) {
    const RuleLine& r = rules[i];
    s << "<line x1=\"" << fixed(X(r.value), 1) << "\" y1=\"" << top - 4 << "\" x2=\"" << fixed(X(r.value), 1) << "\" y2=\"" << bottom
      << "\" stroke=\"" << color_of(i) << "\" stroke-width=\"2\" stroke-dasharray=\"6 3\"/>\n";
    const int ly = bottom + 52 + 18 * int(i);
    s << "<line x1=\"" << left << "\" y1=\"" << ly - 4 << "\" x2=\"" << left + 24 << "\" y2=\"" << ly - 4 << "\" stroke=\"" << color_of(i)
      << "\" stroke-width=\"2\" stroke-dasharray=\"6 3\"/>\n<text x=\"" << left + 30 << "\" y=\"" << ly << "\">"
      << xml_escape(r.label + ": " + sig(r.value) + " " + unit + " [" + sig(r.min) + "–" + sig(r.max) + "], band: min–max over rounds") << "</text>\n";
  }
  s << "</svg>\n";
  return s.str();
}

namespace {

// The plot area of an x-y chart: its frame, grid lines with tick labels, and axis titles.
struct PlotFrame {
  int left, top, plot_w, plot_h;
  int bottom() const { return top + plot_h; }
  void frame(std::ostream& s) const {
    s << "<rect x=\"" << left << "\" y=\"" << top << "\" width=\"" << plot_w << "\" height=\"" << plot_h
      << "\" fill=\"none\" stroke=\"#999\"/>\n";
  }
  // A horizontal grid line at height y, labelled at the left.
  void y_grid(std::ostream& s, double y, const std::string& label, const char* stroke = "#eee") const {
    s << "<line x1=\"" << left << "\" y1=\"" << fixed(y, 1) << "\" x2=\"" << left + plot_w << "\" y2=\"" << fixed(y, 1)
      << "\" stroke=\"" << stroke << "\"/>\n<text x=\"" << left - 6 << "\" y=\"" << fixed(y + 4, 1)
      << "\" text-anchor=\"end\" fill=\"#555\">" << label << "</text>\n";
  }
  // A tick below the frame at x, labelled under it.
  void x_tick(std::ostream& s, double x, const std::string& label) const {
    s << "<line x1=\"" << fixed(x, 1) << "\" y1=\"" << bottom() << "\" x2=\"" << fixed(x, 1) << "\" y2=\"" << bottom() + 5
      << "\" stroke=\"#555\"/>\n<text x=\"" << fixed(x, 1) << "\" y=\"" << bottom() + 18 << "\" text-anchor=\"middle\" fill=\"#555\">"
      << label << "</text>\n";
  }
  void titles(std::ostream& s, const std::string& xlabel, const std::string& ylabel) const {
    s << "<text x=\"" << left + plot_w / 2 << "\" y=\"" << bottom() + 40 << "\" text-anchor=\"middle\">" << xml_escape(xlabel) << "</text>\n";
    s << "<text transform=\"translate(18," << top + plot_h / 2 << ") rotate(-90)\" text-anchor=\"middle\">" << xml_escape(ylabel)
      << "</text>\n";
  }
};

}  // namespace

std::string svg_sweep(const std::string& title, const std::string& xlabel, const std::string& ylabel,
                      const std::vector<std::string>& columns, const std::vector<SweepSeries>& series, double rule) {
  const int w = 940, h = 480, left = 80, right = 300, top = 44, bottom_margin = 60;
  const int plot_w = w - left - right, plot_h = h - top - bottom_margin, bottom = h - bottom_margin;
  double hi = rule;
  for (const SweepSeries& s : series)
    for (double v : s.max)
      if (std::isfinite(v)) hi = std::max(hi, v);
  hi *= 1.1;
  const auto X = [&](std::size_t c) { return left + plot_w * (double(c) + 0.5) / double(std::max<std::size_t>(1, columns.size())); };
  const auto Y = [&](double v) { return bottom - plot_h * v / hi; };
  const PlotFrame f{left, top, plot_w, plot_h};
  std::ostringstream s;
  s << svg_head(w, h, title);
  f.frame(s);
  for (double t : linear_ticks(hi)) f.y_grid(s, Y(t), sig(t));
  s << "<line x1=\"" << left << "\" y1=\"" << fixed(Y(rule), 1) << "\" x2=\"" << left + plot_w << "\" y2=\"" << fixed(Y(rule), 1)
    << "\" stroke=\"#555\" stroke-dasharray=\"6 3\"/>\n";
  for (std::size_t c = 0; c < columns.size(); ++c)
    s << "<text x=\"" << fixed(X(c), 1) << "\" y=\"" << bottom + 18 << "\" text-anchor=\"middle\" fill=\"#555\">"
      << xml_escape(columns[c]) << "</text>\n";
  f.titles(s, xlabel, ylabel);
  int ly = top + 8;
  for (std::size_t i = 0; i < series.size(); ++i) {
    const SweepSeries& r = series[i];
    const char* color = kPalette[i % 10];
    std::string line;
    for (std::size_t c = 0; c < columns.size() && c < r.median.size(); ++c) {
      if (!std::isfinite(r.median[c])) continue;
      line += fixed(X(c), 1) + "," + fixed(Y(r.median[c]), 1) + " ";
      s << "<line x1=\"" << fixed(X(c), 1) << "\" y1=\"" << fixed(Y(r.min[c]), 1) << "\" x2=\"" << fixed(X(c), 1) << "\" y2=\""
        << fixed(Y(r.max[c]), 1) << "\" stroke=\"black\"/>\n<circle cx=\"" << fixed(X(c), 1) << "\" cy=\"" << fixed(Y(r.median[c]), 1)
        << "\" r=\"5\" fill=\"" << color << "\" stroke=\"black\"/>\n";
    }
    if (!line.empty()) s << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"2\" points=\"" << line << "\"/>\n";
    s << "<circle cx=\"" << left + plot_w + 20 << "\" cy=\"" << ly << "\" r=\"5\" fill=\"" << color << "\" stroke=\"black\"/>\n<text x=\""
      << left + plot_w + 34 << "\" y=\"" << ly + 4 << "\">" << xml_escape(r.name) << "</text>\n";
    ly += 18;
  }
  s << "</svg>\n";
  return s.str();
}

std::string svg_stacked_bars(const std::string& title, const std::string& unit, const std::vector<std::string>& part_names,
                             const std::vector<StackedBar>& bars, const std::string& caption) {
  const int left = 230, right = 220, top = 44, row = 30, w = 1000, per_line = 4;
  const int plot_w = w - left - right;
  const int legend_lines = (int(part_names.size()) + per_line - 1) / per_line;
  const int h = top + row * int(bars.size()) + 60 + 18 * legend_lines;
  double hi = 0;
  for (const StackedBar& b : bars) {
    double sum = 0;
    for (double v : b.parts) sum += std::isfinite(v) ? v : 0;
    hi = std::max(hi, sum);
  }
  hi = hi > 0 ? hi * 1.05 : 1;
  const auto X = [&](double v) { return left + plot_w * v / hi; };
  const int bottom = top + row * int(bars.size());
  std::ostringstream s;
  s << svg_head(w, h, title);
  for (double t : linear_ticks(hi))
    s << "<line x1=\"" << fixed(X(t), 1) << "\" y1=\"" << top << "\" x2=\"" << fixed(X(t), 1) << "\" y2=\"" << bottom
      << "\" stroke=\"#e5e5e5\"/>\n<text x=\"" << fixed(X(t), 1) << "\" y=\"" << bottom + 16 << "\" text-anchor=\"middle\" fill=\"#555\">"
      << sig(t) << "</text>\n";
  s << "<text x=\"" << left + plot_w / 2 << "\" y=\"" << bottom + 34 << "\" text-anchor=\"middle\">" << xml_escape(unit) << " ("
    << xml_escape(caption) << ")</text>\n";
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const StackedBar& b = bars[i];
    const int y = top + row * int(i);
    s << "<text x=\"" << left - 8 << "\" y=\"" << y + row / 2 + 4 << "\" text-anchor=\"end\">" << xml_escape(b.label) << "</text>\n";
    double at = 0;
    for (std::size_t p = 0; p < b.parts.size() && p < part_names.size(); ++p) {
      if (!(b.parts[p] > 0)) continue;
      s << "<rect x=\"" << fixed(X(at), 1) << "\" y=\"" << y + 5 << "\" width=\"" << fixed(X(at + b.parts[p]) - X(at), 1)
        << "\" height=\"" << row - 10 << "\" fill=\"" << kPalette[p % 10] << "\"><title>" << xml_escape(part_names[p]) << ": "
        << sig(b.parts[p]) << " " << xml_escape(unit) << "</title></rect>\n";
      at += b.parts[p];
    }
    s << "<text x=\"" << left + plot_w + 10 << "\" y=\"" << y + row / 2 + 4 << "\" fill=\"#333\">" << xml_escape(b.note) << "</text>\n";
  }
  for (std::size_t p = 0; p < part_names.size(); ++p) {
    const int lx = left + int(p % per_line) * (plot_w + right) / per_line, ly = bottom + 52 + 18 * int(p / per_line);
    s << "<rect x=\"" << lx << "\" y=\"" << ly - 10 << "\" width=\"12\" height=\"12\" fill=\"" << kPalette[p % 10] << "\"/>\n<text x=\""
      << lx + 16 << "\" y=\"" << ly << "\">" << xml_escape(part_names[p]) << "</text>\n";
  }
  s << "</svg>\n";
  return s.str();
}

std::string svg_scatter(const std::string& title, const std::string& xlabel, const std::string& ylabel,
                        const std::vector<ScatterPoint>& points, const std::function<double(double)>& curve,
                        const std::string& curve_label, const std::vector<RuleLine>& rules) {
  const int w = 940, h = 520, left = 80, right = 300, top = 44, bottom_margin = 60;
  const int plot_w = w - left - right, plot_h = h - top - bottom_margin, bottom = h - bottom_margin;
  double x0 = 1e300, x1 = -1e300, y0 = 1e300, y1 = -1e300;
  for (const ScatterPoint& p : points) {
    x0 = std::min(x0, p.x);
    x1 = std::max(x1, p.x);
    y0 = std::min(y0, p.ymin);
    y1 = std::max(y1, p.ymax);
  }
  if (x1 - x0 < 1) {
    const double c = 0.5 * (x0 + x1);
    x0 = c - 0.5;
    x1 = c + 0.5;
  }
  const double pad = 0.08 * (x1 - x0);
  x0 = std::max(0.05, x0 - pad);
  x1 += pad;
  for (double x : {x0, x1}) {
    const double c = curve(x);
    if (std::isfinite(c) && c > 0) {
      y0 = std::min(y0, c);
      y1 = std::max(y1, c);
    }
  }
  std::vector<RuleLine> shown;
  std::vector<std::string> off_scale;
  for (const RuleLine& r : rules) {
    if (r.value > 0 && r.value < y1 * 20 && r.value > y0 / 20) {
      shown.push_back(r);
      y0 = std::min(y0, r.min);
      y1 = std::max(y1, r.max);
    } else {
      off_scale.push_back(r.label + ": off scale");
    }
  }
  y0 = std::max(y0 / 1.3, 1e-6);
  y1 = y1 * 1.3;
  const double ly0 = std::log10(y0), ly1 = std::log10(y1);
  const auto X = [&](double v) { return left + plot_w * (v - x0) / (x1 - x0); };
  const auto Y = [&](double v) { return bottom - plot_h * (std::log10(std::max(v, 1e-9)) - ly0) / (ly1 - ly0); };
  const PlotFrame f{left, top, plot_w, plot_h};
  std::ostringstream s;
  s << svg_head(w, h, title);
  f.frame(s);
  // y ticks at 1-2-5 decades
  for (int d = int(std::floor(ly0)) - 1; d <= int(std::ceil(ly1)); ++d)
    for (double m : {1.0, 2.0, 5.0}) {
      const double v = m * std::pow(10.0, d);
      if (v >= y0 && v <= y1) f.y_grid(s, Y(v), sig(v) + "×", v == 1.0 ? "#aaa" : "#eee");
    }
  for (double t : linear_ticks(x1))
    if (t >= x0) f.x_tick(s, X(t), sig(t));
  f.titles(s, xlabel, ylabel);
  // The byte-bound curve.
  s << "<polyline fill=\"none\" stroke=\"#555\" stroke-width=\"1.5\" stroke-dasharray=\"7 4\" points=\"";
  for (int i = 0; i <= 60; ++i) {
    const double x = x0 + (x1 - x0) * i / 60;
    const double y = std::clamp(curve(x), y0, y1);
    s << fixed(X(x), 1) << "," << fixed(Y(y), 1) << " ";
  }
  s << "\"/>\n";
  for (const RuleLine& r : shown)
    s << "<line x1=\"" << left << "\" y1=\"" << fixed(Y(r.value), 1) << "\" x2=\"" << left + plot_w << "\" y2=\"" << fixed(Y(r.value), 1)
      << "\" stroke=\"#d62728\" stroke-width=\"1.5\" stroke-dasharray=\"2 3\"/>\n";
  // Arms at the same bits per weight sit side by side instead of on top of each other.
  std::vector<double> px;
  for (std::size_t i = 0; i < points.size(); ++i) {
    int same = 0;
    for (std::size_t j = 0; j < i; ++j) same += points[j].x == points[i].x;
    px.push_back(points[i].x + (x1 - x0) * 0.012 * same);
  }
  for (std::size_t i = 0; i < points.size(); ++i) {
    ScatterPoint p = points[i];
    p.x = px[i];
    s << "<line x1=\"" << fixed(X(p.x), 1) << "\" y1=\"" << fixed(Y(p.ymin), 1) << "\" x2=\"" << fixed(X(p.x), 1) << "\" y2=\""
      << fixed(Y(p.ymax), 1) << "\" stroke=\"black\"/>\n<circle cx=\"" << fixed(X(p.x), 1) << "\" cy=\"" << fixed(Y(p.y), 1)
      << "\" r=\"5\" fill=\"" << kPalette[i % 10] << "\" stroke=\"black\"/>\n";
  }
  // Legend on the right: one entry per point (labels would collide where arms share a layout).
  int ly = top + 8;
  const auto legend = [&](const std::string& mark, const std::string& text) {
    s << mark << "<text x=\"" << left + plot_w + 34 << "\" y=\"" << ly + 4 << "\">" << xml_escape(text) << "</text>\n";
    ly += 18;
  };
  for (std::size_t i = 0; i < points.size(); ++i)
    legend(cat("<circle cx=\"", left + plot_w + 20, "\" cy=\"", ly, "\" r=\"5\" fill=\"", kPalette[i % 10], "\" stroke=\"black\"/>"),
           points[i].label + " " + sig(points[i].y) + "×");
  legend(cat("<line x1=\"", left + plot_w + 10, "\" y1=\"", ly, "\" x2=\"", left + plot_w + 30, "\" y2=\"", ly,
             "\" stroke=\"#555\" stroke-width=\"1.5\" stroke-dasharray=\"7 4\"/>"),
         curve_label);
  for (const RuleLine& r : shown)
    legend(cat("<line x1=\"", left + plot_w + 10, "\" y1=\"", ly, "\" x2=\"", left + plot_w + 30, "\" y2=\"", ly,
               "\" stroke=\"#d62728\" stroke-width=\"1.5\" stroke-dasharray=\"2 3\"/>"),
           r.label);
  for (const std::string& o : off_scale) legend("", o);
  s << "</svg>\n";
  return s.str();
}


std::string svg_lines(const std::string& title, const std::string& xlabel, const std::string& ylabel, const std::vector<LineSeries>& series,
                      const std::vector<RuleLine>& rules, const std::string& point_note, bool connect) {
  const int w = 940, h = 520, left = 80, right = 240, top = 44, bottom_margin = 60;
  const int plot_w = w - left - right, plot_h = h - top - bottom_margin, bottom = h - bottom_margin;
  double x1 = 0, y1 = 0;
  for (const LineSeries& l : series)
    for (const ScatterPoint& p : l.points) {
      x1 = std::max(x1, p.x);
      y1 = std::max(y1, p.ymax);
    }
  for (const RuleLine& r : rules) y1 = std::max(y1, r.value);
  x1 = x1 > 0 ? x1 * 1.05 : 1;
  y1 = y1 > 0 ? y1 * 1.1 : 1;
  const auto X = [&](double v) { return left + plot_w * v / x1; };
  const auto Y = [&](double v) { return bottom - plot_h * v / y1; };
  const PlotFrame f{left, top, plot_w, plot_h};
  std::ostringstream s;
  s << svg_head(w, h, title);
  f.frame(s);
  for (double t : linear_ticks(y1)) f.y_grid(s, Y(t), sig(t));
  for (double t : linear_ticks(x1)) f.x_tick(s, X(t), sig(t));
  f.titles(s, xlabel, point_note.empty() ? ylabel : ylabel + " (" + point_note + ")");
  for (const RuleLine& r : rules)
    s << "<line x1=\"" << left << "\" y1=\"" << fixed(Y(r.value), 1) << "\" x2=\"" << left + plot_w << "\" y2=\"" << fixed(Y(r.value), 1)
      << "\" stroke=\"#888\" stroke-dasharray=\"6 3\"/>\n<text x=\"" << left + 6 << "\" y=\"" << fixed(Y(r.value) - 4, 1)
      << "\" fill=\"#555\">" << xml_escape(r.label) << "</text>\n";
  for (std::size_t i = 0; i < series.size(); ++i) {
    std::vector<ScatterPoint> pts = series[i].points;
    std::sort(pts.begin(), pts.end(), [](const ScatterPoint& a, const ScatterPoint& b) { return a.x < b.x; });
    const char* color = kPalette[i % 10];
    if (connect) {
      s << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"2\" points=\"";
      for (const ScatterPoint& p : pts) s << fixed(X(p.x), 1) << "," << fixed(Y(p.y), 1) << " ";
      s << "\"/>\n";
    }
    for (const ScatterPoint& p : pts)
      s << "<line x1=\"" << fixed(X(p.x), 1) << "\" y1=\"" << fixed(Y(p.ymin), 1) << "\" x2=\"" << fixed(X(p.x), 1) << "\" y2=\""
        << fixed(Y(p.ymax), 1) << "\" stroke=\"" << color << "\"/>\n<circle cx=\"" << fixed(X(p.x), 1) << "\" cy=\"" << fixed(Y(p.y), 1)
        << "\" r=\"4\" fill=\"" << color << "\"><title>" << xml_escape(series[i].label + " " + p.label + ": " + sig(p.x) + ", " + sig(p.y)) << "</title></circle>\n";
    if (!connect) {  // separate arms: each point named, the names of points drawn on one spot joined
      std::map<std::pair<long, long>, std::string> names;
      for (const ScatterPoint& p : pts) {
        std::string& n = names[{std::lround(X(p.x)), std::lround(Y(p.y))}];
        n += (n.empty() ? "" : ", ") + p.label;
      }
      for (const auto& [at, n] : names)
        s << "<text x=\"" << at.first + 7 << "\" y=\"" << at.second - 6 << "\" font-size=\"10\" fill=\"" << color << "\">" << xml_escape(n)
          << "</text>\n";
    }
    const int ly = top + 10 + 20 * int(i);
    s << "<line x1=\"" << left + plot_w + 14 << "\" y1=\"" << ly - 4 << "\" x2=\"" << left + plot_w + 38 << "\" y2=\"" << ly - 4
      << "\" stroke=\"" << color << "\" stroke-width=\"2\"/>\n<text x=\"" << left + plot_w + 44 << "\" y=\"" << ly << "\">"
      << xml_escape(series[i].label) << "</text>\n";
  }
  s << "</svg>\n";
  return s.str();
}

}  // namespace ternlab::experiments
