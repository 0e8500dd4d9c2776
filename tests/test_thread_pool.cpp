// The persistent pool runs every thread index once per job, reuses its threads, and propagates errors.
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

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

  TEST_CASE("a detached job returns after the caller's part; the next job starts after the workers' parts") {
    ThreadPool pool(3);
    for (int round = 0; round < 20; ++round) {
      std::atomic<int> done{0};
      std::atomic<bool> release{false};
      pool.run_detached([&](int t) {
        if (t != 0)  // the workers wait until the caller is back, so it cannot have waited for them
          while (!release.load()) std::this_thread::yield();
        done.fetch_or(1 << t);
      });
      CHECK(done.load() == 0b001);
      release.store(true);
      int seen = 0;
      pool.run([&](int t) {
        if (t == 0) seen = done.load();
      });
      CHECK(seen == 0b111);
    }
  }

  TEST_CASE("a detached job keeps its own copy of the function") {
    ThreadPool pool(2);
    std::atomic<int> sum{0};
    {
      std::vector<int> values{1, 2, 3};
      pool.run_detached([values, &sum](int) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        for (int v : values) sum += v;
      });
    }  // the caller's vector is gone; the workers still read the job's copy
    pool.run([](int) {});
    CHECK(sum.load() == 12);
  }

  TEST_CASE("a detached job's exception reaches the caller at the next job, which then does not run") {
    ThreadPool pool(2);
    pool.run_detached([](int t) {
      if (t == 1) throw Error("fetch failed");
    });
    std::atomic<int> ran{0};
    test::check_error([&] { pool.run([&](int) { ran++; }); }, "fetch failed");
    CHECK(ran.load() == 0);
    pool.run([&](int) { ran++; });
    CHECK(ran.load() == 2);
    pool.run_detached([](int t) {
      if (t == 1) throw Error("fetch failed again");
    });
    test::check_error([&] { pool.run_detached([](int) {}); }, "fetch failed again");
  }

  TEST_CASE("the destructor waits for a detached job's workers") {
    std::atomic<int> count{0};
    {
      ThreadPool pool(3);
      pool.run_detached([&](int t) {
        if (t != 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
        count++;
      });
    }
    CHECK(count.load() == 3);
  }

  TEST_CASE("one thread: a detached job runs whole before it returns") {
    ThreadPool pool(1);
    int count = 0;
    pool.run_detached([&](int t) { count += t + 1; });
    CHECK(count == 1);
  }

  TEST_CASE("shared ranges: a thread takes its own share front first, then the others' backs, every item once") {
    // Deterministic: thread 1 does not start until thread 0 has taken everything, as a thread
    // stalled for the whole call would.
    SharedRanges ranges;
    ranges.reset(23, 2, 4);  // shares [0, 11) and [11, 23)
    std::vector<std::pair<std::int64_t, std::int64_t>> parts;
    std::int64_t first, last;
    while (ranges.next(0, first, last)) parts.emplace_back(first, last);
    const std::vector<std::pair<std::int64_t, std::int64_t>> expected = {
        {0, 4}, {4, 8}, {8, 11}, {19, 23}, {15, 19}, {11, 15}};
    CHECK(parts == expected);
    CHECK_FALSE(ranges.next(1, first, last));
    // Without stealing a thread takes its own share alone.
    ranges.reset(23, 2, 4, false);
    parts.clear();
    while (ranges.next(0, first, last)) parts.emplace_back(first, last);
    CHECK(parts == std::vector<std::pair<std::int64_t, std::int64_t>>{{0, 4}, {4, 8}, {8, 11}});
    REQUIRE(ranges.next(1, first, last));
    CHECK(std::pair(first, last) == std::pair<std::int64_t, std::int64_t>(11, 15));
    // Reset, then the first part of each thread is where first_part says.
    ranges.reset(23, 2, 4);
    for (int t : {1, 0}) {
      REQUIRE(ranges.next(t, first, last));
      CHECK(std::pair(first, last) == SharedRanges::first_part(23, t, 2, 4));
    }
  }

  TEST_CASE("shared ranges under a real pool: every item taken exactly once, whatever the interleaving") {
    ThreadPool pool(4);
    SharedRanges ranges;
    for (std::int64_t items : {0, 1, 3, 97, 1000})
      for (std::int64_t chunk : {1, 7, 64, 5000}) {
        CAPTURE(items);
        CAPTURE(chunk);
        std::vector<std::atomic<int>> taken(static_cast<std::size_t>(items));
        for (int job = 0; job < 20; ++job) {
          for (auto& c : taken) c.store(0, std::memory_order_relaxed);
          ranges.reset(items, pool.size(), chunk);
          pool.run([&](int t) {
            std::int64_t first, last;
            while (ranges.next(t, first, last)) {
              CHECK(last - first <= chunk);
              for (std::int64_t i = first; i < last; ++i) taken[std::size_t(i)].fetch_add(1, std::memory_order_relaxed);
            }
          });
          int wrong = 0;
          for (auto& c : taken) wrong += c.load() != 1;
          CHECK(wrong == 0);
        }
      }
  }

  TEST_CASE("shared ranges refuse what they cannot hold") {
    SharedRanges ranges;
    test::check_error([&] { ranges.reset(std::int64_t(1) << 32, 2, 1); }, "items");
    test::check_error([&] { ranges.reset(10, 0, 1); }, "0 threads");
    test::check_error([&] { ranges.reset(10, 2, 0); }, "chunks of 0");
  }

  TEST_CASE("zero threads is rejected") { test::check_error([] { ThreadPool p(0); }, "0 threads"); }
}
