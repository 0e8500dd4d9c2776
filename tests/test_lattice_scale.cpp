// The lattice-scale kind: the fp16 control kernels against f64, one small run end to end (every arm
// verified, the byte accounting of spec §5.8 recomputed here from the shape, results and the
// layout-scale plot written), and bad input named by file, line and key before anything runs.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "common/files.hpp"
#include "common/fp16.hpp"
#include "common/strings.hpp"
#include "experiments/config.hpp"
#include "experiments/measure.hpp"
#include "experiments/report.hpp"
#include "experiments/runner.hpp"
#include "kernels/dense/f16_matvec.hpp"
#include "tests/support.hpp"

using namespace ternlab;
using namespace ternlab::experiments;
using test::check_error;
namespace fs = std::filesystem;

namespace {
constexpr char kScratchName[] = "ternlab-lattice-scale";
const fs::path& scratch() { return test::scratch_folder<kScratchName>(); }

// 64 x 256: 10 blocks of 24 and a 16-column tail per row, a multiple of 128 for the ternary arm.
std::string head() {
  return cat("kind = \"lattice-scale\"\nseed = 5\noutput = \"", (scratch() / "results").string(),
             "\"\nrounds = 1\nwarmup = 0\nceiling_mib = 1\nsample_ms = 0.01\n[shape]\nrows = 64\ncols = 256\n");
}
std::string arms() {
  return "[[arm]]\nname = \"fp16\"\nlayout = \"f16\"\n[[arm]]\nlayout = [\"slot32\", \"planes14\", \"planes12x\", \"golay70\"]\n"
         "[[arm]]\nlayout = \"t2p\"\n";
}
const Json* entry(const Json& list, const std::string& name) {
  for (const Json& a : list)
    if (a["name"] == name) return &a;
  return nullptr;
}
}  // namespace

TEST_SUITE("lattice-scale") {
  TEST_CASE("every fp16 kernel variant matches f64 within 1e-5 of sum|w x| on every row, and a row range writes only its rows") {
    std::mt19937_64 rng(3);
    std::uniform_real_distribution<float> uni(-2.0f, 2.0f);
    for (const auto& [rows, cols] : {std::pair<std::int64_t, std::int64_t>{5, 77}, {7, 300}, {3, 1}, {4, 64}}) {
      F16Matrix m;
      m.name = "w", m.rows = rows, m.cols = cols;
      for (std::int64_t i = 0; i < rows * cols; ++i) m.w.push_back(float_to_fp16(uni(rng)));
      std::vector<float> x(static_cast<std::size_t>(cols));
      for (float& v : x) v = uni(rng);
      for (const F16KernelVariant& k : f16_kernels()) {
        CAPTURE(k.name);
        CAPTURE(cols);
        std::vector<float> y(static_cast<std::size_t>(rows), -7.0f);
        f16_matvec(m, x, y, k, 1, rows);
        CHECK(y[0] == -7.0f);
        f16_matvec(m, x, y, k);
        for (std::int64_t r = 0; r < rows; ++r) {
          double ref = 0, mag = 0;
          for (std::int64_t c = 0; c < cols; ++c) {
            const double t = double(fp16_to_float(m.w[std::size_t(r * cols + c)])) * double(x[std::size_t(c)]);
            ref += t, mag += std::fabs(t);
          }
          CHECK(std::fabs(double(y[std::size_t(r)]) - ref) <= 1e-5 * mag);
        }
      }
    }
    CHECK(f16_kernels().front().name == "scalar");
    F16Matrix m;
    m.name = "w", m.rows = 2, m.cols = 3, m.w.assign(6, 0);
    std::vector<float> x(2), y(2);
    check_error([&] { f16_matvec(m, x, y, best_f16_kernel()); }, "tensor 'w'", "x has 2 values for 3 columns");
  }

  TEST_CASE("a small run: every arm verified, bits per weight from the declarations, results and the layout-scale plot") {
    const fs::path p = scratch() / "scale.toml";
    std::ofstream(p) << head() << arms();
    std::ostringstream out;
    const RunOutcome o = run_experiment_file(p.string(), RunOptions{{}, false, 0}, out);
    INFO(out.str());
    REQUIRE(o.exit_code == 0);
    for (const char* f : {"summary.md", "summary.json", "rounds.csv", "layout-scale.svg", "index.html"})
      CHECK(fs::is_regular_file(fs::path(o.folder) / f));
    const Json run = Json::parse(read_text(fs::path(o.folder) / "summary.json"))["runs"][0];
    CHECK(run["baseline"] == "fp16");
    for (const Json& a : run["arms"]) {
      CAPTURE(a["name"]);
      CHECK(a["verified"] == true);
    }
    const Json& scale = run["layout_scale"];
    // Spec §5.8 by hand: 640 blocks, 1024 tail weights, 64 rows, 16384 weights; Planes14 streams
    // 14 bytes a block and has no side channel; the file holds 48 bits a block, the f32 tail, f64
    // row scales and two f64 centroids.
    const double w = 16384;
    const Json* p14 = entry(scale, "planes14 layout=planes14");
    if (p14 == nullptr) p14 = entry(scale, "planes14");
    REQUIRE(p14 != nullptr);
    CHECK((*p14)["family"] == "lattice records");
    CHECK(number_of((*p14)["bits_per_weight_memory"]) == doctest::Approx((112.0 * 640 + 32.0 * 1024 + 32.0 * 64) / w).epsilon(1e-12));
    CHECK(number_of((*p14)["bits_per_weight_disk"]) == doctest::Approx((48.0 * 640 + 32.0 * 1024 + 64.0 * 64 + 128) / w).epsilon(1e-12));
    CHECK(stat_from((*p14)["speedup_vs_fp16"]).valid);
    CHECK((*p14)["speedup_vs_ternary"].contains("t2p"));
    const Json* fp16 = entry(scale, "fp16");
    REQUIRE(fp16 != nullptr);
    CHECK(number_of((*fp16)["bits_per_weight_memory"]) == 16.0);
    CHECK(stat_from((*fp16)["speedup_vs_fp16"]).median == 1.0);
    const Json* t2p = entry(scale, "t2p");
    REQUIRE(t2p != nullptr);
    CHECK((*t2p)["family"] == "ternary layouts");
    CHECK(number_of((*t2p)["bits_per_weight_memory"]) == 2.125);
    const Json* control = entry(scale, "no-weights control");
    REQUIRE(control != nullptr);
    CHECK(number_of((*control)["bits_per_weight_memory"]) == doctest::Approx(32.0 * 64 * 17 / w).epsilon(1e-12));
    // Every record layout is there, and the plot names every arm and each family.
    int records = 0;
    for (const Json& a : scale) records += a["family"] == "lattice records" ? 1 : 0;
    CHECK(records == 4);
    const std::string svg = read_text(fs::path(o.folder) / "layout-scale.svg");
    for (const char* s : {"lattice records", "ternary layouts", "fp16", "t2p", "golay70", "slot32", "planes12x"}) {
      CAPTURE(s);
      CHECK(svg.find(s) != std::string::npos);
    }
    CHECK(o.markdown.find("Layout scale") != std::string::npos);
  }

  TEST_CASE("without ternary arms any width of whole blocks plus a tail runs, the tail declared or cols mod 24") {
    for (const char* set : {"shape.cols=77", "shape.tail=0"}) {
      CAPTURE(set);
      const fs::path p = scratch() / "records-only.toml";
      std::ofstream(p) << head() << "[[arm]]\nname = \"fp16\"\nlayout = \"f16\"\n[[arm]]\nlayout = \"golay70\"\n";
      std::ostringstream out;
      const std::vector<std::string> sets = std::string(set) == "shape.tail=0" ? std::vector<std::string>{"shape.cols=240", set}
                                                                                : std::vector<std::string>{set};
      const RunOutcome o = run_experiment_file(p.string(), RunOptions{sets, false, 0}, out);
      INFO(out.str());
      CHECK(o.exit_code == 0);
      const Json run = Json::parse(read_text(fs::path(o.folder) / "summary.json"))["runs"][0];
      CHECK(run["shape"]["tail"] == (std::string(set) == "shape.tail=0" ? 0 : 77 % 24));
    }
  }

  TEST_CASE("bad input names the file, line and key before anything runs") {
    const auto plan = [](const std::string& text, std::vector<std::string> sets = {}) { load_plan_text(text, "scale.toml", sets); };
    plan(head() + arms());
    check_error([&] { plan(head() + arms() + "[[arm]]\nlayout = \"planes13\"\n"); }, "scale.toml:19:", "layout",
                "unknown layout 'planes13'", "slot32, planes14, planes12x, golay70");
    check_error([&] { plan(head() + arms(), {"shape.tail=5"}); }, "--set shape.tail=5: key 'shape.tail'",
                "not a whole number of 24-weight blocks plus the declared tail of 5");
    check_error([&] { plan(head() + arms(), {"shape.cols=250", "shape.tail=4"}); }, "key 'shape.tail'", "a width of 250",
                "not a whole number of 24-weight blocks");
    check_error([&] { plan(head() + arms(), {"shape.cols=264"}); }, "key 'shape.cols'", "264 is not a multiple of 128", "'t2p'");
    check_error([&] { plan(head() + "[[arm]]\nlayout = \"planes14\"\n"); }, "scale.toml", "needs an fp16 control arm");
    check_error([&] { plan(head() + arms(), {"arm.0.kernel=avx9"}); }, "--set arm.0.kernel=avx9", "'avx9' is not a kernel");
  }
}
