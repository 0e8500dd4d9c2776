// The planner: measured choices are among the candidates, exact, recorded and read back from the
// wisdom file; estimate mode is dispatch's ladder; a bad wisdom file or mode names what is wrong.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/strings.hpp"
#include "kernels/planner.hpp"
#include "kernels/testdata.hpp"
#include "tests/support.hpp"

using namespace ternlab;
namespace fs = std::filesystem;

namespace {
fs::path scratch_file(const char* tag) {
  static int n = 0;
  return fs::temp_directory_path() / cat("ternlab-", tag, "-", getpid(), "-", n++, ".toml");
}
}  // namespace

TEST_SUITE("planner") {
  TEST_CASE("measure: the choice is the fastest candidate, recorded in wisdom and read back") {
    const fs::path file = scratch_file("wisdom");
    ThreadPool pool(2);
    for (const LayoutInfo* L : all_layouts()) {
      CAPTURE(L->name);
      const std::int64_t rows = test::whole_rows(*L, 64);
      const PackedMatrix w = pack(make_weights(rows, 512, 3), *L);
      for (std::int64_t tokens : {1, 5}) {
        Wisdom wisdom(file);
        const KernelChoice c = plan_kernel(w, tokens, pool, PlanMode::measure, &wisdom, 1);
        const std::vector<KernelVariant> all = kernels_for(*L);
        CHECK(std::any_of(all.begin(), all.end(), [&](const KernelVariant& k) { return k.name() == c.variant.name(); }));
        if (all.size() > 1) {  // a SIMD kernel exists: the reference is never a candidate then
          CHECK(c.variant.strategy != Strategy::reference);
          CHECK(std::count_if(c.notes.begin(), c.notes.end(),
                              [](const std::string& n) { return n.find(": measured ") != std::string::npos; }) ==
                std::count_if(all.begin(), all.end(), [](const KernelVariant& k) {
                  return k.strategy != Strategy::reference && !named_only(k.strategy) && isa_at_or_below(k.isa, best_isa());
                }));
          // Saved: a fresh Wisdom reads it, and the next plan takes it without measuring.
          const Wisdom again(file);
          const WisdomEntry* e = again.find(plan_key(*L, rows, 512, tokens, 2));
          REQUIRE(e != nullptr);
          CHECK(e->variant == c.variant.name());
          CHECK(e->rate > 0);
          Wisdom reread(file);
          const KernelChoice d = plan_kernel(w, tokens, pool, PlanMode::measure, &reread, 1);
          CHECK(d.variant.name() == c.variant.name());
          REQUIRE(!d.notes.empty());
          CHECK(d.notes.front().find("from wisdom") != std::string::npos);
        }
      }
    }
    fs::remove(file);
  }

  TEST_CASE("estimate is dispatch's ladder, and runs nothing") {
    ThreadPool pool(1);
    for (const LayoutInfo* L : all_layouts()) {
      const PackedMatrix w = pack(make_weights(test::whole_rows(*L, 16), 256, 3), *L);
      CHECK(plan_kernel(w, 1, pool, PlanMode::estimate, nullptr).variant.name() == best_kernel(*L).variant.name());
    }
  }

  TEST_CASE("a bad plan mode or wisdom file names what is wrong; a missing file is empty wisdom") {
    test::check_error([] { parse_plan_mode("guess"); }, "guess", "estimate", "measure");
    const fs::path file = scratch_file("bad");
    CHECK(Wisdom(file).entries().empty());
    std::ofstream(file) << "[[choice]]\ncpu = 'x'\nlayout = 't2p'\n";
    test::check_error([&] { Wisdom w(file); }, file.string(), "op");
    std::ofstream(file) << "[[choice]\n";
    test::check_error([&] { Wisdom w(file); }, file.string(), ":1");
    fs::remove(file);
  }
}
