#include "kernels/measure.hpp"

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "common/aligned.hpp"
#include "kernels/x86_kernels.hpp"

namespace ternlab {

namespace {

volatile std::uint64_t g_sink = 0;

struct Buffer {
  std::uint64_t* data = nullptr;
  std::size_t words = 0;
  ~Buffer() { ::operator delete(data, std::align_val_t{kAlign}); }
};

// One buffer, grown on demand and first touched by the pool's own threads (so its pages sit where
// they read them), kept for every later pass.
const Buffer& stream_buffer(ThreadPool& pool, std::size_t bytes) {
  static Buffer b;
  static std::mutex mu;
  const std::lock_guard lock(mu);
  const std::size_t words = bytes / 8;
  if (b.words < words) {
    ::operator delete(b.data, std::align_val_t{kAlign});
    b.data = static_cast<std::uint64_t*>(::operator new(words * 8, std::align_val_t{kAlign}));
    b.words = words;
    pool.run([&](int t) {
      const auto [w0, w1] = ThreadPool::split(std::int64_t(words), t, pool.size());
      for (std::int64_t i = w0; i < w1; ++i) b.data[i] = std::uint64_t(i) * 0x9e3779b97f4a7c15ull;
    });
  }
  return b;
}

std::uint64_t stream_sum(const std::uint64_t* p, std::int64_t n) {
  // Four independent sums: the loop is load-bound, the compiler vectorises it with the baseline ISA.
  std::uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  std::int64_t i = 0;
  for (; i + 4 <= n; i += 4) s0 += p[i], s1 += p[i + 1], s2 += p[i + 2], s3 += p[i + 3];
  for (; i < n; ++i) s0 += p[i];
  return s0 + s1 + s2 + s3;
}

std::int64_t scalar_dot_loop(std::int64_t iters) {
  std::int32_t acc[detail::kDotChains] = {};
  std::int8_t a = 3, b = -5;
  for (std::int64_t i = 0; i < iters; ++i) {
    __asm__ volatile("" : "+r"(a));
    for (int c = 0; c < detail::kDotChains; ++c) acc[c] += a * b;
  }
  std::int64_t s = 0;
  for (int v : acc) s += v;
  return s;
}

}  // namespace

double read_ceiling_gbs(ThreadPool& pool, std::size_t bytes) {
  const Buffer& b = stream_buffer(pool, bytes);
  const std::int64_t words = std::int64_t(bytes / 8);
  std::atomic<std::uint64_t> sink{0};
  const double s = seconds_of([&] {
    pool.run([&](int t) {
      const auto [w0, w1] = ThreadPool::split(words, t, pool.size());
      sink += stream_sum(b.data + w0, w1 - w0);
    });
  });
  g_sink = sink.load();  // keeps the sum observable
  return double(words * 8) / s / 1e9;
}

ComputeCeiling int8_compute_ceiling(ThreadPool& pool, Isa ceiling) {
  std::int64_t (*loop)(std::int64_t) = &scalar_dot_loop;
  double macs_per_iter = detail::kDotChains;
  std::string instruction = "scalar imul";
  const auto allowed = [&](Isa i) { return isa_supported(i) && int(i) <= int(ceiling); };
  if (allowed(Isa::avx512vnni)) {
    loop = &detail::avx512_dpbusd_loop, macs_per_iter = 64.0 * detail::kDotChains, instruction = "vpdpbusd zmm";
  } else if (allowed(Isa::avx2)) {
    loop = &detail::avx2_maddubs_loop, macs_per_iter = 32.0 * detail::kDotChains, instruction = "vpmaddubsw ymm";
  }
  const std::int64_t iters = 20'000'000;
  std::atomic<std::int64_t> sink{0};
  pool.run([&](int) { sink += loop(1000); });  // warm up clocks and code
  const double s = seconds_of([&] { pool.run([&](int) { sink += loop(iters); }); });
  g_sink = std::uint64_t(sink.load());
  return {macs_per_iter * double(iters) * pool.size() / s / 1e9, instruction};
}

ComputeCeiling int8_compute_ceiling(ThreadPool& pool) { return int8_compute_ceiling(pool, best_isa()); }

}  // namespace ternlab
