// A persistent thread pool: threads are created once and reused, so a timed loop never measures
// thread creation (the blog post's "my benchmark measured thread creation" detour). The caller is
// thread 0; between jobs workers spin for a while (kSpinTime), then sleep on an atomic wait.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>
#include <utility>
#include <vector>

namespace ternlab {

class ThreadPool {
 public:
  // `threads` >= 1 (including the caller). With `pin`, thread t is pinned to CPU t % ncpu.
  explicit ThreadPool(int threads, bool pin = false);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_; }
  bool pinned() const { return pin_; }

  // Runs fn(t) for t = 0..size()-1, t = 0 on the calling thread; returns when all have finished.
  // Exceptions thrown by fn are rethrown here (the first one).
  void run(const std::function<void(int)>& fn);

  // Static partition of `groups` row groups: thread t of n gets [first, last).
  static std::pair<std::int64_t, std::int64_t> split(std::int64_t groups, int t, int n) {
    return {groups * t / n, groups * (t + 1) / n};
  }

  // part(first, last) over [0, items) split among the pool's threads, or all of it on the calling
  // thread when `here` (work too small to pay for the other cores pulling its data and handing
  // results back). Empty ranges are skipped.
  template <class Part>
  void run_split(std::int64_t items, bool here, const Part& part) {
    if (here) {
      if (items > 0) part(std::int64_t(0), items);
      return;
    }
    run([&](int t) {
      const auto [first, last] = split(items, t, n_);
      if (first < last) part(first, last);
    });
  }

 private:
  void worker(int t);
  int n_;
  bool pin_;
  std::vector<std::thread> workers_;
  const std::function<void(int)>* job_ = nullptr;
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
  std::exception_ptr error_;
  std::atomic<bool> has_error_{false};
};

// Pins the calling thread to one CPU (no-op where unsupported). Returns whether it succeeded.
bool pin_current_thread(int cpu);

}  // namespace ternlab
