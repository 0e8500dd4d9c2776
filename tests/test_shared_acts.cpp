// run_gemv's two-phase path: the activations prepared once by the calling thread and read by every
// thread of the pool. Built into the ThreadSanitizer run as well (scripts/build.sh tsan), where
// the pool's hand-off of that buffer must show no race.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/catalog.hpp"
#include "kernels/dispatch.hpp"
#include "kernels/testdata.hpp"
#include "tests/support.hpp"

using namespace ternlab;

namespace {
// Calls f(layout, kernel) for every listed kernel whose gemv comes in two phases, with both names
// captured for a failure's message.
template <class F>
void for_each_two_phase_kernel(F&& f) {
  for (const LayoutInfo* L : all_layouts())
    for (const KernelVariant& k : kernels_for(*L)) {
      if (!k.phases) continue;
      CAPTURE(k.name());
      CAPTURE(L->name);
      f(*L, k);
    }
}
}  // namespace

TEST_SUITE("shared-acts") {
  TEST_CASE("the shared activations give every thread count the one-thread bits, on every two-phase kernel") {
    int checked = 0;
    for_each_two_phase_kernel([&](const LayoutInfo& layout, const KernelVariant& k) {
      const LayoutInfo* L = &layout;
      const std::int64_t rows = test::whole_rows(*L, 64), cols = 1024;
      const PackedMatrix w = pack(make_weights(rows, cols, 5), *L);
      const Q8KBatch x = quantize_batch(make_float_activations(1, cols, 6).data(), 1, cols);
      std::vector<float> one(std::size_t(rows), NAN);
      k.gemv(w, x.row(0), one.data(), 0, w.row_groups());  // the one-phase form, on this thread
      for (int threads : {1, 2, 3}) {
        ThreadPool pool(threads);
        for (int call = 0; call < 3; ++call) {  // the buffer is reused across calls
          std::vector<float> y(std::size_t(rows), NAN);
          run_gemv(pool, k, w, x, y);
          CHECK(std::memcmp(y.data(), one.data(), y.size() * sizeof(float)) == 0);
        }
      }
      check_against_reference(w, k, one, x, rows);
      ++checked;
    });
    MESSAGE("two-phase kernels checked: ", checked);
#if defined(__x86_64__)
    if (isa_supported(Isa::avx2)) CHECK(checked >= 3);  // slot-mask, broadcast and unpack at least
#endif
  }

  // A thread whose range is one share of a call reads fewer row groups side by side than one that
  // reads the whole matrix (with_gemv_streams); each row's sum must not notice. 11 row groups, so
  // that shares of 2-6 groups run whole passes of the shared count and a leftover group alone.
  TEST_CASE("a gemv's share of a call gives the whole call's bits, however many threads share it") {
    int checked = 0;
    for (const LayoutInfo* L : all_layouts())
      for (const KernelVariant& k : kernels_for(*L)) {
        if (k.strategy != Strategy::broadcast || !k.phases) continue;
        CAPTURE(k.name());
        CAPTURE(L->name);
        const std::int64_t rows = 11 * L->rows, cols = 512;
        const PackedMatrix w = pack(make_weights(rows, cols, 7), *L);
        const Q8KBatch x = quantize_batch(make_float_activations(1, cols, 8).data(), 1, cols);
        std::vector<float> whole(std::size_t(rows), NAN);
        k.gemv(w, x.row(0), whole.data(), 0, w.row_groups());
        check_against_reference(w, k, whole, x, rows);
        const std::uint8_t* acts = prepare_gemv(k, w, x.row(0));
        for (int threads : {2, 3, 5}) {
          CAPTURE(threads);
          std::vector<float> one_phase(std::size_t(rows), NAN), two_phase(std::size_t(rows), NAN);
          for (int t = 0; t < threads; ++t) {
            const auto [g0, g1] = ThreadPool::split(w.row_groups(), t, threads);
            k.gemv(w, x.row(0), one_phase.data(), g0, g1);
            gemv_rows(k, w, x.row(0), acts, two_phase.data(), g0, g1);
          }
          CHECK(std::memcmp(one_phase.data(), whole.data(), whole.size() * sizeof(float)) == 0);
          CHECK(std::memcmp(two_phase.data(), whole.data(), whole.size() * sizeof(float)) == 0);
        }
        ++checked;
      }
    MESSAGE("broadcast kernels checked: ", checked);
#if defined(__x86_64__)
    if (isa_supported(Isa::avx2)) CHECK(checked >= 2);  // t2r and b3r's AVX2 builds at least
#endif
  }

  TEST_CASE("a gemv's declared weight streams: the first at its range's start, the rest evenly spaced inside it") {
    // GemvPhases::streams is what prefetch_gemv_start fetches ahead of a call: the starts of the
    // runs Broadcast::rows walks side by side, (g1 - g0) / n groups apart, n at most
    // kMaxGemvStreams, and a share of a call split over threads no more streams than the whole.
    int checked = 0;
    for_each_two_phase_kernel([&](const LayoutInfo& L, const KernelVariant& k) {
      const std::int64_t rows = 11 * L.rows, cols = 256;
      const PackedMatrix w = pack(make_weights(rows, cols, 9), L);
      const std::int64_t groups = w.row_groups();
      int whole = 0;
      for (int threads : {1, 2, 3, 5, 11, 12}) {
        CAPTURE(threads);
        for (int t = 0; t < threads; ++t) {
          const auto [g0, g1] = ThreadPool::split(groups, t, threads);
          prefetch_gemv_start(k, w, g0, g1);  // every range, the empty and the last group's too
          if (g0 == g1 || !k.phases.streams) continue;
          std::int64_t starts[kMaxGemvStreams];
          const int n = k.phases.streams(w, g0, g1, starts);
          REQUIRE(n >= 1);
          REQUIRE(n <= kMaxGemvStreams);
          CHECK(starts[0] == g0);
          for (int q = 1; q < n; ++q) CHECK(starts[q] == g0 + q * ((g1 - g0) / n));
          CHECK(starts[n - 1] < g1);
          if (threads == 1) whole = n;
          else CHECK(n <= whole);
        }
      }
      if (k.phases.streams) ++checked;
    });
    MESSAGE("kernels with declared streams checked: ", checked);
#if defined(__x86_64__)
    if (isa_supported(Isa::avx2)) CHECK(checked >= 2);  // t2r and b3r's AVX2 broadcast builds at least
#endif
  }

  TEST_CASE("matmuls of one input together: every matrix its own run's bits, one token and a batch") {
    const std::int64_t cols = 1024;
    int shared = 0;
    for (const char* name : {"pq2_0", "t2p", "t2r"}) {
      const LayoutInfo& L = find_layout(name);
      const KernelVariant best = select_kernel(L, "");
      // Three matrices on the chosen kernel (whose prepared activations they share), the last one
      // again on every kernel of the layout (one that may not share them: then one run each).
      for (const KernelVariant& other : kernels_for(L)) {
        CAPTURE(name);
        CAPTURE(other.name());
        std::vector<PackedMatrix> w;
        for (int i = 0; i < 3; ++i) w.push_back(pack(make_weights(test::whole_rows(L, 32 * (i + 1)), cols, 7 + unsigned(i)), L));
        const KernelVariant* kernel[3] = {&best, &best, &other};
        for (const std::int64_t tokens : {1, 5}) {
          CAPTURE(tokens);
          const Q8KBatch x = quantize_batch(make_float_activations(tokens, cols, 8).data(), tokens, cols);
          ThreadPool pool(3);
          std::vector<std::vector<float>> want(3), got(3);
          std::vector<MatmulOutput> outs;
          for (std::size_t i = 0; i < 3; ++i) {
            want[i].assign(std::size_t(tokens * w[i].rows), NAN);
            got[i].assign(want[i].size(), NAN);
            if (tokens == 1)
              run_gemv(pool, *kernel[i], w[i], x, want[i]);
            else
              run_gemm(pool, *kernel[i], w[i], x, want[i], w[i].rows);
            outs.push_back({kernel[i], &w[i], got[i].data()});
          }
          run_matmuls(pool, outs, x);
          for (std::size_t i = 0; i < 3; ++i)
            CHECK(std::memcmp(got[i].data(), want[i].data(), got[i].size() * sizeof(float)) == 0);
          shared += tokens == 1 && gemv_shares_activations(outs[0], outs[2]);
        }
      }
    }
    CHECK(shared >= 3);  // at least each layout's chosen kernel with itself
    // A matrix that another input width does not fit is refused before anything runs.
    const PackedMatrix a = pack(make_weights(32, 512, 1), find_layout("t2r"));
    const KernelVariant k = select_kernel(find_layout("t2r"), "");
    const Q8KBatch x = quantize_batch(make_float_activations(1, 256, 1).data(), 1, 256);
    std::vector<float> y(32);
    ThreadPool pool(2);
    const MatmulOutput outs[] = {{&k, &a, y.data()}, {&k, &a, y.data()}};
    test::check_error([&] { run_matmuls(pool, outs, x); }, "512", "256");
  }

  TEST_CASE("a matrix of many parts (SharedRanges) gives the one-thread bits, gemv and gemm, alone and with others") {
    // Five takes' worth of row groups, so that threads take several parts each and whichever
    // finishes first takes the others' tails; a row's result must not depend on who ran it.
    const LayoutInfo& L = find_layout("t2r");
    const KernelVariant k = select_kernel(L, "");
    const std::int64_t cols = 512;
    const PackedMatrix probe = pack(make_weights(L.rows, cols, 1), L);
    const std::int64_t rows = 5 * gemv_chunk_groups(probe) * L.rows + 3 * L.rows;  // a short last part
    const PackedMatrix w = pack(make_weights(rows, cols, 11), L);
    const PackedMatrix small = pack(make_weights(4 * L.rows, cols, 12), L);
    CHECK(w.row_groups() > 5 * gemv_chunk_groups(w));
    for (const std::int64_t tokens : {1, 4}) {
      CAPTURE(tokens);
      const Q8KBatch x = quantize_batch(make_float_activations(tokens, cols, 13).data(), tokens, cols);
      ThreadPool one(1);
      std::vector<float> want(std::size_t(tokens * rows), NAN), want_small(std::size_t(tokens * small.rows), NAN);
      const MatmulOutput alone[] = {{&k, &w, want.data()}, {&k, &small, want_small.data()}};
      run_matmuls(one, alone, x);
      check_against_reference(w, k, want, x, rows);
      for (int threads : {2, 3})
        for (bool tails : {true, false}) {
          CAPTURE(threads);
          CAPTURE(tails);
          ThreadPool pool(threads);
          pool.set_shares_tails(tails);
          // The part each thread takes first: a take of its share, or all of it.
          for (int t = 0; t < threads; ++t) {
            const auto share = ThreadPool::split(w.row_groups(), t, threads);
            const auto part = gemv_first_part(w, t, pool);
            CHECK(part.first == share.first);
            CHECK(part.second == (tails ? std::min(share.second, share.first + gemv_chunk_groups(w)) : share.second));
          }
          for (int call = 0; call < 3; ++call) {
            std::vector<float> got(want.size(), NAN), got_small(want_small.size(), NAN);
            if (tokens == 1)
              run_gemv(pool, k, w, x, got);
            else
              run_gemm(pool, k, w, x, got, rows);
            CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
            std::fill(got.begin(), got.end(), NAN);
            const MatmulOutput both[] = {{&k, &w, got.data()}, {&k, &small, got_small.data()}};
            run_matmuls(pool, both, x);
            CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
            CHECK(std::memcmp(got_small.data(), want_small.data(), got_small.size() * sizeof(float)) == 0);
          }
        }
    }
  }

  TEST_CASE("a bound kernel handed another layout's matrix refuses it, naming both layouts") {
    const LayoutInfo& t2p = find_layout("t2p");
    const LayoutInfo& t2x4 = find_layout("t2x4");
    for (const KernelVariant& k : kernels_for(t2p)) {
      if (!k.phases || k.strategy != Strategy::slot_mask) continue;
      CAPTURE(k.name());
      const PackedMatrix w = pack(make_weights(8, 256, 1), t2x4);
      const Q8KBatch x = quantize_batch(make_float_activations(1, 256, 1).data(), 1, 256);
      std::vector<float> y(8);
      ThreadPool pool(2);
      test::check_error([&] { run_gemv(pool, k, w, x, y); }, "t2p", "t2x4");
    }
  }
}
