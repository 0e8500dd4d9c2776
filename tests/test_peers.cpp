// The peers' formats and kernels that ternlab runs as baseline arms: BitNet's I2_S and
// ggml's TQ2_0 and TQ1_0.
#include <cmath>
#include <cstring>

#include "common/strings.hpp"
#include "kernels/cpu.hpp"
#include "kernels/oracle.hpp"
#include "kernels/peers/i2s.hpp"
#include "kernels/peers/peer_matmul.hpp"
#include "kernels/peers/peers.hpp"
#include "kernels/peers/tq1.hpp"
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

  TEST_CASE("I2_S batched gemm: every output of 1-9 and 64 tokens is the exact sum's, at an output stride, on 1-3 threads") {
    // Two whole 128-row blocks and a part block; 640 columns are one short span, 5120 a span of 32
    // groups and a tail of 8. Token counts cover one 4-token pass, passes with 1-3 left over, and
    // the 16 passes of a 64-token batch.
    const std::int64_t rows = 264;
    for (std::int64_t cols : {640, 5120}) {
      const I2sMatrix w = pack_i2s(make_weights(rows, cols, 21, Fill::random, ScaleKind::random), "blk.3.ffn_down.weight");
      for (std::int64_t tokens : {1, 2, 3, 4, 5, 8, 9, 64}) {
        const std::vector<float> xf = make_float_activations(tokens, cols, 22 + std::uint64_t(tokens));
        const I8sActs x = quantize_i8s(xf.data(), tokens, cols);
        std::vector<float> want(std::size_t(rows * tokens));
        for (std::int64_t t = 0; t < tokens; ++t)
          for (std::int64_t r = 0; r < rows; ++r)
            want[std::size_t(t * rows + r)] =
                (float(i2s_dot_exact(w, r, x, t)) - float(x.sum[std::size_t(t)])) / x.scale[std::size_t(t)] * w.scale();
        const std::int64_t ldy = rows + 5;  // an output stride wider than the rows: the gap stays untouched
        for (int threads : {1, 2, 3}) {
          CAPTURE(cols);
          CAPTURE(tokens);
          CAPTURE(threads);
          ThreadPool pool(threads);
          std::vector<float> y(std::size_t(ldy * tokens), -7.0f);
          run_i2s_gemm(pool, w, x, y.data(), ldy);
          std::int64_t wrong = 0, touched = 0;
          for (std::int64_t t = 0; t < tokens; ++t) {
            for (std::int64_t r = 0; r < rows; ++r)
              wrong += std::memcmp(&y[std::size_t(t * ldy + r)], &want[std::size_t(t * rows + r)], sizeof(float)) != 0;
            for (std::int64_t r = rows; r < ldy; ++r) touched += y[std::size_t(t * ldy + r)] != -7.0f;
          }
          CHECK(wrong == 0);
          CHECK(touched == 0);
        }
      }
    }
  }

  TEST_CASE("I2_S batched gemm keeps BitNet's int16 span per token: where it wraps, a batch gives each token's gemv") {
    // All weights +1 (code 2) over two spans of 4096 weights. Against 127s each int16 lane takes 256
    // products of 254 a span and wraps: BitNet returns -8192 a span for 1,040,384 (spec 4.5).
    // Against 60s a lane holds 30720 a span, exact only because the lanes widen every 32 groups.
    // The Nx1 dots of a batch must wrap and widen exactly as the 1x1 dot of one token does; the
    // other tokens are random.
    const std::int64_t rows = 130, cols = 8192, tokens = 6;
    TernaryMatrix m(rows, cols);
    for (auto& u : m.codes) u = 2;
    for (auto& s : m.scales) s = 0x3c00;
    const I2sMatrix w = pack_i2s(m, "wrap");
    const std::vector<float> xf = make_float_activations(tokens, cols, 31);
    I8sActs x = quantize_i8s(xf.data(), tokens, cols);
    // Tokens 0-3 run the Nx1 dot, 4 and 5 the 1x1.
    for (const auto& [t, q] : {std::pair<std::int64_t, std::int8_t>{1, 60}, {2, 127}, {4, 60}, {5, 127}}) {
      for (std::int64_t k = 0; k < cols; ++k) x.q[std::size_t(t * cols + k)] = q;
      x.scale[std::size_t(t)] = 1.0f;
      x.sum[std::size_t(t)] = q * std::int32_t(cols);
    }
    ThreadPool pool(2);
    std::vector<float> y(std::size_t(rows * tokens));
    run_i2s_gemm(pool, w, x, y.data(), rows);
    // The portable loop (no AVX2) sums exactly, so only the AVX2 dots wrap.
    for (std::int64_t t : {2, 5})
      if (isa_supported(Isa::avx2)) CHECK(y[std::size_t(t * rows)] == -16384.0f - 127.0f * float(cols));
    for (std::int64_t t : {1, 4}) CHECK(y[std::size_t(t * rows + rows - 1)] == 60.0f * float(cols));  // a 64-group span would wrap
    for (std::int64_t t = 0; t < tokens; ++t) {
      CAPTURE(t);
      I8sActs one{1, cols, AlignedVector<std::int8_t>(std::size_t(cols)), {x.scale[std::size_t(t)]}, {x.sum[std::size_t(t)]}};
      std::memcpy(one.q.data(), x.token(t), std::size_t(cols));
      std::vector<float> g(static_cast<std::size_t>(rows));
      run_i2s_gemv(pool, w, one, g.data());
      CHECK(std::memcmp(g.data(), y.data() + t * rows, std::size_t(rows) * sizeof(float)) == 0);
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

  // Weights whose two 128-weight scales agree in every 256-weight block, as TQ2_0 and TQ1_0 store them.
  TernaryMatrix ggml_weights(std::int64_t rows, std::int64_t cols, std::uint64_t seed, ScaleKind scales, Fill fill = Fill::random) {
    TernaryMatrix m = make_weights(rows, cols, seed, fill, scales);
    for (std::size_t i = 1; i < m.scales.size(); i += 2) m.scales[i] = m.scales[i - 1];
    return m;
  }

  TEST_CASE("TQ2_0 mul_mat: every output bit-equal to the model of the path that ran, on 1, 2 and 3 threads") {
    for (std::int64_t cols : {256, 2304}) {
      const std::int64_t rows = 136;  // chunks of 16 and 64 rows with a partial last one
      CAPTURE(cols);
      const Tq2Matrix w = pack_tq2(ggml_weights(rows, cols, 5, ScaleKind::random), "t");
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

  TEST_CASE("TQ2_0 bad input names the tensor: size, scale, shape, two scales in one block") {
    const Tq2Matrix w = pack_tq2(ggml_weights(4, 512, 1, ScaleKind::random), "blk.0.ffn_down");
    std::vector<std::uint8_t> bytes(w.bytes.begin(), w.bytes.end());
    CHECK(tq2_from_bytes("blk.0.ffn_down", 4, 512, bytes).bytes.size() == bytes.size());
    test::check_error([&] { tq2_from_bytes("blk.0.ffn_down", 4, 768, bytes); }, "blk.0.ffn_down", "bytes", "takes");
    std::vector<std::uint8_t> inf = bytes;
    inf[66 * 5 + 64] = 0x00;
    inf[66 * 5 + 65] = 0x7c;  // fp16 +inf in row 2, block 1
    test::check_error([&] { tq2_from_bytes("blk.0.ffn_down", 4, 512, inf); }, "blk.0.ffn_down", "row 2 block 1", "not finite");
    test::check_error([] { pack_tq2(make_weights(2, 384, 1), "odd"); }, "odd", "256");
    TernaryMatrix two = ggml_weights(2, 256, 3, ScaleKind::random);
    two.scales[3] = std::uint16_t(two.scales[2] ^ 1);
    test::check_error([&] { pack_tq2(two, "halves"); }, "halves", "row 1 weights 0..255", "share one scale");
    const std::vector<float> xf = make_float_activations(1, 256, 1);
    const Q8KBatch x = quantize_batch(xf.data(), 1, 256);
    ThreadPool pool(1);
    std::vector<float> y(4);
    test::check_error([&] { run_tq2_mul_mat(pool, w, x, y.data(), 4); }, "blk.0.ffn_down", "512");
  }

  TEST_CASE("a timed port carries the peer's own name only where it was measured within 10% of the original's build") {
    for (const PeerFormat& p : kPeerFormats) {
      CAPTURE(p.layout);
      CHECK(std::string(p.label) == cat(p.owner, " ", p.format));
      if (p.faithful) {
        CHECK(p.arm_label() == p.label);
        CHECK(p.own_label() == cat(p.label, "'s own"));
        CHECK(p.port_note().starts_with("a faithful port"));
      } else {
        CHECK(p.arm_label() == cat(p.format, " after ", p.owner, "'s algorithm"));
        CHECK(p.own_label() == p.arm_label());
        CHECK(p.arm_label().find(p.label) == std::string::npos);  // never the original's name
        CHECK(p.port_note().find("not within 10%") != std::string::npos);
      }
    }
  }

  TEST_CASE("every peer behind PeerMatmul: its own driver's outputs, its own check, its kernel's names") {
    const std::int64_t rows = 136, cols = 512;
    ThreadPool pool(2);
    for (const PeerFormat& peer : kPeerFormats) {
      CAPTURE(peer.layout);
      const TernaryMatrix m = ggml_weights(rows, cols, 11, ScaleKind::unit);  // one scale: every peer holds it
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
        } else if (peer.layout == "tq1_0") {
          const Tq1Matrix w = pack_tq1(m, "w");
          CHECK(pm->bytes() == w.bytes.size());
          run_tq1_mul_mat(pool, w, x, direct.data(), rows);
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

  // TQ1_0's bytes as spec 3.2-3.3 states them, independently of the codec: per digit plane the
  // trits t = w + 1, Q = sum of t_n 3^(4 - n) (a qh byte's four digits times 3), byte = ceil(256 Q / 243).
  std::vector<std::uint8_t> tq1_spec_bytes(const TernaryMatrix& m) {
    std::vector<std::uint8_t> out;
    const auto byte = [](int q) { return std::uint8_t((256 * q + 242) / 243); };
    for (std::int64_t r = 0; r < m.rows; ++r)
      for (std::int64_t blk = 0; blk < m.cols / 256; ++blk) {
        const auto t = [&](int k) { return int(m.codes[std::size_t(r * m.cols + 256 * blk + k)]); };
        for (int i = 0; i < 32; ++i) out.push_back(byte(81 * t(i) + 27 * t(32 + i) + 9 * t(64 + i) + 3 * t(96 + i) + t(128 + i)));
        for (int i = 0; i < 16; ++i)
          out.push_back(byte(81 * t(160 + i) + 27 * t(176 + i) + 9 * t(192 + i) + 3 * t(208 + i) + t(224 + i)));
        for (int j = 0; j < 4; ++j) out.push_back(byte(3 * (27 * t(240 + j) + 9 * t(244 + j) + 3 * t(248 + j) + t(252 + j))));
        const std::uint16_t d = m.scale_bits(r, 2 * blk);
        out.push_back(std::uint8_t(d & 0xff));
        out.push_back(std::uint8_t(d >> 8));
      }
    return out;
  }

  // Every weight read back through tq1_digit at the place spec 3.2 gives it.
  TernaryMatrix tq1_decode(const Tq1Matrix& w) {
    TernaryMatrix m(w.rows, w.cols);
    for (std::int64_t r = 0; r < w.rows; ++r)
      for (std::int64_t blk = 0; blk < w.blocks_per_row(); ++blk) {
        const std::uint8_t* b = w.row(r) + blk * kTq1BlockBytes;
        for (int k = 0; k < 256; ++k) {
          const int digit = k < 160 ? tq1_digit(b[k % 32], k / 32)
                            : k < 240 ? tq1_digit(b[32 + (k - 160) % 16], (k - 160) / 16)
                                      : tq1_digit(b[48 + (k - 240) % 4], (k - 240) / 4);
          m.codes[std::size_t(r * w.cols + 256 * blk + k)] = std::uint8_t(digit);
        }
        std::uint16_t d;
        std::memcpy(&d, b + kTq1ScaleOffset, 2);
        m.scales[std::size_t(r * m.blocks_per_row() + 2 * blk)] = m.scales[std::size_t(r * m.blocks_per_row() + 2 * blk + 1)] = d;
      }
    return m;
  }

  TEST_CASE("TQ1_0 digits: both paths' extraction agree with (3u) >> 8 and invert the encoding") {
    for (int u = 0; u < 256; ++u) {
      CAPTURE(u);
      CHECK(tq1_top_digit_avx2(std::uint8_t(u)) == (3 * u) >> 8);
    }
    for (int q = 0; q < 243; ++q) {  // every five-digit string
      CAPTURE(q);
      const auto byte = std::uint8_t((256 * q + 242) / 243);
      for (int n = 0, p = 81; n < 5; ++n, p /= 3) CHECK(tq1_digit(byte, n) == q / p % 3);
    }
  }

  TEST_CASE("TQ1_0 bytes: the spec's test vectors, its encoding, the DSL's tq1_0 bytes, and back") {
    TernaryMatrix v(1, 256);
    for (auto& u : v.codes) u = 1;  // w = 0
    const int qs0[5] = {2, 1, 0, 2, 1}, qh0[4] = {1, 2, 0, 1};
    for (int n = 0; n < 5; ++n) v.codes[std::size_t(32 * n)] = std::uint8_t(qs0[n]);
    for (int n = 0; n < 4; ++n) v.codes[std::size_t(240 + 4 * n)] = std::uint8_t(qh0[n]);
    v.scales[0] = v.scales[1] = 0x3c00;  // 1.0
    const Tq1Matrix t = pack_tq1(v, "vector");
    REQUIRE(t.bytes.size() == 54);
    for (int b = 0; b < 52; ++b) {
      CAPTURE(b);
      CHECK(t.bytes[std::size_t(b)] == (b == 0 ? 0xCF : b < 48 ? 0x80 : b == 48 ? 0x92 : 0x7F));
    }
    CHECK(t.bytes[52] == 0x00);
    CHECK(t.bytes[53] == 0x3c);

    const TernaryMatrix m = ggml_weights(8, 1024, 21, ScaleKind::random);
    const Tq1Matrix w = pack_tq1(m, "blk.0.attn_k");
    const std::vector<std::uint8_t> spec = tq1_spec_bytes(m);
    CHECK(std::equal(w.bytes.begin(), w.bytes.end(), spec.begin(), spec.end()));
    const PackedMatrix dsl = pack(m, find_layout("tq1_0"));
    CHECK(std::equal(w.bytes.begin(), w.bytes.end(), dsl.bytes.begin(), dsl.bytes.end()));
    CHECK(tq1_decode(w) == m);
    const Tq1Matrix read = tq1_from_bytes("blk.0.attn_k", 8, 1024, spec);
    CHECK(std::equal(read.bytes.begin(), read.bytes.end(), spec.begin(), spec.end()));
    CHECK(read.block_scale(3, 2) == fp16_to_float(m.scale_bits(3, 4)));
  }

  // q8_K blocks holding one value everywhere, with scale d (ggml's quantiser never makes -128; the
  // kernels take it).
  Q8KBatch constant_acts(std::int64_t tokens, std::int64_t cols, int value, float d) {
    std::vector<BlockQ8K> rows(std::size_t(tokens * cols / 256));
    for (BlockQ8K& b : rows) {
      b.d = d;
      std::fill(std::begin(b.qs), std::end(b.qs), std::int8_t(value));
      std::fill(std::begin(b.bsums), std::end(b.bsums), std::int16_t(16 * value));
    }
    return batch_from_rows(std::move(rows), tokens, cols);
  }

  TEST_CASE("TQ1_0 AVX2 dot bit-equal to its scalar model on random and extreme data") {
    if (!isa_supported(Isa::avx2)) return;  // the generic path runs there; the mul_mat test checks it
    const std::int64_t cols = 4096, rows = 16;
    // Extremes: all +1, all -1, all 0 weights against all 127, -127 and -128, unit scales: exact integers.
    for (const Fill fill : {Fill::all_plus, Fill::all_minus, Fill::zero}) {
      const Tq1Matrix w = pack_tq1(ggml_weights(rows, cols, 1, ScaleKind::unit, fill), "extreme");
      const int wv = fill == Fill::all_plus ? 1 : fill == Fill::all_minus ? -1 : 0;
      for (const int value : {127, -127, -128}) {
        CAPTURE(wv);
        CAPTURE(value);
        const Q8KBatch x = constant_acts(1, cols, value, 1.0f);
        for (std::int64_t r = 0; r < rows; ++r) {
          const float got = peers::detail::tq1_dot_avx2(w.row(r), x.row(0), w.blocks_per_row());
          CHECK(got == float(wv * value * cols));
          CHECK(got == tq1_dot_avx2_model(w.row(r), x.row(0), w.blocks_per_row()));
        }
      }
    }
    // Random weights and scales against extreme and real-valued activations: every bit equal.
    const Tq1Matrix w = pack_tq1(ggml_weights(64, cols, 2, ScaleKind::random), "random");
    std::vector<Q8KBatch> acts;
    acts.push_back(constant_acts(1, cols, 127, 0.37f));
    acts.push_back(constant_acts(1, cols, -128, -0.011f));
    acts.push_back(quantize_batch(make_float_activations(1, cols, 3).data(), 1, cols));
    const UnitActivations extreme = make_unit_activations(1, cols, 4, ActFill::extreme);
    acts.push_back(quantize_batch(extreme.f.data(), 1, cols));
    int differ = 0;
    for (const Q8KBatch& x : acts)
      for (std::int64_t r = 0; r < w.rows; ++r) {
        const float got = peers::detail::tq1_dot_avx2(w.row(r), x.row(0), w.blocks_per_row());
        const float want = tq1_dot_avx2_model(w.row(r), x.row(0), w.blocks_per_row());
        differ += std::memcmp(&got, &want, sizeof got) != 0;
      }
    CHECK(differ == 0);
  }

  TEST_CASE("TQ1_0 mul_mat: every output bit-equal to the model of the path that ran, on 1, 2 and 3 threads") {
    for (std::int64_t cols : {256, 2304}) {
      const std::int64_t rows = 136;  // chunks of 16 and 64 rows with a partial last one
      CAPTURE(cols);
      const Tq1Matrix w = pack_tq1(ggml_weights(rows, cols, 7, ScaleKind::random), "t");
      for (std::int64_t tokens : {1, 4, 7}) {  // gemv and gemm
        CAPTURE(tokens);
        const std::vector<float> xf = make_float_activations(tokens, cols, 8);
        const Q8KBatch x = quantize_batch(xf.data(), tokens, cols);
        for (int threads : {1, 2, 3}) {
          ThreadPool pool(threads);
          std::vector<float> y(std::size_t(rows * tokens), NAN);
          run_tq1_mul_mat(pool, w, x, y.data(), rows);
          CHECK_NOTHROW(check_tq1(w, x, y, rows));
          const auto model = isa_supported(Isa::avx2) ? tq1_dot_avx2_model : tq1_dot_generic;
          int differ = 0;
          for (std::int64_t t = 0; t < tokens; ++t)
            for (std::int64_t r = 0; r < rows; ++r) {
              const float want = model(w.row(r), x.row(t), w.blocks_per_row()), got = y[std::size_t(t * rows + r)];
              differ += std::memcmp(&want, &got, sizeof want) != 0;
            }
          CHECK(differ == 0);
          // The check sees a one-bit change in an output it reads (token 0, row 0 or last row).
          std::vector<float> bad = y;
          std::uint32_t bits;
          std::memcpy(&bits, &bad[std::size_t(rows - 1)], 4);
          bits ^= 1;
          std::memcpy(&bad[std::size_t(rows - 1)], &bits, 4);
          test::check_error([&] { check_tq1(w, x, bad, rows); }, "TQ1_0 tensor 't'", cat("row ", rows - 1, " token 0"));
        }
      }
    }
  }

  TEST_CASE("both ggml formats: both paths' arithmetic gives the exact integer sum where every product is an integer") {
    // Unit weight scales and q8_K blocks with d = 1: each block's term is an integer below 2^24.
    const std::int64_t rows = 16, cols = 1024, tokens = 3;
    const TernaryMatrix m = ggml_weights(rows, cols, 9, ScaleKind::unit);
    const UnitActivations a = make_unit_activations(tokens, cols, 10);
    const Q8KBatch x = quantize_batch(a.f.data(), tokens, cols);
    const std::vector<std::int64_t> want = oracle_int(m, a.i8, tokens);
    const auto check_paths = [&](const auto& w, auto avx2_model, auto generic, auto dot) {
      for (std::int64_t t = 0; t < tokens; ++t)
        for (std::int64_t r = 0; r < rows; ++r) {
          CAPTURE(r);
          const double exact = double(want[std::size_t(t * rows + r)]);
          CHECK(double(avx2_model(w.row(r), x.row(t), w.blocks_per_row())) == exact);
          CHECK(double(generic(w.row(r), x.row(t), w.blocks_per_row())) == exact);
          CHECK(double(dot(w.row(r), x.row(t), w.blocks_per_row())) == exact);
        }
    };
    SUBCASE("TQ2_0") { check_paths(pack_tq2(m, "unit"), tq2_dot_avx2_model, tq2_dot_generic, tq2_dot); }
    SUBCASE("TQ1_0") { check_paths(pack_tq1(m, "unit"), tq1_dot_avx2_model, tq1_dot_generic, tq1_dot); }
  }

  TEST_CASE("TQ1_0 bad input names the tensor: size, scale, shape, two scales in one block, +2 weights") {
    const Tq1Matrix w = pack_tq1(ggml_weights(4, 512, 1, ScaleKind::random), "blk.0.ffn_gate");
    std::vector<std::uint8_t> bytes(w.bytes.begin(), w.bytes.end());
    test::check_error([&] { tq1_from_bytes("blk.0.ffn_gate", 4, 768, bytes); }, "blk.0.ffn_gate", "bytes", "takes");
    std::vector<std::uint8_t> short_by_one(bytes.begin(), bytes.end() - 1);
    test::check_error([&] { tq1_from_bytes("blk.0.ffn_gate", 4, 512, short_by_one); }, "blk.0.ffn_gate", "431 bytes given", "432 bytes");
    std::vector<std::uint8_t> inf = bytes;
    inf[54 * 5 + 52] = 0x00;
    inf[54 * 5 + 53] = 0x7c;  // fp16 +inf in row 2, block 1
    test::check_error([&] { tq1_from_bytes("blk.0.ffn_gate", 4, 512, inf); }, "TQ1_0 tensor 'blk.0.ffn_gate'", "row 2 block 1", "not finite");
    test::check_error([] { pack_tq1(make_weights(2, 384, 1), "odd"); }, "TQ1_0 tensor 'odd'", "2 x 384", "256");
    test::check_error([&] { tq1_from_bytes("odd", 2, 384, bytes); }, "TQ1_0 tensor 'odd'", "256");
    TernaryMatrix two = ggml_weights(2, 256, 3, ScaleKind::random);
    two.scales[3] = std::uint16_t(two.scales[2] ^ 1);
    test::check_error([&] { pack_tq1(two, "halves"); }, "halves", "row 1 weights 0..255", "share one scale");
    TernaryMatrix plus2 = ggml_weights(2, 256, 3, ScaleKind::random);
    plus2.codes[300] = 3;
    test::check_error([&] { pack_tq1(plus2, "plus2"); }, "plus2", "row 1 weight 44", "tq1_0");
    const std::vector<float> xf = make_float_activations(1, 256, 1);
    const Q8KBatch x = quantize_batch(xf.data(), 1, 256);
    ThreadPool pool(1);
    std::vector<float> y(4);
    test::check_error([&] { run_tq1_mul_mat(pool, w, x, y.data(), 4); }, "TQ1_0 mul_mat", "blk.0.ffn_gate", "512");
  }
}
