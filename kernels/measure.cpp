#include "kernels/measure.hpp"

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <ranges>
#include <vector>

#include "common/error.hpp"
#include "common/strings.hpp"
#include "kernels/targets/x86.hpp"

#if defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace ternlab {

namespace {

volatile std::uint64_t g_sink = 0;

// Four independent sums: the loop is load-bound, the compiler vectorises it with the baseline ISA.
std::uint64_t portable_stream_sum(const std::uint64_t* p, std::int64_t n) {
  std::uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  std::int64_t i = 0;
  for (; i + 4 <= n; i += 4) s0 += p[i], s1 += p[i + 1], s2 += p[i + 2], s3 += p[i + 3];
  for (; i < n; ++i) s0 += p[i];
  return s0 + s1 + s2 + s3;
}

// kDotChains independent int32 multiply-add chains on values that never leave registers. Each
// chain multiplies its own accumulator, so no two chains compute the same product (a shared a * b
// is computed once by the compiler and the loop measures additions).
std::int64_t scalar_dot_loop(std::int64_t iters) {
  std::uint32_t acc[detail::kDotChains];  // unsigned: the chains wrap, which is defined
  for (int c = 0; c < detail::kDotChains; ++c) acc[c] = std::uint32_t(c + 1);
  std::uint32_t a = 3;
  for (std::int64_t i = 0; i < iters; ++i) {
    __asm__ volatile("" : "+r"(a));  // opaque operand: the loop cannot be folded
    for (int c = 0; c < detail::kDotChains; ++c) acc[c] = acc[c] * a + 1;
  }
  std::int64_t s = 0;
  for (std::uint32_t v : acc) s += v;
  return s;
}

#if defined(__aarch64__)
// sdot / smmla chains: each accumulates into its own register, so none can be shared or folded;
// kDotChains chains cover the instruction's latency on every core we know of. The loop is compiled
// with both extensions so that either Op inlines; it emits only the instruction its Op names, so the
// sdot loop still runs on a CPU without i8mm.
struct Sdot {  // 16 MACs
  __attribute__((target("arch=armv8.2-a+dotprod"))) static int32x4_t apply(int32x4_t a, int8x16_t w, int8x16_t x) {
    return vdotq_s32(a, w, x);
  }
};
struct Smmla {  // a 2x8 by 8x2 int8 product: 32 MACs
  __attribute__((target("arch=armv8.2-a+dotprod+i8mm"))) static int32x4_t apply(int32x4_t a, int8x16_t w,
                                                                                 int8x16_t x) {
    return vmmlaq_s32(a, w, x);
  }
};
template <class Op>
__attribute__((target("arch=armv8.2-a+dotprod+i8mm"))) std::int64_t neon_dot_loop(std::int64_t iters) {
  int32x4_t acc[detail::kDotChains];
  for (auto& a : acc) a = vdupq_n_s32(0);
  int8x16_t w = vdupq_n_s8(1), x = vdupq_n_s8(-5);
  for (std::int64_t i = 0; i < iters; ++i) {
    for (auto& a : acc) a = Op::apply(a, w, x);
    __asm__ volatile("" : "+w"(w), "+w"(x));
  }
  int32x4_t s = acc[0];
  for (int c = 1; c < detail::kDotChains; ++c) s = vaddq_s32(s, acc[c]);
  return vaddvq_s32(s);
}
#endif

// Every read loop this CPU runs; the ceiling is the best of them (one core's bandwidth may be bound
// by the line fills it keeps in flight, so streams and prefetch can matter more than width).
const std::vector<detail::ReadLoop>& read_loops() {
  static const std::vector<detail::ReadLoop> loops = [] {
    std::vector<detail::ReadLoop> v{{"portable, 4 sums", &portable_stream_sum}};
#if defined(__x86_64__)
    if (isa_supported(Isa::avx2)) v = detail::avx2_read_loops();
    if (isa_supported(Isa::avx512vnni))
      for (const detail::ReadLoop& l : detail::avx512_read_loops()) v.push_back(l);
#endif
    return v;
  }();
  return loops;
}

// Sum of the words i in [a, b), which hold i.
std::uint64_t closed_sum(std::uint64_t a, std::uint64_t b) { return (a + b - 1) * (b - a) / 2; }

struct DotLoop {
  std::int64_t (*run)(std::int64_t iters);
  double macs_per_iter;
  const char* instruction;
};

// Every int8 multiply-accumulate loop this CPU runs at or below the ceiling, widest first.
std::vector<DotLoop> dot_loops(Isa ceiling) {
  const auto allowed = [&](Isa i) { return isa_supported(i) && int(i) <= int(ceiling); };
  std::vector<DotLoop> v;
#if defined(__x86_64__)
  if (allowed(Isa::avx512vnni)) {
    // The tile unit where the process may use it (the broadcast strategy's tile gemm runs there):
    // several times the vector dots' rate, so the ceiling of a core that has it.
    if (cpu_features().amx_int8) v.push_back({&detail::amx_tdpbusd_loop, 16384.0 * detail::kTileDots, "tdpbusd tile"});
    v.push_back({&detail::avx512_dpbusd_loop, 64.0 * detail::kDotChains, "vpdpbusd zmm"});
    v.push_back({&detail::avx512_dpbusd_ymm_loop, 32.0 * detail::kDotChains, "vpdpbusd ymm"});
  }
  if (allowed(Isa::avx2)) v.push_back({&detail::avx2_maddubs_loop, 32.0 * detail::kDotChains, "vpmaddubsw ymm"});
#endif
#if defined(__aarch64__)
  if (allowed(Isa::i8mm)) v.push_back({&neon_dot_loop<Smmla>, 32.0 * detail::kDotChains, "smmla"});
  if (allowed(Isa::dotprod)) v.push_back({&neon_dot_loop<Sdot>, 16.0 * detail::kDotChains, "sdot"});
#endif
  (void)allowed;
  if (v.empty()) v.push_back({&scalar_dot_loop, double(detail::kDotChains), "scalar imul"});
  return v;
}

}  // namespace

MemoryCeiling::MemoryCeiling(std::int64_t bytes, ThreadPool* first_touch) {
  if (bytes < 4096) fail("memory ceiling: buffer of ", bytes, " bytes is too small (need at least 4 KiB)");
  buffer_.resize(std::size_t(bytes / 4096 * 4096 / 8));
  const auto n = std::int64_t(buffer_.size());
  std::uint64_t* p = buffer_.data();
  const auto touch = [p](std::int64_t a, std::int64_t b) {
    for (std::int64_t i = a; i < b; ++i) p[i] = std::uint64_t(i);
  };
  if (first_touch) {
    ThreadPool& pool = *first_touch;
    pool.run([&](int t) {
      const auto [a, b] = ThreadPool::split(n, t, pool.size());
      touch(a, b);
    });
  } else {
    touch(0, n);
  }
}

std::uint64_t MemoryCeiling::sum_words(ThreadPool& pool, int loop, std::int64_t a, std::int64_t b) const {
  std::vector<std::uint64_t> parts(std::size_t(pool.size()) * 8);  // one cache line per thread
  const detail::ReadLoop& l = read_loops()[std::size_t(loop)];
  pool.run([&](int t) {
    const auto [lo, hi] = ThreadPool::split(b - a, t, pool.size());
    parts[std::size_t(t) * 8] = l.sum(buffer_.data() + a + lo, hi - lo);
  });
  std::uint64_t s = 0;
  for (int t = 0; t < pool.size(); ++t) s += parts[std::size_t(t) * 8];
  return s;
}

std::uint64_t MemoryCeiling::sum(ThreadPool& pool) const { return sum_words(pool, 0, 0, std::int64_t(buffer_.size())); }

std::vector<std::string> MemoryCeiling::loops() {
  std::vector<std::string> names;
  for (const detail::ReadLoop& l : read_loops()) names.emplace_back(l.name);
  return names;
}

std::uint64_t MemoryCeiling::expected_sum() const { return closed_sum(0, buffer_.size()); }

ReadCeiling MemoryCeiling::measure_best(ThreadPool& pool) const {
  ReadCeiling best;
  for (const ReadCeiling& r : measure_each(pool))
    if (r.gbs > best.gbs) best = r;
  return best;
}

std::vector<ReadCeiling> MemoryCeiling::measure_each(ThreadPool& pool) const {
  const int k = int(read_loops().size());
  const auto n = std::int64_t(buffer_.size());
  std::vector<ReadCeiling> each;
  for (int l = 0; l < k; ++l) {
    // Each loop reads its own part of the buffer, a different one each pass, so none reads what
    // the loop before it left in the caches.
    const auto [a, b] = ThreadPool::split(n, (next_part_ + l) % k, k);
    std::uint64_t s = 0;
    const double t = seconds_of([&] { s = sum_words(pool, l, a, b); });
    if (s != closed_sum(std::uint64_t(a), std::uint64_t(b)))
      fail("memory ceiling: streaming sum ", s, " != ", closed_sum(std::uint64_t(a), std::uint64_t(b)), " (",
           read_loops()[std::size_t(l)].name, "; memory corrupted?)");
    each.push_back({double(b - a) * 8 / t / 1e9, read_loops()[std::size_t(l)].name});
  }
  next_part_ = (next_part_ + 1) % k;
  return each;
}

double read_ceiling_gbs(ThreadPool& pool, std::size_t bytes) { return read_ceiling(pool, bytes).gbs; }

ReadCeiling read_ceiling(ThreadPool& pool, std::size_t bytes) {
  static std::unique_ptr<MemoryCeiling> shared;
  static std::mutex mu;
  const std::lock_guard lock(mu);
  const std::int64_t want = std::int64_t(bytes) / 4096 * 4096;
  if (!shared || shared->bytes() != want) {
    shared.reset();  // free the old buffer before touching the new one
    shared = std::make_unique<MemoryCeiling>(std::int64_t(bytes), &pool);
  }
  return shared->measure_best(pool);
}

ComputeCeiling int8_compute_ceiling(ThreadPool& pool, Isa ceiling, std::int64_t macs_per_thread) {
  // The best of every loop: on some cores a narrower instruction issues more MACs a second than
  // the widest (Zen 4 runs 512-bit vpdpbusd as two halves; 256-bit vpmaddubsw may match it).
  ComputeCeiling best;
  for (const ComputeCeiling& c : int8_compute_each(pool, ceiling, macs_per_thread))
    if (c.gmacs > best.gmacs) best = c;
  return best;
}

std::vector<ComputeCeiling> int8_compute_each(ThreadPool& pool, Isa ceiling, std::int64_t macs_per_thread) {
  std::vector<ComputeCeiling> each;
  std::atomic<std::int64_t> sink{0};
  for (const DotLoop& loop : dot_loops(ceiling)) {
    // Without a size, 20M iterations of the vector loops (a tile loop's 85 times their MACs: as many
    // MACs as the zmm loop's).
    const std::int64_t iters = macs_per_thread > 0
                                   ? std::max<std::int64_t>(1, std::int64_t(double(macs_per_thread) / loop.macs_per_iter))
                                   : std::int64_t(20'000'000 * std::min(1.0, 64.0 * detail::kDotChains / loop.macs_per_iter));
    pool.run([&](int) { sink += loop.run(1000); });  // warm up clocks and code
    const double s = seconds_of([&] { pool.run([&](int) { sink += loop.run(iters); }); });
    each.push_back({loop.macs_per_iter * double(iters) * pool.size() / s / 1e9, loop.instruction});
  }
  g_sink = std::uint64_t(sink.load());
  return each;
}

ComputeCeiling int8_compute_ceiling(ThreadPool& pool) { return int8_compute_ceiling(pool, best_isa()); }

std::string int8_compute_instruction(Isa ceiling) {
  const std::vector<DotLoop> loops = dot_loops(ceiling);
  if (loops.size() == 1) return loops.front().instruction;
  return "best of " + join(loops | std::views::transform([](const DotLoop& l) { return std::string(l.instruction); }));
}
std::string int8_compute_instruction() { return int8_compute_instruction(best_isa()); }

double pool_handoff_seconds(ThreadPool& pool, int jobs, int batches) {
  if (jobs <= 0 || batches <= 0) fail("pool_handoff_seconds: ", jobs, " jobs in ", batches, " batches; both must be positive");
  if (pool.size() == 1) return 0;
  std::atomic<std::int64_t> ran{0};  // every job reaches every thread
  double best = 0;
  for (int b = 0; b < batches; ++b) {
    const double s = seconds_of([&] {
      for (int j = 0; j < jobs; ++j) pool.run([&](int) { ran.fetch_add(1, std::memory_order_relaxed); });
    });
    best = b == 0 ? s : std::min(best, s);
  }
  if (ran.load() != std::int64_t(jobs) * batches * pool.size()) fail("pool_handoff_seconds: a job did not reach every thread");
  return best / jobs;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(v.size() / 2), v.end());
  return v[v.size() / 2];
}

}  // namespace ternlab
