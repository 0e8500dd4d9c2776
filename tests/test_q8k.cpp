// q8_K activations match ggml's reference quantiser and the q8_Kx4 interleave.
#include <algorithm>
#include <cstring>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "kernels/dispatch.hpp"
#include "kernels/q8k.hpp"
#include "kernels/thread_pool.hpp"
#include "layouts/registry.hpp"
#include "kernels/testdata.hpp"
#include "tests/support.hpp"

using namespace ternlab;

TEST_SUITE("q8k") {
  TEST_CASE("nearest_int rounds half to even") {
    CHECK(nearest_int(0.5f) == 0);
    CHECK(nearest_int(1.5f) == 2);
    CHECK(nearest_int(2.5f) == 2);
    CHECK(nearest_int(-1.5f) == -2);
    CHECK(nearest_int(-0.4f) == 0);
    CHECK(nearest_int(126.7f) == 127);
  }

  TEST_CASE("the first element of greatest magnitude sets the scale and becomes -127") {
    std::vector<float> x(256, 0.25f);
    x[10] = 2.0f;
    x[20] = -2.0f;  // equal magnitude, later: does not win
    BlockQ8K b;
    quantize_row_q8k(x.data(), &b, 256);
    CHECK(b.qs[10] == -127);
    CHECK(b.qs[20] == 127);
    CHECK(b.d == doctest::Approx(-2.0f / 127));
    CHECK(b.d < 0);
    CHECK(b.qs[0] == nearest_int(-127.0f / 2.0f * 0.25f));
    int s = 0;
    for (int i = 0; i < 16; ++i) s += b.qs[i];
    CHECK(b.bsums[0] == s);
  }

  TEST_CASE("unit activations quantise with d = 1 in every 256-block and qs = x") {
    for (ActFill fill : {ActFill::random, ActFill::extreme, ActFill::constant}) {
      const auto a = make_unit_activations(3, 1024, 9, fill);
      const Q8KBatch q = quantize_batch(a.f.data(), 3, 1024);
      for (std::int64_t t = 0; t < 3; ++t)
        for (std::int64_t b = 0; b < q.blocks(); ++b) {
          REQUIRE(q.row(t)[b].d == 1.0f);
          for (int j = 0; j < 256; ++j) CHECK(q.row(t)[b].qs[j] == a.i8[std::size_t(t * 1024 + b * 256 + j)]);
        }
    }
  }

  TEST_CASE("zero blocks: d = 0, qs = 0, bsums = 0") {
    std::vector<float> x(256, 0.0f);
    BlockQ8K b;
    std::memset(&b, 0x5a, sizeof b);
    quantize_row_q8k(x.data(), &b, 256);
    CHECK(b.d == 0.0f);
    for (int g = 0; g < 16; ++g) CHECK(b.bsums[g] == 0);
  }

  TEST_CASE("q8_Kx4: qs[32c + 8r + j] = token r element 8c + j; bsums interleaved by 4 groups") {
    const auto x = make_float_activations(4, 256, 3);
    const Q8KBatch q = quantize_batch(x.data(), 4, 256);
    const BlockQ8Kx4& t = q.tile(0)[0];
    for (int r = 0; r < 4; ++r) {
      CHECK(t.d[r] == q.row(r)[0].d);
      for (int c = 0; c < 32; ++c)
        for (int j = 0; j < 8; ++j) CHECK(t.qs[32 * c + 8 * r + j] == q.row(r)[0].qs[8 * c + j]);
      for (int g = 0; g < 16; ++g) CHECK(t.bsums[16 * (g / 4) + 4 * r + g % 4] == q.row(r)[0].bsums[g]);
      const BlockQ8K back = deinterleave_x4(t, r);
      CHECK(std::memcmp(&back, &q.row(r)[0], sizeof back) == 0);
    }
  }

  TEST_CASE("leftover tokens ride in a zero-padded tile") {
    const auto x = make_float_activations(5, 512, 4);
    const Q8KBatch q = quantize_batch(x.data(), 5, 512);
    CHECK(q.tiles_count() == 2);
    const BlockQ8Kx4& t = q.tile(1)[1];
    CHECK(t.d[0] == q.row(4)[1].d);
    for (int r = 1; r < 4; ++r) {
      CHECK(t.d[r] == 0.0f);
      for (int e = 0; e < 256; ++e) CHECK(t.qs[x4_index(r, e)] == 0);
    }
  }

  TEST_CASE("an inner size of 128 modulo 256 is zero-padded to a whole q8_K block") {
    const auto a = make_unit_activations(1, 384, 2);
    const Q8KBatch q = quantize_batch(a.f.data(), 1, 384);
    CHECK(q.blocks() == 2);
    CHECK(q.row(0)[1].d == 1.0f);
    for (int j = 128; j < 256; ++j) CHECK(q.row(0)[1].qs[j] == 0);
  }

  TEST_CASE("a batch without tiles holds the same rows, feeds gemv, and gemm refuses it") {
    ThreadPool pool(2);
    const std::int64_t cols = 1280;
    const auto x = make_float_activations(1, cols, 5);
    const Q8KBatch full = quantize_batch(x.data(), 1, cols, pool);
    const Q8KBatch rows = quantize_batch(x.data(), 1, cols, pool, Q8KTiles::skip);
    CHECK(full.has_tiles());
    CHECK(!rows.has_tiles());
    REQUIRE(rows.rows.size() == full.rows.size());
    CHECK(std::memcmp(rows.rows.data(), full.rows.data(), rows.rows.size() * sizeof(BlockQ8K)) == 0);
    const LayoutInfo& L = find_layout("t2r");
    const PackedMatrix w = pack(make_weights(64, cols, 3), L);
    std::vector<float> y(64, 0.0f), want(64, 1.0f);
    const KernelVariant k = best_kernel(L).variant;
    run_gemv(pool, k, w, rows, y);
    run_gemv(pool, k, w, full, want);
    CHECK(std::memcmp(y.data(), want.data(), y.size() * sizeof(float)) == 0);
    test::check_error([&] { run_gemm(pool, k, w, rows, y, 64); }, "without its 4-token tiles");
  }

  TEST_CASE("a batch prepared unit by unit holds the bytes of one prepared first, every unit once") {
    // 11 tokens (a partial last tile), 1536 columns in units of 512 and 256; one and two threads;
    // the step doubles its columns and adds the token's index, so a unit missed, repeated or given
    // the wrong columns moves the bytes.
    const std::int64_t tokens = 11, cols = 1536;
    const auto x = make_float_activations(tokens, cols, 9);
    std::vector<float> first(x.begin(), x.end());
    for (std::int64_t t = 0; t < tokens; ++t)
      for (std::int64_t i = 0; i < cols; ++i) first[std::size_t(t * cols + i)] = 2.0f * first[std::size_t(t * cols + i)] + float(t);
    for (const int threads : {1, 2})
      for (const std::int64_t unit : {512, 256})
        for (const Q8KTiles tiles : {Q8KTiles::build, Q8KTiles::skip}) {
          CAPTURE(threads);
          CAPTURE(unit);
          ThreadPool pool(threads);
          const Q8KBatch want = quantize_batch(first.data(), tokens, cols, pool, tiles);
          std::vector<float> y(x.begin(), x.end());
          std::vector<int> visits(std::size_t(tokens * cols / unit), 0);
          const Q8KBatch got = quantize_batch(y.data(), tokens, cols, pool, tiles, unit,
                                              [&](std::int64_t t0, std::int64_t t1, std::int64_t c0, std::int64_t c1) {
                                                CHECK(c1 - c0 == unit);
                                                CHECK(t0 % 4 == 0);
                                                CHECK(t1 - t0 == std::min<std::int64_t>(4, tokens - t0));
                                                for (std::int64_t t = t0; t < t1; ++t) {
                                                  ++visits[std::size_t(t * (cols / unit) + c0 / unit)];
                                                  for (std::int64_t i = c0; i < c1; ++i)
                                                    y[std::size_t(t * cols + i)] = 2.0f * y[std::size_t(t * cols + i)] + float(t);
                                                }
                                              });
          CHECK(std::count(visits.begin(), visits.end(), 1) == std::int64_t(visits.size()));
          CHECK(y == first);
          REQUIRE(got.rows.size() == want.rows.size());
          CHECK(std::memcmp(got.rows.data(), want.rows.data(), got.rows.size() * sizeof(BlockQ8K)) == 0);
          REQUIRE(got.tiles.size() == want.tiles.size());
          CHECK(got.tiles.empty() == (tiles == Q8KTiles::skip));
          if (!got.tiles.empty())  // (a batch without tiles has no storage to compare)
            CHECK(std::memcmp(got.tiles.data(), want.tiles.data(), got.tiles.size() * sizeof(BlockQ8Kx4)) == 0);
        }
    ThreadPool pool(1);
    std::vector<float> y(x.begin(), x.end());
    const auto nothing = [](std::int64_t, std::int64_t, std::int64_t, std::int64_t) {};
    test::check_error([&] { quantize_batch(y.data(), tokens, cols, pool, Q8KTiles::build, 1024, nothing); },
                      "units of 1024 columns are not whole 256-blocks that divide the inner size 1536");
    test::check_error([&] { quantize_batch(y.data(), tokens, cols, pool, Q8KTiles::build, 384, nothing); },
                      "units of 384 columns");
  }

  TEST_CASE("one token's units stay on the calling thread below kOneTokenSplitCols and are shared from it") {
    for (const std::int64_t cols : {kOneTokenSplitCols - 1024, kOneTokenSplitCols, kOneTokenSplitCols + 2048}) {
      CAPTURE(cols);
      const auto x = make_float_activations(1, cols, 5);
      ThreadPool pool(2);
      const Q8KBatch want = quantize_batch(x.data(), 1, cols, pool, Q8KTiles::skip);
      std::vector<float> y(x.begin(), x.end());
      std::mutex mu;
      std::set<std::thread::id> threads;
      const Q8KBatch got = quantize_batch(y.data(), 1, cols, pool, Q8KTiles::skip, 1024,
                                          [&](std::int64_t, std::int64_t, std::int64_t, std::int64_t) {
                                            std::lock_guard lock(mu);
                                            threads.insert(std::this_thread::get_id());
                                          });
      CHECK(threads.size() == (cols < kOneTokenSplitCols ? 1u : 2u));
      REQUIRE(got.rows.size() == want.rows.size());
      CHECK(std::memcmp(got.rows.data(), want.rows.data(), got.rows.size() * sizeof(BlockQ8K)) == 0);
    }
  }
}
