// The peers' formats and kernels that ternlab runs as faithful baseline arms: BitNet's I2_S and
// ggml's TQ2_0.
#include <cmath>
#include <cstring>

#include "kernels/cpu.hpp"
#include "kernels/oracle.hpp"
#include "kernels/peers/i2s.hpp"
#include "kernels/peers/peer_matmul.hpp"
#include "kernels/peers/tq2.hpp"
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
    test::check_error([&] { i2s_from_bytes("blk.0.ffn_up", 4, 384, bytes); }, "blk.0.ffn_up", "bytes", "takes");
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

  TEST_CASE("TQ2_0 bytes: the spec's test vector (K = 256, +1 at 0 and 127, -1 at 32 and 128)") {
    TernaryMatrix m(1, 256);
    for (auto& u : m.codes) u = 1;  // w = 0
    m.codes[0] = m.codes[127] = 2;
    m.codes[32] = m.codes[128] = 0;
    m.scales[0] = m.scales[1] = 0x3c00;  // 1.0
    const Tq2Matrix w = pack_tq2(m, "vector");
    REQUIRE(w.bytes.size() == 66);
    for (int b = 0; b < 64; ++b) {
      CAPTURE(b);
      CHECK(w.bytes[std::size_t(b)] == (b == 0 ? 0x52 : b == 31 ? 0x95 : b == 32 ? 0x54 : 0x55));
    }
    CHECK(w.bytes[64] == 0x00);
    CHECK(w.bytes[65] == 0x3c);
  }

  // Weights whose two 128-weight scales agree in every 256-weight block, as TQ2_0 stores them.
  TernaryMatrix tq2_weights(std::int64_t rows, std::int64_t cols, std::uint64_t seed, ScaleKind scales) {
    TernaryMatrix m = make_weights(rows, cols, seed, Fill::random, scales);
    for (std::size_t i = 1; i < m.scales.size(); i += 2) m.scales[i] = m.scales[i - 1];
    return m;
  }

  TEST_CASE("TQ2_0 mul_mat: every output bit-equal to the model of the path that ran, on 1, 2 and 3 threads") {
    for (std::int64_t cols : {256, 2304}) {
      const std::int64_t rows = 136;  // chunks of 16 and 64 rows with a partial last one
      CAPTURE(cols);
      const Tq2Matrix w = pack_tq2(tq2_weights(rows, cols, 5, ScaleKind::random), "t");
      for (std::int64_t tokens : {1, 7, 20}) {  // gemv; fewer and more tokens than one 16-token tile
        CAPTURE(tokens);
        const std::vector<float> xf = make_float_activations(tokens, cols, 6);
        const Q8KBatch x = quantize_batch(xf.data(), tokens, cols);
        for (int threads : {1, 2, 3}) {
          ThreadPool pool(threads);
          std::vector<float> y(std::size_t(rows * tokens), NAN);
          run_tq2_mul_mat(pool, w, x, y.data(), rows);
          CHECK_NOTHROW(check_tq2(w, x, y, rows));
          const auto model = isa_supported(Isa::avx2) ? tq2_dot_avx2_model : tq2_dot_generic;
          int differ = 0;
          for (std::int64_t t = 0; t < tokens; ++t)
            for (std::int64_t r = 0; r < rows; ++r) {
              const float want = model(w.row(r), x.row(t), w.blocks_per_row()), got = y[std::size_t(t * rows + r)];
              differ += std::memcmp(&want, &got, sizeof want) != 0;
            }
          CHECK(differ == 0);
        }
      }
    }
  }

  TEST_CASE("TQ2_0 both paths' arithmetic gives the exact integer sum where every product is an integer") {
    // Unit weight scales and q8_K blocks with d = 1: each block's term is an integer below 2^24.
    const std::int64_t rows = 16, cols = 1024, tokens = 3;
    const TernaryMatrix m = tq2_weights(rows, cols, 9, ScaleKind::unit);
    const UnitActivations a = make_unit_activations(tokens, cols, 10);
    const Q8KBatch x = quantize_batch(a.f.data(), tokens, cols);
    const std::vector<std::int64_t> want = oracle_int(m, a.i8, tokens);
    const Tq2Matrix w = pack_tq2(m, "unit");
    for (std::int64_t t = 0; t < tokens; ++t)
      for (std::int64_t r = 0; r < rows; ++r) {
        CAPTURE(r);
        const double exact = double(want[std::size_t(t * rows + r)]);
        CHECK(double(tq2_dot_avx2_model(w.row(r), x.row(t), w.blocks_per_row())) == exact);
        CHECK(double(tq2_dot_generic(w.row(r), x.row(t), w.blocks_per_row())) == exact);
        CHECK(double(tq2_dot(w.row(r), x.row(t), w.blocks_per_row())) == exact);
      }
  }

  TEST_CASE("TQ2_0 bad input names the tensor: size, scale, shape, two scales in one block") {
    const Tq2Matrix w = pack_tq2(tq2_weights(4, 512, 1, ScaleKind::random), "blk.0.ffn_down");
    std::vector<std::uint8_t> bytes(w.bytes.begin(), w.bytes.end());
    CHECK(tq2_from_bytes("blk.0.ffn_down", 4, 512, bytes).bytes.size() == bytes.size());
    test::check_error([&] { tq2_from_bytes("blk.0.ffn_down", 4, 768, bytes); }, "blk.0.ffn_down", "bytes", "takes");
    std::vector<std::uint8_t> inf = bytes;
    inf[66 * 5 + 64] = 0x00;
    inf[66 * 5 + 65] = 0x7c;  // fp16 +inf in row 2, block 1
    test::check_error([&] { tq2_from_bytes("blk.0.ffn_down", 4, 512, inf); }, "blk.0.ffn_down", "row 2 block 1", "not finite");
    test::check_error([] { pack_tq2(make_weights(2, 384, 1), "odd"); }, "odd", "256");
    TernaryMatrix two = tq2_weights(2, 256, 3, ScaleKind::random);
    two.scales[3] = std::uint16_t(two.scales[2] ^ 1);
    test::check_error([&] { pack_tq2(two, "halves"); }, "halves", "row 1 weights 0..255", "share one scale");
    const std::vector<float> xf = make_float_activations(1, 256, 1);
    const Q8KBatch x = quantize_batch(xf.data(), 1, 256);
    ThreadPool pool(1);
    std::vector<float> y(4);
    test::check_error([&] { run_tq2_mul_mat(pool, w, x, y.data(), 4); }, "blk.0.ffn_down", "512");
  }

  TEST_CASE("every peer behind PeerMatmul: its own driver's outputs, its own check, its kernel's names") {
    const std::int64_t rows = 136, cols = 512;
    ThreadPool pool(2);
    for (const PeerFormat& peer : kPeerFormats) {
      CAPTURE(peer.layout);
      const TernaryMatrix m = tq2_weights(rows, cols, 11, ScaleKind::unit);  // one scale: every peer holds it
      const auto pm = pack_peer(peer, m, "blk.0.ffn_up.weight");
      CHECK(&pm->format() == &peer);
      CHECK(pm->rows() == rows);
      CHECK(pm->cols() == cols);
      for (std::int64_t tokens : {1, 5}) {
        CAPTURE(tokens);
        const std::vector<float> xf = make_float_activations(tokens, cols, 12);
        const Q8KBatch x = quantize_batch(xf.data(), tokens, cols);
        std::vector<float> y(std::size_t(rows * tokens), NAN), again(y.size(), NAN), direct(y.size(), NAN);
        CHECK(pm->apply_checked(pool, x, y.data(), rows) == "");
        pm->apply(pool, x, again.data(), rows);
        CHECK(std::memcmp(y.data(), again.data(), y.size() * sizeof(float)) == 0);
        // The peer's own entry points on the same input give the same bits.
        if (peer.layout == "i2_s") {
          const I2sMatrix w = pack_i2s(m, "w");
          CHECK(pm->bytes() == w.bytes.size());
          std::vector<float> xd(std::size_t(tokens * cols));
          for (std::int64_t t = 0; t < tokens; ++t)
            for (std::int64_t k = 0; k < cols; ++k) {
              const BlockQ8K& b = x.row(t)[k / kQK];
              xd[std::size_t(t * cols + k)] = b.d * float(b.qs[k % kQK]);
            }
          const I8sActs a = quantize_i8s(xd.data(), tokens, cols);
          if (tokens == 1) run_i2s_gemv(pool, w, a, direct.data());
          else run_i2s_gemm(pool, w, a, direct.data(), rows);
        } else {
          const Tq2Matrix w = pack_tq2(m, "w");
          CHECK(pm->bytes() == w.bytes.size());
          run_tq2_mul_mat(pool, w, x, direct.data(), rows);
        }
        CHECK(std::memcmp(y.data(), direct.data(), y.size() * sizeof(float)) == 0);
      }
      const std::string path = isa_supported(Isa::avx2) ? "/avx2" : "/generic";
      CHECK(peer_kernel_name(peer) == std::string(peer.strategy()) + path);
      CHECK(find_peer_kernel(peer.strategy()) == &peer);
      CHECK(find_peer_kernel(std::string(peer.strategy()) + "/avx2") == &peer);
      CHECK(find_peer_kernel(std::string(peer.strategy()) + "/generic") == &peer);
      CHECK(find_peer_kernel(std::string(peer.strategy()) + "/avx512vnni") == nullptr);
      CHECK(find_peer(peer.layout) == &peer);
    }
    CHECK(find_peer_kernel("slot-mask") == nullptr);
    CHECK(find_peer_kernel("slot-mask/avx2") == nullptr);
    // A format that cannot hold the matrix refuses it, naming the tensor (TQ2_0: two scales in a block).
    const TernaryMatrix two_scales = make_weights(8, 256, 3, Fill::random, ScaleKind::random);
    test::check_error([&] { pack_peer(*find_peer("tq2_0"), two_scales, "blk.3.ffn_down.weight"); }, "blk.3.ffn_down.weight");
  }
}
