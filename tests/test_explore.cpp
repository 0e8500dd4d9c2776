// Layout search (explore/): reading a space (every error with file:line:key), enumeration with every
// refused combination kept and its rule, the candidates' headers, and one small space planned,
// compiled, verified and measured end to end without writing outside its folder.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "common/files.hpp"
#include "experiments/results.hpp"
#include "explore/explore.hpp"
#include "explore/space.hpp"
#include "layouts/registry.hpp"
#include "tests/support.hpp"

namespace fs = std::filesystem;
using namespace ternlab;

namespace {

constexpr char kScratchName[] = "ternlab-explore";


const char* kRows = R"(name = "rows"
family = "row_interleaved"
prefix = "t-ri"
[axes]
rows = [8, 16, 64]
lane_bytes = [3, 4]
[[constraint]]
rule = "rows != 8 || lane_bytes == 3"
why = "only to remove something"
)";

}  // namespace

TEST_SUITE("explore") {
  TEST_CASE("a space's mistakes are refused with the file, line and key") {
    test::check_error([] { explore::load_space_text("name = \"x\"\nfamily = \"row_interleaved\"\n[axes]\nrowz = [4]\n", "s.toml"); },
                      "s.toml:4: key 'axes.rowz'", "unknown axis 'rowz'", "rows, lane_bytes");
    test::check_error([] { explore::load_space_text("name = \"x\"\nfamily = \"row_pairs\"\n[axes]\nscales = [\"middle\"]\n", "s.toml"); },
                      "s.toml:4: key 'axes.scales[0]'", "'middle' is not one of them");
    test::check_error(
        [] {
          explore::load_space_text("name = \"x\"\nfamily = \"row_interleaved\"\n[axes]\nrows = [4]\n[[constraint]]\nrule = \"2 > 1\"\n",
                                   "s.toml");
        },
        "s.toml:6: key 'constraint[0].rule'", "names no axis");
    test::check_error(
        [] {
          explore::load_space_text("name = \"x\"\nfamily = \"row_interleaved\"\n[axes]\nrows = [4]\n[[constraint]]\nrule = \"rowz > 1\"\n",
                                   "s.toml");
        },
        "s.toml:6", "names 'rowz', which is no axis");
    test::check_error([] { explore::load_space_text("name = \"x\"\nfamily = \"nope\"\n", "s.toml"); }, "s.toml:2: key 'family'",
                      "unknown layout family 'nope'", "row_interleaved");
    test::check_error([] { explore::load_space_text("name = \"x\"\nfamily = \"row_pairs\"\ncompare = [\"t2q\"]\n", "s.toml"); },
                      "s.toml:3: key 'compare[0]'", "t2q");
    test::check_error([] { explore::load_space_text("name = \"x\"\nfamily = \"row_pairs\"\n[measure]\nkeep = 1.5\n", "s.toml"); },
                      "s.toml:4: key 'measure.keep'", "fraction");
  }

  TEST_CASE("every combination is a candidate or is refused with the rule that removed it") {
    const explore::SpacePlan plan = explore::enumerate(explore::load_space_text(kRows, "rows.toml"));
    // rows 8, 16, 64 x lane_bytes 3, 4: the constraint removes (8, 4); lane_bytes 3 is the family's
    // limit; rows 64 breaks the DSL's cell limit at lane_bytes 4.
    CHECK(plan.candidates.size() == 1);
    REQUIRE(plan.refused.size() == 5);
    int by_constraint = 0, by_family = 0, by_dsl = 0;
    for (const explore::Refusal& r : plan.refused) {
      if (r.by == "constraint") {
        ++by_constraint;
        CHECK(r.reason.find("rows.toml:8") != std::string::npos);
      } else if (r.by == "family") {
        ++by_family;
        CHECK(r.reason.find("lane_bytes must divide 32") != std::string::npos);
      } else {
        ++by_dsl;
        CHECK(r.by == "dsl");
        CHECK(r.reason.find("rows * k must be <= 4096") != std::string::npos);
      }
    }
    CHECK(by_constraint == 1);
    CHECK(by_family == 3);
    CHECK(by_dsl == 1);
    // The one candidate is t2r's own declaration, and says so.
    const explore::Candidate& c = *plan.candidates.front();
    CHECK(c.name == "t-ri-r16-lb4");
    CHECK(c.same_as == "t2r");
    CHECK(c.facts.block_bytes == find_layout("t2r").block_bytes());
    const std::string h = explore::header_text(c, "rows.toml");
    CHECK(h.find("TERNLAB_REGISTER_LAYOUT(Explore_t_ri_r16_lb4)") != std::string::npos);
    CHECK(h.find("bytes(\"strip\", 8, 64)") != std::string::npos);
  }

  TEST_CASE("a space with no candidate says which rule removed each combination") {
    const fs::path dir = test::scratch_folder<kScratchName>() / "none";
    std::ofstream(test::scratch_folder<kScratchName>() / "none.toml")
        << "name = \"none\"\nfamily = \"row_interleaved\"\nprefix = \"t-none\"\n[axes]\nrows = [64, 128]\n";
    test::check_error(
        [&] {
          std::ostringstream out;
          explore::plan_command(test::scratch_folder<kScratchName>() / "none.toml", dir, {.configure = false}, out);
        },
        "no candidate", "rows * k must be <= 4096", ": 2");
    CHECK_FALSE(fs::exists(dir));
  }

  TEST_CASE("a space of six candidates is planned, compiled, verified and measured inside its folder") {
    const fs::path root = test::scratch_folder<kScratchName>() / "e2e";
    fs::create_directories(root);
    const fs::path space = root / "space.toml", dir = root / "out";
    std::ofstream(space) << R"(name = "six"
family = "row_pairs"
prefix = "t-six"
compare = ["t2p"]
[axes]
scales = ["before", "after", "between"]
scale_format = ["fp16", "bf16"]
[measure]
gemv = "256x1024"
gemm = "256x1024"
gemm_tokens = [4]
weights = "warm"
first_sample_ms = 2
sample_ms = 2
first_rounds = 2
rounds = 2
leaders = 2
ceiling_mib = 16
decode = "none"
batch = 3
)";
    std::ostringstream plan_out;
    explore::plan_command(space, dir, {.configure = false}, plan_out);
    CHECK(plan_out.str().find("6 candidates, 0 combinations refused") != std::string::npos);
    CHECK(plan_out.str().find("estimate: about") != std::string::npos);
    for (const char* f : {"plan.json", "plan.md", "space.toml", "layouts/t-six-between-bf16.hpp"}) CHECK(fs::exists(dir / f));

    std::ostringstream run_out;
    const int rc = explore::run_command(dir, {.compile_check = true, .progress = 0}, run_out);
    INFO(run_out.str());
    CHECK(rc == 0);
    const auto j = experiments::Json::parse(read_text(dir / "explore.json"));
    REQUIRE(j.at("candidates").size() == 6);
    int leaders = 0;
    for (const auto& c : j.at("candidates")) {
      CHECK(c.at("fate").get<std::string>().find("failed") == std::string::npos);
      leaders += c.at("fate") == "leader";
      // Compiled alone where the source tree is at hand (the test runs from its build).
      if (fs::exists(fs::path(TERNLAB_SOURCE_DIR) / "layouts" / "dsl.hpp")) CHECK(c.contains("compile_seconds"));
      CHECK(c.contains("round-1-gemv"));
    }
    CHECK(leaders == 2);
    REQUIRE(j.at("rounds").size() == 3);
    // Round 1 in two experiments of three candidates (batch = 3), t2p in both.
    CHECK(j.at("rounds")[0].at("folders").size() == 2);
    CHECK(j.at("rounds")[0].at("runs")[0].at("ceilings").size() == 2);
    CHECK(j.at("rounds")[2].at("kind") == "gemm");
    for (const auto& r : j.at("rounds"))
      for (const auto& run : r.at("runs")) {
        CHECK(run.at("ceiling").get<double>() > 0);
        CHECK(run.at("arms").contains("t2p"));  // the hand-designed layout in every round
      }
    const std::string html = read_text(dir / "index.html");
    CHECK(html.find("<svg") != std::string::npos);
    CHECK(html.find("hand-designed") != std::string::npos);
    // On a cluster: the Slurm job runs the plan into DIR/machines/<job>-<host>; a second machine's
    // run (here a second run of this one) goes beside the first, and the report puts them side by
    // side. A run's folder outside the plan's is refused.
    std::ostringstream slurm_out;
    explore::slurm_command(dir, {.partition = "cpu"}, slurm_out);
    const std::string sbatch = read_text(dir / "explore.sbatch");
    CHECK(sbatch.find("#SBATCH --partition=cpu") != std::string::npos);
    CHECK(sbatch.find("#SBATCH --exclusive") != std::string::npos);
    CHECK(sbatch.find(" explore run '" + fs::weakly_canonical(dir).string() + "' --out ") != std::string::npos);
    test::check_error([&] { std::ostringstream o; explore::run_command(dir, {.out = (root / "elsewhere").string()}, o); },
                      "is not inside the plan's folder");
    std::ostringstream second;
    CHECK(explore::run_command(dir, {.compile_check = false, .progress = 0, .out = (dir / "machines" / "node-b").string()}, second) == 0);
    std::ostringstream report_out;
    CHECK(explore::report_command(dir, report_out) == 2);
    CHECK(report_out.str().find("| machines/node-b | round-3-gemm, 1 thread, 4 tokens |") != std::string::npos);
    CHECK(read_text(dir / "machines.html").find("node-b/index.html") != std::string::npos);
    // Nothing written beside the folder: the root holds the space and the folder only.
    int entries = 0;
    for (const auto& e : fs::directory_iterator(root)) {
      ++entries;
      CHECK((e.path() == space || e.path() == dir));
    }
    CHECK(entries == 2);
    // A second run into the same folder is refused rather than mixed with the first.
    test::check_error([&] { std::ostringstream o; explore::run_command(dir, {}, o); }, "this plan was run");
  }
}
