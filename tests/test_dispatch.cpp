// Dispatch by CPU features. Under qemu each aarch64 test runs with TERNLAB_EXPECT_CPU naming the
// emulated model (tests/CMakeLists.txt), so the expected ladder comes from the model, not from the
// detection under test: max has dotprod + i8mm, cortex-a76 dotprod only, cortex-a72 neither (it
// must fall back to plain NEON, never crash). On x86 the ladder is checked against cpuid instead.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>
#include <string>

#include "kernels/catalog.hpp"
#include "kernels/cpu.hpp"
#include "kernels/oracle.hpp"
#include "kernels/testdata.hpp"
#include "tests/support.hpp"

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
    CHECK(isa_supported(Isa::avx2) == (f.avx2 && f.fma && f.f16c));
    CHECK(isa_supported(Isa::avx512vnni) ==
          (isa_supported(Isa::avx2) && f.avx512f && f.avx512bw && f.avx512vl && f.avx512vnni));
    if (!isa_supported(Isa::avx512vnni)) MESSAGE("no AVX-512 VNNI on this CPU: that rung is not exercised here");
#endif
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
#endif
  }

  TEST_CASE("kernels_for lists exactly the paths this CPU can run") {
    for (const LayoutInfo* L : all_layouts()) {
      CAPTURE(L->name);
      const std::vector<KernelVariant> ks = kernels_for(*L);
      REQUIRE(!ks.empty());
      CHECK(ks.front().name() == "reference/scalar");
      for (const KernelVariant& k : ks) {
        CAPTURE(k.name());
        CHECK(isa_supported(parse_isa(k.isa)));
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
      std::set<std::string> want{"reference/scalar"};
      const auto add = [&](const std::string& strategy, bool with_i8mm) {
        want.insert(strategy + "/neon");
        if (dotprod) want.insert(strategy + "/dotprod");
        if (i8mm && with_i8mm) want.insert(strategy + "/i8mm");
      };
      if (L->facts.natural_two_bit) add("unpack", false);
      if (L->facts.digit_planar) add("base3", false);
      if (L->facts.slot_vectorizable) add("slot-mask", L->facts.pairs_rows);
      CHECK(variant_names(*L) == want);
    }
    // The stock layouts and the test-only one, named, so a silently lost property fails here too.
    CHECK(variant_names(find_layout("pq2_0")).count("unpack/neon") == 1);
    CHECK(variant_names(find_layout("ptq1_0")).count("base3/neon") == 1);
    CHECK(variant_names(find_layout("t2x4")).count("slot-mask/neon") == 1);
    CHECK(variant_names(find_layout("t2p8")).count("slot-mask/i8mm") == (i8mm ? 1u : 0u));
    CHECK(variant_names(find_layout("t2p")).count("slot-mask/dotprod") == (dotprod ? 1u : 0u));
#endif
  }

  TEST_CASE("every listed path, the dotprod-only gemm included, equals the integer oracle") {
    // A compact exact check on this model (the oracle suite sweeps shapes): 5 tokens = one full x4
    // tile plus a padded one; rows 8 and K = 768 (three q8_K blocks, the last half-used by 128-blocks).
    const std::int64_t rows = 8, cols = 768, tokens = 5;
    const TernaryMatrix w = make_weights(rows, cols, 7);
    const UnitActivations a = make_unit_activations(tokens, cols, 8);
    const Q8KBatch x = quantize_batch(a.f.data(), tokens, cols);
    const std::vector<std::int64_t> want = oracle_int(w, a.i8, tokens);
    int paths = 0;
    for (const LayoutInfo* L : all_layouts()) {
      const PackedMatrix p = pack(w, *L);
      for (const KernelVariant& k : kernels_for(*L)) {
        CAPTURE(L->name);
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
    }
    MESSAGE("paths checked on this CPU: ", paths);
    CHECK(paths >= int(all_layouts().size()));
  }
}
