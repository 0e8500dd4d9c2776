// The Λ24 layout-scale kind (`kind = "lattice-scale"`): one decode-shaped matvec through each
// decoded-record layout (layouts/records/), the fp16 control (kernels/dense/f16_matvec.hpp) and the
// ternary layouts as the gemv kind runs them, all on one rows x cols shape, interleaved in one
// process after the rules of the lattice paper (../shared/docs/leech-lattice-spec.md §6): every row
// of every arm checked before timing, ratios per round against the fp16 control, a no-weights
// control that reads only row scales and tails, bytes billed as the kernel streams them (§5.8).
#include <algorithm>
#include <cstdio>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <utility>

#include "common/fp16.hpp"
#include "common/strings.hpp"
#include "common/table.hpp"
#include "experiments/arms.hpp"
#include "experiments/gemv_arms.hpp"
#include "experiments/kinds.hpp"
#include "experiments/measure.hpp"
#include "experiments/run_context.hpp"
#include "kernels/dense/f16_matvec.hpp"
#include "kernels/peers/peers.hpp"
#include "kernels/thread_pool.hpp"
#include "lattice/leech.hpp"
#include "lattice/record_kernels.hpp"
#include "lattice/records.hpp"
#include "layouts/registry.hpp"

namespace ternlab::experiments {

namespace {

constexpr std::int64_t kMaxDim = std::int64_t(1) << 20;
// Distinct rows of the synthetic code; further rows repeat them (the search-free code is drawn, not
// encoded, and the f64 reference is computed once per distinct row).
constexpr std::int64_t kDistinctRows = 64;
// Rule M1: f32 products and sums against f64, relative to Σ|w·x| of the row.
constexpr double kTolerance = 1e-5;
constexpr const char* kF16 = "f16";

std::string fixed(double v, int digits) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", digits, v);
  return b;
}

enum class Family { record, f16, ternary };

struct ArmKind {
  Family family;
  const records::RecordSpec* record = nullptr;
};

std::string record_names() {
  std::vector<std::string> n;
  for (const records::RecordSpec* s : records::kRecordLayouts) n.emplace_back(s->name);
  return join(n);
}

bool ternary_known(const std::string& name) {
  if (peers::find_peer(name)) return true;
  try {
    find_layout(name);
    return true;
  } catch (const Error&) {
    return false;
  }
}

ArmKind arm_kind(const ArmSpec& a) {
  const Located at = a.at("layout");
  if (!at)
    fail_at(a.table, "arm '", a.name, "' needs a layout: a record layout (", record_names(), "), ", kF16,
            " (the fp16 control) or a ternary layout (", layout_names(), ")");
  const std::string name = as_string(at);
  if (name == kF16) return {Family::f16};
  if (const records::RecordSpec* s = records::find_record_layout(name)) return {Family::record, s};
  if (!ternary_known(name))
    fail_at(at, "unknown layout '", name, "': not a record layout (", record_names(), "), not ", kF16, " (the fp16 control) and not a ternary layout (",
            layout_names(), ")");
  return {Family::ternary};
}

struct Shape {
  std::int64_t rows, cols, tail;
};

Shape run_shape(const RunSpec& run) {
  Shape s;
  s.rows = run.integer("shape.rows", 256, 1, kMaxDim);
  s.cols = run.integer("shape.cols", 1024, 1, kMaxDim);
  s.tail = run.integer("shape.tail", s.cols % 24, 0, 23);
  if ((s.cols - s.tail) % 24 != 0 || s.cols - s.tail < 0)
    fail_at(run.at(run.at("shape.tail") ? "shape.tail" : "shape.cols"), "a width of ", s.cols, " is not a whole number of 24-weight blocks plus the declared tail of ",
            s.tail, " columns (", s.cols, " - ", s.tail, " = ", s.cols - s.tail, " is not a multiple of 24)");
  if (double(s.rows) * double(s.cols) > double(std::int64_t(1) << 32))
    fail_at(run.at("shape.rows"), s.rows, " x ", s.cols, " weights exceed the 2^32 this harness holds in memory");
  return s;
}

// The arm's `kernel` for a record or fp16 arm: best (default) or a variant name this build and CPU run.
template <class V>
const V& pick_variant(const ArmSpec& a, const std::vector<V>& all, const V& best) {
  const Located at = a.at("kernel");
  if (!at || as_string(at) == "best") return best;
  const std::string want = as_string(at);
  std::vector<std::string> names;
  for (const V& v : all) {
    if (v.name == want) return v;
    names.push_back(v.name);
  }
  fail_at(at, "'", want, "' is not a kernel this build and CPU run for arm '", a.name, "' (best, ", join(names), ")");
}

const lattice::RecordKernelVariant& record_kernel_of(const ArmSpec& a) {
  static const std::vector<lattice::RecordKernelVariant> all = lattice::record_kernels();
  return pick_variant(a, all, lattice::best_record_kernel());
}

const F16KernelVariant& f16_kernel_of(const ArmSpec& a) {
  static const std::vector<F16KernelVariant> all = f16_kernels();
  return pick_variant(a, all, best_f16_kernel());
}

std::string f16_arm_name(const RunSpec& run) {
  for (const ArmSpec& a : run.arms)
    if (arm_kind(a).family == Family::f16) return a.name;
  fail(run.file, ": kind 'lattice-scale' needs an fp16 control arm ([[arm]] layout = \"", kF16, "\"): every speedup is taken against it");
}

void validate_scale(const RunSpec& run) {
  key::seed(run);
  key::control(run);
  check_timed_run(run);
  const Shape s = run_shape(run);
  f16_arm_name(run);
  for (const ArmSpec& a : run.arms) {
    arm_threads(run, a);
    const ArmKind k = arm_kind(a);
    if (k.family == Family::record) record_kernel_of(a);
    if (k.family == Family::f16) f16_kernel_of(a);
    if (k.family == Family::ternary) validate_gemv_arm(run, a, s.rows, s.cols);
  }
}

// The synthetic code: uniform ball indices (so five-level and Golay70-exception blocks at their
// ball frequencies), random gain bits, row scales in [0.5, 1.5], two centroids, a uniform tail;
// kDistinctRows rows repeated down the matrix. Its decode in f32 is also the fp16 control's matrix.
struct LatticeData {
  Shape shape;
  lattice::EncodedMatrix code;
  std::vector<float> x;
  std::int64_t distinct = 0;
  std::vector<float> decoded;            // distinct x cols: level · centroid · row scale, tail included
  std::vector<double> ref, mag;          // per distinct row: f64 y and Σ|w·x| (records)
  std::vector<double> f16_ref, f16_mag;  // the same over the fp16-rounded weights
  std::vector<double> tail_ref, tail_mag;  // tail alone (the no-weights control)
  std::map<std::string, lattice::RecordMatrix> records;  // by layout name
};

std::shared_ptr<LatticeData> make_data(const Shape& s, std::uint64_t seed) {
  auto d = std::make_shared<LatticeData>();
  d->shape = s;
  d->distinct = std::min(s.rows, kDistinctRows);
  lattice::EncodedMatrix& e = d->code;
  e.name = "w";
  e.rows = s.rows, e.cols = s.cols, e.tail = s.tail;
  e.centroid = {0.8, 1.2};
  const std::int64_t nb = e.blocks_per_row();
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uni(-1.0, 1.0);
  std::vector<std::uint64_t> index(std::size_t(d->distinct * nb));
  std::vector<std::uint8_t> gain(index.size());
  std::vector<double> scale(std::size_t(d->distinct));
  std::vector<float> tail(std::size_t(d->distinct * s.tail));
  for (std::size_t b = 0; b < index.size(); ++b) {
    index[b] = 1 + rng() % lattice::ball_points();
    gain[b] = std::uint8_t(rng() & 1);
  }
  for (double& v : scale) v = 1.0 + 0.5 * uni(rng);
  for (float& v : tail) v = float(uni(rng));
  for (std::int64_t r = 0; r < s.rows; ++r) {
    const std::int64_t k = r % d->distinct;
    e.index.insert(e.index.end(), index.begin() + k * nb, index.begin() + (k + 1) * nb);
    e.gain.insert(e.gain.end(), gain.begin() + k * nb, gain.begin() + (k + 1) * nb);
    e.row_scale.push_back(scale[std::size_t(k)]);
    e.tail_values.insert(e.tail_values.end(), tail.begin() + k * s.tail, tail.begin() + (k + 1) * s.tail);
  }
  d->x.resize(std::size_t(s.cols));
  for (float& v : d->x) v = float(uni(rng));

  // Rule M1's reference: the archive decode in f64, centroids and row scales at the f32 the kernels read.
  d->decoded.assign(std::size_t(d->distinct * s.cols), 0.0f);
  for (auto* v : {&d->ref, &d->mag, &d->f16_ref, &d->f16_mag, &d->tail_ref, &d->tail_mag}) v->assign(std::size_t(d->distinct), 0.0);
  for (std::int64_t r = 0; r < d->distinct; ++r) {
    const std::size_t ri = std::size_t(r);
    for (std::int64_t p = 0; p < nb; ++p) {
      const std::size_t b = std::size_t(r * nb + p);
      const lattice::Point pt = lattice::unrank_index(index[b]);
      const double k = double(float(scale[ri])) * double(float(e.centroid[gain[b]])) /
                       std::sqrt(16.0 * lattice::lattice_class(lattice::class_of(pt)).shell);
      for (int j = 0; j < 24; ++j) {
        const std::size_t c = std::size_t(24 * p + j);
        const double w = k * pt[std::size_t(j)];
        d->decoded[ri * std::size_t(s.cols) + c] = float(w);
        d->ref[ri] += w * double(d->x[c]);
        d->mag[ri] += std::fabs(w * double(d->x[c]));
      }
    }
    for (std::int64_t t = 0; t < s.tail; ++t) {
      const std::size_t c = std::size_t(24 * nb + t);
      const double v = double(tail[std::size_t(r * s.tail + t)]) * double(d->x[c]);
      d->decoded[ri * std::size_t(s.cols) + c] = tail[std::size_t(r * s.tail + t)];
      d->ref[ri] += v, d->mag[ri] += std::fabs(v);
      d->tail_ref[ri] += v, d->tail_mag[ri] += std::fabs(v);
    }
    for (std::int64_t c = 0; c < s.cols; ++c) {
      const double v = double(fp16_to_float(float_to_fp16(d->decoded[ri * std::size_t(s.cols) + std::size_t(c)]))) * double(d->x[std::size_t(c)]);
      d->f16_ref[ri] += v, d->f16_mag[ri] += std::fabs(v);
    }
  }
  return d;
}

// Every row of y against its distinct row's reference; "" when all hold.
std::string check_rows(const std::vector<float>& y, const std::vector<double>& ref, const std::vector<double>& mag, std::int64_t distinct) {
  for (std::size_t r = 0; r < y.size(); ++r) {
    const std::size_t k = r % std::size_t(distinct);
    const double err = std::fabs(double(y[r]) - ref[k]);
    if (!(err <= kTolerance * mag[k]))
      return cat("row ", r, ": got ", y[r], ", f64 reference ", ref[k], " (|error| ", err, " > ", kTolerance, " x sum|w x| = ",
                 kTolerance * mag[k], ")");
  }
  return "";
}

// Runs fn(r0, r1) over the rows split across the pool's threads.
std::function<void()> on_rows(ThreadPool* pool, int threads, std::int64_t rows, std::function<void(std::int64_t, std::int64_t)> fn) {
  return [=] {
    pool->run([&](int t) {
      const auto [r0, r1] = ThreadPool::split(rows, t, threads);
      if (r0 < r1) fn(r0, r1);
    });
  };
}

std::string check_text() { return cat("≤ ", kTolerance, "·Σ|wx| (f64)"); }

ArmSetup record_arm(const RunSpec& run, const ArmSpec& a, const records::RecordSpec& spec, const std::shared_ptr<LatticeData>& d,
                    Pools& pools) {
  const std::string name(spec.name);
  if (!d->records.count(name)) d->records.emplace(name, lattice::transcode(d->code, spec));
  const lattice::RecordMatrix* m = &d->records.at(name);
  const lattice::RecordKernelVariant k = record_kernel_of(a);
  const int threads = arm_threads(run, a);
  auto y = std::make_shared<std::vector<float>>(std::size_t(m->rows));
  const std::vector<float>* x = &d->x;
  const records::Accounting acc = records::account(spec, m->counts());
  ArmSetup s;
  s.name = a.name;
  s.layout = name;
  s.kernel = k.name;
  s.threads = threads;
  s.options = cat("disk ", fixed(acc.disk_bpw, 3), " b/w");
  s.bits_per_weight = acc.memory_bpw;
  s.weights = double(m->rows * m->cols);
  s.weight_bytes = acc.memory_bpw * s.weights / 8;
  s.bytes = s.weight_bytes + double(m->cols + m->rows) * sizeof(float);
  s.macs = s.weights;
  s.check = check_text();
  s.call = on_rows(&pools.get(threads), threads, m->rows, [=](std::int64_t r0, std::int64_t r1) { lattice::record_matvec(*m, *x, *y, k, r0, r1); });
  const auto call = s.call;
  s.verify = [=] {
    std::fill(y->begin(), y->end(), std::numeric_limits<float>::quiet_NaN());
    call();
    return check_rows(*y, d->ref, d->mag, d->distinct);
  };
  return s;
}

ArmSetup f16_arm(const RunSpec& run, const ArmSpec& a, const std::shared_ptr<LatticeData>& d, Pools& pools) {
  const Shape& sh = d->shape;
  auto m = std::make_shared<F16Matrix>();
  m->name = a.name, m->rows = sh.rows, m->cols = sh.cols;
  m->w.resize(std::size_t(sh.rows * sh.cols));
  for (std::int64_t r = 0; r < sh.rows; ++r)
    for (std::int64_t c = 0; c < sh.cols; ++c)
      m->w[std::size_t(r * sh.cols + c)] = float_to_fp16(d->decoded[std::size_t((r % d->distinct) * sh.cols + c)]);
  const F16KernelVariant k = f16_kernel_of(a);
  const int threads = arm_threads(run, a);
  auto y = std::make_shared<std::vector<float>>(std::size_t(sh.rows));
  const std::vector<float>* x = &d->x;
  ArmSetup s;
  s.name = a.name;
  s.layout = kF16;
  s.kernel = k.name;
  s.threads = threads;
  s.options = "fp16 control";
  s.bits_per_weight = 16;
  s.weights = double(sh.rows * sh.cols);
  s.weight_bytes = double(m->w.size()) * 2;
  s.bytes = s.weight_bytes + double(sh.cols + sh.rows) * sizeof(float);
  s.macs = s.weights;
  s.check = check_text();
  s.call = on_rows(&pools.get(threads), threads, sh.rows, [=](std::int64_t r0, std::int64_t r1) { f16_matvec(*m, *x, *y, k, r0, r1); });
  const auto call = s.call;
  s.verify = [=] {
    std::fill(y->begin(), y->end(), std::numeric_limits<float>::quiet_NaN());
    call();
    return check_rows(*y, d->f16_ref, d->f16_mag, d->distinct);
  };
  return s;
}

// Rule M8: the record arms' threading and epilogue (row scale times the block sum, plus the f32
// tail) with the record loads removed: only row scales, tail values and the tail's activations.
ArmSetup control_arm(const std::shared_ptr<LatticeData>& d, int threads, bool several, Pools& pools) {
  const Shape& sh = d->shape;
  const lattice::EncodedMatrix* e = &d->code;
  auto scale = std::make_shared<std::vector<float>>(e->row_scale.begin(), e->row_scale.end());
  auto y = std::make_shared<std::vector<float>>(std::size_t(sh.rows));
  const float* x = d->x.data() + (sh.cols - sh.tail);
  ArmSetup c;
  c.name = several ? cat("no-weights control t=", threads) : "no-weights control";
  c.threads = threads;
  c.control = true;
  c.options = "row scales and tails only";
  const double weights = double(sh.rows * sh.cols);
  c.weight_bytes = double(sh.rows * (1 + sh.tail)) * sizeof(float);
  c.bits_per_weight = c.weight_bytes * 8 / weights;
  c.bytes = c.weight_bytes + double(sh.tail + sh.rows) * sizeof(float);
  c.check = check_text();
  const std::int64_t tail = sh.tail;
  c.call = on_rows(&pools.get(threads), threads, sh.rows, [=](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      const float* t = e->tail_values.data() + r * tail;
      float acc = 0;
      for (std::int64_t j = 0; j < tail; ++j) acc += t[j] * x[j];
      // A zero block sum still multiplies the row scale, so its load stays (0·s is not folded for floats).
      (*y)[std::size_t(r)] = 0.0f * (*scale)[std::size_t(r)] + acc;
    }
  });
  const auto call = c.call;
  c.verify = [=] {
    std::fill(y->begin(), y->end(), std::numeric_limits<float>::quiet_NaN());
    call();
    return check_rows(*y, d->tail_ref, d->tail_mag, d->distinct);
  };
  return c;
}

std::string family_name(Family f) {
  return f == Family::record ? "lattice records" : f == Family::f16 ? "fp16" : "ternary layouts";
}

// Per kept round t(other) / t(arm): > 1, the arm is faster.
std::vector<double> ratios_against(const ArmTiming& arm, const ArmTiming& other) {
  std::vector<double> v;
  for (std::size_t i = 0; i < arm.seconds.size() && i < other.seconds.size(); ++i)
    if (arm.seconds[i] > 0) v.push_back(other.seconds[i] / arm.seconds[i]);
  return v;
}

RunReport run_scale(const RunSpec& run, RunContext& ctx) {
  const Shape sh = run_shape(run);
  const auto seed = std::uint64_t(key::seed(run));
  const auto d = make_data(sh, seed);

  std::vector<ArmSetup> arms;
  std::map<std::string, Family> family;
  std::set<int> thread_counts;
  std::vector<const ArmSpec*> ternary;
  for (const ArmSpec& a : run.arms)
    if (arm_kind(a).family == Family::ternary) ternary.push_back(&a);
  GemvArms tern = ternary.empty() ? GemvArms{} : gemv_arms(run, ternary, sh.rows, sh.cols, ctx.pools);
  std::size_t next_ternary = 0;
  for (const ArmSpec& a : run.arms) {
    const ArmKind k = arm_kind(a);
    if (k.family == Family::ternary) {
      if (is_gemv_arm_skipped(a)) continue;
      arms.push_back(std::move(tern.arms[next_ternary++]));
    } else if (k.family == Family::record) {
      arms.push_back(record_arm(run, a, *k.record, d, ctx.pools));
    } else {
      arms.push_back(f16_arm(run, a, d, ctx.pools));
    }
    family[a.name] = k.family;
    thread_counts.insert(arms.back().threads);
  }
  if (key::control(run))
    for (int threads : thread_counts) arms.push_back(control_arm(d, threads, thread_counts.size() > 1, ctx.pools));

  MeasureOptions opt = measure_options(run, 5, 2);  // M5: 7 rounds, the first 2 discarded
  opt.arm_baselines.clear();
  if (!run.at("baseline")) {
    opt.baseline = f16_arm_name(run);
    opt.baseline_label = cat("'", opt.baseline, "' (the fp16 control)");
  }
  const TimingResult r = measure_arms(std::move(arms), opt, ctx.pools, ctx.progress);
  RunReport rep = report_timing(run, r);

  // The layout scale: each arm's rates and its speedups over the fp16 control and each ternary arm.
  std::vector<const ArmTiming*> tern_arms;
  for (const ArmTiming& a : r.arms)
    if (!a.setup.control && family.count(a.setup.name) && family.at(a.setup.name) == Family::ternary && a.verified) tern_arms.push_back(&a);
  std::vector<Column> cols = {{"arm"}, {"family"}, {"b/w memory", Align::right}, {"b/w disk", Align::right}, {"GB/s", Align::right},
                              {"of ceiling", Align::right}, {cat("vs ", r.baseline), Align::right}, {"of fp16 byte bound", Align::right}};
  for (const ArmTiming* t : tern_arms) cols.push_back({cat("vs ", t->setup.name), Align::right});
  Table table(cols);
  Json scale = Json::array();
  std::map<std::string, LineSeries> series;
  for (const ArmTiming& a : r.arms) {
    const ArmSetup& s = a.setup;
    const Family f = s.control ? Family::record : family.at(s.name);
    const std::string fam = s.control ? "control" : family_name(f);
    double disk = s.bits_per_weight;
    if (!s.control && f == Family::record)
      disk = records::account(*records::find_record_layout(s.layout), d->records.at(s.layout).counts()).disk_bpw;
    const Stat gb = stat_of(r.gbps(a)), frac = stat_of(r.bound_fractions(a)), speed = stat_of(r.speedups(a));
    // M13: speedup over fp16 / (16 / b), the fraction of the byte bound the fp16 control sets.
    const Stat fp16_bound = speed.valid ? Stat{speed.median * s.bits_per_weight / 16, speed.min * s.bits_per_weight / 16,
                                               speed.max * s.bits_per_weight / 16, true}
                                        : Stat{};
    std::vector<std::string> row = {s.name, fam, fixed(s.bits_per_weight, 3), s.control ? "—" : fixed(disk, 3),
                                    gb.valid ? sig(gb.median) : "—", frac.valid ? with_range(frac, "%", 100) : "—",
                                    speed.valid ? with_range(speed, "×") : "—", fp16_bound.valid && !s.control ? with_range(fp16_bound, "%", 100) : "—"};
    Json vs_ternary = Json::object();
    for (const ArmTiming* t : tern_arms) {
      const Stat v = stat_of(ratios_against(a, *t));
      row.push_back(t == &a || !a.verified || !v.valid ? "—" : with_range(v, "×"));
      if (t != &a) vs_ternary[t->setup.name] = a.verified ? stat_json(v) : Json();
    }
    table.add(row);
    scale.push_back(Json{{"name", s.name}, {"family", fam}, {"layout", s.layout}, {"bits_per_weight_memory", json_number(s.bits_per_weight)},
                         {"bits_per_weight_disk", s.control ? Json() : json_number(disk)}, {"gbps", stat_json(gb)},
                         {"fraction_of_ceiling", stat_json(frac)}, {"speedup_vs_fp16", stat_json(speed)},
                         {"fraction_of_fp16_byte_bound", s.control ? Json() : stat_json(fp16_bound)}, {"speedup_vs_ternary", vs_ternary}});
    if (a.verified && frac.valid) {
      LineSeries& l = series[fam];
      l.label = fam;
      l.points.push_back({s.name, s.bits_per_weight, 100 * frac.median, 100 * frac.min, 100 * frac.max});
    }
  }
  rep.json["layout_scale"] = std::move(scale);
  rep.json["shape"] = Json{{"rows", sh.rows}, {"cols", sh.cols}, {"tail", sh.tail}, {"distinct_rows", d->distinct}};
  rep.markdown = cat("shape ", sh.rows, " x ", sh.cols, " (", (sh.cols - sh.tail) / 24, " blocks of 24 + a tail of ", sh.tail,
                     " per row), 1 token; the Λ24 code drawn uniformly over the ball (", d->distinct,
                     " distinct rows, repeated), its f32 decode rounded to fp16 for the control; the ternary arms as kind gemv runs "
                     "them (synthetic ternary weights, seed ", seed, ", exact against the oracle).\n\n") +
                 rep.markdown;
  rep.markdown += cat("\n#### Layout scale\n\n", table.markdown(),
                      "\nb/w memory: what the kernel streams per weight (records, side channels, f32 tail, f32 row scales; spec §5.8); "
                      "b/w disk: the format-v1 file (47-bit index + gain bit per block, f32 tail, f64 row scales and centroids). "
                      "of ceiling: GB/s billed / that round's streaming-read ceiling; vs: median of per-round time ratios [min–max], "
                      "> 1 faster; of fp16 byte bound: speedup × b/16 (spec M13, meaningful while 16/b is below the no-weights "
                      "control's speedup, M14).\n");
  std::vector<LineSeries> lines;
  for (const char* f : {"lattice records", "ternary layouts", "fp16", "control"})
    if (series.count(f)) lines.push_back(series.at(f));
  if (!lines.empty())
    rep.svgs.emplace_back("layout-scale.svg", svg_lines(rep.title + ": layout scale", "bits per weight (in memory)",
                                                        "% of the streaming-read ceiling", lines, {},
                                                        "point: median over kept rounds; whisker: min–max", false));
  return rep;
}

std::int64_t scale_units(const RunSpec& run) {
  std::set<int> counts;
  std::size_t arms = 0;
  for (const ArmSpec& a : run.arms) {
    if (arm_kind(a).family == Family::ternary && is_gemv_arm_skipped(a)) continue;
    counts.insert(arm_threads(run, a));
    ++arms;
  }
  MeasureOptions o;
  o.rounds = int(key::rounds(5)(run));
  o.warmup = int(key::warmup(2)(run));
  return measure_units(arms + (key::control(run) ? counts.size() : 0), o);
}

std::vector<KeySpec> scale_keys() {
  std::vector<KeySpec> k = common_keys();
  for (const KeySpec& m : matrix_keys()) {
    if (m.path == "arm.spawn" || m.path == "shape.cols" || m.path == "arm.layout" || m.path == "arm.kernel" || m.path == "rounds" ||
        m.path == "warmup" || m.path == "baseline" || m.path == "weights" || m.path == "weight_copies")
      continue;
    k.push_back(m);
  }
  k.push_back({"rounds", Type::integer, true, "kept rounds (default 5; the paper's 7 rounds are rounds = 5, warmup = 2)"});
  k.push_back({"warmup", Type::integer, true, "discarded rounds before them (default 2)"});
  k.push_back({"baseline", Type::string, false, "arm the ratios are taken against (default: the fp16 control arm)"});
  k.push_back({"shape.cols", Type::integer, true, "inner size: whole 24-weight blocks plus the tail (a multiple of 128 with ternary arms; default 1024)"});
  k.push_back({"shape.tail", Type::integer, true, "f32 tail columns after the blocks, 0-23 (default cols mod 24)"});
  k.push_back({"arm.layout", Type::string, true, "a record layout (slot32, planes14, planes12x, golay70), f16 (the fp16 control) or a ternary layout / peer as in gemv"});
  k.push_back({"arm.kernel", Type::string, true, "best, or a variant (record and f16 arms: scalar, avx2, avx512, neon; ternary: as in gemv)"});
  return k;
}

}  // namespace

void register_lattice_kind() {
  KindInfo scale{"lattice-scale",
                 "the Λ24 record layouts beside an fp16 control and the ternary layouts: bits per weight against fraction of the bound",
                 scale_keys(), {}, validate_scale, run_scale, scale_units};
  scale.small_overrides = timed_small_overrides({"shape.rows=64", "shape.cols=256"});
  register_kind(std::move(scale));
}

}  // namespace ternlab::experiments
