// The persistent pool runs every thread index once per job, reuses its threads, and propagates errors.
#include <atomic>
#include <set>
#include <mutex>

#include "kernels/thread_pool.hpp"
#include "tests/support.hpp"

using namespace ternlab;

TEST_SUITE("thread-pool") {
  TEST_CASE("each job runs on every thread index exactly once, on the same threads every time") {
    ThreadPool pool(3);
    std::set<std::thread::id> first;
    std::mutex mu;
    for (int job = 0; job < 50; ++job) {
      std::atomic<int> mask{0};
      std::set<std::thread::id> ids;
      pool.run([&](int t) {
        mask.fetch_or(1 << t);
        std::lock_guard lock(mu);
        ids.insert(std::this_thread::get_id());
      });
      CHECK(mask.load() == 0b111);
      CHECK(ids.size() == 3);
      if (job == 0) first = ids;
      CHECK(ids == first);
    }
  }

  TEST_CASE("split covers every row group once") {
    for (int n : {1, 2, 3, 7})
      for (std::int64_t groups : {0, 1, 5, 8192}) {
        std::int64_t next = 0;
        for (int t = 0; t < n; ++t) {
          const auto [a, b] = ThreadPool::split(groups, t, n);
          CHECK(a == next);
          next = b;
        }
        CHECK(next == groups);
      }
  }

  TEST_CASE("an exception on a worker reaches the caller, and the pool keeps working") {
    ThreadPool pool(2);
    CHECK_THROWS_AS(pool.run([](int t) {
      if (t == 1) throw Error("boom");
    }),
                    Error);
    std::atomic<int> count{0};
    pool.run([&](int) { count++; });
    CHECK(count.load() == 2);
  }

  TEST_CASE("zero threads is rejected") { test::check_error([] { ThreadPool p(0); }, "0 threads"); }
}
