// Dispatch by CPU features. Under qemu each aarch64 test runs with TERNLAB_EXPECT_CPU naming the
// emulated model (tests/CMakeLists.txt), so the expected ladder comes from the model, not from the
// detection under test: max has dotprod + i8mm, cortex-a76 dotprod only, cortex-a72 neither (it
// must fall back to plain NEON, never crash). On x86 the ladder is checked against cpuid instead.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>
#include <string>

#include "common/strings.hpp"
#include "kernels/catalog.hpp"
#include "kernels/cpu.hpp"
#include "kernels/dispatch.hpp"
#include "kernels/measure.hpp"
#include "kernels/oracle.hpp"
#include "kernels/targets/portable/portable.hpp"
#include "kernels/testdata.hpp"
#include "tests/support.hpp"

#include "kernels/strategies/all.hpp"
#include "kernels/strategies/base3/plan.hpp"
#include "kernels/strategies/broadcast/plan.hpp"
#include "kernels/strategies/permute/plan.hpp"
#include "kernels/strategies/slot_mask/plan.hpp"

using namespace ternlab;

namespace {

std::string expected_cpu() {
  const char* e = std::getenv("TERNLAB_EXPECT_CPU");
  return e ? e : "";
}

std::set<std::string> variant_names(const LayoutInfo& L) {
  std::set<std::string> s;
  for (const KernelVariant& k : kernels_for(L)) s.insert(k.name());
  return s;
}

// t2p with pair 1's words stored in another k order than pair 0's (weights 64-127 first). Declared
// here and never registered, so only this file sees it: the slot-mask kernels must follow the plan
// (words of different units at different weights), not assume t2p's regular word order.
struct T2pShuffled {
  static constexpr LayoutSpec spec{
      .name = "t2p-shuffled",
      .summary = "test-only: t2p whose second row pair stores weights 64-127 before 0-63",
      .rows = 4,
      .code = Code::two_bit,
      .scales = {.offset = 0, .row_stride = 2},
      .pieces = pieces(Piece{.k_begin = 0,
                             .row = modes(bytes("half", 2, 8), bytes("pair", 2, 96)),
                             .k = modes(bytes("kk", 8, 1), slots("s", 4, 1), bytes("word", 2, 16)),
                             .byte_base = 8},
                       Piece{.k_begin = 64,
                             .row = modes(bytes("half", 2, 8), bytes("pair", 2, 32)),
                             .k = modes(bytes("kk", 8, 1), slots("s", 4, 1), bytes("word", 2, 16)),
                             .byte_base = 40}),
  };
};

// ptq1_0's stages in another order (8-byte stage first, then the 16-byte one, then qh), also never
// registered: its 16-weight vectors straddle stage and digit boundaries, so the base-3 kernels must
// gather lanes as digit_segments says rather than assume ptq1_0's offsets.
struct Ptq1Reordered {
  static constexpr LayoutSpec spec{
      .name = "ptq1-reordered",
      .summary = "test-only: base-3 with the 8-byte stage first",
      .rows = 1,
      .code = Code::base3,
      .scales = {.offset = 26},
      .pieces = pieces(Piece{.k_begin = 0,
                             .row = modes(bytes("row", 1, 0)),
                             .k = modes(bytes("m", 8, 1), slots("n", 5, 1)),
                             .byte_base = 0},
                       Piece{.k_begin = 40,
                             .row = modes(bytes("row", 1, 0)),
                             .k = modes(bytes("m", 16, 1), slots("n", 5, 1)),
                             .byte_base = 8},
                       Piece{.k_begin = 120,
                             .row = modes(bytes("row", 1, 0)),
                             .k = modes(bytes("h", 2, 1), slots("n", 4, 1)),
                             .byte_base = 24}),
  };
};

// Runs every kernels_for(L) variant on one case and compares with the integer oracle; returns the
// number of variants run.
int check_all_variants(const LayoutInfo& L, std::int64_t rows, std::int64_t cols, std::int64_t tokens,
                       std::uint64_t seed) {
  const TernaryMatrix w = make_weights(rows, cols, seed);
  const UnitActivations a = make_unit_activations(tokens, cols, seed + 1);
  const Q8KBatch x = quantize_batch(a.f.data(), tokens, cols);
  const std::vector<std::int64_t> want = oracle_int(w, a.i8, tokens);
  const PackedMatrix p = pack(w, L);
  int paths = 0;
  for (const KernelVariant& k : kernels_for(L)) {
    CAPTURE(L.name);
    CAPTURE(k.name());
    std::vector<float> Y(std::size_t(tokens * rows), NAN), y(std::size_t(rows), NAN);
    k.gemm(p, x, Y.data(), rows, 0, p.row_groups());
    for (std::int64_t t = 0; t < tokens; ++t) {
      k.gemv(p, x.row(t), y.data(), 0, p.row_groups());
      for (std::int64_t n = 0; n < rows; ++n) {
        CHECK(double(y[std::size_t(n)]) == double(want[std::size_t(t * rows + n)]));
        CHECK(double(Y[std::size_t(t * rows + n)]) == double(want[std::size_t(t * rows + n)]));
      }
    }
    ++paths;
  }
  return paths;
}

struct IsaCeilingReset {
  ~IsaCeilingReset() { clear_isa_ceiling(); }
};

}  // namespace

TEST_SUITE("dispatch") {
  TEST_CASE("the ISA ladder matches the CPU") {
    const CpuFeatures& f = cpu_features();
    const std::vector<Isa> isas = supported_isas();
    INFO("cpu: ", f.model, "; features: ", feature_string());
    REQUIRE(!isas.empty());
    CHECK(isas.front() == Isa::scalar);
    CHECK(best_isa() == isas.back());
    CHECK(std::is_sorted(isas.begin(), isas.end(), [](Isa a, Isa b) { return int(a) < int(b); }));
#if defined(__aarch64__)
    const std::string cpu = expected_cpu();
    if (cpu.empty()) {
      MESSAGE("TERNLAB_EXPECT_CPU unset (native aarch64 run): checking consistency only");
      CHECK(f.neon);
      CHECK(isa_supported(Isa::dotprod) == f.dotprod);
      CHECK(isa_supported(Isa::i8mm) == (f.dotprod && f.i8mm));
    } else if (cpu == "max") {
      CHECK(f.dotprod);
      CHECK(f.i8mm);
      CHECK(isas == std::vector<Isa>{Isa::scalar, Isa::neon, Isa::dotprod, Isa::i8mm});
      CHECK(best_isa() == Isa::i8mm);
    } else if (cpu == "cortex-a76") {
      CHECK(f.dotprod);
      CHECK_FALSE(f.i8mm);
      CHECK(isas == std::vector<Isa>{Isa::scalar, Isa::neon, Isa::dotprod});
      CHECK(best_isa() == Isa::dotprod);
    } else if (cpu == "cortex-a72") {
      CHECK_FALSE(f.dotprod);
      CHECK_FALSE(f.i8mm);
      CHECK(isas == std::vector<Isa>{Isa::scalar, Isa::neon});
      CHECK(best_isa() == Isa::neon);
    } else {
      FAIL("TERNLAB_EXPECT_CPU=", cpu, " is not a model this test knows (max, cortex-a76, cortex-a72)");
    }
    CHECK_FALSE(f.avx2);
    CHECK_FALSE(isa_supported(Isa::avx2));
#elif defined(__x86_64__)
    if (!expected_cpu().empty()) MESSAGE("TERNLAB_EXPECT_CPU is for the aarch64 suite; ignored on x86");
    CHECK_FALSE(f.neon);
    CHECK_FALSE(isa_supported(Isa::neon));
    CHECK(isa_supported(Isa::sse41) == (f.ssse3 && f.sse41));
    CHECK(isa_supported(Isa::avx2) == (f.avx2 && f.fma && f.f16c));
    CHECK(isa_supported(Isa::avx512vnni) ==
          (isa_supported(Isa::avx2) && f.avx512f && f.avx512bw && f.avx512vl && f.avx512vnni));
    if (!isa_supported(Isa::avx512vnni)) MESSAGE("no AVX-512 VNNI on this CPU: that rung is not exercised here");
#endif
  }

  TEST_CASE("the last-level cache: the kernel's per-complex L3 on AMD, else the larger report") {
    constexpr std::int64_t MiB = 1 << 20;
    CHECK(choose_last_level_cache(32 * MiB, 320 * MiB, true) == 32 * MiB);    // the Zen 4 guest
    CHECK(choose_last_level_cache(32 * MiB, 320 * MiB, false) == 320 * MiB);  // a shared L3 errs large
    CHECK(choose_last_level_cache(480 * MiB, 2 * MiB, false) == 480 * MiB);
    CHECK(choose_last_level_cache(0, 256 * MiB, true) == 256 * MiB);  // no /sys: glibc's figure
    CHECK(choose_last_level_cache(2 * MiB, 0, false) == 2 * MiB);      // aarch64 glibc answers 0
    CHECK(choose_last_level_cache(0, -1, false) == 0);                 // sysconf's "unknown"
  }

  TEST_CASE("a ceiling forces a lower path and an unsupported one is refused") {
    const IsaCeilingReset reset;
    set_isa_ceiling(Isa::scalar);
    CHECK(best_isa() == Isa::scalar);
    clear_isa_ceiling();
    CHECK(best_isa() == supported_isas().back());
#if defined(__aarch64__)
    set_isa_ceiling(Isa::neon);
    CHECK(best_isa() == Isa::neon);
    if (isa_supported(Isa::i8mm)) {
      set_isa_ceiling(Isa::dotprod);
      CHECK(best_isa() == Isa::dotprod);
    } else {
      test::check_error([] { set_isa_ceiling(Isa::i8mm); }, "i8mm", "not supported");
    }
    test::check_error([] { set_isa_ceiling(Isa::avx2); }, "avx2", "not supported");
#elif defined(__x86_64__)
    test::check_error([] { set_isa_ceiling(Isa::dotprod); }, "dotprod", "not supported");
    if (isa_supported(Isa::avx2) && isa_supported(Isa::sse41)) {
      set_isa_ceiling(Isa::sse41);
      CHECK(best_isa() == Isa::sse41);
      CHECK(parse_isa("sse41") == Isa::sse41);
      CHECK_FALSE(isa_at_or_below(Isa::avx2, Isa::sse41));
      CHECK(isa_at_or_below(Isa::sse41, Isa::avx2));
      CHECK_FALSE(isa_at_or_below(Isa::sse41, Isa::neon));
    }
    if (isa_supported(Isa::avx512vnni)) {
      set_isa_ceiling(Isa::avx2);
      CHECK(best_isa() == Isa::avx2);
    } else {
      test::check_error([] { set_isa_ceiling(Isa::avx512vnni); }, "avx512vnni", "not supported");
    }
#endif
  }

  TEST_CASE("kernels_for lists exactly the paths this CPU can run") {
    for (const LayoutInfo* L : all_layouts()) {
      CAPTURE(L->name);
      const std::vector<KernelVariant> ks = kernels_for(*L);
      REQUIRE(!ks.empty());
      CHECK(ks.front().name() == "reference/scalar");
      CHECK(variant_names(*L).size() == ks.size());  // no variant listed twice
      for (const KernelVariant& k : ks) {
        CAPTURE(k.name());
        CHECK(isa_supported(k.isa));
        CHECK(bool(k.gemv));
        CHECK(bool(k.gemm));
      }
    }
#if defined(__aarch64__)
    // Expected per layout property and emulated model; the names come from the model, not detection.
    const std::string cpu = expected_cpu();
    if (cpu.empty()) {
      MESSAGE("TERNLAB_EXPECT_CPU unset: per-model kernel lists not checked");
      return;
    }
    const bool dotprod = cpu != "cortex-a72", i8mm = cpu == "max";
    for (const LayoutInfo* L : all_layouts()) {
      CAPTURE(L->name);
      // Every aarch64 level runs the shared strategies through its NEON policies wherever the
      // shared plans accept the layout; i8mm adds the smmla gemm where its one rule (smmla_why_not,
      // the catalog's own) accepts it; dotprod adds PrismML's stock kernel as a baseline arm.
      // A strategy the layout's scale site rules out (scales_why_not: per-tensor or 64-weight
      // groups everywhere; blocks of several 128-weight chunks for all but slot-mask) is absent.
      std::set<std::string> want{"reference/scalar"};
      const auto add = [&](const char* strategy, bool with_i8mm) {
        if (!scales_why_not(parse_strategy(strategy), *L).empty()) return;
        want.insert(cat(strategy, "/neon"));
        if (dotprod) want.insert(cat(strategy, "/dotprod"));
        if (i8mm && with_i8mm) want.insert(cat(strategy, "/i8mm"));
      };
      if (natural_two_bit(*L)) {
        add("unpack", false);
        add("unpack-vecdot", false);  // the typelist builds both on every target
      }
      if (natural_two_bit(*L) && dotprod && scales_why_not(Strategy::prism_neon, *L).empty()) want.insert("prism-neon/dotprod");
      if (strategies::Base3Strategy::admits(*L) && base3_plan(*L).why_not.empty()) add("base3", false);
      if (strategies::SlotMaskStrategy::admits(*L) && neon_slot_plan(*L).why_not.empty()) {
        add("slot-mask", smmla_why_not(*L).empty());
        add("slot-mask-widen", false);
        // The portable kernel's two compiles run the same 16-byte plan.
        if (scales_why_not(Strategy::portable, *L).empty()) {
          want.insert("portable/scalar");
          want.insert("portable/neon");
        }
      }
      add("permute", false);  // the fallback: every layout whose scales it reads, on every NEON level
      CHECK(variant_names(*L) == want);
    }
    // The stock layouts and the test-only ones, named, so a silently lost property or plan fails here.
    CHECK(variant_names(find_layout("pq2_0")).count("unpack/neon") == 1);
    CHECK(variant_names(find_layout("pq2_0")).count("prism-neon/dotprod") == (dotprod ? 1u : 0u));
    CHECK(variant_names(find_layout("ptq1_0")).count("base3/neon") == 1);
    CHECK(variant_names(find_layout("t2x4")).count("slot-mask/neon") == 1);
    CHECK(variant_names(find_layout("t2w3")).count("slot-mask/neon") == 1);
    CHECK(variant_names(find_layout("t2w3")).count("slot-mask/i8mm") == 0);  // 3 single rows: no zip pairs
    CHECK(variant_names(find_layout("t2p8")).count("slot-mask/i8mm") == (i8mm ? 1u : 0u));
    CHECK(variant_names(find_layout("t2p")).count("slot-mask/i8mm") == (i8mm ? 1u : 0u));
    CHECK(neon_slot_plan(find_layout("t2w")).slot_stride == 32);  // t2w's half-row words
    CHECK(neon_slot_plan(find_layout("t2p")).slot_stride == 8);
    CHECK(variant_names(find_layout("t2w")).count("slot-mask/i8mm") == (i8mm ? 1u : 0u));
    CHECK(variant_names(find_layout("pq2_0")).count("unpack/dotprod") == (dotprod ? 1u : 0u));
#endif
  }

  TEST_CASE("every listed path, the dotprod-only gemms included, equals the integer oracle") {
    // A compact exact check on this model (the oracle suite sweeps shapes): 5 tokens = one full x4
    // tile plus a padded one; rows 16 (whole blocks of every layout) and K = 768 (three q8_K blocks,
    // the last half-used by 128-blocks).
    int paths = 0;
    for (const LayoutInfo* L : all_layouts()) {
      const int n = check_all_variants(*L, test::whole_rows(*L, 16), 768, 5, 7);
      CHECK(n == int(kernels_for(*L).size()));
#if defined(__x86_64__)
      // Every registered layout has some SIMD strategy on AVX2 (reference-only would be a lost path).
      // The expected exception: layouts whose scales the SIMD kernels do not read (tq2_0, tq1_0, i2_s).
      if (isa_supported(Isa::avx2) && L->block_scales_128()) CHECK_MESSAGE(n >= 2, L->name, " ran no SIMD path on this AVX2 CPU");
#endif
      paths += n;
    }
    MESSAGE("paths checked on this CPU: ", paths);
  }

  TEST_CASE("a row-pair layout whose pairs order k differently runs exactly on every listed path") {
    const LayoutInfo& L = info_of<T2pShuffled>();
    REQUIRE(strategies::SlotMaskStrategy::admits(L));
    CHECK(slot_words(L).pairs_rows);
    const int paths = check_all_variants(L, 12, 1024, 6, 11);
#if defined(__aarch64__)
    const std::set<std::string> names = variant_names(L);
    CHECK(names.count("slot-mask/neon") == 1);
    CHECK(smmla_why_not(L).empty());  // row pairs on 8-weight chunks, whatever their k order
    if (isa_supported(Isa::i8mm)) CHECK(names.count("slot-mask/i8mm") == 1);
    CHECK(paths == int(names.size()));
#else
    CHECK(paths >= 1);
#endif
  }

  TEST_CASE("a base-3 layout with its stages in another order runs exactly on every listed path") {
    const LayoutInfo& L = info_of<Ptq1Reordered>();
    REQUIRE(strategies::Base3Strategy::admits(L));
    const int paths = check_all_variants(L, 4, 1280, 3, 13);
#if defined(__aarch64__)
    const std::set<std::string> names = variant_names(L);
    CHECK(names.count("base3/neon") == 1);
    CHECK(names.count("base3/dotprod") == (isa_supported(Isa::dotprod) ? 1u : 0u));
    CHECK(paths == int(names.size()));
#else
    CHECK(paths >= 1);
#endif
  }

  TEST_CASE("a kernel handed a layout it cannot read refuses it, naming kernel, layout and reason") {
    const Q8KBatch x = quantize_batch(make_float_activations(1, 256, 1).data(), 1, 256);
    int refused = 0;
    for (const LayoutInfo* built_for : all_layouts())
      for (const KernelVariant& k : kernels_for(*built_for)) {
        if (k.strategy == Strategy::reference) continue;
        for (const LayoutInfo* other : all_layouts()) {
          bool readable = true;
          switch (k.strategy) {
            case Strategy::broadcast:  // the 2-bit and the base-3 builds each read their own kind
              readable = ((strip_plan(*built_for) != nullptr) ? (strip_plan(*other) != nullptr)
                                                           : (base3_strip_plan(*other) != nullptr)) &&
                         other->rows == built_for->rows;
              break;
            case Strategy::slot_mask:
            case Strategy::slot_mask_widen:
            case Strategy::portable: readable = strategies::SlotMaskStrategy::admits(*other); break;
            case Strategy::unpack:
            case Strategy::unpack_vecdot:
            case Strategy::prism_neon: readable = natural_two_bit(*other); break;
            case Strategy::base3: readable = strategies::Base3Strategy::admits(*other); break;
            case Strategy::permute:  // one template, each layout's own plan: what that layout lists
              readable = std::ranges::any_of(kernels_for(*other), [&](const KernelVariant& o) { return o.name() == k.name(); });
              break;
            case Strategy::reference: break;
          }
          readable = readable && scales_why_not(k.strategy, *other).empty();  // the catalog's scale gate
          if (readable) continue;
          CAPTURE(k.name());
          CAPTURE(other->name);
          const std::int64_t rows = test::whole_rows(*other, 16);
          const PackedMatrix p = pack(make_weights(rows, 256, 1), *other);
          std::vector<float> y(static_cast<std::size_t>(rows));
          // The gemv may be shared with another ISA's variant (slot-mask/i8mm runs the dotprod
          // gemv), so its message names the strategy and the layout; the gemm names the variant.
          test::check_error([&] { k.gemv(p, x.row(0), y.data(), 0, p.row_groups()); }, cat(strategy_name(k.strategy), "/"),
                            std::string(other->name));
          test::check_error([&] { k.gemm(p, x, y.data(), rows, 0, p.row_groups()); }, k.name(), std::string(other->name));
          ++refused;
        }
      }
#if defined(__aarch64__)
    CHECK(refused > 0);
#else
    MESSAGE("kernels refusing foreign layouts checked here: ", refused);
#endif
  }

  TEST_CASE("select_kernel, the one selector, honours the ISA ceiling for every form of kernel name") {
    const IsaCeilingReset reset;
    int refused = 0;
    for (const LayoutInfo* L : all_layouts())
      for (const KernelVariant& k : kernels_for(*L)) {
        CAPTURE(L->name);
        CAPTURE(k.name());
        CHECK(select_kernel(*L, k.name()).name() == k.name());  // no ceiling: every listed variant
        if (k.isa == Isa::scalar) continue;
        set_isa_ceiling(Isa::scalar);
        test::check_error([&] { select_kernel(*L, k.name()); }, k.name(), "above the ISA ceiling scalar");
        const std::string strategy(strategy_name(k.strategy));
        const std::string scalar_build = kernel_name(k.strategy, Isa::scalar);  // portable/scalar: one exists
        if (std::ranges::any_of(kernels_for(*L), [&](const KernelVariant& o) { return o.name() == scalar_build; }))
          CHECK(select_kernel(*L, strategy).name() == scalar_build);
        else
          test::check_error([&] { select_kernel(*L, strategy); }, strategy, "ceiling");
        CHECK(select_kernel(*L, "best").name() == "reference/scalar");
        CHECK(select_kernel(*L, "").name() == "reference/scalar");
        clear_isa_ceiling();
        ++refused;
      }
    test::check_error([] { select_kernel(find_layout("t2p"), "slot-mask/avx9"); }, "avx9");
#if defined(__x86_64__)
    if (isa_supported(Isa::avx2)) CHECK(refused > 0);
#endif
  }

  TEST_CASE("\"+gfni\" names the GFNI build of a kernel, which is refused where the CPU has no GFNI") {
    const LayoutInfo& L = find_layout("t2r");
    const std::string plain = "broadcast/avx512vnni", gfni = plain + "+gfni";
    INFO("cpu: ", cpu_features().model, "; features: ", feature_string());
    if (!isa_supported(Isa::avx512vnni)) {
      test::check_error([&] { select_kernel(L, gfni); }, gfni, "not supported on this CPU");
    } else if (cpu_features().gfni) {
      CHECK(select_kernel(L, gfni).gfni);
      CHECK(select_kernel(L, plain).name() == plain);  // both builds are listed: each name its own
      CHECK(best_kernel(L).variant.gfni == cpu_features().prefers_gfni_slots);
    } else {
      CHECK(select_kernel(L, plain).name() == plain);
      test::check_error([&] { select_kernel(L, gfni); }, gfni, "no GFNI build of broadcast/avx512vnni");
    }
  }

  TEST_CASE("\"+hw-prefetch\" names the broadcast build without software prefetches, ranked by the CPU") {
    INFO("cpu: ", cpu_description(), " (", cpu_features().vendor, "); features: ", feature_string());
#if defined(__x86_64__)
    CHECK(cpu_features().vendor.size() == 12);
    CHECK(cpu_features().family > 0);
    if (cpu_features().prefers_hardware_prefetch) CHECK(cpu_features().vendor == "AuthenticAMD");
    if (cpu_features().prefers_gfni_slots) CHECK(cpu_features().gfni);
#endif
    int twins = 0;
    for (const char* name : {"t2r", "t2r8"}) {
      const LayoutInfo& L = find_layout(name);
      CAPTURE(L.name);
      for (Isa isa : {Isa::sse41, Isa::avx2, Isa::avx512vnni}) {
        if (!isa_supported(isa)) continue;
        std::vector<KernelVariant> builds;
        for (const KernelVariant& k : kernels_for(L))
          if (k.strategy == Strategy::broadcast && k.isa == isa) builds.push_back(k);
        if (builds.empty()) continue;  // t2r8's 8-row blocks fill no 16-lane vector
        // Each build (shift-and-AND slots; GFNI slots on AVX-512 where the CPU has GFNI; the GFNI
        // build with its gemm on AMX tiles where they are granted, for t2r's dword lanes) twice.
        const bool gfni = isa == Isa::avx512vnni && cpu_features().gfni;
        const bool amx = gfni && cpu_features().amx_int8 && L.name == "t2r";
        REQUIRE(builds.size() == std::size_t(amx ? 6 : gfni ? 4 : 2));
        CHECK(std::ranges::count_if(builds, [](const KernelVariant& k) { return k.amx; }) == (amx ? 2 : 0));
        CHECK(std::ranges::count_if(builds, [](const KernelVariant& k) { return k.hardware_prefetch; }) == int(builds.size()) / 2);
        for (const KernelVariant& k : builds) {
          CHECK(select_kernel(L, k.name()).name() == k.name());  // every spelling leads back to its build
          CHECK(k.name().ends_with("+hw-prefetch") == k.hardware_prefetch);
        }
        const KernelVariant plain = select_kernel(L, kernel_name(Strategy::broadcast, isa));
        CHECK_FALSE(plain.hardware_prefetch);
        CHECK_FALSE(plain.gfni);
        ++twins;
      }
      if (twins > 0) CHECK(best_kernel(L).variant.hardware_prefetch == cpu_features().prefers_hardware_prefetch);
    }
    if (isa_supported(Isa::avx2)) {
      CHECK(twins > 0);
      // Only the broadcast strategy has the build: elsewhere the suffix is refused, naming it.
      test::check_error([] { select_kernel(find_layout("t2p"), "slot-mask/avx2+hw-prefetch"); }, "slot-mask/avx2+hw-prefetch",
                        "t2p");
    }
  }

  TEST_CASE("where the CPU splits 512-bit ops, slot-mask's AVX2 build ranks above its AVX-512 one for single-row words, saying why") {
    const LayoutInfo& L = find_layout("t2w");
    if (!isa_supported(Isa::avx512vnni)) {
      CHECK_FALSE(best_kernel(L).variant.isa == Isa::avx512vnni);
      return;
    }
    const KernelChoice c = best_kernel(L);
    INFO("cpu: ", cpu_description(), "; features: ", feature_string());
    CHECK(c.variant.strategy == Strategy::slot_mask);
    CHECK(c.variant.isa == (cpu_features().splits_512bit_ops ? Isa::avx2 : Isa::avx512vnni));
    const bool said = std::ranges::any_of(c.notes, [](const std::string& n) {
      return n.starts_with("slot-mask/avx512vnni: passed over") && n.find("splits 512-bit ops") != std::string::npos;
    });
    CHECK(said == cpu_features().splits_512bit_ops);
    if (cpu_features().splits_512bit_ops) CHECK(cpu_features().vendor == "AuthenticAMD");
    // Plans that fold whole words keep the AVX-512 build there: it gains from the width. So do the
    // same row pairs split by their scales (t2p-split), whose words fold in pairs.
    const KernelChoice p = best_kernel(find_layout("t2p"));
    CHECK(p.variant.name() == "slot-mask/avx512vnni");
    CHECK(best_kernel(find_layout("t2p-split")).variant.name() == "slot-mask/avx512vnni");
    // unpack's AVX-512 build (pq2_0) ranks after its AVX2 one where the CPU splits the ops.
    CHECK(best_kernel(find_layout("pq2_0")).variant.isa == (cpu_features().splits_512bit_ops ? Isa::avx2 : Isa::avx512vnni));
  }

  TEST_CASE("a richer strategy's SSE4.1 build ranks after the fallback's wider builds, and leads under an SSE4.1 ceiling") {
    // t2r4's strip is 16 bytes: only SSE4.1's broadcast build reads it (half an AVX2 vector).
    const LayoutInfo& L = find_layout("t2r4");
    const std::set<std::string> names = variant_names(L);
    REQUIRE(names.count("broadcast/sse41") == (isa_supported(Isa::sse41) ? 1u : 0u));
    CHECK(names.count("broadcast/avx2") == 0);
    CHECK(names.count("broadcast/avx512vnni") == 0);
    if (!isa_supported(Isa::sse41)) {
      MESSAGE("expected skip: no SSE4.1 on this CPU (aarch64), so no SSE4.1 build to rank");
      return;
    }
    const KernelChoice under_sse41 = best_kernel(L, Isa::sse41);
    CHECK((under_sse41.variant.strategy == Strategy::broadcast && under_sse41.variant.isa == Isa::sse41));
    const KernelChoice c = best_kernel(L);
    INFO("cpu: ", cpu_description(), "; notes: ", join(c.notes, " | "));
    if (!isa_supported(Isa::avx2)) {  // every build is SSE4.1: the richer strategy leads
      CHECK((c.variant.strategy == Strategy::broadcast && c.variant.isa == Isa::sse41));
      return;
    }
    CHECK(c.variant.strategy == Strategy::permute);
    CHECK(c.variant.isa == (isa_supported(Isa::avx512vnni) ? Isa::avx512vnni : Isa::avx2));
    CHECK(std::ranges::any_of(c.notes, [](const std::string& n) {
      return n.starts_with("broadcast/sse41: passed over") && n.find("SSE4.1 build runs slower") != std::string::npos;
    }));
    // Only SSE4.1 builds of a richer strategy carry that reason (not the reference, nor permute's own builds).
    for (const std::string& n : c.notes)
      if (n.find("SSE4.1 build runs slower") != std::string::npos) CHECK(n.starts_with("broadcast/sse41"));
  }

  TEST_CASE("best_kernel_of chooses within one strategy as best_kernel does across all") {
    for (const LayoutInfo* L : all_layouts()) {
      CAPTURE(L->name);
      const KernelVariant best = best_kernel(*L).variant;
      CHECK(best_kernel_of(*L, best.strategy).variant.name() == best.name());
      for (const KernelVariant& k : kernels_for(*L)) {
        const KernelVariant chosen = best_kernel_of(*L, k.strategy).variant;
        CHECK(chosen.strategy == k.strategy);
        // Never a poorer ISA of the strategy, but slot-mask's and unpack's AVX-512 builds where the
        // CPU splits 512-bit ops (dispatch counts some as AVX2).
        if (!(cpu_features().splits_512bit_ops &&
              (k.strategy == Strategy::slot_mask || k.strategy == Strategy::unpack || k.strategy == Strategy::unpack_vecdot)))
          CHECK(int(chosen.isa) >= int(k.isa));
      }
      test::check_error([&] { select_kernel(*L, "teleport"); }, "no kernel 'teleport'", L->name, "unknown strategy",
                        "reference/scalar");
    }
  }

  TEST_CASE("the portable kernel's two compiles are listed for slot layouts, selectable by name, never chosen") {
    const std::string autovec = kernel_name(Strategy::portable, detail::kPortableAutovecIsa);
    const LayoutInfo& t2p = find_layout("t2p");
    CHECK(variant_names(t2p).count("portable/scalar") == 1);
    CHECK(variant_names(t2p).count(autovec) == (isa_supported(detail::kPortableAutovecIsa) ? 1u : 0u));
    CHECK(select_kernel(t2p, "portable/scalar").name() == "portable/scalar");
    for (const LayoutInfo* L : all_layouts()) {
      CAPTURE(L->name);
      CHECK(best_kernel(*L).variant.strategy != Strategy::portable);
      CHECK(best_kernel(*L, Isa::scalar).variant.name() == "reference/scalar");
      for (const KernelVariant& k : kernels_under_ceiling(*L)) CHECK(k.strategy != Strategy::portable);  // no sweep arm
    }
  }

  TEST_CASE("the memory ceiling streams a touched buffer whose sum matches its closed form") {
    ThreadPool pool(2);
    const MemoryCeiling m(3 * 4096 + 100);  // rounded down to whole 4 KiB pages
    CHECK(m.bytes() == 3 * 4096);
    const std::uint64_t words = 3 * 4096 / 8;
    CHECK(m.expected_sum() == words * (words - 1) / 2);
    CHECK(m.sum(pool) == m.expected_sum());
    const MemoryCeiling touched_by_pool(8 * 4096, &pool);
    CHECK(touched_by_pool.sum(pool) == touched_by_pool.expected_sum());
    CHECK(touched_by_pool.measure(pool) > 0);
    // The ceiling is the best of every read loop this CPU runs, and says which one set it.
    const std::vector<std::string> loops = MemoryCeiling::loops();
    REQUIRE(!loops.empty());
    if (isa_supported(Isa::avx512vnni))
      CHECK(std::count_if(loops.begin(), loops.end(), [](const std::string& l) { return l.starts_with("avx512"); }) >= 2);
#if defined(__x86_64__)
    // One core's bandwidth depends on how many line fills it keeps in flight: one, two and four
    // streams, each with and without a software prefetch, at every vector width the CPU has.
    std::vector<std::string> widths;
    if (isa_supported(Isa::avx2)) widths.emplace_back("avx2 ymm");
    if (isa_supported(Isa::avx512vnni)) widths.emplace_back("avx512 zmm");
    for (const std::string& width : widths) {
      for (const char* streams : {"1 stream", "2 streams", "4 streams"})
        for (const char* prefetch : {"", ", prefetch 2 KiB"}) {
          const std::string name = width + ", " + streams + prefetch;
          CAPTURE(name);
          CHECK(std::find(loops.begin(), loops.end(), name) != loops.end());
        }
    }
#endif
    const ReadCeiling best = touched_by_pool.measure_best(pool);
    CHECK(best.gbs > 0);
    CHECK(std::find(loops.begin(), loops.end(), best.loop) != loops.end());
    // Every loop on its own (`ternlab kernels ceilings`): each named, in order, each checked and timed.
    const std::vector<ReadCeiling> each = touched_by_pool.measure_each(pool);
    REQUIRE(each.size() == loops.size());
    for (std::size_t i = 0; i < each.size(); ++i) {
      CHECK(each[i].loop == loops[i]);
      CHECK(each[i].gbs > 0);
    }
    test::check_error([] { MemoryCeiling tiny(100); }, "memory ceiling", "100 bytes", "too small");
    CHECK(read_ceiling_gbs(pool, 64 * 4096) > 0);  // throws if the checked sum were wrong
  }

  TEST_CASE("the int8 compute ceiling is the best of every dot instruction at or below the ceiling") {
    const IsaCeilingReset reset;
    ThreadPool pool(2);
    std::vector<std::string> loops = {"scalar imul"};
#if defined(__x86_64__)
    if (isa_supported(Isa::avx512vnni)) {
      loops = {"vpdpbusd zmm", "vpdpbusd ymm", "vpmaddubsw ymm"};
      if (cpu_features().amx_int8) loops.insert(loops.begin(), "tdpbusd tile");
    } else if (isa_supported(Isa::avx2)) {
      loops = {"vpmaddubsw ymm"};
    }
#elif defined(__aarch64__)
    if (isa_supported(Isa::i8mm)) loops = {"smmla", "sdot"};
    else if (isa_supported(Isa::dotprod)) loops = {"sdot"};
#endif
    const ComputeCeiling c = int8_compute_ceiling(pool, best_isa(), 1 << 16);
    CHECK(std::find(loops.begin(), loops.end(), c.instruction) != loops.end());
    const std::vector<ComputeCeiling> each = int8_compute_each(pool, best_isa(), 1 << 16);
    REQUIRE(each.size() == loops.size());
    for (std::size_t i = 0; i < each.size(); ++i) {
      CHECK(each[i].instruction == loops[i]);  // widest first, as int8_compute_instruction lists them
      CHECK(each[i].gmacs > 0);
    }
    CHECK(int8_compute_instruction() == (loops.size() == 1 ? loops[0] : "best of " + join(loops, ", ")));
    CHECK(c.gmacs > 0);
    set_isa_ceiling(Isa::scalar);
    CHECK(int8_compute_instruction() == "scalar imul");
    CHECK(int8_compute_ceiling(pool, best_isa(), 1 << 12).instruction == "scalar imul");
  }

  TEST_CASE("an empty job's trip through the pool: nothing handed over on one thread, a positive time on two") {
    ThreadPool one(1), two(2);
    CHECK(pool_handoff_seconds(one) == 0.0);
    const double s = pool_handoff_seconds(two, 50, 3);
    CHECK(s > 0.0);
    CHECK(std::isfinite(s));
    test::check_error([&] { pool_handoff_seconds(two, 0, 3); }, "pool_handoff_seconds", "0 jobs in 3 batches", "positive");
    test::check_error([&] { pool_handoff_seconds(two, 5, -1); }, "5 jobs in -1 batches");
  }
}
