// The Leech-lattice record layouts (layouts/records/, lattice/records.hpp, lattice/record_kernels.hpp):
// the declarations and their byte accounting against spec §5.8, the transcoders against the golden
// records of §5.9 and the per-layout checks of §7.3 (round trip, canonical bits, prefixes, exception
// sets, the hoisted Golay70 decoder, masks beyond L, mutations), bad input, and every record matvec
// kernel this build and CPU run (plus AVX-512 through SIMDe on x86-64) against an f64 reference on
// every row (§7.5).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "common/error.hpp"
#include "lattice/leech.hpp"
#include "lattice/quantise.hpp"
#include "lattice/record_kernels.hpp"
#include "lattice/records.hpp"
#include "layouts/records/all.hpp"

#if defined(TERNLAB_LATTICE_AVX512_EMULATED)
namespace ternlab::lattice::detail {
void record_matvec_avx512_emulated(const RecordMatrix&, const float*, float*, std::int64_t, std::int64_t);
}
#endif

using namespace ternlab;
using namespace ternlab::lattice;
using records::FieldKind;

namespace {

std::string hex(const std::vector<std::uint8_t>& b) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (std::uint8_t v : b) s += {d[v >> 4], d[v & 15]};
  return s;
}

std::uint32_t bits_of(const std::vector<std::uint8_t>& rec, int bit, int n) {
  std::uint32_t v = 0;
  for (int i = 0; i < n; ++i) v |= std::uint32_t((rec[std::size_t((bit + i) / 8)] >> ((bit + i) % 8)) & 1) << i;
  return v;
}

// A record in a buffer padded as streams are (decode reads whole fields).
std::vector<std::uint8_t> padded(std::vector<std::uint8_t> r, std::uint8_t fill = 0) {
  r.resize(r.size() + 32, fill);
  return r;
}

int levels_of(std::uint64_t index) {
  const int id = class_of(unrank_index(index));
  return id == 0 ? 1 : lattice_class(id).levels;
}

// The spec §7.3 index set: the origin, first, middle and last index of every class, uniform draws.
std::vector<std::uint64_t> index_set(int draws) {
  std::vector<std::uint64_t> s{0};
  for (const LatticeClass& k : lattice_classes()) {
    s.push_back(k.first);
    s.push_back(k.first + k.size / 2);
    s.push_back(k.first + k.size - 1);
  }
  std::mt19937_64 rng(7);
  for (int i = 0; i < draws; ++i) s.push_back(1 + rng() % ball_points());
  return s;
}

// The spec quotes 4 decimals: equal once rounded (|x − v| ≤ half a unit of the last digit).
bool rounds_to(double x, double v) { return std::fabs(x - v) <= 0.5e-4 + 1e-12; }

}  // namespace

TEST_SUITE("lattice") {
  TEST_CASE("record layouts: declarations, widths, read windows per class, byte accounting of spec §5.8") {
    for (const records::RecordSpec* s : records::kRecordLayouts) CHECK_MESSAGE(records::validate(*s).empty(), s->name);
    // Each rule is load-bearing: a broken copy of a declaration is refused.
    records::RecordSpec broken = records::Planes14::spec;
    broken.fields[3].bit = 30;  // plane0 over the sign mask
    CHECK(records::validate(broken) == "two fields overlap");
    broken = records::Planes12x::spec;
    broken.exceptions = records::ExceptionRule::none;
    CHECK(records::validate(broken) == "five-level classes need an exception table");
    broken = records::Planes14::spec;
    broken.fields[1].bit = 10;
    CHECK(records::validate(broken) == "the gain must be bit 9");

    const auto& s32 = records::Slot32::spec;
    for (int l = 1; l <= 5; ++l) CHECK(records::record_bits(s32, l) == 10 + 24 * l);
    CHECK(records::record_bits(records::Planes14::spec, 3) == 112);
    CHECK(records::max_levels(records::Planes14::spec) == 5);
    CHECK(records::max_levels(records::Planes12x::spec) == 4);
    CHECK(records::max_levels(s32) == 5);

    // Spec §7.3.7: the GPU read window holds every class's payload at the worst in-word shift.
    for (const records::RecordSpec* s : records::kRecordLayouts) {
      int shift = 24;  // grouped records start at any byte
      if (s->addressing == records::Addressing::uniform) {
        shift = 0;
        for (int b = 0; b < 4; ++b) shift = std::max(shift, 8 * ((s->record_bits / 8 * b) % 4));
      }
      for (int l = 1; l <= 5; ++l) {
        int payload = 0;
        for (int i = 0; i < records::n_fields(*s); ++i) {
          const records::Field& f = s->fields[std::size_t(i)];
          if (f.kind != FieldKind::padding && l >= f.min_levels) payload = std::max(payload, f.bit + f.bits);
        }
        CHECK_MESSAGE(shift + payload <= 8 * s->window_bytes, s->name, " L=", l);
      }
    }
    CHECK(records::Planes14::spec.record_bits - 6 + 16 == 122);  // 16 + 106 ≤ 128

    const records::MatrixCounts q = records::qwen3_4b_counts();
    CHECK(q.rows == 1105920);
    CHECK(q.blocks == 150681600);
    CHECK(q.tail_weights == 16957440);
    CHECK(q.weights() == 3633315840ULL);
    CHECK(q.matrices == 252);
    const records::Accounting p14 = records::account(records::Planes14::spec, q);
    CHECK(rounds_to((p14.tail_bits + p14.scale_bits) / double(q.weights()), 0.1591));
    CHECK(rounds_to(p14.memory_bpw, 4.8040));
    CHECK(rounds_to(records::account(records::Planes12x::spec, records::qwen3_4b_counts(0.033824)).memory_bpw, 4.3424));
    CHECK(rounds_to(records::account(records::Golay70::spec, records::qwen3_4b_counts(0.074357)).memory_bpw, 3.5891));
    CHECK(p14.code_bpw * double(q.weights()) / (24.0 * double(q.blocks)) == doctest::Approx(2.0).epsilon(1e-12));
    // The side channels are billed: without its exceptions Planes12x would be 96-bit records alone.
    const auto bare = records::account(records::Planes12x::spec, q);
    CHECK(bare.side_bits == 0);
    CHECK(records::account(records::Planes12x::spec, records::qwen3_4b_counts(0.1)).side_bits ==
          doctest::Approx(144.0 * double(records::qwen3_4b_counts(0.1).exceptions)));
  }

  TEST_CASE("record transcoders: the golden records of spec §5.9") {
    struct Golden {
      std::uint64_t index;
      int gain;
      const char *planes14, *slot32, *golay70;
    };
    const Golden golden[] = {
        {1, 0, "010000000c000000000000000000", "010000000c000000", "0100c0000000000000"},
        {98257, 1, "0306000004000000000000000000", "0306000004000000", "030240000000000000"},
        {196560, 0, "03fcffff01000002000000000000", "03fcffff01000002", "03fc3f000020000000"},
        {111043117458000ULL, 1, "2dffffff03000002000000000000", "2dffffff03000002", "2dff3f000020000000"},
        {6797434004561ULL, 1, "87821884420f1139680000000000", "8782188442071139600000080000", "8702aa830600884128"},
        {13247980736556ULL, 0, "a088bcc707228308400100000000", "a088bcc707228208400000000100", "a0746d203288001400"},
        {55564639800632ULL, 0, "f3500f958de02852020800000001", "f3500f958de02052020000000800000001", "000000000000000000"},
    };
    for (const Golden& g : golden) {
      CAPTURE(g.index);
      const auto p14 = encode_record(records::Planes14::spec, g.index, g.gain, "golden");
      CHECK(hex(p14) == g.planes14);
      CHECK(hex(encode_record(records::Slot32::spec, g.index, g.gain, "golden")) == g.slot32);
      CHECK(hex(encode_record(records::Golay70::spec, g.index, g.gain, "golden")) == g.golay70);
      const auto p12 = encode_record(records::Planes12x::spec, g.index, g.gain, "golden");
      if (levels_of(g.index) <= 4)
        CHECK(hex(p12) == std::string(g.planes14).substr(0, 24));
      else
        CHECK(hex(p12) == "000000000000000000000000");  // origin representative, gain 0 copied
    }
  }

  TEST_CASE("record transcoders: round trip, canonical bits, prefixes, hoisted Golay70, masks beyond L (spec §7.3)") {
    const auto& p14 = records::Planes14::spec;
    const auto& p12 = records::Planes12x::spec;
    const auto& s32 = records::Slot32::spec;
    const auto& g70 = records::Golay70::spec;
    int exceptions12 = 0, exceptions70 = 0, checked = 0;
    for (const std::uint64_t index : index_set(1500))
      for (int gain = 0; gain < 2; ++gain) {
        CAPTURE(index);
        const Point x = unrank_index(index);
        const int id = class_of(x);
        const int levels = id == 0 ? 1 : lattice_class(id).levels;
        for (const records::RecordSpec* s : records::kRecordLayouts) {
          const auto rec = encode_record(*s, index, gain, "block");
          CHECK(int(rec.size()) == records::record_bytes(*s, levels));
          const RecordContent c = decode_record(*s, padded(rec).data(), "block");
          CHECK(c.gain == gain);
          if (is_exception_class(*s, id)) {
            CHECK(c.class_id == 0);  // origin record, gain copied
            for (std::size_t i = 0; i < rec.size(); ++i) CHECK(rec[i] == (i == 1 ? std::uint8_t(gain << 1) : 0));
          } else {
            CHECK(c.class_id == id);
            CHECK(c.x == x);
            CHECK(rank_point(c.x) == index);
          }
          // Canonical bits: padding zero, sign bits of zero weights zero.
          for (int i = 0; i < records::n_fields(*s); ++i)
            if (s->fields[std::size_t(i)].kind == FieldKind::padding)
              CHECK(bits_of(rec, s->fields[std::size_t(i)].bit, s->fields[std::size_t(i)].bits) == 0);
          if (records::has_field(*s, FieldKind::sign_mask) && !is_exception_class(*s, id)) {
            const std::uint32_t sign = bits_of(rec, 10, 24);
            for (int j = 0; j < 24; ++j) CHECK((sign >> j & 1) == std::uint32_t(x[std::size_t(j)] < 0));
          }
        }
        const auto r14 = encode_record(p14, index, gain, "b"), r12 = encode_record(p12, index, gain, "b");
        const auto r32 = encode_record(s32, index, gain, "b"), r70 = encode_record(g70, index, gain, "b");
        if (levels <= 3) CHECK(std::equal(r32.begin(), r32.end(), r14.begin()));
        if (levels <= 4) CHECK(std::equal(r12.begin(), r12.end(), r14.begin()));
        // Exception sets: Planes12x exactly the five-level classes; Golay70 exactly the 47 classes.
        exceptions12 += is_exception_class(p12, id) ? 1 : 0;
        exceptions70 += is_exception_class(g70, id) ? 1 : 0;
        CHECK(is_exception_class(p12, id) == (levels == 5));
        CHECK(golay70_hoisted_decode(padded(r70).data()) == decode_record(g70, padded(r70).data(), "b").x);
        // Slot32's masks beyond L are not part of the record: all-ones bytes after it change nothing.
        CHECK(decode_record(s32, padded(r32, 0xFF).data(), "b").x == decode_record(s32, padded(r32).data(), "b").x);
        ++checked;
      }
    CHECK(checked == 2 * (1 + 3 * 301 + 1500));
    CHECK(exceptions12 > 0);
    CHECK(exceptions70 > exceptions12);
    const int golay_exceptions[] = {26,  43,  60,  63,  65,  90,  92,  94,  96,  123, 124, 125, 127, 130, 132, 134,
                                    136, 151, 170, 171, 174, 177, 179, 181, 183, 185, 197, 198, 224, 225, 227, 229,
                                    230, 231, 233, 234, 237, 240, 243, 245, 247, 249, 266, 267, 268, 269, 295};
    std::vector<int> ids;
    for (const LatticeClass& k : lattice_classes())
      if (is_exception_class(g70, k.id)) ids.push_back(k.id);
    CHECK(ids == std::vector<int>(std::begin(golay_exceptions), std::end(golay_exceptions)));
  }

  TEST_CASE("record transcoders: one-field mutations are caught (spec §7.3.9)") {
    // Each mutation must make the decode fail or change the point or gain.
    const std::uint64_t indices[] = {6797434004561ULL, 13247980736556ULL, 196560, 82018266106361ULL};
    for (const std::uint64_t index : indices)
      for (const records::RecordSpec* s : records::kRecordLayouts) {
        const auto rec = encode_record(*s, index, 1, "b");
        const RecordContent ok = decode_record(*s, padded(rec).data(), "b");
        if (ok.class_id == 0) continue;  // an exception: its record is Planes14's
        int caught = 0, tried = 0;
        for (int i = 0; i < records::n_fields(*s); ++i) {
          const records::Field& f = s->fields[std::size_t(i)];
          if (f.kind == FieldKind::padding || f.bit + f.bits > 8 * int(rec.size())) continue;
          for (int bit : {f.bit, f.bit + f.bits / 2, f.bit + f.bits - 1}) {
            auto bad = rec;
            bad[std::size_t(bit / 8)] ^= std::uint8_t(1u << (bit % 8));
            ++tried;
            try {
              const RecordContent c = decode_record(*s, padded(bad).data(), "b");
              caught += (c.x != ok.x || c.gain != ok.gain || c.class_id != ok.class_id) ? 1 : 0;
            } catch (const Error&) {
              ++caught;
            }
          }
        }
        CAPTURE(s->name);
        CAPTURE(index);
        CHECK(tried > 0);
        CHECK(caught == tried);
      }
  }

  TEST_CASE("record transcoders: bad input names the tensor, block and field") {
    EncodedMatrix e;
    e.name = "w";
    e.rows = 1, e.cols = 24 * 3 + 2, e.tail = 2;
    e.row_scale = {1.0};
    e.centroid = {0.5, 1.5};
    e.index = {1, 2, ball_points() + 1};
    e.gain = {0, 1, 0};
    e.tail_values = {0.25f, -0.5f};
    CHECK_THROWS_WITH_AS(transcode(e, records::Planes14::spec),
                         doctest::Contains("tensor 'w', block 2, field index: lattice index 111043117458001 is outside"), Error);
    e.index[2] = 3;
    e.gain[1] = 2;
    CHECK_THROWS_WITH_AS(transcode(e, records::Golay70::spec), doctest::Contains("tensor 'w', block 1, field gain"), Error);
    e.gain[1] = 1;
    e.tail = 3;
    CHECK_THROWS_WITH_AS(transcode(e, records::Slot32::spec),
                         doctest::Contains("tensor 'w': field tail: width 74 is not a whole number of 24-weight blocks plus the declared tail 3"),
                         Error);
    e.tail = 2;
    RecordMatrix m = transcode(e, records::Planes14::spec);
    CHECK(untranscode(m).index == e.index);
    m.stream[14 * 1] = 0x2e, m.stream[14 * 1 + 1] |= 1;  // class id 302 in block 1
    CHECK_THROWS_WITH_AS(untranscode(m), doctest::Contains("tensor 'w', block 1, field class id: class id 302 is not one of the 301"),
                         Error);
    // An exception out of order.
    e.index = {55564639800632ULL, 1, 55564639800632ULL};
    RecordMatrix x = transcode(e, records::Planes12x::spec);
    REQUIRE(x.exc_index == std::vector<std::uint32_t>{0, 2});
    CHECK(untranscode(x).index == e.index);
    x.exc_index[1] = 1;
    CHECK_THROWS_WITH_AS(untranscode(x), doctest::Contains("tensor 'w', block 1"), Error);
    std::vector<float> in(std::size_t(e.cols)), out(1);
    CHECK_THROWS_WITH_AS(record_matvec(m, std::span(in).first(10), out, record_kernels()[0]),
                         doctest::Contains("tensor 'w': x has 10 values for 74 columns"), Error);
  }

  TEST_CASE("record matvec kernels: every row against f64 for every layout and variant (spec §7.5)") {
    std::vector<RecordKernelVariant> variants = record_kernels();
#if defined(TERNLAB_LATTICE_AVX512_EMULATED)
    variants.push_back({"avx512-simde", &detail::record_matvec_avx512_emulated});
#endif
    std::vector<std::string> names;
    for (const auto& v : variants) names.push_back(v.name);
    MESSAGE("record kernel variants checked: ", names.size());
#if defined(__x86_64__)
    CHECK(std::find(names.begin(), names.end(), "avx2") != names.end());  // every x86 CI machine has AVX2
    CHECK(std::find(names.begin(), names.end(), "avx512-simde") != names.end());
#elif defined(__aarch64__)
    CHECK(std::find(names.begin(), names.end(), "neon") != names.end());
#endif
    struct Shape {
      std::int64_t rows, cols, tail;
    };
    for (const Shape sh : {Shape{16, 24 * 7 + 5, 5}, Shape{16, 24 * 7, 0}, Shape{5, 5, 5}, Shape{3, 24 * 2, 0}}) {
      CAPTURE(sh.cols);
      std::mt19937_64 rng(std::uint64_t(sh.cols));
      std::uniform_real_distribution<double> uni(-1.0, 1.0);
      EncodedMatrix e;
      e.name = "w";
      e.rows = sh.rows, e.cols = sh.cols, e.tail = sh.tail;
      const std::int64_t nb = e.blocks_per_row();
      // Random indices, plus the origin, both cosets, a five-level class (96) and an even Golay70
      // exception class with three magnitudes in one residue (26) wherever there are blocks.
      const std::uint64_t special[] = {0, lattice_class(1).first, lattice_class(3).first + 5, lattice_class(96).first + 7,
                                       lattice_class(26).first + 3, lattice_class(295).first};
      for (std::int64_t b = 0; b < sh.rows * nb; ++b) {
        e.index.push_back(std::size_t(b) < std::size(special) ? special[b] : 1 + rng() % ball_points());
        e.gain.push_back(std::uint8_t(rng() & 1));
      }
      e.centroid = {0.75, 1.25};
      for (std::int64_t r = 0; r < sh.rows; ++r) e.row_scale.push_back(float(0.5 + 0.5 * (uni(rng) + 1)));
      for (std::int64_t i = 0; i < sh.rows * sh.tail; ++i) e.tail_values.push_back(float(uni(rng)));
      std::vector<float> x(std::size_t(sh.cols));
      for (float& v : x) v = float(uni(rng));

      // f64 reference: decoded weights from the archive decode (level / √(16 m)), centroids and
      // row scales at the precision the kernels read (f32), f64 arithmetic.
      std::vector<double> ref(std::size_t(sh.rows)), mag(std::size_t(sh.rows));
      for (std::int64_t r = 0; r < sh.rows; ++r) {
        double s = 0, a = 0;
        for (std::int64_t p = 0; p < nb; ++p) {
          const std::size_t b = std::size_t(r * nb + p);
          const Point pt = unrank_index(e.index[b]);
          const int id = class_of(pt);
          const double norm = id == 0 ? 1.0 : std::sqrt(16.0 * lattice_class(id).shell);
          const double k = double(float(e.row_scale[std::size_t(r)])) * double(float(e.centroid[e.gain[b]])) / norm;
          for (int j = 0; j < 24; ++j) {
            const double t = k * pt[std::size_t(j)] * double(x[std::size_t(24 * p + j)]);
            s += t, a += std::fabs(t);
          }
        }
        for (std::int64_t t = 0; t < sh.tail; ++t) {
          const double v = double(e.tail_values[std::size_t(r * sh.tail + t)]) * double(x[std::size_t(24 * nb + t)]);
          s += v, a += std::fabs(v);
        }
        ref[std::size_t(r)] = s, mag[std::size_t(r)] = a;
      }

      for (const RecordKernelVariant& k : variants) {
        std::vector<float> y_s32, y_p14;
        for (const records::RecordSpec* s : records::kRecordLayouts) {
          CAPTURE(k.name);
          CAPTURE(s->name);
          RecordMatrix m = transcode(e, *s);
          if (s->id == records::RecordId::slot32)  // bytes past a record within its group's stride: not read
            for (std::uint64_t b = 0; b < m.blocks(); ++b) {
              const std::uint64_t at = m.record_offset(b);
              const std::uint64_t stride = (m.base[b / 32 + 1] - m.base[b / 32]) / 32;
              const int own = records::record_bytes(*s, levels_of(e.index[b]));
              for (std::uint64_t i = std::uint64_t(own); i < stride; ++i) m.stream[at + i] = 0xFF;
            }
          std::vector<float> y(std::size_t(sh.rows), -99.0f);
          record_matvec(m, x, y, k);
          // 1e-5 · Σ|w·x| (rule M1): f32 products and sums of ≤ 173 terms stay near 2^-24 relative
          // per operation, far below it; a wrong level, sign or gain is off by a whole term.
          for (std::int64_t r = 0; r < sh.rows; ++r)
            CHECK(std::fabs(double(y[std::size_t(r)]) - ref[std::size_t(r)]) <= 1e-5 * mag[std::size_t(r)] + 1e-30);
          if (s->id == records::RecordId::slot32) y_s32 = y;
          if (s->id == records::RecordId::planes14) y_p14 = y;
          // A row range computes those rows only.
          if (sh.rows > 3) {
            std::vector<float> part(std::size_t(sh.rows), -99.0f);
            record_matvec(m, x, part, k, 1, 3);
            CHECK(part[0] == -99.0f);
            CHECK(part[1] == y[1]);
            CHECK(part[2] == y[2]);
            CHECK(part[3] == -99.0f);
          }
        }
        // Same decoded content, same accumulation order: bit-identical.
        CHECK(y_s32 == y_p14);
      }
    }
  }
}
