// Packing, unpacking and transcoding are lossless and byte-exact, for every registered layout.
#include <random>

#include "common/fp16.hpp"
#include "kernels/testdata.hpp"
#include "tests/support.hpp"

using namespace ternlab;

TEST_SUITE("codec") {
  TEST_CASE("pack then unpack is the identity, in every layout") {
    for (const LayoutInfo* L : all_layouts()) {
      CAPTURE(L->name);
      const Fill fill = L->code == Code::two_bit ? Fill::code3 : Fill::random;
      const TernaryMatrix m = make_weights(48, 1024, 7, fill, ScaleKind::random);  // 48: whole blocks of every layout
      const PackedMatrix p = pack(m, *L);
      CHECK(p.bytes.size() == std::size_t(48 * 1024 * L->bits_per_weight() / 8));
      CHECK(unpack(p) == m);
    }
  }

  TEST_CASE("transcodes between every pair of layouts are lossless and byte-exact") {
    for (const LayoutInfo* from : all_layouts())
      for (const LayoutInfo* to : all_layouts()) {
        const std::int64_t rows = std::lcm(test::whole_rows(*from, 16), test::whole_rows(*to, 16));
        const TernaryMatrix m = make_weights(rows, 512, 11, Fill::random, ScaleKind::random);
        CAPTURE(from->name);
        CAPTURE(to->name);
        const PackedMatrix a = pack(m, *from);
        const PackedMatrix b = transcode(a, *to);
        CHECK(b.bytes == pack(m, *to).bytes);
        CHECK(transcode(b, *from).bytes == a.bytes);
      }
  }

  TEST_CASE("pq2_0 bytes are the GGUF block: fp16 d first, then u[4b] | u[4b+1] << 2 | ...") {
    const TernaryMatrix m = make_weights(1, 256, 3, Fill::code3, ScaleKind::random);
    const PackedMatrix p = pack(m, find_layout("pq2_0"));
    REQUIRE(p.bytes.size() == 68);
    for (int blk = 0; blk < 2; ++blk) {
      const std::uint8_t* b = p.bytes.data() + 34 * blk;
      CHECK((b[0] | b[1] << 8) == m.scale_bits(0, blk));
      for (int j = 0; j < 32; ++j) {
        const auto* u = &m.codes[std::size_t(128 * blk + 4 * j)];
        const int packed = u[0] | u[1] << 2 | u[2] << 4 | u[3] << 6;
        CHECK(b[2 + j] == packed);
      }
    }
  }

  TEST_CASE("ptq1_0 bytes: ceil(256 q / 243), staged order, fp16 d at byte 26") {
    // The spec's worked examples.
    const std::uint8_t five[5] = {2, 0, 1, 2, 1};
    CHECK(encode_trits(five, 5) == 188);
    const std::uint8_t four[5] = {2, 0, 1, 2, 0};
    CHECK(encode_trits(four, 5) == 187);
    for (int n = 0; n < 5; ++n) CHECK(decode_trit(188, n) == five[n]);
    // Every 5-trit code decodes back; all-2 encodes to 255.
    for (int q = 0; q < 243; ++q) {
      std::uint8_t d[5];
      for (int n = 4, v = q; n >= 0; --n, v /= 3) d[n] = std::uint8_t(v % 3);
      const std::uint8_t b = encode_trits(d, 5);
      CHECK(b == (256 * q + 242) / 243);
      for (int n = 0; n < 5; ++n) CHECK(decode_trit(b, n) == d[n]);
    }
    // The compare form floor(3 v / 256) = (v >= 86) + (v >= 171) for every byte value.
    for (int v = 0; v < 256; ++v) {
      const int ge = int(v >= 86) + int(v >= 171);
      const int floor3 = (3 * v) >> 8;
      CHECK(floor3 == ge);
    }

    const TernaryMatrix m = make_weights(1, 128, 5, Fill::random, ScaleKind::random);
    const PackedMatrix p = pack(m, find_layout("ptq1_0"));
    REQUIRE(p.bytes.size() == 28);
    CHECK((p.bytes[26] | p.bytes[27] << 8) == m.scale_bits(0, 0));
    for (int j = 0; j < 16; ++j) {
      std::uint8_t d[5];
      for (int n = 0; n < 5; ++n) d[n] = m.codes[std::size_t(16 * n + j)];
      CHECK(p.bytes[std::size_t(j)] == encode_trits(d, 5));
    }
    for (int j = 0; j < 8; ++j) {
      std::uint8_t d[5];
      for (int n = 0; n < 5; ++n) d[n] = m.codes[std::size_t(80 + 8 * n + j)];
      CHECK(p.bytes[std::size_t(16 + j)] == encode_trits(d, 5));
    }
    for (int h = 0; h < 2; ++h) {
      std::uint8_t d[5] = {};
      for (int n = 0; n < 4; ++n) d[n] = m.codes[std::size_t(120 + 2 * n + h)];
      CHECK(p.bytes[std::size_t(24 + h)] == encode_trits(d, 5));
    }
  }

  TEST_CASE("the ternary quantiser follows quantize_row_pq2_0_ref") {
    std::vector<float> x(128);
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (auto& v : x) v = u(rng);
    x[17] = -1.5f;  // the amax
    x[3] = 0.75f;   // exactly half of amax: rounds away from zero to +1
    x[4] = -0.75f;
    const TernaryMatrix m = quantize_ternary(x.data(), 1, 128);
    CHECK(fp16_to_float(m.scales[0]) == 1.5f);
    CHECK(m.codes[17] == 0);
    CHECK(m.codes[3] == 2);
    CHECK(m.codes[4] == 0);
    for (int j = 0; j < 128; ++j) CHECK(m.codes[std::size_t(j)] == int(std::round(x[std::size_t(j)] / 1.5f)) + 1);
  }

  TEST_CASE("fp16 conversion rounds to nearest even and round-trips every finite value") {
    CHECK(float_to_fp16(1.0f) == 0x3c00);
    CHECK(float_to_fp16(-2.0f) == 0xc000);
    CHECK(float_to_fp16(1.0f + 1.0f / 2048) == 0x3c00);  // tie -> even
    CHECK(float_to_fp16(1.0f + 3.0f / 2048) == 0x3c02);  // tie -> even (up)
    for (std::uint32_t h = 0; h < 65536; ++h) {
      if (!fp16_is_finite(std::uint16_t(h))) continue;
      const float f = fp16_to_float(std::uint16_t(h));
      if (f == 0.0f) continue;  // +0 and -0 both fine
      CHECK(float_to_fp16(f) == h);
    }
  }
}
