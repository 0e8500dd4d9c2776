// Packing, unpacking and transcoding are lossless and byte-exact, for every registered layout.
#include <cmath>
#include <random>
#include <set>

#include "common/fp16.hpp"
#include "kernels/testdata.hpp"
#include "tests/support.hpp"

using namespace ternlab;

TEST_SUITE("codec") {
  TEST_CASE("pack then unpack is the identity, in every layout") {
    for (const LayoutInfo* L : all_layouts()) {
      CAPTURE(L->name);
      const Fill fill = L->code == Code::two_bit ? Fill::code3 : Fill::random;
      // Whole blocks of the layout, at least 48 rows; scales random in the layout's scale format.
      const std::int64_t rows = test::whole_rows(*L, 48);
      const TernaryMatrix m =
          test::share_scales(requantise_scales(make_weights(rows, 1024, 7, fill, ScaleKind::random), L->scale_format()), *L);
      const PackedMatrix p = pack(m, *L);
      CHECK(p.bytes.size() == std::size_t(double(rows) * 1024 * L->bits_per_weight() / 8) + std::size_t(L->facts.tail_bytes));
      CHECK(unpack(p) == m);
    }
  }

  TEST_CASE("transcodes between every pair of layouts are lossless and byte-exact") {
    for (const LayoutInfo* from : all_layouts())
      for (const LayoutInfo* to : all_layouts()) {
        const std::int64_t rows = std::lcm(test::whole_rows(*from, 16), test::whole_rows(*to, 16));
        // Scales both formats hold: rounded to one, then the other (each step lands on a coarser grid).
        // Scale groups both hold: shared over the wider of the two (the exact refusals: suite peer-formats).
        const TernaryMatrix m = test::share_scales(
            test::share_scales(
                requantise_scales(
                    requantise_scales(make_weights(rows, 512, 11, Fill::random, ScaleKind::random), from->scale_format()),
                    to->scale_format()),
                *from),
            *to);
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

  TEST_CASE("banded base-3 bytes: 84 t0 + digits 1-4 in base 3; digit 0 read from byte >> 2; ceil bytes for the permute kernels") {
    std::set<int> bytes;
    for (int q = 0; q < 243; ++q) {
      std::uint8_t d[5];
      for (int n = 4, v = q; n >= 0; --n, v /= 3) d[n] = std::uint8_t(v % 3);
      const std::uint8_t b = encode_digits(Code::base3_banded, d);
      CAPTURE(q);
      CHECK(b == 84 * d[0] + q % 81);
      bytes.insert(b);
      for (int n = 0; n < 5; ++n) CHECK(decode_digit(Code::base3_banded, b, n) == d[n]);
      CHECK(((b >> 2) >= 21) + ((b >> 2) >= 42) == d[0]);  // the bands of byte >> 2
      CHECK(banded_writes(b));
      CHECK(banded_to_base3()[b] == (256 * q + 242) / 243);  // ggml's byte of the same digits
      CHECK(encode_digits(Code::base3, d) == (256 * q + 242) / 243);
    }
    CHECK(bytes.size() == 243);
    CHECK_FALSE(banded_writes(81));
    CHECK_FALSE(banded_writes(252));
    const std::uint8_t two[5] = {2, 2, 2, 2, 2};
    CHECK(encode_digits(Code::base3_banded, two) == 248);
    test::check_error([&] { encode_digits(Code::two_bit, two); }, "not a base-3 code");

    // b3r's bytes are banded: a packed block decodes back, and its first byte is the first
    // strip's digits of row 0, weights 0, 4, 8, 12, 16.
    const TernaryMatrix m = make_weights(16, 128, 9, Fill::random, ScaleKind::random);
    const LayoutInfo& L = find_layout("b3r");
    CHECK(L.code == Code::base3_banded);
    const PackedMatrix p = pack(m, L);
    std::uint8_t d[5];
    for (int n = 0; n < 5; ++n) d[n] = m.codes[std::size_t(4 * n)];
    CHECK(p.bytes[0] == encode_digits(Code::base3_banded, d));
    CHECK(unpack(p).codes == m.codes);
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

TEST_SUITE("codec") {
  TEST_CASE("scale formats: nearest value, ties to even, saturation, and exact decoding") {
    const auto nearest = [](ScaleFormat f, float v) { return encode_scale_nearest(f, v).value; };
    // bf16: 8 significant bits.
    CHECK(nearest(ScaleFormat::bf16, 1.0f + 0x1p-8f) == 1.0f);                 // tie: to the even mantissa
    CHECK(nearest(ScaleFormat::bf16, 1.0f + 3 * 0x1p-8f) == 1.0f + 0x1p-6f);  // tie: up to the even one
    CHECK(scale_representable(ScaleFormat::bf16, 1.0f + 0x1p-7f));
    CHECK(!scale_representable(ScaleFormat::bf16, 1.0f + 0x1p-8f));
    CHECK(scale_representable(ScaleFormat::bf16, 0x1p-130f));  // beyond fp16's range, inside bf16's
    // e4m3: 4 significant bits, largest 448, smallest 2^-9, no inf.
    CHECK(nearest(ScaleFormat::e4m3, 448.0f) == 448.0f);
    CHECK(nearest(ScaleFormat::e4m3, 460.0f) == 448.0f);
    CHECK(nearest(ScaleFormat::e4m3, 1e30f) == 448.0f);
    CHECK(nearest(ScaleFormat::e4m3, -500.0f) == -448.0f);
    CHECK(!scale_representable(ScaleFormat::e4m3, 500.0f));
    CHECK(nearest(ScaleFormat::e4m3, 1.0625f) == 1.0f);     // tie between 1 and 1.125
    CHECK(nearest(ScaleFormat::e4m3, 1.1875f) == 1.25f);    // tie between 1.125 and 1.25
    CHECK(nearest(ScaleFormat::e4m3, 0x1p-9f) == 0x1p-9f);  // smallest subnormal
    CHECK(nearest(ScaleFormat::e4m3, 0x1p-10f) == 0.0f);    // tie between 0 and 2^-9
    CHECK(nearest(ScaleFormat::e4m3, 3 * 0x1p-10f) == 0x1p-8f);
    CHECK(nearest(ScaleFormat::e4m3, 7.5f * 0x1p-9f) == 0x1p-6f);  // subnormal rounding up to the smallest normal
    CHECK(nearest(ScaleFormat::e4m3, 0x1p-20f) == 0.0f);
    CHECK(encode_scale_nearest(ScaleFormat::e4m3, 448.0f).bytes[0] == 0x7e);
    CHECK(decode_e4m3(0x08) == 0x1p-6f);
    CHECK(decode_e4m3(0x01) == 0x1p-9f);
    CHECK(decode_e4m3(0xb8) == -1.0f);
    CHECK(std::isnan(decode_e4m3(0x7f)));
    CHECK(std::isnan(decode_e4m3(0xff)));
    // e8m0: powers of two, rounded in the value domain (midpoint 1.5 * 2^e), ties to the even code.
    CHECK(nearest(ScaleFormat::e8m0, 1.0f) == 1.0f);
    CHECK(encode_scale_nearest(ScaleFormat::e8m0, 1.0f).bytes[0] == 127);
    CHECK(nearest(ScaleFormat::e8m0, 1.4f) == 1.0f);
    CHECK(nearest(ScaleFormat::e8m0, 1.6f) == 2.0f);
    CHECK(nearest(ScaleFormat::e8m0, 1.5f) == 2.0f);   // tie: code 128 is even
    CHECK(nearest(ScaleFormat::e8m0, 3.0f) == 2.0f);   // tie: code 128 again
    CHECK(nearest(ScaleFormat::e8m0, 0.0f) == 0x1p-127f);  // no zero: the smallest value
    CHECK(nearest(ScaleFormat::e8m0, 1e-45f) == 0x1p-127f);
    CHECK(nearest(ScaleFormat::e8m0, 3e38f) == 0x1p127f);  // saturating
    CHECK(decode_e8m0(0) == 0x1p-127f);
    CHECK(decode_e8m0(254) == 0x1p127f);
    CHECK(std::isnan(decode_e8m0(255)));
    CHECK(!scale_representable(ScaleFormat::e8m0, 0.0f));
    CHECK(!scale_representable(ScaleFormat::e8m0, -1.0f));
    CHECK(scale_representable(ScaleFormat::e8m0, 0.25f));
    // Every finite code of the one-byte formats encodes back to itself.
    for (int c = 0; c < 256; ++c) {
      const std::uint8_t b = std::uint8_t(c);
      CAPTURE(c);
      if (!std::isnan(decode_e4m3(b)) && (c & 0x7f) != 0)
        CHECK(encode_scale_nearest(ScaleFormat::e4m3, decode_e4m3(b)).bytes[0] == b);
      if (c < 255) CHECK(encode_scale_nearest(ScaleFormat::e8m0, decode_e8m0(b)).bytes[0] == b);
    }
  }

  TEST_CASE("an exact pack or transcode refuses a scale the target format cannot hold, naming it") {
    TernaryMatrix m = make_weights(4, 256, 9);
    m.scales[5] = float_to_fp16(0.0123f);  // row 2 block 1
    test::check_error([&] { pack(m, find_layout("t2p-e4m3"), "blk.0.ffn_up.weight"); }, "blk.0.ffn_up.weight", "row 2 block 1",
                "0.0122", "t2p-e4m3", "e4m3", "refuses");
    const PackedMatrix t2p = pack(m, find_layout("t2p"));
    test::check_error([&] { transcode(t2p, find_layout("t2p-e8m0"), "output.weight"); }, "output.weight", "row 2 block 1",
                "t2p-e8m0");
    m.scales[5] = 0;  // zero: no e8m0 value
    test::check_error([&] { pack(m, find_layout("t2p-e8m0"), "w"); }, "w: row 2 block 1", "positive powers of two");
    m.scales[5] = float_to_fp16(0.75f);  // a value e4m3 and bf16 hold
    CHECK(unpack(pack(m, find_layout("t2p-e4m3"))) == m);
    CHECK(unpack(pack(m, find_layout("t2p-bf16"))) == m);
  }

  TEST_CASE("requantise rounds every scale to the nearest one of the target and reports the error") {
    TernaryMatrix m = make_weights(4, 128, 10);
    const float v[4] = {1.0f, 1.5f, 3.0f, 0.7f};
    for (int r = 0; r < 4; ++r) m.scales[std::size_t(r)] = float_to_fp16(v[r]);
    ScaleRequantisation rep;
    const PackedMatrix p = requantise(pack(m, find_layout("t2p")), find_layout("t2p-e8m0"), "w", &rep);
    const TernaryMatrix got = unpack(p);
    CHECK(got.codes == m.codes);
    const float want[4] = {1.0f, 2.0f, 2.0f, 0.5f};
    for (int r = 0; r < 4; ++r) CHECK(fp16_to_float(got.scales[std::size_t(r)]) == want[r]);
    const double rel07 = (fp16_to_float(float_to_fp16(0.7f)) - 0.5) / fp16_to_float(float_to_fp16(0.7f));
    CHECK(rep.scales == 4);
    CHECK(rep.changed == 3);
    CHECK(rep.max_rel_error == doctest::Approx(1.0 / 3).epsilon(1e-12));
    CHECK(rep.mean_rel_error == doctest::Approx((1.0 / 3 + 1.0 / 3 + rel07) / 4).epsilon(1e-12));
    CHECK(rep.worst == "row 1 block 0: 1.5 -> 2");
    // Into fp16 nothing moves; the exact path and the lossy one agree.
    ScaleRequantisation none;
    CHECK(requantise(pack(m, find_layout("t2p")), find_layout("t2x4"), "w", &none).bytes ==
          pack(m, find_layout("t2x4")).bytes);
    CHECK(none.changed == 0);
    CHECK(none.max_rel_error == 0);
    CHECK(none.worst.empty());
    // No rounding exists: a negative scale into e8m0, and zero, whose e8m0 value 2^-127 fp16 cannot hold.
    m.scales[2] = float_to_fp16(-0.5f);
    test::check_error([&] { requantise_scales(m, ScaleFormat::e8m0, "wq"); }, "wq: row 2 block 0", "negative", "e8m0");
    m.scales[2] = 0;
    test::check_error([&] { requantise_scales(m, ScaleFormat::e8m0, "wq"); }, "wq: row 2 block 0", "outside the fp16 range");
    CHECK(fp16_to_float(requantise_scales(m, ScaleFormat::e4m3).scales[2]) == 0.0f);
  }

  TEST_CASE("unpack refuses a stored scale the layout-free fp16 form cannot hold") {
    PackedMatrix p = pack(make_weights(4, 128, 12), find_layout("t2p-e8m0"));
    p.bytes[128 + 3] = 127 + 20;  // row 3: 2^20, beyond fp16
    test::check_error([&] { unpack(p); }, "t2p-e8m0", "row 3 block 0", "e8m0");
  }
}
