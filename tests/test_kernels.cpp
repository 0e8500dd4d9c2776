// The SIMD kernels beyond the oracle sweep: what the catalog lists on this CPU, how dispatch picks
// and explains a path, the ISA ceiling, the thread-pool drivers, the plans the strategies follow,
// and the errors the kernels raise on input they cannot take.
#include <algorithm>
#include <cmath>
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

#include "kernels/catalog.hpp"
#include "kernels/dispatch.hpp"
#include "kernels/strategies/all.hpp"
#include "kernels/strategies/base3/plan.hpp"
#include "kernels/strategies/broadcast/plan.hpp"
#include "kernels/strategies/permute/plan.hpp"
#include "kernels/strategies/slot_mask/plan.hpp"
#include "common/fp16.hpp"
#include "kernels/oracle.hpp"
#include "kernels/targets/sse41/kernels.hpp"
#include "kernels/testdata.hpp"
#include "kernels/targets/x86.hpp"
#include "tests/support.hpp"

using namespace ternlab;
using test::check_error;

namespace {

bool has(const std::vector<KernelVariant>& ks, const std::string& name) {
  for (const KernelVariant& k : ks)
    if (k.name() == name) return true;
  return false;
}

// A slot-vectorizable layout the slot-mask plan must refuse: slot s of every byte holds row s, so
// one word feeds four rows, one per slot. Declared here, not registered.
struct RowPerSlot {
  static constexpr LayoutSpec spec{
      .name = "row-per-slot",
      .summary = "test-only: byte k holds weight k of rows 0..3 in slots 0..3",
      .rows = 4,
      .code = Code::two_bit,
      .scales = {.offset = 0, .row_stride = 2},
      .pieces = pieces(Piece{.row = modes(slots("r", 4, 1)), .k = modes(bytes("k", 128, 1)), .byte_base = 8}),
  };
};


// t2p-g64 with the slots 32 weights apart: slots 0-1 of every word fall in the first 64-weight
// scale group, slots 2-3 in the second, so no word lies in one group and the slot-mask plan must
// refuse it. Declared here, not registered.
struct T2pG64SlotStride32 {
  static constexpr LayoutSpec spec{
      .name = "t2p-g64-slot-stride-32",
      .summary = "test-only: t2p-g64 with weight kk + 8 word + 32 s in slot s",
      .rows = 4,
      .code = Code::two_bit,
      .scales = {.offset = 0, .row_stride = 2, .group = 64, .group_stride = 8},
      .pieces = pieces(Piece{.row = modes(bytes("half", 2, 8), bytes("pair", 2, 64)),
                             .k = modes(bytes("kk", 8, 1), bytes("word", 4, 16), slots("s", 4, 1)),
                             .byte_base = 16}),
  };
};

// Layouts no in-place permutation can sort (declared here, not registered), so the permute plan
// gathers them: 8 rows, each holding 2 bytes of every 16-byte word (8 single-row groups needed).
struct Rows8Spread {
  static constexpr LayoutSpec spec{
      .name = "rows8-spread",
      .summary = "test-only: byte r + 8 b + 16 w holds weights b + 2 s + 8 w of row r",
      .rows = 8,
      .code = Code::two_bit,
      .scales = {.offset = 256, .row_stride = 2},
      .pieces = pieces(Piece{.row = modes(bytes("r", 8, 1)),
                             .k = modes(bytes("b", 2, 8), slots("s", 4, 1), bytes("w", 16, 16)),
                             .byte_base = 0}),
  };
};
// The base-3 counterpart: 8 rows interleaved byte by byte, digit n = weights j + 24 n.
struct Trits8Spread {
  static constexpr LayoutSpec spec{
      .name = "trits8-spread",
      .summary = "test-only: base-3, byte r + 8 j, digit n = weight j + 24 n of row r",
      .rows = 8,
      .code = Code::base3,
      .scales = {.offset = 0, .row_stride = 2},
      .pieces = pieces(Piece{.row = modes(bytes("r", 8, 1)),
                             .k = modes(bytes("j", 24, 8), slots("n", 5, 1)),
                             .byte_base = 16},
                       Piece{.k_begin = 120,
                             .row = modes(bytes("r", 8, 1)),
                             .k = modes(bytes("j", 8, 8)),
                             .byte_base = 208}),
  };
};
// t2m's row-mixing words with each row's scale 4 bytes apart, so the permute epilogue reads the
// scales one row at a time.
struct T2mSpreadScales {
  static constexpr LayoutSpec spec{
      .name = "t2m-spread-scales",
      .summary = "test-only: t2m's words after 16 bytes of scales, one every 4 bytes",
      .rows = 4,
      .code = Code::two_bit,
      .scales = {.offset = 0, .row_stride = 4},
      .pieces = pieces(Piece{.row = modes(bytes("r", 4, 1)),
                             .k = modes(bytes("b", 4, 4), slots("s", 4, 1), bytes("word", 8, 16)),
                             .byte_base = 16}),
  };
};

// Whether the catalog lists a `strategy` kernel on `isa` for L, as that strategy itself answers
// (kernel_why_not): the tests hold no second model of what a strategy admits, so a valid layout
// they have never seen is expected to get exactly what the strategies say they take.
bool admits(const LayoutInfo& L, Strategy strategy, Isa isa) { return kernel_why_not(L, strategy, isa).empty(); }

#if defined(__x86_64__)
// The same for the SIMDe build of the AVX-512 kernels (tests only): "" when it lists `strategy`.
std::string emulated_why_not(const LayoutInfo& L, Strategy strategy) {
  std::vector<KernelVariant> ks;
  std::vector<KernelGap> gaps;
  detail::add_avx512vnni_emulated_kernels(L, ks, &gaps);
  if (const std::string why = scales_why_not(strategy, L); !why.empty()) return why;
  for (const KernelVariant& k : ks)
    if (k.strategy == strategy) return "";
  for (const KernelGap& g : gaps)
    if (g.strategy == strategy) return g.why;
  return cat("layout '", L.name, "' lacks what ", strategy_name(strategy), " reads");
}
#else
std::string emulated_why_not(const LayoutInfo&, Strategy) { return "the SIMDe build of the AVX-512 kernels is x86-64's only"; }
#endif

// Every output of `k` on a small random case against the integer oracle; returns mismatches.
// The same for the gemv of one token (read only by the x86 lane-width test, hence maybe_unused).
[[maybe_unused]] int gemv_mismatches(const KernelVariant& k, const LayoutInfo& L, std::int64_t rows, std::int64_t cols) {
  const TernaryMatrix w = make_weights(rows, cols, 9, L.code == Code::two_bit ? Fill::code3 : Fill::random);
  const UnitActivations a = make_unit_activations(1, cols, 10);
  const Q8KBatch x = quantize_batch(a.f.data(), 1, cols);
  const auto want = oracle_int(w, a.i8, 1);
  const PackedMatrix p = pack(w, L);
  std::vector<float> y(std::size_t(rows), NAN);
  k.gemv(p, x.row(0), y.data(), 0, p.row_groups());
  int bad = 0;
  for (std::size_t i = 0; i < want.size(); ++i) bad += double(y[i]) != double(want[i]);
  return bad;
}

// The gemm of every row group, in two calls split at row group `split` where it is not 0 (as the
// pool splits a matrix: the second call starts past the first group).
int mismatches(const KernelVariant& k, const LayoutInfo& L, std::int64_t rows, std::int64_t cols,
               std::int64_t tokens, std::int64_t split = 0) {
  const TernaryMatrix w = make_weights(rows, cols, 7, L.code == Code::two_bit ? Fill::code3 : Fill::random);
  const UnitActivations a = make_unit_activations(tokens, cols, 8);
  const Q8KBatch x = quantize_batch(a.f.data(), tokens, cols);
  const auto want = oracle_int(w, a.i8, tokens);
  const PackedMatrix p = pack(w, L);
  std::vector<float> y(std::size_t(tokens * rows), NAN);
  if (split > 0) k.gemm(p, x, y.data(), rows, 0, split);
  k.gemm(p, x, y.data(), rows, split, p.row_groups());
  int bad = 0;
  for (std::size_t i = 0; i < want.size(); ++i) bad += double(y[i]) != double(want[i]);
  return bad;
}

}  // namespace

TEST_SUITE("kernels") {
  TEST_CASE("the AMX tile gemm equals the oracle across passes, token groups and the rows past a group's end") {
    // 64 tokens a pass in groups of 16 (kernels/strategies/broadcast/tile_gemm.hpp), a pass of one
    // q8_Kx4 tile on the vector build: one token, part of a group, a whole group, a group and one,
    // two groups and one, a pass, a pass and one, and two passes and two; one, two and three row
    // groups, and a call that starts past the first (as the pool splits a matrix), so 16-row units
    // both in pairs sharing A tiles and alone (an odd one last); 16- and 32-row blocks, scales
    // decoded per block (e4m3; at 32 rows a pair's units share them) and a slot-major strip
    // order. The SIMDe build with
    // the tiles emulated runs on every x86-64 CPU with AVX2, the native one where tiles are granted.
    int checked = 0;
    for (const char* name : {"t2r", "t2r32", "t2r-e4m3", "t2r32-e4m3", "t2r-slot-major"}) {
      const LayoutInfo& L = find_layout(name);
      CAPTURE(L.name);
      int builds = 0;
      for (const KernelVariant& k : test::checked_kernels_for(L)) {
        if (!k.amx) continue;
        CAPTURE(k.name());
        ++builds;
        for (const std::int64_t tokens : {1, 8, 16, 17, 33, 64, 65, 130})
          for (const int groups : {1, 2, 3}) {
            CAPTURE(tokens);
            CAPTURE(groups);
            CHECK(mismatches(k, L, groups * L.rows, 384, tokens) == 0);
            if (groups == 3) CHECK(mismatches(k, L, groups * L.rows, 384, tokens, 1) == 0);  // a call from group 1
            ++checked;
          }
      }
#if defined(__x86_64__)
      if (isa_supported(Isa::avx2)) CHECK(builds >= 2);  // the SIMDe build, with and without the gemv's prefetches
      if (cpu_features().amx_int8) CHECK(builds == 4);
#endif
      CHECK(builds % 2 == 0);
    }
#if defined(__x86_64__)
    if (isa_supported(Isa::avx2)) CHECK(checked > 0);
#endif
  }

  TEST_CASE("the catalog lists reference/scalar first and every strategy the CPU and layout admit") {
    for (const LayoutInfo* L : all_layouts()) {
      CAPTURE(L->name);
      const auto ks = kernels_for(*L);
      REQUIRE(!ks.empty());
      CHECK(ks.front().name() == "reference/scalar");
      for (const KernelVariant& k : ks) {
        CHECK(bool(k.gemv));
        CHECK(bool(k.gemm));
      }
      if (!chunked_block_scales(*L)) {
        // A per-tensor scale (i2_s) or scales the chunks cannot read: the reference kernel only,
        // and the gaps say why (suite peer-formats checks the words).
        CHECK(ks.size() == 1);
        CHECK_FALSE(kernel_gaps(*L).empty());
        continue;
      }
      if (!L->block_scales_128()) {
        // Blocks of several 128-weight chunks under one scale (t2p-g256, tq2_0), or chunks of
        // several scale groups (t2p-g64): slot-mask only.
        CHECK_FALSE(kernel_gaps(*L).empty());
        for (const KernelVariant& k : ks) CHECK(scales_why_not(k.strategy, *L).empty());
        for (const Isa isa : {Isa::sse41, Isa::avx2, Isa::avx512vnni, Isa::dotprod})
          if (isa_supported(isa)) CHECK(has(ks, kernel_name(Strategy::slot_mask, isa)) == admits(*L, Strategy::slot_mask, isa));
        continue;
      }
      // The permute fallback takes every layout, on every ISA this CPU runs.
      CHECK(has(ks, "permute/sse41") == isa_supported(Isa::sse41));
      CHECK(has(ks, "permute/avx2") == isa_supported(Isa::avx2));
      CHECK(has(ks, "permute/avx512vnni") == isa_supported(Isa::avx512vnni));
      CHECK(has(ks, "permute/dotprod") == isa_supported(Isa::dotprod));
      if (isa_supported(Isa::avx2)) {
        CHECK(has(ks, "slot-mask/avx2") == admits(*L, Strategy::slot_mask, Isa::avx2));
        CHECK(has(ks, "unpack/avx2") == admits(*L, Strategy::unpack, Isa::avx2));
        CHECK(has(ks, "base3/avx2") == admits(*L, Strategy::base3, Isa::avx2));
      }
      if (isa_supported(Isa::sse41)) {
        CHECK(has(ks, "slot-mask/sse41") == admits(*L, Strategy::slot_mask, Isa::sse41));
        CHECK(has(ks, "broadcast/sse41") == admits(*L, Strategy::broadcast, Isa::sse41));
        CHECK(has(ks, "unpack/sse41") == admits(*L, Strategy::unpack, Isa::sse41));
        CHECK(has(ks, "base3/sse41") == admits(*L, Strategy::base3, Isa::sse41));
      }
      // The shared templates also instantiate the NEON policies, plain and dotprod alike.
      CHECK(has(ks, "slot-mask/dotprod") == (isa_supported(Isa::dotprod) && admits(*L, Strategy::slot_mask, Isa::dotprod)));
      CHECK(has(ks, "slot-mask/neon") == (isa_supported(Isa::neon) && admits(*L, Strategy::slot_mask, Isa::neon)));
      CHECK(has(ks, "unpack/neon") == (isa_supported(Isa::neon) && admits(*L, Strategy::unpack, Isa::neon)));
      CHECK(has(ks, "base3/neon") == (isa_supported(Isa::neon) && admits(*L, Strategy::base3, Isa::neon)));
      if (isa_supported(Isa::avx512vnni)) {
        CHECK(has(ks, "slot-mask/avx512vnni") == admits(*L, Strategy::slot_mask, Isa::avx512vnni));
        CHECK(has(ks, "unpack/avx512vnni") == admits(*L, Strategy::unpack, Isa::avx512vnni));
      } else {
        CHECK_FALSE(has(ks, "slot-mask/avx512vnni"));
      }
    }
    if (!isa_supported(Isa::avx512vnni) && isa_supported(Isa::avx2)) {
      // The oracle suites run the AVX-512 kernels through SIMDe instead (tests/avx512_emulated.cpp).
      for (const LayoutInfo* L : all_layouts()) {
        CAPTURE(L->name);
        const auto ks = test::checked_kernels_for(*L);
        CHECK(has(ks, "slot-mask/avx512vnni-simde") == emulated_why_not(*L, Strategy::slot_mask).empty());
        CHECK(has(ks, "unpack/avx512vnni-simde") == emulated_why_not(*L, Strategy::unpack).empty());
      }
      MESSAGE("AVX-512 VNNI kernels run through SIMDe only: this CPU (", cpu_features().model, ") reports ",
              feature_string());
    }
  }

  TEST_CASE("every strategy x ISA is listed exactly where the strategy's own why_not is empty, and says why otherwise") {
    const Strategy strategies[] = {Strategy::broadcast, Strategy::slot_mask, Strategy::slot_mask_widen, Strategy::base3,
                                   Strategy::unpack,    Strategy::unpack_vecdot, Strategy::prism_neon, Strategy::permute};
    for (const LayoutInfo* L : all_layouts()) {
      CAPTURE(L->name);
      const auto ks = kernels_for(*L);
      for (const Isa isa : supported_isas()) {
        if (isa == Isa::scalar) continue;
        for (const Strategy s : strategies) {
          const std::string why = kernel_why_not(*L, s, isa);
          CAPTURE(kernel_name(s, isa));
          CAPTURE(why);
          const bool listed = std::any_of(ks.begin(), ks.end(), [&](const KernelVariant& k) { return k.strategy == s && k.isa == isa; });
          CHECK(listed == why.empty());
        }
      }
      // Every valid layout whose scales the SIMD kernels read gets the fallback on each ISA it is
      // built for (x86's two, and aarch64's dotprod: its shuffles feed sdot).
      if (L->block_scales_128())
        for (const Isa isa : {Isa::sse41, Isa::avx2, Isa::avx512vnni, Isa::dotprod})
          if (isa_supported(isa)) CHECK_MESSAGE(admits(*L, Strategy::permute, isa), isa_name(isa), ": ", kernel_why_not(*L, Strategy::permute, isa));
    }
    // Refusals of t2r-lane8 (whose 8-byte lanes only broadcast reads) in the strategies' own words.
    const LayoutInfo& lane8 = find_layout("t2r-lane8");
    if (isa_supported(Isa::avx2)) {
      CHECK(kernel_why_not(lane8, Strategy::slot_mask, Isa::avx2).find("16 rows per block") != std::string::npos);
      CHECK(kernel_why_not(lane8, Strategy::unpack, Isa::avx2).find("is not in natural 2-bit order") != std::string::npos);
    }
    if (!isa_supported(Isa::avx512vnni)) CHECK(kernel_why_not(lane8, Strategy::slot_mask, Isa::avx512vnni).find("this CPU lacks") == 0);
    const LayoutInfo& rows32 = find_layout("t2r32");
    CHECK(rows32.rows == 32);
    CHECK(rows32.block_bytes() == 32 * 128 / 4 + 64);
  }

  TEST_CASE("broadcast serves lanes of 4, 8 and 16 bytes at each row count whose strip is whole vectors") {
    struct Case {
      const char* layout;
      int lane_bytes;
    };
    for (const Case c : {Case{"t2r", 4}, Case{"t2r8", 4}, Case{"t2r-lane8", 8}, Case{"t2r8-lane8", 8}, Case{"t2r8-lane16", 16},
                         Case{"t2r-lane16", 16}, Case{"t2r4", 4}, Case{"t2r4-lane8", 8}, Case{"t2r4-lane16", 16},
                         Case{"t2r32", 4}, Case{"t2x4", 16}}) {
      CAPTURE(c.layout);
      const LayoutInfo& L = find_layout(c.layout);
      REQUIRE(strip_plan(L) != nullptr);
      CHECK(strip_plan(L)->lane_bytes == c.lane_bytes);
      // Served where a strip (rows x lane bytes) is whole vectors of the target, refused in those
      // words elsewhere.
      const int strip = L.rows * c.lane_bytes;
      const auto refusal = [&](int vector_bytes) {
        return cat("a strip of ", L.rows, " rows with ", c.lane_bytes, "-byte lanes (", strip, " bytes) fills only part of a ",
                   vector_bytes, "-byte vector");
      };
      for (const auto& [isa, vector_bytes] : {std::pair{Isa::sse41, 16}, std::pair{Isa::avx2, 32}})
        if (isa_supported(isa)) {
          CAPTURE(isa_name(isa));
          const std::string why = kernel_why_not(L, Strategy::broadcast, isa);
          CHECK(why.empty() == (strip % vector_bytes == 0));
          if (strip % vector_bytes != 0) CHECK(why.find(refusal(vector_bytes)) != std::string::npos);
        }
#if defined(__x86_64__)
      const bool avx512 = strip % 64 == 0;
      const std::string why = emulated_why_not(L, Strategy::broadcast);
      CHECK(why.empty() == avx512);
      if (!avx512) CHECK(why.find(refusal(64)) != std::string::npos);
      // Exact against the oracle, gemv and gemm over several tokens (a partial last tile too),
      // through every broadcast build listed here, native and SIMDe.
      int broadcasts = 0;
      for (const KernelVariant& k : test::checked_kernels_for(L))
        if (k.strategy == Strategy::broadcast) {
          CAPTURE(k.name());
          ++broadcasts;
          CHECK(mismatches(k, L, 2 * L.rows, 512, 21) == 0);
          CHECK(gemv_mismatches(k, L, 2 * L.rows, 512) == 0);
          CHECK(gemv_mismatches(k, L, 5 * L.rows, 1024) == 0);  // four streams side by side and one more
        }
      CHECK(broadcasts >= (avx512 ? 2 : 0) + (isa_supported(Isa::avx2) && strip % 32 == 0 ? 2 : 0) +
                              (isa_supported(Isa::sse41) ? 2 : 0));
#endif
    }
    // No lane of another width is read: the refusal says what is.
    if (isa_supported(Isa::avx2))
      CHECK(kernel_why_not(find_layout("t2p"), Strategy::broadcast, Isa::avx2).find("is not row-interleaved") != std::string::npos);
  }

  TEST_CASE("plan shapes no stock layout has get slot-mask kernels on every ISA, with no list to edit") {
    // t2p2: one row pair (AVX2 1 group x 2 vectors, AVX-512 1 x 1, NEON 1 x 4); t2w3: 3 rows;
    // t2p-tail: scales after the payload; t2p-split: scales between two pieces.
    for (const char* name : {"t2p2", "t2w3", "t2p-tail", "t2p-split"}) {
      CAPTURE(name);
      const LayoutInfo& L = find_layout(name);
      REQUIRE(strategies::SlotMaskStrategy::admits(L));
      const auto ks = kernels_for(L);
      if (isa_supported(Isa::avx2)) CHECK(has(ks, "slot-mask/avx2"));
      if (isa_supported(Isa::dotprod)) CHECK(has(ks, "slot-mask/dotprod"));
      if (isa_supported(Isa::neon)) CHECK(has(ks, "slot-mask/neon"));
      for (const KernelVariant& k : test::checked_kernels_for(L)) {
        CAPTURE(k.name());
        CHECK(mismatches(k, L, 24, 768, 5) == 0);
      }
    }
    const auto pos = [](int j, int u, int h) { return 8 * j + 4 * u + 2 * h; };
    CHECK(slot_vector_plan(find_layout("t2p2"), 32, pos).groups == 1);
    CHECK(slot_vector_plan(find_layout("t2p2"), 32, pos).group_size == 2);
    CHECK(slot_vector_plan(find_layout("t2w3"), 32, pos).groups == 3);
    // The split payload: the second run of words starts after the scales, at byte 72.
    const SlotVectorPlan& split = slot_vector_plan(find_layout("t2p-split"), 64, pos);
    REQUIRE(split.why_not.empty());
    CHECK(split.vector_offset[0] == 0);
    CHECK(split.vector_offset[1] == 72);
    // Both vectors hold rows 0-1 in words 0-1 and rows 2-3 in words 2-3: one group, whose 0-1
    // words pair-add with its 2-3 words (64-bit lanes 4-7 are word 2 and 3 of the first
    // accumulator, 12-15 of the second).
    CHECK(split.groups == 1);
    CHECK(split.group_size == 2);
    CHECK(split.fold_pair_words);
    CHECK_FALSE(split.fold_words);
    CHECK(split.pair_word_gather[0][0] == 0);
    CHECK(split.pair_word_gather[1][0] == 4);
    CHECK(split.pair_word_gather[1][7] == 15);
    CHECK(find_layout("t2p-tail").facts.payload_bytes == 128);
    CHECK(find_layout("t2p-split").facts.payload_bytes == 136);
    CHECK(find_layout("t2p-split").facts.weight_bytes == 128);
    // 96 payload bytes are no whole number of 64-byte vectors: the gap says so, and so does the
    // choice's explanation.
    const SlotVectorPlan& wide = slot_vector_plan(find_layout("t2w3"), 64, pos);
    CHECK(wide.why_not.find("not a whole number of 64-byte vectors") != std::string::npos);
    if (isa_supported(Isa::avx512vnni)) {
      const auto gaps = kernel_gaps(find_layout("t2w3"));
      REQUIRE(gaps.size() == 1);
      CHECK(gaps[0].strategy == Strategy::slot_mask);
      CHECK(gaps[0].isa == Isa::avx512vnni);
      const auto notes = best_kernel(find_layout("t2w3")).notes;
      CHECK(std::any_of(notes.begin(), notes.end(), [](const std::string& n) {
        return n.find("slot-mask/avx512vnni: no kernel, its plan refuses the layout") != std::string::npos;
      }));
    }
    // A group wider than AVX2's int16 accumulator holds is split: t2p8's 2-vector groups stay, a
    // 4-vector one would become two.
    const SlotVectorPlan& narrow = slot_vector_plan(find_layout("t2p2"), 16, pos, 2);
    CHECK(narrow.groups == 2);
    CHECK(narrow.group_size == 2);
  }

  TEST_CASE("the slot-mask plan refuses, with the reason, a layout whose word feeds rows per slot") {
    const LayoutInfo& L = info_of<RowPerSlot>();
    CHECK(strategies::SlotMaskStrategy::admits(L));
    const SlotVectorPlan& p = slot_vector_plan(L, 32, [](int j, int u, int h) { return 8 * j + 4 * u + 2 * h; });
    CHECK(p.why_not.find("different rows from different slots") != std::string::npos);
    CHECK_FALSE(has(kernels_for(L), "slot-mask/avx2"));
    CHECK(has(kernels_for(L), "reference/scalar"));
  }

  TEST_CASE("slot-mask plans: t2p shares one dup8 expansion between its row pairs") {
    const auto pos = [](int j, int u, int h) { return 8 * j + 4 * u + 2 * h; };
    const SlotVectorPlan& t2p = slot_vector_plan(find_layout("t2p"), 32, pos);
    REQUIRE(t2p.why_not.empty());
    CHECK(t2p.vectors == 4);
    CHECK(t2p.groups == 2);   // one accumulator per row pair
    CHECK(t2p.group_size == 2);
    CHECK(t2p.classes == 2);  // pair 1's words need the same activations as pair 0's
    CHECK(t2p.pairs_per_row == 2);
    CHECK(t2p.vector_offset[1] == 8 + 32);  // pair 0's second vector
    CHECK(t2p.vector_offset[2] == 8 + 64);  // pair 1 starts the second group
    const SlotVectorPlan& wide = slot_vector_plan(find_layout("t2p"), 64, pos);
    CHECK(wide.vectors == 2);
    CHECK(wide.groups == 2);
    CHECK(wide.classes == 1);
    const SlotVectorPlan& t2x4 = slot_vector_plan(find_layout("t2x4"), 64, pos);
    CHECK(t2x4.groups == 1);  // each 64-byte vector holds rows 0..3 of one 64-weight half
    CHECK(t2x4.classes == 2);
    const SlotVectorPlan& t2p8 = slot_vector_plan(find_layout("t2p8"), 32, pos);
    CHECK(t2p8.vectors == 8);
    CHECK(t2p8.groups == 4);
    CHECK(t2p8.rows == 8);
    // t2w, the x86 wide-word layout: on AVX2 one row per vector (so one group per row), on AVX-512
    // a row pair, and its activations are plain natural order (no dup8).
    const SlotVectorPlan& t2w = slot_vector_plan(find_layout("t2w"), 32, pos);
    REQUIRE(t2w.why_not.empty());
    CHECK(t2w.groups == 4);
    CHECK(t2w.group_size == 1);
    CHECK(t2w.classes == 1);
    CHECK(t2w.expanded_block_bytes == 128);
    CHECK(slot_vector_plan(find_layout("t2w"), 64, pos).groups == 2);
    {
      std::int8_t natural[128];
      for (int i = 0; i < 128; ++i) natural[i] = std::int8_t(3 * i - 190);
      std::vector<std::uint8_t> e(128);
      expand_slot_activations(t2w, natural, e.data());
      CHECK(std::memcmp(e.data(), natural, 128) == 0);
    }
    // The 8-lane policies' shortcuts, under the AVX2 pair order (hadd of accumulators 2k, 2k+1).
    const auto avx2_pos = [](int a, int u, int h) { return 8 * (a / 2) + 4 * u + 2 * (a % 2) + h; };
    const SlotVectorPlan& t2p_avx2 = slot_vector_plan(find_layout("t2p"), 32, avx2_pos);
    CHECK(t2p_avx2.fold_halves);
    CHECK_FALSE(t2p_avx2.group_per_row);
    const SlotVectorPlan& t2w_avx2 = slot_vector_plan(find_layout("t2w"), 32, avx2_pos);
    CHECK(t2w_avx2.group_per_row);
    CHECK_FALSE(t2w_avx2.fold_halves);
    CHECK_FALSE(slot_vector_plan(find_layout("t2x4"), 32, avx2_pos).fold_halves);
    // The 16-lane (AVX-512) shortcut: the same order over four words; summing the words of each
    // pair vector gathers t2p's rows (and t2p8's, four per pair vector), not t2x4's or t2w's.
    const auto avx512_pos = [](int a, int u, int h) { return 16 * (a / 2) + 4 * u + 2 * (a % 2) + h; };
    CHECK(slot_vector_plan(find_layout("t2p"), 64, avx512_pos).fold_words);
    CHECK(slot_vector_plan(find_layout("t2p8"), 64, avx512_pos).fold_words);
    CHECK_FALSE(slot_vector_plan(find_layout("t2x4"), 64, avx512_pos).fold_words);
    CHECK_FALSE(slot_vector_plan(find_layout("t2w"), 64, avx512_pos).fold_words);
    for (const char* name : {"t2p", "t2p8", "t2x4", "t2w"}) CHECK_FALSE(slot_vector_plan(find_layout(name), 64, avx512_pos).fold_pair_words);
    CHECK_FALSE(t2p_avx2.fold_words);
    const SlotVectorPlan& pq = slot_vector_plan(find_layout("pq2_0"), 32, pos);
    // The plan's refusal is the recognition's own words: pq2_0's first word holds 16 of one row's
    // weights per byte, four slots apart.
    CHECK(pq.why_not == "the layout is not slot-vectorizable: slot 0 of its 16-byte word at byte 2 holds neither 16 "
                        "consecutive weights of one row nor 8 of a row pair");
    // The expansion of a row-pair word is dup8: bytes 8..15 repeat bytes 0..7.
    std::int8_t q[128];
    for (int i = 0; i < 128; ++i) q[i] = std::int8_t(i - 64);
    std::vector<std::uint8_t> e(std::size_t(t2p.expanded_block_bytes));
    expand_slot_activations(t2p, q, e.data());
    CHECK(std::memcmp(e.data(), e.data() + 8, 8) == 0);
    CHECK(std::int8_t(e[0]) == q[0]);
    CHECK(std::int8_t(e[32]) == q[8]);  // slot 1 of word 0: chunk 1
  }

  TEST_CASE("slot-mask plans keep t2p-g64's two 64-weight scale groups apart, and refuse groups that split words") {
    const LayoutInfo& L = find_layout("t2p-g64");
    REQUIRE(chunk_scale_groups(L) == 2);
    const auto pos = [](int j, int u, int h) { return 8 * j + 4 * u + 2 * h; };
    // Words 0-1 of a row pair hold weights 0..63, words 2-3 weights 64..127: at 16 and 32 bytes
    // they take accumulators of their own (t2p: 2 groups), at 64 bytes one vector holds both and
    // the pair sums part by word.
    const SlotVectorPlan& narrow = slot_vector_plan(L, 16, pos);
    REQUIRE(narrow.why_not.empty());
    CHECK(narrow.scale_groups == 2);
    CHECK(narrow.groups == 4);
    CHECK(narrow.group_size == 2);
    CHECK(narrow.pairs_per_row == 2);
    CHECK(narrow.scale_at[3][0] == 6);
    CHECK(narrow.scale_at[3][1] == 14);
    CHECK(slot_vector_plan(L, 32, pos).groups == 4);
    const SlotVectorPlan& wide = slot_vector_plan(L, 64, pos);
    REQUIRE(wide.why_not.empty());
    CHECK(wide.groups == 2);
    CHECK(wide.pairs_per_row == 4);
    // Row 0's first two pair sums are words 0 and 1 of accumulator 0 (group 0), the next two words 2 and 3.
    CHECK(wide.pair_index[0] == 0);
    CHECK(wide.pair_index[1] == 4);
    CHECK(wide.pair_index[2] == 8);
    CHECK(wide.pair_index[3] == 12);
    CHECK_FALSE(wide.fold_words);
    CHECK(smmla_why_not(L).find("64-weight scale groups") != std::string::npos);
    // Slots 32 weights apart: each word's slots 0-1 and 2-3 fall in different groups.
    const LayoutInfo& strided = info_of<T2pG64SlotStride32>();
    REQUIRE(strategies::SlotMaskStrategy::admits(strided));
    REQUIRE(chunk_scale_groups(strided) == 2);
    for (const int bytes : {16, 32, 64})
      CHECK(slot_vector_plan(strided, bytes, pos).why_not.find("64-weight scale groups do not align to whole words") !=
            std::string::npos);
    const auto ks = kernels_for(strided);
    CHECK(std::none_of(ks.begin(), ks.end(), [](const KernelVariant& k) { return k.strategy == Strategy::slot_mask; }));
    CHECK(has(ks, "reference/scalar"));
  }

  TEST_CASE("t2p-g64: every SIMD kernel applies a row's two scales as the reference does, equal or not") {
    // The oracle's matrices hold one scale per 128 weights, so both halves of a row's block share
    // it; here the second scale differs in most rows (one fma per 64-weight group, each with its
    // own activation sum) and stays equal in every third (one fma for the 128 weights).
    const LayoutInfo& L = find_layout("t2p-g64");
    const std::int64_t rows = 16, cols = 768;
    const TernaryMatrix w = make_weights(rows, cols, 41, Fill::random, ScaleKind::random);
    PackedMatrix p = pack(w, L);
    const PackedMatrix same = pack(w, L);
    for (std::int64_t g = 0; g < p.row_groups(); ++g)
      for (std::int64_t i = 0; i < p.blocks_per_row(); ++i)
        for (int r = 0; r < L.rows; ++r) {
          if ((g * L.rows + r + i) % 3 == 0) continue;
          std::uint8_t* at = p.block(g, i) + L.scale_offset(r, 1);
          at[1] ^= 0x04;  // the fp16 exponent's lowest bit: the scale doubles or halves
        }
    const auto bits_equal = [](float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; };
    int slot_mask_kernels = 0;
    for (const std::int64_t tokens : {1, 3, 5, 65}) {
      CAPTURE(tokens);
      const std::vector<float> xf = make_float_activations(tokens, cols, 42 + std::uint64_t(tokens));
      const Q8KBatch x = quantize_batch(xf.data(), tokens, cols);
      std::vector<float> want(std::size_t(tokens * rows)), plain(want.size());
      gemm_reference(p, x, want.data(), rows, 0, p.row_groups());
      gemm_reference(same, x, plain.data(), rows, 0, p.row_groups());
      int moved = 0;  // the second scales matter: a kernel reading only the first would fail
      for (std::size_t n = 0; n < want.size(); ++n) moved += !bits_equal(want[n], plain[n]);
      CHECK(moved > int(want.size()) / 2);
      for (const KernelVariant& k : test::checked_kernels_for(L)) {
        if (k.strategy == Strategy::reference) continue;
        CAPTURE(k.name());
        slot_mask_kernels += tokens == 1;
        std::vector<float> Y(want.size(), NAN);
        k.gemm(p, x, Y.data(), rows, 0, p.row_groups());
        // A partial row range: row groups 1..2 of 4, the rest left as they were.
        std::vector<float> part(want.size(), NAN);
        k.gemm(p, x, part.data(), rows, 1, 3);
        for (std::int64_t t = 0; t < tokens; ++t) {
          std::vector<float> y(std::size_t(rows), NAN);
          k.gemv(p, x.row(t), y.data(), 0, p.row_groups());
          std::vector<float> y_part(std::size_t(rows), NAN);
          k.gemv(p, x.row(t), y_part.data(), 1, 3);
          for (std::int64_t n = 0; n < rows; ++n) {
            CAPTURE(t);
            CAPTURE(n);
            const float ref = want[std::size_t(t * rows + n)];
            CHECK(bits_equal(y[std::size_t(n)], ref));
            CHECK(bits_equal(Y[std::size_t(t * rows + n)], ref));
            const bool inside = n >= 4 && n < 12;
            CHECK((inside ? bits_equal(y_part[std::size_t(n)], ref) : std::isnan(y_part[std::size_t(n)])));
            CHECK((inside ? bits_equal(part[std::size_t(t * rows + n)], ref) : std::isnan(part[std::size_t(t * rows + n)])));
          }
        }
      }
    }
    // The portable scalar build runs everywhere: at least it, and slot-mask per SIMD ISA.
    CHECK(slot_mask_kernels >= 1);
    if (isa_supported(Isa::avx2)) CHECK(has(kernels_for(L), "slot-mask/avx2"));
    if (isa_supported(Isa::avx512vnni)) CHECK(has(kernels_for(L), "slot-mask/avx512vnni"));
    if (isa_supported(Isa::neon)) CHECK(has(kernels_for(L), "slot-mask/neon"));
    if (isa_supported(Isa::dotprod)) CHECK(has(kernels_for(L), "slot-mask/dotprod"));
  }

  TEST_CASE("every registered layout has a SIMD kernel on every ISA the build targets, exact against the oracle") {
    // x86: SSE4.1 and AVX2 natively, AVX-512 natively and through SIMDe; aarch64: plain NEON, and dotprod
    // where the CPU has it (i8mm adds only a gemm to dotprod's slot-mask).
    struct Target {
      Isa isa;
      bool emulated;
      std::string name() const { return cat(isa_name(isa), emulated ? "-simde" : ""); }
    };
    std::vector<Target> isas;
    if (isa_supported(Isa::sse41)) isas.push_back({Isa::sse41, false});
    if (isa_supported(Isa::avx2)) isas.insert(isas.end(), {{Isa::avx2, false}, {Isa::avx512vnni, true}});
    if (isa_supported(Isa::avx512vnni)) isas.push_back({Isa::avx512vnni, false});
    if (isa_supported(Isa::neon)) isas.push_back({Isa::neon, false});
    if (isa_supported(Isa::dotprod)) isas.push_back({Isa::dotprod, false});
#if defined(__x86_64__)
    CHECK(isa_supported(Isa::avx2));  // the oldest x86 machine this project targets (Zen 3)
#elif defined(__aarch64__)
    CHECK(isa_supported(Isa::neon));  // every aarch64 core
#endif
    REQUIRE_FALSE(isas.empty());
    for (const LayoutInfo* L : all_layouts()) {
      CAPTURE(L->name);
      if (!L->block_scales_128()) continue;  // the reference kernel only (suite peer-formats)
      const auto ks = test::checked_kernels_for(*L);
      for (const Target& t : isas) {
        CAPTURE(t.name());
        CHECK(std::any_of(ks.begin(), ks.end(), [&](const KernelVariant& k) { return k.isa == t.isa && k.emulated == t.emulated; }));
      }
      for (const KernelVariant& k : ks) {
        if (k.strategy != Strategy::permute) continue;  // the others: the oracle suite
        CAPTURE(k.name());
        CHECK(mismatches(k, *L, test::whole_rows(*L, 8), 512, 5) == 0);
      }
    }
  }

  TEST_CASE("the permute plan sorts row-mixing words by row and is chosen only where nothing richer applies") {
    const LayoutInfo& t2m = find_layout("t2m");
    CHECK_FALSE(strategies::SlotMaskStrategy::admits(t2m));
    CHECK(strip_plan(t2m) == nullptr);
    const PermutePlan& p = permute_plan(t2m, 32, 42);
    REQUIRE(p.why_not.empty());
    CHECK(p.in_place);
    CHECK(p.single_op);
    CHECK(p.slot_runs);                    // each vector's 4 slots share one load and shuffle
    CHECK(p.shuffled_lanes == 32);         // 8 words x 4 slots, each needing its bytes sorted by row
    CHECK(p.acc_items.size() == 2);        // 16 items, one lane-to-row map: rows 0-3 per 16 bytes
    CHECK(p.item_ops.size() == 17);
    for (int l = 0; l < 8; ++l) CHECK(p.lane_row[std::size_t(l)] == l % 4);
    // Word 0, slot 0: row 0's bytes 0, 4, 8, 12 come first.
    REQUIRE(p.ops[0].shuffle >= 0);
    const std::uint8_t* idx = p.shuffles.data() + p.ops[0].shuffle;
    CHECK(idx[0] == 0);
    CHECK(idx[1] == 4);
    CHECK(idx[2] == 8);
    CHECK(idx[3] == 12);
    CHECK(idx[4] == 1);
    // t2p stays in place with no shuffle; its slot-mask kernel ranks first, permute is listed below.
    const PermutePlan& t2p = permute_plan(find_layout("t2p"), 32, 42);
    CHECK(t2p.in_place);
    CHECK(t2p.shuffled_lanes == 0);
    const KernelChoice c = best_kernel(find_layout("t2p"));
    CHECK(c.variant.strategy != Strategy::permute);
    const KernelChoice m = best_kernel(t2m);
    if (kernels_for(t2m).size() > 1) {
      CHECK(m.variant.strategy == Strategy::permute);
      CHECK(m.notes.front().find("no richer strategy") != std::string::npos);
      CHECK(std::any_of(m.notes.begin(), m.notes.end(), [](const std::string& n) {
        return n.starts_with("slot-mask: not applicable, ");
      }));
    }
    for (const KernelVariant& k : c.variant.strategy == Strategy::reference ? std::vector<KernelVariant>{} : kernels_for(find_layout("t2p")))
      if (k.strategy == Strategy::permute) {
        CHECK(std::any_of(c.notes.begin(), c.notes.end(), [&](const std::string& n) {
          return n.starts_with(k.name() + ": passed over") && n.find("fallback") != std::string::npos;
        }));
      }
    // Under an AVX2 ceiling on a CPU with AVX-512, ptq1_0 keeps base3/avx2: the fallback on a wider
    // ISA does not outrank a richer strategy.
    if (isa_supported(Isa::avx2)) CHECK(best_kernel(find_layout("ptq1_0")).variant.name() == "base3/avx2");
  }

  TEST_CASE("the permute plan gathers (row, k) order where no word can be sorted in place, two-bit and base-3") {
    for (const LayoutInfo* L : {&info_of<Rows8Spread>(), &info_of<Trits8Spread>()}) {
      CAPTURE(L->name);
      for (int vb : {16, 32, 64}) {
        const PermutePlan& p = permute_plan(*L, vb, 42);
        REQUIRE(p.why_not.empty());
        CHECK_FALSE(p.in_place);
        CHECK_FALSE(p.single_op);
      }
      const auto ks = test::checked_kernels_for(*L);
      int permute = 0;
      for (const KernelVariant& k : ks) {
        if (k.strategy != Strategy::permute) continue;
        CAPTURE(k.name());
        ++permute;
        CHECK(mismatches(k, *L, 16, 384, 5) == 0);
      }
      // x86: SSE4.1, AVX2 and AVX-512 (native or SIMDe); aarch64: plain NEON, and dotprod where the CPU has it.
      const int targets = isa_supported(Isa::avx2) ? 2 + int(isa_supported(Isa::sse41))
                                                   : int(isa_supported(Isa::neon)) + int(isa_supported(Isa::dotprod));
      CHECK(permute >= targets);
    }
  }

  TEST_CASE("the permute vector epilogue: steps and folds derived from the lane-to-row map, exact over whole passes") {
    // t2m: lanes 0-3 and 4-7 of every piece feed rows 0-3, so the halves fold, two row groups a vector.
    for (int vb : {32, 64}) {
      const PermutePlan& p = permute_plan(find_layout("t2m"), vb, 42);
      CAPTURE(vb);
      CHECK(p.row_vectors);
      CHECK(p.half_fold);
      CHECK(p.scale_read == 16);
    }
    CHECK_FALSE(permute_plan(find_layout("t2m"), 16, 42).row_vectors);  // 16-byte vectors: no Rows8 policy
    // An 8-row gathered plan has no fold: each piece reaches the rows by permutation steps.
    const PermutePlan& g = permute_plan(info_of<Rows8Spread>(), 32, 42);
    REQUIRE(g.row_vectors);
    CHECK_FALSE(g.half_fold);
    CHECK(g.row_steps.size() >= 1);
    for (const PermutePlan::RowStep& st : g.row_steps)
      for (int j = 0; j < 8; ++j) CHECK((st.idx[j] >= 0 && st.idx[j] < 8));
    const PermutePlan& spread = permute_plan(info_of<T2mSpreadScales>(), 32, 42);
    CHECK(spread.half_fold);
    CHECK(spread.scale_read == 0);  // scales 4 bytes apart: read one row at a time
    // Row counts of 9 groups: two passes of four row groups, then one group alone; every layout
    // and the test-only ones above, gemv and gemm, against the oracle.
    std::vector<const LayoutInfo*> layouts(all_layouts().begin(), all_layouts().end());
    for (const LayoutInfo* L : {&info_of<Rows8Spread>(), &info_of<Trits8Spread>(), &info_of<T2mSpreadScales>()})
      layouts.push_back(L);
    int ran = 0, simd_layouts = 0;
    for (const LayoutInfo* L : layouts) {
      CAPTURE(L->name);
      simd_layouts += L->block_scales_128();
      for (const KernelVariant& k : test::checked_kernels_for(*L)) {
        if (k.strategy != Strategy::permute) continue;
        CAPTURE(k.name());
        CHECK(mismatches(k, *L, 9 * L->rows, 256, 1) == 0);
        CHECK(mismatches(k, *L, 9 * L->rows, 256, 3) == 0);
        ++ran;
      }
    }
    CHECK(ran >= simd_layouts);  // every layout the SIMD kernels take has a permute kernel on a SIMD CPU
  }

  TEST_CASE("the base-3 plan reads ptq1_0 in natural order and flags its overreaching windows") {
    const Base3Plan& p = base3_plan(find_layout("ptq1_0"));
    REQUIRE(p.why_not.empty());
    CHECK(p.block_bytes == 28);
    CHECK(p.scale_offset == 26);
    CHECK(p.overreads);  // the qh window starts at byte 16 and would read 4 bytes of the next block
    CHECK(base3_plan(find_layout("t2p")).why_not == "the layout is not digit-planar base-3: its code is 2-bit");
  }

  TEST_CASE("best_kernel: the ceiling changes the chosen path, and every path matches the oracle") {
    for (const LayoutInfo* L : all_layouts()) {
      CAPTURE(L->name);
      const std::int64_t rows = test::whole_rows(*L, 16), cols = 1024, tokens = 5;
      const KernelChoice top = best_kernel(*L);
      const KernelChoice scalar = best_kernel(*L, Isa::scalar);
      CHECK(scalar.variant.name() == "reference/scalar");
      CHECK(mismatches(top.variant, *L, rows, cols, tokens) == 0);
      CHECK(mismatches(scalar.variant, *L, rows, cols, tokens) == 0);
      const bool any_simd = kernels_for(*L).size() > 1;
      if (any_simd) {
        CHECK(top.variant.name() != scalar.variant.name());
        CHECK(top.notes.front().find("chosen") != std::string::npos);
      } else {
        MESSAGE(L->name, ": no SIMD kernel on this CPU, the ceiling cannot change the path");
      }
      // Where slot-mask is the richest strategy on both x86 ISAs (broadcast outranks it), the ladder
      // and the ceiling pick it.
      const bool slot_mask_tops = isa_supported(Isa::avx2) && isa_supported(Isa::avx512vnni) && L->block_scales_128() &&
                                  admits(*L, Strategy::slot_mask, Isa::avx2) && admits(*L, Strategy::slot_mask, Isa::avx512vnni) &&
                                  !admits(*L, Strategy::broadcast, Isa::avx2) && !admits(*L, Strategy::broadcast, Isa::avx512vnni);
      if (slot_mask_tops) {
        CHECK(best_kernel(*L, Isa::avx2).variant.name() == "slot-mask/avx2");
        const auto listed = kernels_for(*L);
        const bool gathers = std::any_of(listed.begin(), listed.end(), [](const KernelVariant& k) {
          return k.strategy == Strategy::slot_mask && k.isa == Isa::avx512vnni && k.gathers_rows;
        });
        CHECK(top.variant.name() == (cpu_features().splits_512bit_ops && gathers ? "slot-mask/avx2" : "slot-mask/avx512vnni"));
      }
      // The process-wide ceiling (CLI --isa) steers the default choice the same way.
      set_isa_ceiling(Isa::scalar);
      CHECK(best_kernel(*L).variant.name() == "reference/scalar");
      clear_isa_ceiling();
      CHECK(best_kernel(*L).variant.name() == top.variant.name());
    }
  }

  TEST_CASE("under the sse41 ceiling the default kernel is an SSE4.1 build, ranked below AVX2's without one") {
    if (!isa_supported(Isa::sse41)) {
      MESSAGE("this CPU lacks SSE4.1 / SSSE3 (", feature_string(), ")");
      return;
    }
    for (const char* name : {"t2p", "t2r", "pq2_0"}) {
      CAPTURE(name);
      const LayoutInfo& L = find_layout(name);
      const KernelChoice c = best_kernel(L, Isa::sse41);
      CAPTURE(c.variant.name());
      CHECK(c.variant.isa == Isa::sse41);
      // A richer strategy than the fallback, as on AVX2.
      CHECK(c.variant.strategy != Strategy::permute);
      CHECK(c.variant.strategy != Strategy::reference);
      CHECK(mismatches(c.variant, L, test::whole_rows(L, 8), 512, 5) == 0);
      // The process-wide ceiling (CLI --isa sse41) steers the default choice the same way.
      set_isa_ceiling(Isa::sse41);
      CHECK(best_isa() == Isa::sse41);
      CHECK(best_kernel(L).variant.name() == c.variant.name());
      clear_isa_ceiling();
      if (isa_supported(Isa::avx2)) CHECK(best_kernel(L).variant.isa != Isa::sse41);
    }
    CHECK(best_kernel(find_layout("t2p"), Isa::sse41).variant.strategy == Strategy::slot_mask);
    CHECK(best_kernel(find_layout("t2r"), Isa::sse41).variant.strategy == Strategy::broadcast);
  }

  TEST_CASE("the SSE4.1 policy's software fma and fp16 conversion are exact") {
    if (!isa_supported(Isa::sse41)) return;
    const auto bits = [](float f) { return std::bit_cast<std::uint32_t>(f); };
    // Every binary16 value against the project's decoder (NaNs: NaN of the same sign).
    for (std::uint32_t h = 0; h < 65536; h += 4) {
      std::uint8_t in[8];
      for (std::uint32_t i = 0; i < 4; ++i) in[2 * i] = std::uint8_t(h + i), in[2 * i + 1] = std::uint8_t((h + i) >> 8);
      float y[4];
      REQUIRE(detail::sse41_fp16x4(in, y));
      for (std::uint32_t i = 0; i < 4; ++i) {
        const float want = fp16_to_float(std::uint16_t(h + i));
        if (std::isnan(want))
          CHECK((std::isnan(y[i]) && std::signbit(y[i]) == std::signbit(want)));
        else if (bits(y[i]) != bits(want))
          CHECK_MESSAGE(false, "fp16 0x", std::hex, h + i, ": ", y[i], " != ", want);
      }
    }
    // fma: the kernels' operands (an integer below 2^24 times a scale product, plus a running sum),
    // random magnitudes, exact cancellations, zeros, subnormals and overflow, and products a hair
    // off a float tie (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24, where rounding the sum in double first
    // would round twice.
    std::vector<std::array<float, 3>> cases;
    const float tie = 1.0f + 0x1p-12f;
    for (const float c : {0x1p-80f, -0x1p-80f, 0.0f, -0.0f, -1.0f, 0x1p-60f, -0x1p-60f})
      for (const float s : {1.0f, -1.0f, 0x1p-130f, 0x1p100f}) cases.push_back({tie * s, tie, c * s});
    cases.push_back({0x1p-75f, 0x1p-75f, 0.0f});
    cases.push_back({0x1p-75f, -0x1p-74f, 0x1p-149f});
    cases.push_back({0x1p100f, 0x1p100f, 1.0f});
    cases.push_back({3.0f, std::numeric_limits<float>::infinity(), 1.0f});
    cases.push_back({0.0f, std::numeric_limits<float>::infinity(), 1.0f});
    cases.push_back({1.0f, 1.0f, std::numeric_limits<float>::quiet_NaN()});
    std::mt19937 rng(47);
    std::uniform_int_distribution<std::int32_t> integer(-(1 << 24), 1 << 24);
    std::uniform_int_distribution<int> expo(-40, 40), tiny(-149, -100);
    std::uniform_real_distribution<float> unit(1.0f, 2.0f);
    std::bernoulli_distribution coin(0.5);
    const auto sign = [&] { return coin(rng) ? -1.0f : 1.0f; };
    for (int n = 0; n < 400002; ++n) {
      const float a = n % 2 ? float(integer(rng)) : sign() * std::ldexp(unit(rng), expo(rng));
      const float b = sign() * std::ldexp(unit(rng), n % 7 ? expo(rng) : tiny(rng));
      const float p = a * b;
      float c;
      switch (n % 4) {
        case 0: c = -p; break;                                          // cancels to the product's error
        case 1: c = -p * (1.0f + sign() * std::ldexp(1.0f, expo(rng) / 2 - 30)); break;  // near-cancellation
        case 2: c = sign() * std::ldexp(unit(rng), expo(rng) * 3); break;            // any magnitude
        default: c = std::ldexp(p, -25 + n % 3) * sign(); break;        // at the product's last bits
      }
      cases.push_back({a, b, c});
    }
    int wrong = 0;
    for (std::size_t i = 0; i + 4 <= cases.size(); i += 4) {
      float a[4], b[4], c[4], y[4];
      for (int l = 0; l < 4; ++l) a[l] = cases[i + l][0], b[l] = cases[i + l][1], c[l] = cases[i + l][2];
      REQUIRE(detail::sse41_fma4(a, b, c, y));
      for (int l = 0; l < 4; ++l) {
        const float want = std::fma(a[l], b[l], c[l]);
        const bool same = std::isnan(want) ? std::isnan(y[l]) : bits(y[l]) == bits(want);
        if (!same && ++wrong <= 5)
          MESSAGE("fma(", std::hexfloat, a[l], ", ", b[l], ", ", c[l], ") = ", y[l], ", std::fma: ", want);
      }
    }
    CHECK(wrong == 0);
  }

  TEST_CASE("the notes say why each candidate was passed over") {
    const KernelChoice c = best_kernel(find_layout("pq2_0"), Isa::scalar);
    bool slot_mask_note = false;
    for (const std::string& n : c.notes) slot_mask_note |= n.find("slot-mask: not applicable") != std::string::npos;
    CHECK(slot_mask_note);
    if (isa_supported(Isa::avx2)) {
      bool above = false;
      for (const std::string& n : c.notes) above |= n.find("unpack/avx2: passed over, above the ceiling scalar") == 0;
      CHECK(above);
    }
    check_error([] { find_kernel(find_layout("t2p"), Strategy::unpack, Isa::avx2); }, "no kernel 'unpack/avx2'", "t2p",
                "reference/scalar");
  }

  TEST_CASE("a layout's scale format leaves it the kernels of its geometry") {
    const auto names = [](const char* layout) {
      std::vector<std::string> n;
      for (const KernelVariant& k : test::checked_kernels_for(find_layout(layout))) n.push_back(k.name());
      return n;
    };
    for (const char* variant : {"t2p-bf16", "t2p-e4m3", "t2p-e8m0"}) {
      CAPTURE(variant);
      CHECK(names(variant) == names("t2p"));
    }
    for (const char* variant : {"t2r-bf16", "t2r-e4m3"}) {
      CAPTURE(variant);
      CHECK(names(variant) == names("t2r"));
    }
  }

  TEST_CASE("base-3 row-interleaved: b3r's strip plan, and the base-3 build where it applies and where not") {
    const LayoutInfo& b3r = find_layout("b3r");
    CHECK(base3_strip_plan(b3r) != nullptr);
    CHECK(strip_plan(b3r) == nullptr);
    CHECK(b3r.bits_per_weight() == 1.75);
    REQUIRE(base3_strip_plan(b3r) != nullptr);
    const Base3StripPlan& p = *base3_strip_plan(b3r);
    CHECK(p.strips == 6);
    CHECK(p.tail_begin == 384);
    for (int t = 0; t < 6; ++t)
      for (int n = 0; n < 5; ++n) CHECK(p.k0[std::size_t(t)][std::size_t(n)] == 20 * t + 4 * n);
    for (int n = 0; n < 4; ++n) CHECK(p.k0[6][std::size_t(n)] == 120 + 2 * n);
    CHECK(base3_strip_plan(find_layout("b3r8")) != nullptr);
    CHECK(base3_strip_plan(find_layout("b3r-tail-across")) == nullptr);

    // The SIMDe build is in every x86 test binary, so its listing is the same on every x86 CPU: b3r
    // takes it (twice: with and without software prefetches), the 8-row variant is refused with
    // the reason, and the variant without the property lists no broadcast kernel at all.
#if defined(__x86_64__)
    const auto emulated_broadcasts = [](const LayoutInfo& L) {
      std::vector<KernelVariant> ks;
      detail::add_avx512vnni_emulated_kernels(L, ks);
      return std::count_if(ks.begin(), ks.end(), [](const KernelVariant& k) { return k.strategy == Strategy::broadcast; });
    };
    CHECK(emulated_broadcasts(b3r) == 2);
    CHECK(emulated_broadcasts(find_layout("b3r8")) == 0);
    CHECK(emulated_broadcasts(find_layout("b3r-tail-across")) == 0);
    const auto broadcast_gap = [](const char* layout, const char* why) {
      std::vector<KernelVariant> ks;
      std::vector<KernelGap> gaps;
      detail::add_avx512vnni_emulated_kernels(find_layout(layout), ks, &gaps);
      return std::any_of(gaps.begin(), gaps.end(), [&](const KernelGap& g) {
        return g.strategy == Strategy::broadcast && g.why.find(why) != std::string::npos;
      });
    };
    CHECK(broadcast_gap("b3r8", "16-row blocks, the layout has 8"));
    // The same geometry in ggml's byte: admitted by the DSL, refused by the build, which reads banded bytes.
    const LayoutInfo& ceil = find_layout("b3r-ceil");
    CHECK(base3_strip_plan(ceil) != nullptr);
    CHECK(emulated_broadcasts(ceil) == 0);
    CHECK(broadcast_gap("b3r-ceil", "Code::base3"));
#endif
    // The build's byte tables read every banded byte's five digits (84 t0 + t1 t2 t3 t4 in base 3,
    // written out here rather than through the codec the tables are built from).
    const Base3DigitTables& t = base3_digit_tables();
    int bytes = 0;
    for (int t0 = 0; t0 < 3; ++t0)
      for (int r = 0; r < 81; ++r) {
        const int b = 84 * t0 + r;
        CAPTURE(b);
        ++bytes;
        CHECK(t.top[std::size_t(b >> 2)] == t0);
        const int below = b < 128 ? b : t.high[std::size_t(b - 128)];
        CHECK(below < 128);
        for (int n = 1, p = 27; n < 5; ++n, p /= 3) CHECK((t.low[std::size_t(below)] >> (2 * (n - 1)) & 3) == r / p % 3);
      }
    CHECK(bytes == 243);
  }

  TEST_CASE("run_gemv / run_gemm on 1, 2 and 3 threads give the single-call bits") {
    const std::int64_t rows = 40, cols = 2048, tokens = 6;
    const TernaryMatrix w = make_weights(rows, cols, 3, Fill::random, ScaleKind::random);
    const std::vector<float> xf = make_float_activations(tokens, cols, 4);
    const Q8KBatch x = quantize_batch(xf.data(), tokens, cols);
    for (int threads : {1, 2, 3}) {
      ThreadPool pool(threads);
      for (const LayoutInfo* L : all_layouts()) {
        if (rows % L->rows) continue;
        const TernaryMatrix wl = test::share_scales(requantise_scales(w, L->scale_format()), *L);  // the identity for fp16 per 128
        const std::vector<float> want = oracle_float(wl, x);
        const PackedMatrix p = pack(wl, *L);
        for (const KernelVariant& k : test::checked_kernels_for(*L)) {
          CAPTURE(threads);
          CAPTURE(k.name());
          CAPTURE(L->name);
          std::vector<float> Y(std::size_t(tokens * rows), NAN);
          run_gemm(pool, k, p, x, Y, rows);
          std::vector<float> y(std::size_t(rows), NAN);
          run_gemv(pool, k, p, x.row(2), x.cols, y);
          for (std::int64_t n = 0; n < rows; ++n) {
            CHECK(y[std::size_t(n)] == want[std::size_t(2 * rows + n)]);
            for (std::int64_t t = 0; t < tokens; ++t)
              CHECK(Y[std::size_t(t * rows + n)] == want[std::size_t(t * rows + n)]);
          }
        }
      }
    }
  }

  TEST_CASE("buffers from 1 MiB start on a 2 MiB boundary, so a layer's 1-2 MiB matrix or state can take huge pages") {
    const auto huge_aligned = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % kHugeAlign == 0; };
    CHECK(kHugeThreshold == std::size_t(1) << 20);
    // Several at once, so a heap block that lands on a boundary by chance cannot pass for all of them.
    std::vector<AlignedVector<float>> layers;
    for (int i = 0; i < 4; ++i) layers.emplace_back(std::size_t(3) << 17);  // 1.5 MiB of floats, mid's state a layer
    for (const auto& v : layers) CHECK(huge_aligned(v.data()));
    const AlignedBytes matrix((std::size_t(1) << 20) + 12345);
    CHECK(huge_aligned(matrix.data()));
    // Below the threshold: the heap, on a cache line.
    const AlignedBytes small((std::size_t(1) << 20) - 64);
    CHECK(reinterpret_cast<std::uintptr_t>(small.data()) % kAlign == 0);
  }
}

TEST_SUITE("bad-input") {
  TEST_CASE("a kernel handed a layout it was not built for names both") {
    const PackedMatrix pq = pack(make_weights(4, 256, 1), find_layout("pq2_0"));
    const PackedMatrix t2p = pack(make_weights(4, 256, 1), find_layout("t2p"));
    const Q8KBatch x = quantize_batch(make_float_activations(1, 256, 1).data(), 1, 256);
    std::vector<float> y(4);
    for (const KernelVariant& k : test::checked_kernels_for(find_layout("t2p")))
      if (k.strategy == Strategy::slot_mask) {
        CAPTURE(k.name());
        // slot-mask/i8mm runs the dotprod gemv, whose message names that variant: check the strategy.
        check_error([&] { k.gemv(pq, x.row(0), y.data(), 0, 4); }, cat(strategy_name(k.strategy), "/"), "pq2_0", "not slot-vectorizable");
        check_error([&] { k.gemm(pq, x, y.data(), 4, 0, 4); }, k.name(), "pq2_0");
      }
    for (const KernelVariant& k : test::checked_kernels_for(find_layout("pq2_0")))
      if (k.strategy == Strategy::unpack || k.strategy == Strategy::unpack_vecdot || k.strategy == Strategy::prism_neon)
        check_error([&] { k.gemv(t2p, x.row(0), y.data(), 0, 1); }, k.name(), "t2p");
    for (const KernelVariant& k : test::checked_kernels_for(find_layout("ptq1_0")))
      if (k.strategy == Strategy::base3) check_error([&] { k.gemv(t2p, x.row(0), y.data(), 0, 1); }, k.name(), "t2p");
  }

  TEST_CASE("the thread-pool drivers check shapes, token counts and alignment before running") {
    ThreadPool pool(2);
    const LayoutInfo& L = find_layout("t2p");
    const KernelVariant k = best_kernel(L).variant;
    const PackedMatrix p = pack(make_weights(8, 512, 1), L);
    const Q8KBatch x = quantize_batch(make_float_activations(2, 512, 1).data(), 2, 512);
    const Q8KBatch narrow = quantize_batch(make_float_activations(1, 256, 1).data(), 1, 256);
    std::vector<float> y(16);
    check_error([&] { run_gemv(pool, k, p, narrow.row(0), narrow.cols, y); }, "256", "512");
    check_error([&] { run_gemv(pool, k, p, x, y); }, "holds 2 tokens");
    check_error([&] { run_gemv(pool, k, p, x.row(0), x.cols, std::span<float>(y).first(7)); }, "output holds 7",
                "need 8");
    check_error([&] { run_gemm(pool, k, p, x, std::span<float>(y).first(15), 8); }, "output holds 15", "need 16");
    std::vector<std::uint8_t> raw(sizeof(BlockQ8K) * 2 + 8);
    std::memcpy(raw.data() + 2, x.row(0), sizeof(BlockQ8K) * 2);
    check_error([&] { run_gemv(pool, k, p, reinterpret_cast<const BlockQ8K*>(raw.data() + 2), 512, y); },
                "misaligned");
  }
}
