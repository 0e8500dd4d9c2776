#include "experiments/ceilings.hpp"

#include <atomic>
#include <chrono>
#include <vector>

#include "common/error.hpp"
#include "kernels/cpu.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif
#if defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace ternlab::experiments {

namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Four independent accumulators keep the loop limited by loads, not by the add chain.
std::uint64_t stream_sum(const std::uint64_t* p, std::int64_t n) {
  std::uint64_t a = 0, b = 0, c = 0, d = 0;
  std::int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    a += p[i];
    b += p[i + 1];
    c += p[i + 2];
    d += p[i + 3];
  }
  for (; i < n; ++i) a += p[i];
  return a + b + c + d;
}

std::uint64_t compute_scalar(std::int64_t macs) {
  // Eight independent int32 chains on values that never leave registers.
  std::int32_t acc[8] = {};
  std::int8_t w[8] = {1, -1, 0, 1, 1, 0, -1, 1}, x[8] = {3, 5, -7, 9, 11, -13, 15, 17};
  for (std::int64_t i = 0; i < macs / 8; ++i)
    for (int j = 0; j < 8; ++j) {
      acc[j] += w[j] * x[j];
      x[j] = std::int8_t(x[j] ^ std::int8_t(i));  // keeps the compiler from folding the loop
    }
  std::uint64_t s = 0;
  for (int j = 0; j < 8; ++j) s += std::uint64_t(acc[j]);
  return s;
}

#if defined(__x86_64__)
// ggml's x86 int8 dot: vpmaddubsw (u8 x s8 -> s16 pairs) then vpmaddwd into int32, 32 MACs each.
__attribute__((target("avx2"))) std::uint64_t compute_avx2(std::int64_t macs) {
  __m256i acc0 = _mm256_setzero_si256(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i u = _mm256_set1_epi8(2), s0 = _mm256_set1_epi8(3), s1 = _mm256_set1_epi8(-5);
  __m256i s2 = _mm256_set1_epi8(7), s3 = _mm256_set1_epi8(-9);
  for (std::int64_t i = 0; i < macs / 128; ++i) {
    acc0 = _mm256_add_epi32(acc0, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s0), ones));
    acc1 = _mm256_add_epi32(acc1, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s1), ones));
    acc2 = _mm256_add_epi32(acc2, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s2), ones));
    acc3 = _mm256_add_epi32(acc3, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s3), ones));
    __asm__ volatile("" : "+x"(u), "+x"(s0), "+x"(s1), "+x"(s2), "+x"(s3));  // opaque operands
  }
  const __m256i t = _mm256_add_epi32(_mm256_add_epi32(acc0, acc1), _mm256_add_epi32(acc2, acc3));
  alignas(32) std::int32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), t);
  std::uint64_t s = 0;
  for (std::int32_t v : lanes) s += std::uint64_t(v);
  return s;
}
#endif

#if defined(__aarch64__)
__attribute__((target("arch=armv8.2-a+dotprod"))) std::uint64_t compute_dotprod(std::int64_t macs) {
  int32x4_t acc0 = vdupq_n_s32(0), acc1 = acc0, acc2 = acc0, acc3 = acc0;
  int8x16_t w = vdupq_n_s8(1), x0 = vdupq_n_s8(3), x1 = vdupq_n_s8(-5), x2 = vdupq_n_s8(7), x3 = vdupq_n_s8(-9);
  for (std::int64_t i = 0; i < macs / 64; ++i) {
    acc0 = vdotq_s32(acc0, w, x0);
    acc1 = vdotq_s32(acc1, w, x1);
    acc2 = vdotq_s32(acc2, w, x2);
    acc3 = vdotq_s32(acc3, w, x3);
    __asm__ volatile("" : "+w"(w), "+w"(x0), "+w"(x1), "+w"(x2), "+w"(x3));
  }
  return std::uint64_t(vaddvq_s32(vaddq_s32(vaddq_s32(acc0, acc1), vaddq_s32(acc2, acc3))));
}
#endif

std::uint64_t compute_loop(std::int64_t macs) {
#if defined(__x86_64__)
  if (isa_supported(Isa::avx2)) return compute_avx2(macs);
#endif
#if defined(__aarch64__)
  if (isa_supported(Isa::dotprod)) return compute_dotprod(macs);
#endif
  return compute_scalar(macs);
}

}  // namespace

MemoryCeiling::MemoryCeiling(std::int64_t bytes) {
  if (bytes < 4096) fail("memory ceiling: buffer of ", bytes, " bytes is too small (need at least 4 KiB)");
  buffer_.resize(std::size_t(bytes / 4096 * 4096 / 8));
  for (std::size_t i = 0; i < buffer_.size(); ++i) buffer_[i] = i;  // touch every page once
}

std::uint64_t MemoryCeiling::sum(ThreadPool& pool) const {
  std::vector<std::uint64_t> parts(std::size_t(pool.size()) * 8);  // one cache line per thread
  const auto n = std::int64_t(buffer_.size());
  pool.run([&](int t) {
    const auto [a, b] = ThreadPool::split(n, t, pool.size());
    parts[std::size_t(t) * 8] = stream_sum(buffer_.data() + a, b - a);
  });
  std::uint64_t s = 0;
  for (int t = 0; t < pool.size(); ++t) s += parts[std::size_t(t) * 8];
  return s;
}

std::uint64_t MemoryCeiling::expected_sum() const {
  const std::uint64_t n = buffer_.size();
  return n * (n - 1) / 2;
}

double MemoryCeiling::measure(ThreadPool& pool) const {
  const double t0 = now_seconds();
  const std::uint64_t s = sum(pool);
  const double t = now_seconds() - t0;
  if (s != expected_sum()) fail("memory ceiling: streaming sum ", s, " != ", expected_sum(), " (memory corrupted?)");
  return double(bytes()) / t / 1e9;
}

double measure_int8_compute(ThreadPool& pool, std::int64_t per_thread) {
  std::vector<std::uint64_t> sink(std::size_t(pool.size()) * 8);
  const double t0 = now_seconds();
  pool.run([&](int t) { sink[std::size_t(t) * 8] = compute_loop(per_thread); });
  const double t = now_seconds() - t0;
  static std::atomic<std::uint64_t> keep{0};
  for (auto v : sink) keep.fetch_add(v, std::memory_order_relaxed);
  return double(per_thread) * pool.size() / t / 1e9;
}

std::string int8_compute_isa() {
#if defined(__x86_64__)
  if (isa_supported(Isa::avx2)) return "avx2 vpmaddubsw+vpmaddwd";
#endif
#if defined(__aarch64__)
  if (isa_supported(Isa::dotprod)) return "dotprod sdot";
#endif
  return "scalar";
}

}  // namespace ternlab::experiments
