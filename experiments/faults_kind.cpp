// The faults kind: per load mode (mmap, memory), the page faults and wall time of the load, the
// first decoded token and the later ones, with the file dropped from the page cache before each
// load (or as the cache stands); every arm's greedy tokens checked against the baseline's.
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <span>
#include <sstream>
#include <utility>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/strings.hpp"
#include "common/table.hpp"
#include "experiments/arms.hpp"
#include "experiments/kinds.hpp"
#include "experiments/model_arms.hpp"
#include "experiments/report.hpp"
#include "experiments/run_context.hpp"
#include "model/experiments.hpp"
#include "model/sampler.hpp"

namespace ternlab::experiments {

namespace {

using model::Model;

// The kind's own keys, each with its default and bounds.
namespace faults_key {
constexpr IntegerKey tokens{"tokens", 8, 2, 1 << 16};
constexpr BooleanKey drop_cache{"drop_cache", true};
constexpr IntegerKey rounds = key::rounds(3), warmup = key::warmup(0);
}  // namespace faults_key

struct FaultCount {
  long minor = 0, major = 0;
};
// Process-wide (every pool thread's faults count): RUSAGE_SELF.
FaultCount faults_now() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return {u.ru_minflt, u.ru_majflt};
}

// The fraction of the file's pages in the page cache (mincore over a mapping that touches none), or
// -1 when the file cannot be mapped.
double cached_fraction(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  double out = -1;
  struct stat st {};
  if (fstat(fd, &st) == 0 && st.st_size > 0) {
    const auto size = std::size_t(st.st_size);
    void* p = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    if (p != MAP_FAILED) {
      const auto page = std::size_t(sysconf(_SC_PAGESIZE));
      std::vector<unsigned char> in((size + page - 1) / page);
      if (mincore(p, size, in.data()) == 0) {
        std::size_t n = 0;
        for (unsigned char c : in) n += c & 1u;
        out = double(n) / double(in.size());
      }
      munmap(p, size);
    }
  }
  ::close(fd);
  return out;
}

// Asks the kernel to evict the file's clean pages (no root needed; it may keep pages another process
// maps or that are dirty, so the fraction left is measured, never assumed).
void drop_page_cache(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, ": cannot open to drop its page cache (", std::strerror(errno), ")");
  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

// One arm, one round: load, the first decoded token, the later ones; wall time and page faults of each.
struct FaultSample {
  double cached_before_load = -1;  // page-cache fraction of the file after the drop (or as found)
  double load_s = 0, first_s = 0, later_s = 0;  // later: per token
  FaultCount load, first, later;                 // later: summed over the later tokens
  std::vector<std::int32_t> tokens;
  std::string failure;
};

FaultSample fault_sample(const RunSpec& run, const ModelArm& arm, bool drop, int n_tokens) {
  using clock = std::chrono::steady_clock;
  const auto secs = [](clock::time_point a, clock::time_point b) { return std::chrono::duration<double>(b - a).count(); };
  const auto minus = [](FaultCount a, FaultCount b) { return FaultCount{a.minor - b.minor, a.major - b.major}; };
  FaultSample s;
  if (drop) drop_page_cache(arm.path);
  s.cached_before_load = cached_fraction(arm.path);
  const model::LoadOptions o = load_options(run, arm);
  FaultCount f0 = faults_now();
  auto t0 = clock::now();
  std::unique_ptr<Model> model;
  try {
    model = Model::load(arm.path, o);
  } catch (const Error& e) {
    s.failure = cat("load: ", e.what());
    return s;
  }
  auto t1 = clock::now();
  FaultCount f1 = faults_now();
  s.load_s = secs(t0, t1);
  s.load = minus(f1, f0);
  model::Session session = model->new_session();
  std::int32_t next = model::random_tokens(1, model->config().n_vocab, run_seed(run) + 5).front();
  for (int i = 0; i < n_tokens; ++i) {
    const FaultCount fa = faults_now();
    const auto ta = clock::now();
    const std::vector<float> logits = model->forward(session, std::span(&next, 1));
    const auto tb = clock::now();
    const FaultCount d = minus(faults_now(), fa);
    next = model::argmax(logits);
    s.tokens.push_back(next);
    if (i == 0) {
      s.first_s = secs(ta, tb);
      s.first = d;
    } else {
      s.later_s += secs(ta, tb) / (n_tokens - 1);
      s.later.minor += d.minor;
      s.later.major += d.major;
    }
  }
  return s;
}

RunReport run_faults(const RunSpec& run, RunContext& ctx) {
  const int n_tokens = int(faults_key::tokens(run));
  const int rounds = int(faults_key::rounds(run));
  const int warmup = int(faults_key::warmup(run));
  const bool drop = faults_key::drop_cache(run);
  ModelArms m = plan_arms(run, ctx, 1, 1);
  // Rounds alternate the arm order, so neither load mode always runs on a cache the other warmed.
  std::vector<std::vector<FaultSample>> samples(m.arms.size());
  for (int r = 0; r < warmup + rounds; ++r)
    for (std::size_t j = 0; j < m.arms.size(); ++j) {
      const std::size_t i = r % 2 ? m.arms.size() - 1 - j : j;
      FaultSample sample = fault_sample(run, m.arms[i], drop, n_tokens);
      if (r >= warmup || !sample.failure.empty()) samples[i].push_back(std::move(sample));
      ctx.progress.step("faults " + m.arms[i].name);
    }
  // Verified: every arm's greedy tokens, every round, equal the baseline's first round.
  const std::vector<std::int32_t>& want = samples[m.baseline].front().tokens;
  for (std::size_t i = 0; i < m.arms.size(); ++i)
    for (const FaultSample& s : samples[i]) {
      if (!s.failure.empty() && m.arms[i].failure.empty()) m.arms[i].failure = s.failure;
      if (s.failure.empty() && s.tokens != want && m.arms[i].failure.empty())
        m.arms[i].failure = cat("greedy tokens differ from the baseline '", m.arms[m.baseline].name, "'");
    }

  RunReport rep;
  rep.title = run.name();
  std::ostringstream md;
  md << "### " << rep.title << "\n\n" << m.source.describe() << "\n\n";
  md << "kind faults: per arm and round, the model loaded " << (drop ? "after asking the kernel to drop the file from the page cache "
                                                                        "(posix_fadvise DONTNEED), "
                                                                      : "as the page cache stands, ")
     << "then " << n_tokens << " greedy decode tokens from an empty context; wall time and page faults (getrusage RUSAGE_SELF, "
     << "all threads) of the load, the first token and the later ones. " << rounds << " rounds kept after " << warmup
     << " warm-up, arm order reversed every other "
     << "round; cells are medians over rounds. Every arm's tokens checked against the baseline '" << m.arms[m.baseline].name << "'.\n\n";
  Table table({{"arm"}, {"layout"}, {"load"}, {"thr", Align::right}, {"tokens"}, {"cached at load", Align::right},
               {"load ms", Align::right}, {"load minor", Align::right}, {"load major", Align::right}, {"1st token ms", Align::right},
               {"1st minor", Align::right}, {"1st major", Align::right}, {"later ms/token", Align::right},
               {"later minor/token", Align::right}, {"later major/token", Align::right}});
  rep.rows.columns = {"run", "round", "arm", "layout", "load", "threads", "cached_at_load", "load_seconds", "load_minor", "load_major",
                      "first_seconds", "first_minor", "first_major", "later_seconds_per_token", "later_minor_per_token",
                      "later_major_per_token"};
  Json js = {{"index", run.index}, {"name", rep.title}, {"kind", run.kind}, {"model", m.source.path}, {"preset", m.source.preset},
             {"seed", m.source.seed}, {"baseline", m.arms[m.baseline].name}, {"tokens", n_tokens}, {"rounds", rounds},
             {"drop_cache", drop}, {"sweep", sweep_json(run)}, {"arms", Json::array()}};
  const double later_n = double(n_tokens - 1);
  for (std::size_t i = 0; i < m.arms.size(); ++i) {
    const ModelArm& a = m.arms[i];
    if (!a.failure.empty()) rep.ok = false;
    std::map<std::string, std::vector<double>> v;
    for (std::size_t r = 0; r < samples[i].size(); ++r) {
      const FaultSample& s = samples[i][r];
      if (!s.failure.empty()) continue;
      const std::vector<std::pair<std::string, double>> cells = {
          {"cached_at_load", s.cached_before_load}, {"load_ms", s.load_s * 1e3}, {"load_minor", double(s.load.minor)},
          {"load_major", double(s.load.major)}, {"first_ms", s.first_s * 1e3}, {"first_minor", double(s.first.minor)},
          {"first_major", double(s.first.major)}, {"later_ms", s.later_s * 1e3}, {"later_minor", s.later.minor / later_n},
          {"later_major", s.later.major / later_n}};
      for (const auto& [k, x] : cells) v[k].push_back(x);
      rep.rows.add({run.index, std::int64_t(r), a.name, a.layout, a.load, a.threads, s.cached_before_load, s.load_s,
                    std::int64_t(s.load.minor), std::int64_t(s.load.major), s.first_s, std::int64_t(s.first.minor),
                    std::int64_t(s.first.major), s.later_s, s.later.minor / later_n, s.later.major / later_n});
    }
    Json arm = arm_json_head(a);
    std::vector<std::string> row = {a.name, a.layout, a.load, threads_cell(a.threads), a.failure.empty() ? "= baseline" : "**FAILED**"};
    for (const char* k : {"cached_at_load", "load_ms", "load_minor", "load_major", "first_ms", "first_minor", "first_major", "later_ms",
                          "later_minor", "later_major"}) {
      const Stat st = stat_of(v[k]);
      arm[k] = stat_json(st);
      row.push_back(!st.valid ? "—" : std::string(k) == "cached_at_load" ? (st.median < 0 ? "?" : cat(fixed_text(100 * st.median, 0), "%")) : sig(st.median));
    }
    table.add(std::move(row));
    js["arms"].push_back(std::move(arm));
  }
  md << table.markdown();
  for (const ModelArm& a : m.arms)
    if (!a.failure.empty()) md << "\n- " << a.name << ": " << a.failure;
  md << "\ncached at load: the fraction of the file's pages in the page cache just before the load (mincore); "
     << (drop ? "above 0% means the drop did not take (pages mapped elsewhere or the kernel kept them). " : "")
     << "A major fault read the page from disk, a minor one found it in memory. The loader copies every tensor out of the "
        "file (the embedding table too) and releases the mapping's pages, so tokens after the load fault no page of the file.\n";
  rep.markdown = md.str();
  rep.json = std::move(js);
  return rep;
}

}  // namespace

// Its small overrides take the tiny preset: micro's 260-row output matrix does not fit t2r's 16-row blocks.
void register_faults_kind() {
  KindInfo faults = model_kind(
      "faults", "page faults and wall time of the load, the first decoded token and later ones, per load mode (mmap, memory)",
      {faults_key::tokens.spec("greedy decode tokens after the load", "; at least 2"),
       faults_key::drop_cache.spec("evict the file from the page cache before each load")},
      [](const RunSpec& r) {
        faults_key::tokens(r);
        faults_key::drop_cache(r);
      },
      run_faults, [](const RunSpec& r) { return std::int64_t(r.arms.size()) * (faults_key::rounds(r) + faults_key::warmup(r)); });
  faults.small_overrides = timed_small_overrides({"preset=tiny", "tokens=3"});
  register_kind(std::move(faults));
}

}  // namespace ternlab::experiments
