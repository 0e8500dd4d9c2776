// The tradeoff kind on the trained model in models/ (tools/train): exact layouts agree and are marked
// as reference points, a lossy scale format loads through the named requantising path and reports
// its perplexity beside its declared bits per weight, an exact arm on other weights fails the run
// loudly, and bad input is named with its file, line and key before anything loads.
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/files.hpp"
#include "common/strings.hpp"
#include "experiments/config.hpp"
#include "experiments/measure.hpp"
#include "experiments/report.hpp"
#include "experiments/runner.hpp"
#include "layouts/registry.hpp"
#include "model/gguf.hpp"
#include "tests/support.hpp"

using namespace ternlab;
using namespace ternlab::experiments;
using test::check_error;
namespace fs = std::filesystem;

namespace {

constexpr char kScratchName[] = "ternlab-tradeoff";
const fs::path& scratch() { return test::scratch_folder<kScratchName>(); }

std::string trained(const std::string& name) { return std::string(TERNLAB_MODELS_DIR) + "/bonsai-kjv-py/" + name; }

// A few tokens of both held-out texts, two decoded tokens timed once: seconds natively.
std::string head() {
  return cat("kind = \"tradeoff\"\nmodel = \"", trained("bonsai-kjv-py.gguf"), "\"\nseed = 7\noutput = \"", (scratch() / "results").string(),
             "\"\nrounds = 1\nwarmup = 0\nceiling_mib = 1\nsample_ms = 0.01\nverify_tokens = 2\ntokens = 48\nchunk = 16\n"
             "decode_tokens = 2\nbaseline = \"pq2_0\"\n");
}
std::string texts() {
  return cat("[texts]\nfiles = [\"", trained("heldout-prose.txt"), "\", \"", trained("heldout-code.txt"), "\"]\n");
}

std::string write_toml(const std::string& name, const std::string& text) {
  const fs::path p = scratch() / name;
  std::ofstream(p) << text;
  return p.string();
}

const Json* arm_named(const Json& run, const std::string& name) {
  for (const Json& a : run["arms"])
    if (a["name"] == name) return &a;
  return nullptr;
}

// The trained model with every scale of one ternary matrix doubled (the fp16 exponent raised by
// one): the same tokenizer and shapes, other weights.
std::string doubled_scales() {
  const std::string path = (scratch() / "doubled-scales.gguf").string();
  std::string bytes = read_text(trained("bonsai-kjv-py.gguf"));
  const gguf::File f = gguf::File::open(trained("bonsai-kjv-py.gguf"), gguf::LoadMode::memory);
  const gguf::TensorInfo* t = nullptr;
  for (const gguf::TensorInfo& x : f.tensors)
    if (gguf::is_ternary(x.tensor_type()) && x.name.starts_with("blk.0.ffn_down")) t = &x;
  REQUIRE(t != nullptr);
  REQUIRE(t->type == 142);
  const std::size_t begin = std::size_t(f.data_offset + t->offset);
  for (std::size_t b = begin; b < begin + t->bytes; b += 34) {  // pq2_0: the fp16 scale first in each 34-byte block
    std::uint16_t h = 0;
    std::memcpy(&h, bytes.data() + b, 2);
    h = std::uint16_t(h + 0x0400);
    std::memcpy(bytes.data() + b, &h, 2);
  }
  write_file_atomically(path, bytes);
  return path;
}

}  // namespace

TEST_SUITE("tradeoff") {
  TEST_CASE("exact layouts agree, a lossy one reports its perplexity and bits per weight; results, CSV and plots written") {
    const std::string path = write_toml("tradeoff.toml", head() + "requantise_scales = true\n" + texts() +
                                                             "[[arm]]\nlayout = [\"pq2_0\", \"t2p\", \"t2p-e4m3\"]\n");
    std::ostringstream out;
    const RunOutcome o = run_experiment_file(path, RunOptions{{}, false, 0}, out);
    INFO(out.str());
    CHECK(o.exit_code == 0);
    for (const char* f : {"summary.md", "summary.json", "tradeoff.csv", "perplexity_bits.svg", "perplexity_tok_s.svg", "index.html"})
      CHECK(fs::is_regular_file(fs::path(o.folder) / f));
    const Json run = Json::parse(read_text(fs::path(o.folder) / "summary.json"))["runs"][0];
    REQUIRE(run["texts"].size() == 2);
    CHECK(run["texts"][0]["name"] == "heldout-prose");
    CHECK(run["texts"][1]["name"] == "heldout-code");
    CHECK(run["texts"][0]["tokens"] == 48);
    const Json *pq = arm_named(run, "pq2_0"), *t2p = arm_named(run, "t2p"), *e4m3 = arm_named(run, "t2p-e4m3");
    REQUIRE(pq != nullptr);
    REQUIRE(t2p != nullptr);
    REQUIRE(e4m3 != nullptr);
    for (const Json* a : {pq, t2p, e4m3}) {
      CAPTURE((*a)["name"]);
      CHECK((*a)["verified"] == true);
      CHECK((*a)["bits_per_weight"].get<double>() == find_layout((*a)["layout"].get<std::string>()).bits_per_weight());
      CHECK(stat_from((*a)["tok_s"]).valid);
    }
    CHECK((*e4m3)["bits_per_weight"].get<double>() == 2.0625);
    CHECK((*pq)["bits_per_weight"].get<double>() == 2.125);
    // The exact ones: nothing moved, and the same perplexity to the last bit on both texts.
    for (const Json* a : {pq, t2p}) {
      CHECK((*a)["exact"] == true);
      CHECK((*a)["requantisation"]["changed"] == 0);
    }
    for (const char* text : {"heldout-prose", "heldout-code"}) {
      CAPTURE(text);
      const double exact = number_of((*pq)["perplexity"][text]);
      CHECK(number_of((*t2p)["perplexity"][text]) == exact);
      // Far below uniform guessing (1024) on held-out text: the model, not noise.
      CHECK(exact > 1.0);
      CHECK(exact < 200.0);
      const double lossy = number_of((*e4m3)["perplexity"][text]);
      CHECK(std::isfinite(lossy));
      CHECK(lossy > 1.0);
      CHECK(lossy != exact);  // every scale rounded to 3 mantissa bits moves the logits
    }
    // The lossy one: scales moved, by at most e4m3's half step for normal values (2^-4) unless tiny.
    CHECK((*e4m3)["exact"] == false);
    CHECK((*e4m3)["requantisation"]["changed"].get<std::int64_t>() > 0);
    CHECK((*e4m3)["requantisation"]["scales"].get<std::int64_t>() >= (*e4m3)["requantisation"]["changed"].get<std::int64_t>());
    CHECK(number_of((*e4m3)["requantisation"]["max_rel_error"]) > 0);
    CHECK(number_of((*e4m3)["requantisation"]["mean_rel_error"]) > 0);
    CHECK(number_of((*e4m3)["requantisation"]["mean_rel_error"]) <= number_of((*e4m3)["requantisation"]["max_rel_error"]));
    // The CSV: one row per arm with its bits per weight and perplexities; the plots draw every arm.
    const std::string csv = read_text(fs::path(o.folder) / "tradeoff.csv");
    CHECK(csv.find("perplexity_heldout-prose,perplexity_heldout-code") != std::string::npos);
    CHECK(csv.find(",t2p-e4m3,t2p-e4m3,e4m3,2.0625,") != std::string::npos);
    const std::string bits = read_text(fs::path(o.folder) / "perplexity_bits.svg");
    CHECK(bits.find("heldout-prose: exact (reference)") != std::string::npos);
    CHECK(bits.find("heldout-code: lossy scales") != std::string::npos);
    CHECK(bits.find("t2p-e4m3") != std::string::npos);
    CHECK(o.markdown.find("scales moved") != std::string::npos);
  }

  TEST_CASE("an exact arm whose perplexity differs from the baseline's fails the run loudly") {
    const std::string path = write_toml("disagree.toml", head() + texts() + "[[arm]]\nlayout = \"pq2_0\"\n[[arm]]\nname = \"other\"\n" +
                                                             "layout = \"t2p\"\nmodel = \"" + doubled_scales() + "\"\n");
    std::ostringstream out;
    const RunOutcome o = run_experiment_file(path, RunOptions{{}, false, 0}, out);
    CHECK(o.exit_code == 1);
    CHECK(o.markdown.find("EXACT LAYOUTS DISAGREE: perplexity on heldout-prose") != std::string::npos);
    CHECK(o.markdown.find("**FAILED**") != std::string::npos);
  }

  TEST_CASE("bad input names the file, line and key before anything loads") {
    const auto plan = [](const std::string& text) { load_plan_text(text, "tradeoff.toml", {}); };
    const std::string arms = "[[arm]]\nlayout = [\"pq2_0\", \"t2p-e8m0\"]\n";
    check_error([&] { plan(head() + texts() + "[[arm]]\nlayout = \"t9\"\n"); }, "tradeoff.toml:17: key 'arm[0].layout'", "t9", "t2p-e4m3");
    check_error([&] { plan(head() + texts() + arms); }, "tradeoff.toml:17: key 'arm[0].layout'", "t2p-e8m0", "e8m0 scales",
                "lossy", "requantise_scales = true");
    // fp16 but one scale per 256 weights: a lossy merge; one per 64 weights splits them exactly.
    check_error([&] { plan(head() + texts() + "[[arm]]\nlayout = [\"pq2_0\", \"t2p-g256\"]\n"); }, "key 'arm[0].layout'",
                "t2p-g256", "one scale per 256 weights", "lossy", "requantise_scales = true");
    plan(head() + texts() + "[[arm]]\nlayout = [\"pq2_0\", \"t2p-g64\"]\n");
    plan(head() + "requantise_scales = true\n" + texts() + arms);  // the opt-in by name
    check_error([&] { load_plan_text(head() + "requantise_scales = true\n" + texts() + arms, "tradeoff.toml", {"baseline=t2p-e8m0"}); },
                "--set baseline=t2p-e8m0: key 'baseline'", "baseline must hold the model exactly");
    check_error([&] { plan(cat("kind = \"tradeoff\"\nmodel = \"/nonexistent/m.gguf\"\n", texts(), arms)); }, "tradeoff.toml:2: key 'model'",
                "no such model file '/nonexistent/m.gguf'");
    check_error([&] { plan(head() + "[texts]\nfiles = [\"/nonexistent/prose.txt\"]\n" + arms); }, "key 'texts.files'",
                "no such text file '/nonexistent/prose.txt'");
    check_error([&] { plan(head() + arms); }, "tradeoff.toml", "needs [texts] files");
    check_error([&] { plan(head() + "arms = \"one-at-a-time\"\n" + texts() + "[[arm]]\nlayout = \"pq2_0\"\n"); }, "key 'arms'",
                "interleaves its arms");
    check_error([&] { plan(head() + "requantise_scales = [true, false]\n" + texts() + arms); }, "key 'requantise_scales'");
  }
}
