// A persistent thread pool: threads are created once and reused, so a timed loop never measures
// thread creation (the blog post's "my benchmark measured thread creation" detour). The caller is
// thread 0; between jobs workers spin for a while (kSpinTime), then sleep on an atomic wait.
#pragma once

#include <algorithm>
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
  // Whether the matmuls run on this pool (run_gemv, run_gemm, run_matmuls) let a thread that has
  // finished its share take the others' tails (SharedRanges); off, each thread runs exactly its
  // static share, in one piece. On by default; off is there to measure what it changes.
  bool shares_tails() const { return shares_tails_; }
  void set_shares_tails(bool on) { shares_tails_ = on; }

  // Runs fn(t) for t = 0..size()-1, t = 0 on the calling thread; returns when all have finished.
  // Exceptions thrown by fn are rethrown here (the first one).
  void run(const std::function<void(int)>& fn);

  // Runs fn(t) as run does, but returns once fn(0) has: the workers may still be in theirs. For
  // work whose results nobody waits for, such as fetching a matmul's weights while the caller makes
  // its input; a caller that waited would idle for the slowest worker's fetches. The pool keeps
  // its own copy of fn. The next run or run_detached (or the destructor) first waits for the
  // workers, and rethrows there an exception this job threw.
  void run_detached(std::function<void(int)> fn);

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
  // Waits for the workers' part of the last job; clears and rethrows its first exception.
  void settle();
  // settle(), then hands fn to the workers.
  void publish(const std::function<void(int)>& fn);
  void record_error();
  int n_;
  bool pin_;
  bool shares_tails_ = true;
  std::vector<std::thread> workers_;
  const std::function<void(int)>* job_ = nullptr;
  std::function<void(int)> detached_;  // run_detached's job, alive until the workers are done
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
  std::exception_ptr error_;
  std::atomic<bool> has_error_{false};
};

// One job's items shared out so that a slower thread hands its tail to a faster one: thread t
// starts on its static share (ThreadPool::split) and takes it from the front, a chunk at a time;
// when its own share is done it takes chunks from the back of the others' shares. Threads of equal
// speed each run their own share, as a static split would; where one runs slower (a vCPU whose
// core is busy with another guest, a small core beside a big one) the job ends when the work does,
// not when the slowest thread's share does. Reset by the caller before the job; each part goes to
// exactly one thread.
class SharedRanges {
 public:
  // `items` (below 2^32) split over `threads`; `chunk` items (>= 1) taken at a time; with
  // `steal` false a thread takes only from its own share.
  void reset(std::int64_t items, int threads, std::int64_t chunk, bool steal = true);
  // The next part for thread t, its own share's front first, then another's back; false when
  // every item has been taken.
  bool next(int t, std::int64_t& first, std::int64_t& last);
  // Thread t's first part, [first, last) (empty for an empty share), whatever the others do: what
  // a caller can fetch ahead for it.
  static std::pair<std::int64_t, std::int64_t> first_part(std::int64_t items, int t, int threads, std::int64_t chunk) {
    const auto [first, last] = ThreadPool::split(items, t, threads);
    return {first, std::min(last, first + chunk)};
  }

 private:
  // A share's untaken [first, last), first in the low 32 bits: the owner and a thief change it
  // with one compare-and-swap. A cache line each, so the owners' takes do not contend.
  struct alignas(64) Share {
    std::atomic<std::uint64_t> range{0};
  };
  static std::uint64_t pack(std::int64_t first, std::int64_t last) { return std::uint64_t(first) | std::uint64_t(last) << 32; }
  bool take_front(Share& s, std::int64_t& first, std::int64_t& last) const;
  bool take_back(Share& s, std::int64_t& first, std::int64_t& last) const;
  std::vector<Share> shares_;
  int threads_ = 0;
  std::int64_t chunk_ = 1;
  bool steal_ = true;
};

// Pins the calling thread to one CPU (no-op where unsupported). Returns whether it succeeded.
bool pin_current_thread(int cpu);

}  // namespace ternlab
