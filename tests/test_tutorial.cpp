// docs/new-layout.md followed step by step on its test-only layout: the declaration the tutorial
// shows is the one in tests/layouts/, and every `build/ternlab` command it shows is carried out
// through the calls the CLI makes, on small sizes, with the outcome the tutorial promises checked.
// A command this test does not know how to follow fails it, so the tutorial cannot gain an
// unchecked step.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "common/strings.hpp"
#include "common/files.hpp"
#include "experiments/bench.hpp"
#include "experiments/config.hpp"
#include "experiments/runner.hpp"
#include "kernels/catalog.hpp"
#include "kernels/dispatch.hpp"
#include "layouts/byte_map.hpp"
#include "model/experiments.hpp"
#include "model/model.hpp"
#include "model/synth.hpp"
#include "model/tokenizer.hpp"
#include "tests/support.hpp"

using namespace ternlab;
namespace fs = std::filesystem;

namespace {

// The value after `flag` in a command's words, or `fallback`.
std::string flag_value(const std::vector<std::string>& w, const std::string& flag, const std::string& fallback = "") {
  for (std::size_t i = 0; i + 1 < w.size(); ++i)
    if (w[i] == flag) return w[i + 1];
  return fallback;
}

std::vector<std::string> comma_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string x; std::getline(in, x, ',');) out.push_back(x);
  return out;
}

struct Tutorial {
  fs::path dir = fs::temp_directory_path() / cat("ternlab-tutorial-", getpid());
  std::string text;
  std::map<std::string, std::string> files;  // a path the tutorial writes -> where this test wrote it
  int followed = 0;

  Tutorial() { fs::create_directories(dir); }
  ~Tutorial() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string file(const std::string& as_written) {
    auto [it, added] = files.try_emplace(as_written, (dir / fs::path(as_written).filename()).string());
    return it->second;
  }

  // `ternlab run CONFIG --set ...`, with small sizes appended (later --set wins) by the config's kind.
  experiments::RunOutcome run(const std::string& config, std::vector<std::string> overrides) {
    const std::string kind = experiments::load_plan(config, overrides).runs.front().kind;
    overrides.push_back("output=" + (dir / "results").string());
    if (kind == "oracle") overrides.insert(overrides.end(), {"cases.tokens=[1,5]", "cases.cols=[256,512]"});
    if (kind != "oracle") overrides.insert(overrides.end(), {"rounds=1", "warmup=0", "ceiling_mib=1", "sample_ms=0.01"});
    if (kind == "speed") overrides.insert(overrides.end(), {"preset=tiny", "verify_tokens=2", "prefill_tokens=8", "decode_tokens=4"});
    if (kind == "gemv" || kind == "gemm") overrides.insert(overrides.end(), {"shape.rows=64", "shape.cols=256"});
    std::ostringstream log;
    experiments::RunOptions opt;
    opt.overrides = overrides;
    opt.progress = 0;
    const experiments::RunOutcome o = experiments::run_experiment_file(config, opt, log);
    CHECK_MESSAGE(o.exit_code == 0, log.str());
    return o;
  }

  void follow(const std::vector<std::string>& w) {
    REQUIRE(w.size() >= 2);
    const std::string& cmd = w[1];
    if (cmd == "layouts") {
      // The listing holds the tutorial's layout at the rate the tutorial states.
      bool listed = false;
      for (const LayoutInfo* L : all_layouts()) listed |= L->name == std::string("t2p8");
      CHECK(listed);
      CHECK(find_layout("t2p8").bits_per_weight() == 2.125);
      CHECK(text.find("(2.125)") != std::string::npos);
    } else if (cmd == "layout" && w.size() >= 4 && w[2] == "show") {
      const LayoutInfo& L = find_layout(w[3]);
      // The formulas the tutorial quotes are the ones `layout show` prints.
      int quoted = 0;
      for (const std::string& f : L.formulas()) {
        const std::size_t at = f.find("; byte = "), slot = f.find(", slot = ");
        if (at == std::string::npos || slot == std::string::npos) continue;  // the scales' line
        ++quoted;
        CHECK_MESSAGE(text.find("`" + f.substr(at + 2, slot - at - 2) + "`") != std::string::npos, "formula not in the tutorial: ", f);
        CHECK_MESSAGE(text.find("`" + f.substr(slot + 2) + "`") != std::string::npos, "formula not in the tutorial: ", f);
      }
      CHECK(quoted == 1);
      if (const std::string svg = flag_value(w, "--svg"); !svg.empty()) {
        const std::string drawn = byte_map_svg(L);
        std::ofstream(file(svg)) << drawn;
        CHECK(drawn.rfind("<?xml", 0) == 0);
        CHECK(drawn.find("</svg>") != std::string::npos);
      }
    } else if (cmd == "kernels") {
      REQUIRE(std::find(w.begin(), w.end(), "--explain") != w.end());
      for (const std::string& name : comma_list(flag_value(w, "--layouts"))) {
        CAPTURE(name);
        const LayoutInfo& L = find_layout(name);
        const std::vector<KernelVariant> ks = kernels_for(L);
        const KernelChoice c = best_kernel(L);
        // The tutorial promises slot-mask variants and the scalar reference, and a reason for the choice.
        CHECK(std::any_of(ks.begin(), ks.end(), [](const KernelVariant& k) { return k.name().starts_with("slot-mask"); }));
        CHECK(std::any_of(ks.begin(), ks.end(), [](const KernelVariant& k) { return k.name().starts_with("reference"); }));
        CHECK(std::any_of(ks.begin(), ks.end(), [&](const KernelVariant& k) { return k.name() == c.variant.name(); }));
        CHECK_FALSE(c.notes.empty());
      }
    } else if (cmd == "run") {
      REQUIRE(w.size() >= 3);
      std::vector<std::string> overrides;
      for (std::size_t i = 3; i + 1 < w.size(); ++i)
        if (w[i] == "--set") overrides.push_back(w[++i]);
      const experiments::RunOutcome o = run(w[2], overrides);
      if (experiments::load_plan(w[2], overrides).runs.front().kind == "oracle") {
        // Every case exact or rejected as expected, and the row counts that are not whole blocks rejected.
        const auto summary = experiments::Json::parse(read_text(fs::path(o.folder) / "summary.json"));
        for (const auto& arm : summary["runs"][0]["arms"]) {
          CAPTURE(arm.dump());
          CHECK(arm["mismatches"].get<int>() == 0);
          CHECK(arm["rejected_as_expected"].get<int>() > 0);
          CHECK(arm["exact"].get<int>() + arm["rejected_as_expected"].get<int>() == arm["cases"].get<int>());
        }
      }
    } else if (cmd == "bench") {
      experiments::BenchSpec spec;
      spec.layouts = comma_list(flag_value(w, "--layouts"));
      spec.only = flag_value(w, "--only", "all");
      spec.threads = {std::stoi(flag_value(w, "--threads", "1"))};
      spec.gemv_shape = "64x512";  // the tutorial's 4096x4096 shrunk: the same arms, verified, in milliseconds
      spec.rounds = 1;
      spec.min_seconds = 0.001;
      spec.ceiling_mib = 1;
      spec.output = (dir / "results").string();
      CHECK(std::stoi(flag_value(w, "--rounds", "3")) >= 1);
      for (const experiments::BenchConfig& c : experiments::bench_configs(spec)) {
        const std::string toml = (dir / cat("bench-", c.kind, ".toml")).string();
        std::ofstream(toml) << c.toml;
        // Every layout the tutorial sweeps is among the arms.
        for (const std::string& name : spec.layouts) CHECK_MESSAGE(c.toml.find("layout = '" + name + "'") != std::string::npos, name);
        std::ostringstream log;
        experiments::RunOptions opt;
        opt.progress = 0;
        const experiments::RunOutcome o = experiments::run_experiment_file(toml, opt, log);
        CHECK_MESSAGE(o.exit_code == 0, log.str());
      }
    } else if (cmd == "model" && w.size() >= 3 && w[2] == "synth") {
      model::write_synthetic(model::find_preset(flag_value(w, "--preset")), file(flag_value(w, "-o")));
    } else if (cmd == "model" && w.size() >= 4 && w[2] == "generate") {
      REQUIRE(files.count(w[3]));  // written by an earlier step
      const std::string path = files.at(w[3]);
      const int n = std::min(4, std::stoi(flag_value(w, "-n", "16")));
      model::LoadOptions o;
      o.layout = flag_value(w, "--layout");
      auto m = model::Model::load(path, o);
      CHECK(std::string(m->layout().name) == o.layout);
      const auto prompt = model::Tokenizer::from_gguf(m->file()).encode(flag_value(w, "-p"));
      REQUIRE_FALSE(prompt.empty());
      // Repacked into the new layout, the model says what it says in its stored format.
      auto stored = model::Model::load(path, model::LoadOptions{});
      CHECK(model::greedy(*m, prompt, n) == model::greedy(*stored, prompt, n));
    } else {
      FAIL("the tutorial shows a command this test does not follow: ", join(w, " "));
    }
    ++followed;
  }
};

}  // namespace

TEST_SUITE("tutorial") {
  TEST_CASE("docs/new-layout.md: the declaration shown is the test layout's, and every step runs") {
    Tutorial t;
    t.text = read_text(fs::path(TERNLAB_SOURCE_DIR) / "docs" / "new-layout.md");
    REQUIRE_FALSE(t.text.empty());

    // Step 1: the declaration in the ```cpp block is, verbatim, the file the tutorial copies.
    const std::size_t open = t.text.find("```cpp\n"), close = t.text.find("```\n", open + 7);
    REQUIRE(open != std::string::npos);
    REQUIRE(close != std::string::npos);
    const std::string declared = t.text.substr(open + 7, close - open - 7);
    const fs::path header = fs::path(TERNLAB_SOURCE_DIR) / "tests" / "layouts" / "t2p8.hpp";
    CHECK(t.text.find("cp tests/layouts/t2p8.hpp") != std::string::npos);
    CHECK_MESSAGE(read_text(header).find(declared) != std::string::npos, "the tutorial's declaration differs from ", header.string());

    // Steps 2 to 5, in order, as written.
    struct InSourceTree {  // the commands' paths are relative to the source tree
      fs::path was = fs::current_path();
      InSourceTree() { fs::current_path(TERNLAB_SOURCE_DIR); }
      ~InSourceTree() { fs::current_path(was); }
    } here;
    std::istringstream lines(t.text);
    for (std::string line; std::getline(lines, line);) {
      const std::size_t at = line.find_first_not_of(' ');
      if (at == std::string::npos || line.compare(at, 14, "build/ternlab ") != 0) continue;
      INFO(line);
      try {
        t.follow(test::shell_words(line.substr(at)));
      } catch (const Error& e) {
        FAIL_CHECK("the step failed: ", std::string(e.what()));
      }
    }
    CHECK(t.followed >= 9);
  }
}
