// The peers' formats and kernels that ternlab runs as faithful baseline arms: BitNet's I2_S.
#include <cmath>
#include <cstring>

#include "kernels/peers/i2s.hpp"
#include "kernels/testdata.hpp"
#include "tests/support.hpp"

using namespace ternlab;
using namespace ternlab::peers;

TEST_SUITE("peers") {
  TEST_CASE("I2_S bytes: the spec's test vector (K = 128, +1 at 0 and 127, -1 at 32)") {
    TernaryMatrix m(1, 128);
    for (auto& u : m.codes) u = 1;  // w = 0
    m.codes[0] = m.codes[127] = 2;
    m.codes[32] = 0;
    m.scales[0] = 0x3c00;  // 1.0
    const I2sMatrix w = pack_i2s(m, "vector");
    REQUIRE(w.bytes.size() == 32 + 32);
    CHECK(w.bytes[0] == 0x85);
    CHECK(w.bytes[31] == 0x56);
    for (int b = 1; b < 31; ++b) CHECK(w.bytes[std::size_t(b)] == 0x55);
    const std::uint8_t tail[4] = {0x00, 0x00, 0x80, 0x3f};
    CHECK(std::memcmp(w.bytes.data() + 32, tail, 4) == 0);
    CHECK(w.scale() == 1.0f);
  }

  TEST_CASE("I8_S activations: absmax scale, rounding to nearest, the token's sum") {
    const float x[4] = {1.0f, -0.5f, 0.25f, 0.0f};
    const I8sActs a = quantize_i8s(x, 1, 4);
    CHECK(a.scale[0] == 127.0f);
    CHECK(a.q[0] == 127);
    CHECK(a.q[1] == -64);  // -63.5 rounds to even
    CHECK(a.q[2] == 32);   // 31.75
    CHECK(a.q[3] == 0);
    CHECK(a.sum[0] == 127 - 64 + 32);
  }

  TEST_CASE("I2_S gemv and gemm (1x1 and Nx1) equal the exact sums, on 1, 2 and 3 threads") {
    for (std::int64_t cols : {128, 512, 4096, 5120}) {  // one span, a span and a tail
      const std::int64_t rows = 136, tokens = 7;         // a partial 128-row block; 4 + 3 tokens
      CAPTURE(cols);
      const I2sMatrix w = pack_i2s(make_weights(rows, cols, 5, Fill::random, ScaleKind::random), "t");
      const std::vector<float> xf = make_float_activations(tokens, cols, 6);
      const I8sActs x = quantize_i8s(xf.data(), tokens, cols);
      for (int threads : {1, 2, 3}) {
        ThreadPool pool(threads);
        std::vector<float> y(std::size_t(rows * tokens));
        run_i2s_gemm(pool, w, x, y.data(), rows);
        CHECK_NOTHROW(check_i2s(w, x, y, rows));
        for (std::int64_t t = 0; t < tokens; ++t)
          for (std::int64_t r = 0; r < rows; ++r) {
            const float want = (float(i2s_dot_exact(w, r, x, t)) - float(x.sum[std::size_t(t)])) / x.scale[std::size_t(t)] * w.scale();
            CHECK(y[std::size_t(t * rows + r)] == want);
          }
        std::vector<float> y1(static_cast<std::size_t>(rows));
        run_i2s_gemv(pool, w, x, y1.data());
        for (std::int64_t r = 0; r < rows; ++r) CHECK(y1[std::size_t(r)] == y[std::size_t(r)]);
      }
    }
  }

  TEST_CASE("I2_S bad input names the tensor: size, scale, shape, +2 weights") {
    const I2sMatrix w = pack_i2s(make_weights(4, 256, 1), "blk.0.ffn_up");
    std::vector<std::uint8_t> bytes(w.bytes.begin(), w.bytes.end());
    CHECK(i2s_from_bytes("blk.0.ffn_up", 4, 256, bytes).scale() == w.scale());
    test::check_error([&] { i2s_from_bytes("blk.0.ffn_up", 4, 384, bytes); }, "blk.0.ffn_up", "bytes", "needs");
    std::vector<std::uint8_t> nan = bytes;
    const float q = NAN;
    std::memcpy(nan.data() + 4 * 256 / 4, &q, 4);
    test::check_error([&] { i2s_from_bytes("blk.0.ffn_up", 4, 256, nan); }, "blk.0.ffn_up", "scale");
    std::vector<std::uint8_t> zero = bytes;
    std::memset(zero.data() + 4 * 256 / 4, 0, 4);
    test::check_error([&] { i2s_from_bytes("blk.0.ffn_up", 4, 256, zero); }, "blk.0.ffn_up", "scale");
    test::check_error([] { pack_i2s(make_weights(2, 200, 1), "odd"); }, "odd", "128");
    test::check_error([] { pack_i2s(make_weights(2, 256, 1, Fill::code3), "plus2"); }, "plus2", "+2");
    const I8sActs x = quantize_i8s(make_float_activations(1, 128, 1).data(), 1, 128);
    ThreadPool pool(1);
    std::vector<float> y(4);
    test::check_error([&] { run_i2s_gemv(pool, w, x, y.data()); }, "blk.0.ffn_up", "256");
  }
}
