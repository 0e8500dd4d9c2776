#include "kernels/thread_pool.hpp"

#include <pthread.h>
#include <sched.h>

#include <chrono>
#include <utility>

#include "common/error.hpp"

namespace ternlab {

namespace {
// How long a worker spins for the next job before it sleeps. A decode token runs hundreds of jobs
// with short serial stretches between them (norms, the recurrent update's per-token steps); a
// worker asleep for those must be woken by the kernel, which on a VM costs tens of microseconds a
// job (27B decode, 2 threads: ~40 us a Hadamard job at a 4 us spin).
constexpr auto kSpinTime = std::chrono::microseconds(300);
constexpr int kSpinCheck = 256;  // spins between clock reads

// The spin-wait hint (x86 pause, Arm yield) each check of a spin loop should carry: it leaves a
// sibling hardware thread (a guest's two vCPUs may share a core) the core's issue slots, and on x86
// leaving the loop costs no memory-order pipeline flush.
inline void spin_pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

// Spins until `done()` or kSpinTime has passed; returns done().
template <class F>
bool spin_until(F done) {
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    for (int i = 0; i < kSpinCheck; ++i) {
      if (done()) return true;
      spin_pause();
    }
    if (std::chrono::steady_clock::now() - start > kSpinTime) return done();
  }
}
}  // namespace

bool pin_current_thread(int cpu) {
#ifdef __linux__
  const int ncpu = int(std::thread::hardware_concurrency());
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(ncpu > 0 ? cpu % ncpu : cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
#else
  (void)cpu;
  return false;
#endif
}

ThreadPool::ThreadPool(int threads, bool pin) : n_(threads), pin_(pin) {
  if (threads < 1) fail("thread pool: ", threads, " threads requested, need at least 1");
  if (pin_) pin_current_thread(0);
  workers_.reserve(std::size_t(n_ - 1));
  for (int t = 1; t < n_; ++t) workers_.emplace_back([this, t] { worker(t); });
}

ThreadPool::~ThreadPool() {
  try {
    settle();
  } catch (...) {  // a detached job's exception that no later job picked up: nobody is left to take it
  }
  stop_.store(true, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  generation_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::record_error() {
  if (!has_error_.exchange(true)) error_ = std::current_exception();
}

void ThreadPool::settle() {
  const auto finished = [this] { return pending_.load(std::memory_order_acquire) == 0; };
  if (!spin_until(finished))
    while (!finished()) std::this_thread::yield();
  job_ = nullptr;
  if (has_error_.exchange(false)) std::rethrow_exception(std::exchange(error_, nullptr));
}

void ThreadPool::publish(const std::function<void(int)>& fn) {
  settle();
  job_ = &fn;
  pending_.store(n_ - 1, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  generation_.notify_all();
}

void ThreadPool::run(const std::function<void(int)>& fn) {
  if (n_ == 1) {
    fn(0);
    return;
  }
  publish(fn);
  try {
    fn(0);
  } catch (...) {
    record_error();
  }
  settle();
}

void ThreadPool::run_detached(std::function<void(int)> fn) {
  if (n_ == 1) {
    fn(0);
    return;
  }
  settle();  // before detached_ is replaced: the workers of the last detached job may still read it
  detached_ = std::move(fn);
  publish(detached_);
  try {
    detached_(0);
  } catch (...) {
    record_error();
  }
}

void ThreadPool::worker(int t) {
  if (pin_) pin_current_thread(t);
  std::uint64_t seen = 0;
  for (;;) {
    std::uint64_t g = seen;
    spin_until([&] { return (g = generation_.load(std::memory_order_acquire)) != seen; });
    if (g == seen) {
      generation_.wait(seen, std::memory_order_acquire);
      continue;
    }
    seen = g;
    if (stop_.load(std::memory_order_acquire)) return;
    try {
      (*job_)(t);
    } catch (...) {
      record_error();
    }
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void SharedRanges::reset(std::int64_t items, int threads, std::int64_t chunk, bool steal) {
  if (items < 0 || items >= (std::int64_t(1) << 32) || threads < 1 || chunk < 1)
    fail("SharedRanges: ", items, " items over ", threads, " threads in chunks of ", chunk, " (need 0 <= items < 2^32, threads >= 1, chunk >= 1)");
  if (std::size_t(threads) > shares_.size()) shares_ = std::vector<Share>(std::size_t(threads));
  threads_ = threads;
  chunk_ = chunk;
  steal_ = steal;
  for (int t = 0; t < threads; ++t) {
    const auto [first, last] = ThreadPool::split(items, t, threads);
    shares_[std::size_t(t)].range.store(pack(first, last), std::memory_order_relaxed);
  }
}

bool SharedRanges::take_front(Share& s, std::int64_t& first, std::int64_t& last) const {
  std::uint64_t r = s.range.load(std::memory_order_relaxed);
  for (;;) {
    const std::int64_t f = std::int64_t(r & 0xffffffffu), l = std::int64_t(r >> 32);
    if (f >= l) return false;
    const std::int64_t taken = std::min(l, f + chunk_);
    if (s.range.compare_exchange_weak(r, pack(taken, l), std::memory_order_relaxed)) {
      first = f;
      last = taken;
      return true;
    }
  }
}

bool SharedRanges::take_back(Share& s, std::int64_t& first, std::int64_t& last) const {
  std::uint64_t r = s.range.load(std::memory_order_relaxed);
  for (;;) {
    const std::int64_t f = std::int64_t(r & 0xffffffffu), l = std::int64_t(r >> 32);
    if (f >= l) return false;
    const std::int64_t left = std::max(f, l - chunk_);
    if (s.range.compare_exchange_weak(r, pack(f, left), std::memory_order_relaxed)) {
      first = left;
      last = l;
      return true;
    }
  }
}

bool SharedRanges::next(int t, std::int64_t& first, std::int64_t& last) {
  if (take_front(shares_[std::size_t(t)], first, last)) return true;
  for (int d = 1; steal_ && d < threads_; ++d)  // the neighbours first: with more threads, the nearer shares
    if (take_back(shares_[std::size_t((t + d) % threads_)], first, last)) return true;
  return false;
}

}  // namespace ternlab
