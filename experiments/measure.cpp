#include "experiments/measure.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <set>

#include "common/error.hpp"
#include "common/strings.hpp"

namespace ternlab::experiments {

namespace {
double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

ThreadPool& Pools::get(int threads) {
  auto& p = pools_[threads];
  if (!p) p = std::make_unique<ThreadPool>(threads, pin_);
  return *p;
}

std::vector<int> Pools::thread_counts() const {
  std::vector<int> v;
  for (const auto& [n, p] : pools_) v.push_back(n);
  return v;
}

Stat stat_of(std::vector<double> v) {
  Stat s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  s.median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  s.min = v.front();
  s.max = v.back();
  s.valid = true;
  return s;
}

std::string loops_text(const std::vector<std::string>& per_round) {
  std::map<std::string, int> count;
  for (const std::string& l : per_round) ++count[l];
  std::vector<std::pair<std::string, int>> by_count(count.begin(), count.end());
  std::stable_sort(by_count.begin(), by_count.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> parts;
  for (const auto& [loop, n] : by_count)
    parts.push_back(parts.empty() ? cat(loop, " in ", n, " of ", per_round.size(), per_round.size() == 1 ? " round" : " rounds")
                                  : cat(loop, " in ", n));
  return join(parts, "; ");
}

const ArmTiming* TimingResult::find(const std::string& name) const {
  for (const ArmTiming& a : arms)
    if (a.setup.name == name) return &a;
  return nullptr;
}

bool TimingResult::is_baseline(const std::string& name) const {
  for (const ArmTiming& a : arms)
    if ((a.setup.baseline.empty() ? baseline : a.setup.baseline) == name) return true;
  return false;
}

std::vector<double> TimingResult::speedups(const ArmTiming& arm) const {
  const ArmTiming* base = find(arm.setup.baseline.empty() ? baseline : arm.setup.baseline);
  std::vector<double> r;
  if (!base || base->seconds.size() != arm.seconds.size()) return r;
  for (std::size_t i = 0; i < arm.seconds.size(); ++i) r.push_back(base->seconds[i] / arm.seconds[i]);
  return r;
}

std::vector<double> TimingResult::gbps(const ArmTiming& arm) const {
  std::vector<double> r;
  for (double s : arm.seconds) r.push_back(arm.setup.bytes / s / 1e9);
  return r;
}

std::vector<double> TimingResult::ceiling_of(const ArmTiming& arm) const {
  if (!arm.own_ceiling_gbps.empty()) return arm.own_ceiling_gbps;
  const auto it = ceiling_gbps.find(arm.setup.threads);
  return it == ceiling_gbps.end() ? std::vector<double>{} : it->second;
}

std::vector<double> TimingResult::compute_of(const ArmTiming& arm) const {
  if (!arm.own_compute_gmacs.empty()) return arm.own_compute_gmacs;
  const auto it = compute_gmacs.find(arm.setup.threads);
  return it == compute_gmacs.end() ? std::vector<double>{} : it->second;
}

std::vector<double> TimingResult::bound_fractions(const ArmTiming& arm) const {
  std::vector<double> r;
  const std::vector<double> c = ceiling_of(arm);
  if (c.empty() || arm.setup.bytes <= 0) return r;
  const std::vector<double> g = gbps(arm);
  for (std::size_t i = 0; i < g.size() && i < c.size(); ++i) r.push_back(g[i] / c[i]);
  return r;
}

TimingResult merge_passes(std::vector<TimingResult> passes, const std::string& baseline, const std::string& baseline_label) {
  TimingResult m;
  m.interleaved = false;
  m.baseline = baseline;
  m.baseline_label = baseline_label.empty() ? "'" + baseline + "'" : baseline_label;
  for (TimingResult& p : passes) {
    m.rounds = p.rounds;
    m.warmup = p.warmup;
    m.ceiling_bytes = std::max(m.ceiling_bytes, p.ceiling_bytes);
    for (ArmTiming& a : p.arms) {
      const auto c = p.ceiling_gbps.find(a.setup.threads);
      const auto g = p.compute_gmacs.find(a.setup.threads);
      if (c != p.ceiling_gbps.end()) a.own_ceiling_gbps = c->second;
      if (g != p.compute_gmacs.end()) a.own_compute_gmacs = g->second;
      m.arms.push_back(std::move(a));
    }
    for (const auto& [n, v] : p.ceiling_gbps) m.ceiling_gbps[n].insert(m.ceiling_gbps[n].end(), v.begin(), v.end());
    for (const auto& [n, v] : p.ceiling_loops) m.ceiling_loops[n].insert(m.ceiling_loops[n].end(), v.begin(), v.end());
    for (const auto& [n, v] : p.compute_gmacs) m.compute_gmacs[n].insert(m.compute_gmacs[n].end(), v.begin(), v.end());
    for (const auto& [n, v] : p.handoff_us) m.handoff_us[n].insert(m.handoff_us[n].end(), v.begin(), v.end());
  }
  return m;
}

std::int64_t measure_units(std::size_t arms, const MeasureOptions& opt) {
  return std::int64_t(arms) * (2 + opt.rounds + opt.warmup);  // verify, calibrate, every round
}

TimingResult measure_arms(std::vector<ArmSetup> arms, const MeasureOptions& opt, Pools& pools, Progress& progress) {
  TimingResult res;
  res.rounds = opt.rounds;
  res.warmup = opt.warmup;
  res.baseline = opt.baseline.empty() && !arms.empty() ? arms.front().name : opt.baseline;
  res.baseline_label = opt.baseline_label.empty() ? "'" + res.baseline + "'" : opt.baseline_label;
  for (std::size_t i = 0; i < arms.size(); ++i) {
    ArmTiming t;
    t.setup = std::move(arms[i]);
    if (t.setup.baseline.empty() && i < opt.arm_baselines.size()) t.setup.baseline = opt.arm_baselines[i];
    res.arms.push_back(std::move(t));
  }
  std::set<int> counts;  // the thread counts of this run's arms, each with its ceilings every round
  for (const ArmTiming& a : res.arms) {
    pools.get(a.setup.threads);  // every pool exists before timing
    counts.insert(a.setup.threads);
  }
  // First touch on the widest pool, so pages sit where the most threads read them.
  const MemoryCeiling ceiling(opt.ceiling_bytes, counts.empty() ? nullptr : &pools.get(*counts.rbegin()));
  res.ceiling_bytes = double(ceiling.bytes());

  // 1. Verify every arm before any timing.
  for (ArmTiming& a : res.arms) {
    try {
      a.failure = a.setup.verify ? a.setup.verify() : "";
    } catch (const Error& e) {
      a.failure = e.what();
    }
    a.verified = a.failure.empty();
    progress.step("verify " + a.setup.name);
  }
  // 2. Calibrate the calls per sample from one untimed-for-results call (after verification warmed it).
  for (ArmTiming& a : res.arms) {
    if (a.verified) {
      const double t0 = now_seconds();
      a.setup.call();
      const double t = std::max(now_seconds() - t0, 1e-7);
      a.reps = int(std::clamp(std::ceil(opt.sample_seconds / t), 1.0, 1e6));
    }
    progress.step("calibrate " + a.setup.name);
  }
  // 3. Rounds: ceilings first, then every verified arm in the same fixed order.
  for (int round = 0; round < opt.warmup + opt.rounds; ++round) {
    const bool kept = round >= opt.warmup;
    for (int n : counts) {
      const ReadCeiling read = ceiling.measure_best(pools.get(n));
      const double gmacs = int8_compute_ceiling(pools.get(n), best_isa(), opt.compute_macs).gmacs;
      const double handoff = pool_handoff_seconds(pools.get(n));
      if (kept) {
        if (n > 1) res.handoff_us[n].push_back(handoff * 1e6);
        res.ceiling_gbps[n].push_back(read.gbs);
        res.ceiling_loops[n].push_back(read.loop);
        res.compute_gmacs[n].push_back(gmacs);
      }
    }
    for (ArmTiming& a : res.arms) {
      if (a.verified) {
        const double t0 = now_seconds();
        for (int r = 0; r < a.reps; ++r) a.setup.call();
        const double t = (now_seconds() - t0) / a.reps;
        if (kept) a.seconds.push_back(t);
      }
      progress.step(cat(kept ? "round " : "warm-up ", kept ? round - opt.warmup + 1 : round + 1, ": ", a.setup.name));
    }
  }
  return res;
}

}  // namespace ternlab::experiments
