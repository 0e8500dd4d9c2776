#include "kernels/thread_pool.hpp"

#include <pthread.h>
#include <sched.h>

#include "common/error.hpp"

namespace ternlab {

namespace {
constexpr int kSpinIterations = 1 << 14;  // ~tens of microseconds before sleeping
}

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
  stop_.store(true, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  generation_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::run(const std::function<void(int)>& fn) {
  if (n_ == 1) {
    fn(0);
    return;
  }
  job_ = &fn;
  has_error_.store(false, std::memory_order_relaxed);
  pending_.store(n_ - 1, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  generation_.notify_all();
  try {
    fn(0);
  } catch (...) {
    if (!has_error_.exchange(true)) error_ = std::current_exception();
  }
  for (int spins = 0; pending_.load(std::memory_order_acquire) != 0; ++spins)
    if (spins > kSpinIterations) std::this_thread::yield();
  job_ = nullptr;
  if (has_error_.load()) std::rethrow_exception(error_);
}

void ThreadPool::worker(int t) {
  if (pin_) pin_current_thread(t);
  std::uint64_t seen = 0;
  for (;;) {
    std::uint64_t g = generation_.load(std::memory_order_acquire);
    for (int spins = 0; g == seen && spins < kSpinIterations; ++spins) g = generation_.load(std::memory_order_acquire);
    if (g == seen) {
      generation_.wait(seen, std::memory_order_acquire);
      continue;
    }
    seen = g;
    if (stop_.load(std::memory_order_acquire)) return;
    try {
      (*job_)(t);
    } catch (...) {
      if (!has_error_.exchange(true)) error_ = std::current_exception();
    }
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

}  // namespace ternlab
