// The DSL derives the right geometry from the declarations alone, and the strategies recognise
// their structures in it (kernels/strategies/<name>/plan.hpp); the stock declarations place every
// weight exactly where the spec's formulas say.
#include <doctest/doctest.h>

#include <tuple>

#include "kernels/catalog.hpp"
#include "kernels/strategies/all.hpp"
#include "layouts/stock.hpp"
#include "ternlab_test_layouts.hpp"  // every header in tests/layouts/ (tests/CMakeLists.txt)

using namespace ternlab;
using namespace ternlab::layouts;
using ternlab::test_layouts::T2p8;
using ternlab::test_layouts::T2rSlotMajor;

// A valid layout that is not slot-vectorizable: four rows whose bytes alternate between rows.
struct AlternatingRows {
  static constexpr LayoutSpec spec{
      .name = "alternating",
      .rows = 4,
      .scales = {.offset = 0, .row_stride = 2},
      .pieces = pieces(Piece{.row = modes(bytes("r", 4, 1)), .k = modes(slots("s", 4, 1), bytes("b", 32, 4)), .byte_base = 8}),
  };
};
// Invalid declarations: two weights in one (byte, slot); a weight on a scale byte.
struct Overlapping {
  static constexpr LayoutSpec spec{.name = "overlapping",
                                   .pieces = pieces(Piece{.row = modes(bytes("r", 1, 0)),
                                                          .k = modes(slots("s", 4, 1), bytes("b", 32, 0)),
                                                          .byte_base = 2})};
};
struct OnScale {
  static constexpr LayoutSpec spec{.name = "on-scale",
                                   .pieces = pieces(Piece{.row = modes(bytes("r", 1, 0)),
                                                          .k = modes(slots("s", 4, 1), bytes("b", 32, 1)),
                                                          .byte_base = 1})};
};
struct NotALayout {};
// Row-interleaved in all but the lane width: 2-byte and 32-byte lanes (lane j = row j), which no
// broadcast reads (a lane is a dword, qword or 16-byte word).
struct Lane2 {
  static constexpr LayoutSpec spec{
      .name = "lane2",
      .rows = 16,
      .scales = {.offset = 0, .row_stride = 2},
      .pieces = pieces(Piece{.row = modes(bytes("lane", 16, 2)),
                             .k = modes(bytes("b", 2, 1), slots("s", 4, 1), bytes("strip", 16, 32)),
                             .byte_base = 32}),
  };
};
struct Lane32 {
  static constexpr LayoutSpec spec{
      .name = "lane32",
      .rows = 8,
      .scales = {.offset = 0, .row_stride = 2},
      .pieces = pieces(Piece{.row = modes(bytes("lane", 8, 32)),
                             .k = modes(bytes("b", 32, 1), slots("s", 4, 1)),
                             .byte_base = 16}),
  };
};

// --- concepts (compile-time proofs) ----------------------------------------------------------------
static_assert(TernaryLayout<Pq2_0> && TernaryLayout<Ptq1_0> && TernaryLayout<T2x4> && TernaryLayout<T2p> &&
              TernaryLayout<T2p8> && TernaryLayout<AlternatingRows>);
static_assert(!TernaryLayout<Overlapping> && !TernaryLayout<OnScale> && !TernaryLayout<NotALayout>);

// What each strategy recognises in a declaration, asked of its runtime view (registered or not).
template <class L>
bool slot_vectorizable() {
  return strategies::SlotMaskStrategy::admits(info_of<L>());
}
template <class L>
bool natural_order() {
  return strategies::UnpackStrategy::admits(info_of<L>());
}
template <class L>
bool digit_planar() {
  return strategies::Base3Strategy::admits(info_of<L>());
}
template <class L>
bool row_interleaved() {
  return strip_plan(info_of<L>()) != nullptr;
}
template <class L>
const StripPlan& strips() {
  const StripPlan* p = strip_plan(info_of<L>());
  REQUIRE(p != nullptr);
  return *p;
}

TEST_SUITE("dsl") {
  TEST_CASE("each strategy recognises its structure, and says in words why not") {
    CHECK((slot_vectorizable<T2p>() && slot_vectorizable<T2x4>() && slot_vectorizable<T2p8>()));
    CHECK_FALSE(slot_vectorizable<Pq2_0>());
    CHECK_FALSE(slot_vectorizable<Ptq1_0>());
    CHECK_FALSE(slot_vectorizable<AlternatingRows>());
    CHECK((natural_order<Pq2_0>() && !natural_order<T2p>() && !natural_order<Ptq1_0>()));
    CHECK((digit_planar<Ptq1_0>() && !digit_planar<Pq2_0>() && !digit_planar<T2p>()));
    CHECK(slot_words(info_of<Ptq1_0>()).why_not == "its code is base-3 (slot-mask masks 2-bit fields)");
    CHECK(slot_words(info_of<AlternatingRows>()).why_not.starts_with("slot 0 of its 16-byte word at byte 8 holds neither"));
    CHECK(strategies::SlotMaskStrategy::why_not(info_of<AlternatingRows>()).find("'alternating'") != std::string::npos);
    CHECK(natural_two_bit_why_not(info_of<T2p>()) == "it has 4 rows a block (natural order has one)");
    CHECK(digit_planar_why_not(info_of<T2p>()) == "its code is 2-bit");
    CHECK(row_interleaved_why_not(info_of<T2p>()).starts_with("its payload is not strips in which each row owns a lane"));
    CHECK(row_interleaved_why_not(info_of<test_layouts::T2w3>()) == "it has 3 rows a block (row-interleaved blocks have 4, 8, 16 or 32)");
    CHECK(row_interleaved_why_not(info_of<T2r>()).empty());
    // A plan's address is stable: kernels bind it and check it again on every call.
    CHECK(strip_plan(info_of<T2r>()) == strip_plan(find_layout("t2r")));
    CHECK(&slot_words(find_layout("t2p")) == &slot_words(find_layout("t2p")));
  }

  TEST_CASE("derived block sizes and bits per weight match the formats") {
    CHECK(facts<Pq2_0>.block_bytes == 34);
    CHECK(facts<Ptq1_0>.block_bytes == 28);
    CHECK(facts<T2x4>.block_bytes == 136);
    CHECK(facts<T2p>.block_bytes == 136);
    CHECK(facts<T2p8>.block_bytes == 272);
    CHECK(facts<Pq2_0>.bits_per_weight == doctest::Approx(2.125));
    CHECK(facts<Ptq1_0>.bits_per_weight == doctest::Approx(1.75));
    CHECK(facts<T2p>.payload_begin == 8);
    CHECK(facts<Ptq1_0>.payload_begin == 0);
    CHECK(validate(Overlapping::spec) == std::string_view("two weights share one (byte, slot): placement is not injective"));
    CHECK(validate(OnScale::spec) == std::string_view("a weight is placed on a scale byte"));
  }

  TEST_CASE("pq2_0 places weight k at byte 2 + k/4, bits 2(k%4)") {
    for (int k = 0; k < 128; ++k) {
      const Loc l = locate(Pq2_0::spec, 0, k);
      CHECK(l.byte == 2 + k / 4);
      CHECK(l.slot == k % 4);
    }
  }

  TEST_CASE("ptq1_0 follows the staged trit order of the spec") {
    for (int k = 0; k < 128; ++k) {
      const Loc l = locate(Ptq1_0::spec, 0, k);
      if (k < 80) {
        CHECK(l.byte == k % 16);
        CHECK(l.slot == k / 16);
      } else if (k < 120) {
        CHECK(l.byte == 16 + (k - 80) % 8);
        CHECK(l.slot == (k - 80) / 8);
      } else {
        CHECK(l.byte == 24 + (k - 120) % 2);
        CHECK(l.slot == (k - 120) / 2);
      }
    }
  }

  TEST_CASE("t2x4: byte 8 + 64g + 16r + j, slot s, for weight 64g + 16s + j") {
    for (int r = 0; r < 4; ++r)
      for (int k = 0; k < 128; ++k) {
        const Loc l = locate(T2x4::spec, r, k);
        CHECK(l.byte == 8 + 64 * (k / 64) + 16 * r + k % 16);
        CHECK(l.slot == (k % 64) / 16);
      }
  }

  TEST_CASE("t2p: byte 8 + 64p + 16w + 8h + k%8, slot (k/8)%4") {
    for (int r = 0; r < 4; ++r)
      for (int k = 0; k < 128; ++k) {
        const Loc l = locate(T2p::spec, r, k);
        const int c = k / 8;
        CHECK(l.byte == 8 + 64 * (r / 2) + 16 * (c / 4) + 8 * (r % 2) + k % 8);
        CHECK(l.slot == c % 4);
      }
  }

  TEST_CASE("slot plans: t2p words are row pairs, t2x4 words single rows") {
    const auto& p = slot_words(info_of<T2p>()).words;
    REQUIRE(p.size() == 8);
    CHECK(slot_words(info_of<T2p>()).pairs_rows);
    CHECK_FALSE(slot_words(info_of<T2x4>()).pairs_rows);
    for (int w = 0; w < 8; ++w)
      for (int s = 0; s < 4; ++s) {
        CHECK(p[w].byte_offset == 8 + 16 * w);
        CHECK(p[w].slot[s].row_a == 2 * (w / 4));
        CHECK(p[w].slot[s].row_b == 2 * (w / 4) + 1);
        CHECK(p[w].slot[s].k0 == 32 * (w % 4) + 8 * s);
      }
    const auto& q = slot_words(info_of<T2x4>()).words;
    REQUIRE(q.size() == 8);
    for (int w = 0; w < 8; ++w)
      for (int s = 0; s < 4; ++s) {
        CHECK(q[w].slot[s].row_a == w % 4);
        CHECK(q[w].slot[s].row_b == -1);
        CHECK(q[w].slot[s].k0 == 64 * (w / 4) + 16 * s);
      }
    CHECK(slot_factor(0) == 1);
    CHECK(slot_factor(1) == 4);
    CHECK(slot_factor(2) == 16);
    CHECK(slot_factor(3) == 64);
  }

  TEST_CASE("t2r: byte 32 + 4r + k%4 + 64(k/16), slot (k/4)%4; its strips read activations in natural order") {
    CHECK((row_interleaved<T2r>() && row_interleaved<T2r8>() && row_interleaved<T2rSlotMajor>()));
    CHECK(row_interleaved<T2x4>());  // its 16-byte words are 4 rows' lanes, slot s the same 16 weights of each
    CHECK(strips<T2x4>().lane_bytes == 16);
    CHECK_FALSE(row_interleaved<T2p>());
    CHECK_FALSE(row_interleaved<T2w>());
    CHECK_FALSE(row_interleaved<Pq2_0>());
    CHECK_FALSE(row_interleaved<AlternatingRows>());
    CHECK(facts<T2r>.block_bytes == 544);
    CHECK(facts<T2r8>.block_bytes == 272);
    for (int r = 0; r < 16; ++r)
      for (int k = 0; k < 128; ++k) {
        const Loc l = locate(T2r::spec, r, k);
        CHECK(l.byte == 32 + 4 * r + k % 4 + 64 * (k / 16));
        CHECK(l.slot == (k / 4) % 4);
      }
    for (int t = 0; t < 8; ++t)
      for (int s = 0; s < 4; ++s) {
        CHECK(strips<T2r>().k0[t][s] == 16 * t + 4 * s);
        CHECK(strips<T2rSlotMajor>().k0[t][s] == 32 * s + 4 * t);
      }
    CHECK(strips<T2r>().payload_begin == 32);
    CHECK(strips<T2rSlotMajor>().payload_begin == 0);  // scales after the payload
    CHECK(facts<T2rSlotMajor>.block_bytes == 512 + 3 * 15 + 2);
  }

  TEST_CASE("row-interleaved strips have lanes of 4, 8 or 16 bytes, and the plan reads each slot's lane of activations") {
    using namespace ternlab::test_layouts;
    CHECK((row_interleaved<T2rLane8>() && row_interleaved<T2r8Lane8>() && row_interleaved<T2r8Lane16>() &&
           row_interleaved<T2rLane16>()));
    static_assert(TernaryLayout<Lane2> && TernaryLayout<Lane32>);
    CHECK_FALSE(row_interleaved<Lane2>());
    CHECK_FALSE(row_interleaved<Lane32>());
    CHECK(row_interleaved_why_not(info_of<Lane32>()).starts_with("its payload is not strips"));
    CHECK(strips<T2r>().lane_bytes == 4);
    CHECK(strips<T2r8>().lane_bytes == 4);
    CHECK(strips<T2r8>().strips == 8);
    CHECK(strips<T2rLane8>().lane_bytes == 8);
    CHECK(strips<T2r8Lane8>().lane_bytes == 8);
    CHECK(strips<T2r8Lane8>().strips == 4);
    CHECK(strips<T2r8Lane8>().payload_begin == 16);
    CHECK(strips<T2r8Lane16>().lane_bytes == 16);
    CHECK(strips<T2rLane16>().strips == 2);
    CHECK(strips<T2rLane16>().payload_begin == 0);
    // 4 and 32 rows a block, each lane width: the strips of every row count the kernels are built for.
    CHECK((row_interleaved<T2r4>() && row_interleaved<T2r4Lane8>() && row_interleaved<T2r4Lane16>() && row_interleaved<T2r32>()));
    CHECK(strips<T2r4>().lane_bytes == 4);
    CHECK(strips<T2r4>().strips == 8);
    CHECK(strips<T2r4>().payload_begin == 8);
    CHECK(strips<T2r4Lane8>().lane_bytes == 8);
    CHECK(strips<T2r4Lane8>().payload_begin == 0);
    CHECK(strips<T2r4Lane16>().lane_bytes == 16);
    CHECK(strips<T2r4Lane16>().strips == 2);
    CHECK(strips<T2r32>().lane_bytes == 4);
    CHECK(strips<T2r32>().payload_begin == 64);
    for (int s = 0; s < 4; ++s) {
      for (int t = 0; t < 8; ++t) CHECK(strips<T2r4>().k0[t][s] == 16 * t + 4 * s);
      for (int t = 0; t < 8; ++t) CHECK(strips<T2r32>().k0[t][s] == 16 * t + 4 * s);
      for (int t = 0; t < 4; ++t) CHECK(strips<T2r4Lane8>().k0[t][s] == 32 * t + 8 * s);
      for (int t = 0; t < 2; ++t) CHECK(strips<T2r4Lane16>().k0[t][s] == 64 * t + 16 * s);
    }
    for (int s = 0; s < 4; ++s) {
      for (int t = 0; t < 4; ++t) CHECK(strips<T2rLane8>().k0[t][s] == 32 * t + 8 * s);
      for (int t = 0; t < 2; ++t) {
        CHECK(strips<T2r8Lane16>().k0[t][s] == 32 * s + 16 * t);  // slot-major
        CHECK(strips<T2rLane16>().k0[t][s] == 64 * t + 16 * s);
      }
    }
  }

  TEST_CASE("digit plan of ptq1_0: 16 x 5, 8 x 5, 2 x 4") {
    const auto p = digit_segments(info_of<Ptq1_0>());
    REQUIRE(p.size() == 3);
    CHECK(p[0].byte_offset == 0);
    CHECK(p[0].lanes == 16);
    CHECK(p[0].digits == 5);
    CHECK(p[1].byte_offset == 16);
    CHECK(p[1].lanes == 8);
    CHECK(p[1].k_begin == 80);
    CHECK(p[2].byte_offset == 24);
    CHECK(p[2].lanes == 2);
    CHECK(p[2].digits == 4);
    CHECK(p[2].k_begin == 120);
  }

  TEST_CASE("layouts print their declaration as formulas, one line per piece and one for the scales") {
    const auto t2p = find_layout("t2p").formulas();
    REQUIRE(t2p.size() == 2);
    CHECK(t2p[0] == "k 0..127: row = (half:2, pair:2), k = (kk:8, s:4, word:4); byte = 8 + kk + 8 half + 16 word + 64 pair, slot = s");
    CHECK(t2p[1] == "fp16 scale of row r at byte 0 + 2 r");
    const auto ptq = find_layout("ptq1_0").formulas();
    REQUIRE(ptq.size() == 4);
    CHECK(ptq[0] == "k 0..79: row = (row:1), k = (m:16, n:5); byte = m, digit = n");
    CHECK(ptq[2] == "k 120..127: row = (row:1), k = (h:2, n:4); byte = 24 + h, digit = n");
    CHECK(ptq[3] == "fp16 scale of row r at byte 26");
    CHECK(find_layout("t2p-split").formulas()[1].starts_with("k 64..127: "));
  }

  TEST_CASE("the registry holds the stock layouts and the test layout, with their strategies") {
    CHECK(find_layout("t2p8").rows == 8);
    CHECK(find_layout("pq2_0").gguf_type == 142);
    CHECK(find_layout("ptq1_0").gguf_type == 143);
    CHECK(find_layout("t2p").gguf_type == -1);
    const auto s = admitted_strategies(find_layout("t2p"));
    CHECK(std::find(s.begin(), s.end(), Strategy::slot_mask) != s.end());
    const auto b = admitted_strategies(find_layout("ptq1_0"));
    CHECK(std::find(b.begin(), b.end(), Strategy::base3) != b.end());
    const auto r = admitted_strategies(find_layout("t2r"));
    CHECK(std::find(r.begin(), r.end(), Strategy::broadcast) != r.end());
    CHECK(strip_plan(find_layout("t2r-slot-major")) != nullptr);
    CHECK(strip_plan(find_layout("t2p")) == nullptr);
    CHECK(all_layouts().size() >= 9);
  }

  TEST_CASE("the scale format sizes the scale site; the strategies and plans follow from the geometry") {
    // One-byte scales may sit one byte apart; two-byte ones may not.
    constexpr LayoutSpec e4m3 = ternlab::layouts::T2pE4m3::spec;
    static_assert(find_violation(e4m3).rule == Rule::valid);
    constexpr LayoutSpec as_fp16 = [] {
      LayoutSpec s = ternlab::layouts::T2pE4m3::spec;
      s.scales.format = ScaleFormat::fp16;
      return s;
    }();
    static_assert(find_violation(as_fp16).rule == Rule::scales_overlap);
    static_assert(facts<ternlab::layouts::T2pE4m3>.block_bytes == 132);
    static_assert(facts<ternlab::layouts::T2pE8m0>.block_bytes == 132);
    static_assert(facts<ternlab::layouts::T2pBf16>.block_bytes == 136);
    static_assert(facts<test_layouts::T2rE4m3>.block_bytes == 528);
    static_assert(is_scale_byte(ternlab::layouts::T2pE8m0::spec, 131) && !is_scale_byte(ternlab::layouts::T2pE8m0::spec, 132));

    const LayoutInfo& L = find_layout("t2p-e4m3");
    CHECK(L.scale_format() == ScaleFormat::e4m3);
    CHECK(L.scale_bytes() == 1);
    CHECK(L.bits_per_weight() == doctest::Approx(8.0 * 132 / 512));
    CHECK(strategies::SlotMaskStrategy::admits(L));
    CHECK(L.facts.payload_begin == 4);
    CHECK(L.formulas().back() == "e4m3 scale of row r at byte 0 + 1 r");
    CHECK(find_layout("t2p-e8m0").formulas().back() == "e8m0 scale of row r at byte 128 + 1 r");
    CHECK(find_layout("t2p").scale_format() == ScaleFormat::fp16);
    for (const char* name : {"t2p-bf16", "t2p-e4m3", "t2p-e8m0"}) {
      CAPTURE(name);
      const auto st = admitted_strategies(find_layout(name));
      CHECK(std::find(st.begin(), st.end(), Strategy::slot_mask) != st.end());
    }
    for (const char* name : {"t2r-bf16", "t2r-e4m3"}) {
      CAPTURE(name);
      const auto r = admitted_strategies(find_layout(name));
      CHECK(std::find(r.begin(), r.end(), Strategy::broadcast) != r.end());
    }
  }

  TEST_CASE("exact fp16 per-128 scales: fp16, per block row, groups of at most 128 weights") {
    // (layout, holds the model's fp16 per-128-weight scales exactly, words of the loss)
    const std::tuple<const char*, bool, const char*> cases[] = {
        {"t2p", true, ""},
        {"t2p-g64", true, ""},  // a 128-group splits into two equal 64-groups
        {"t2p-g256", false, "one scale per 256 weights"},
        {"tq2_0", false, "one scale per 256 weights"},
        {"i2_s", false, "fp32 scales"},
        {"t2p-bf16", false, "bf16 scales"},
        {"t2p-e4m3", false, "e4m3 scales"},
        {"t2p-e8m0", false, "e8m0 scales"},
    };
    for (const auto& [name, exact, words] : cases) {
      CAPTURE(name);
      const LayoutInfo& L = find_layout(name);
      CHECK(L.holds_exact_fp16_per128_scales() == exact);
      CHECK(L.lossy_scales_why().empty() == exact);
      CHECK(L.lossy_scales_why().find(words) != std::string::npos);
    }
  }
}
