// The model experiment kinds end to end on the synthetic micro preset (4 layers, hidden 128, vocab
// 260: fast even under qemu): results written, perplexity and greedy tokens equal across layouts and
// thread counts, an arm on different weights reported failed and never timed, and bad keys named
// with their file and line before anything runs.
#include <map>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <optional>
#include <cstdlib>
#include <set>
#include <sstream>

#include "common/strings.hpp"
#include "experiments/config.hpp"
#include "experiments/kinds.hpp"
#include "experiments/memory.hpp"
#include "experiments/report.hpp"
#include "experiments/run_context.hpp"
#include "experiments/runner.hpp"
#include "kernels/cpu.hpp"
#include "model/model.hpp"
#include "model/synth.hpp"
#include "tests/support.hpp"

using namespace ternlab;
using namespace ternlab::experiments;
using test::check_error;
namespace fs = std::filesystem;

namespace {

constexpr char kScratchName[] = "ternlab-model-kinds";
const fs::path& scratch() { return test::scratch_folder<kScratchName>(); }

// The micro preset with another seed: same shapes, different trits, so greedy tokens differ.
const std::string& other_weights() { return test::synthetic_model(scratch(), "micro", {.seed = 99}); }

// Keys every test run shares: one kept round, no warm-up, a token-sized ceiling buffer.
std::string head(const std::string& kind) {
  return cat("kind = \"", kind, "\"\npreset = \"micro\"\nseed = 7\noutput = \"", (scratch() / "results").string(),
             "\"\nrounds = 1\nwarmup = 0\nceiling_mib = 1\nsample_ms = 0.01\nverify_tokens = 3\n");
}

const std::string kAllLayouts = "[[arm]]\nlayout = [\"pq2_0\", \"ptq1_0\", \"t2x4\", \"t2p\"]\n";

RunReport run_text(const std::string& text, const std::vector<std::string>& overrides = {}) {
  const Plan plan = load_plan_text(text, "model.toml", overrides);
  Pools pools;
  Progress progress(0, false);
  std::ostringstream log;
  RunContext ctx{pools, progress, log};
  const RunSpec& run = plan.runs.front();
  return find_kind(run.kind, run.at("kind")).run(run, ctx);
}

std::string write_toml(const std::string& name, const std::string& text) {
  const fs::path p = scratch() / name;
  std::ofstream(p) << text;
  return p.string();
}

std::string read(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Sets TERNLAB_MEMORY_LIMIT_MIB for one scope, then restores what was there.
struct MemoryLimit {
  std::optional<std::string> was;
  explicit MemoryLimit(const char* mib) {
    if (const char* v = std::getenv("TERNLAB_MEMORY_LIMIT_MIB")) was = v;
    setenv("TERNLAB_MEMORY_LIMIT_MIB", mib, 1);
  }
  ~MemoryLimit() {
    if (was)
      setenv("TERNLAB_MEMORY_LIMIT_MIB", was->c_str(), 1);
    else
      unsetenv("TERNLAB_MEMORY_LIMIT_MIB");
  }
};

}  // namespace

TEST_SUITE("model-kinds") {
  TEST_CASE("speed (pp and tg) through the runner: every layout verified and timed, results written, preset cached") {
    const std::string path = write_toml("speed.toml", head("speed") + "prefill_tokens = 8\ndecode_tokens = 4\nbaseline = \"pq2_0\"\n" + kAllLayouts);
    std::ostringstream out;
    const RunOutcome o = run_experiment_file(path, RunOptions{{}, false, 0}, out);
    INFO(out.str());
    CHECK(o.exit_code == 0);
    for (const char* f : {"summary.md", "summary.json", "rounds.csv", "experiment.toml", "prefill_tok_s.svg", "decode_tok_s.svg"})
      CHECK(fs::is_regular_file(fs::path(o.folder) / f));
    CHECK(fs::is_regular_file(scratch() / "results" / "models" / "micro-seed7.gguf"));
    const std::string csv = read(fs::path(o.folder) / "rounds.csv");
    for (const char* layout : {"pq2_0", "ptq1_0", "t2x4", "t2p"}) {
      CHECK(csv.find(cat(",pp8,0,", layout, ",")) != std::string::npos);
      CHECK(csv.find(cat(",tg4,0,", layout, ",")) != std::string::npos);
    }
    CHECK(o.markdown.find("decode bandwidth fraction") != std::string::npos);
#if defined(__linux__)
    CHECK(o.markdown.find("peak resident memory of the run so far: ") != std::string::npos);  // the issue asks for it
#endif
    CHECK(o.markdown.find("FAILED") == std::string::npos);
  }

  TEST_CASE("perplexity is identical across layouts and thread counts, and matches a direct computation") {
    const RunReport rep = run_text(head("perplexity") + "tokens = 40\nchunk = 16\n[[arm]]\nlayout = [\"pq2_0\", \"ptq1_0\", \"t2x4\", \"t2p\"]\n"
                                   "threads = [1, 2]\n");
    CHECK(rep.ok);
    REQUIRE(rep.arm_values.size() == 8);
    std::set<std::string> values;
    for (const auto& v : rep.arm_values) {
      std::ostringstream s;
      s << std::fixed << std::setprecision(4) << v.get("perplexity");
      values.insert(s.str());
      CHECK(std::isfinite(v.get("perplexity")));
      CHECK(v.get("perplexity") > 1.0);
    }
    CHECK(values.size() == 1);
    // 40 tokens in chunks of 16: 15 + 15 + 7 predicted tokens.
    REQUIRE(rep.json["arms"].size() == 8);
    for (const Json& arm : rep.json["arms"]) CHECK(arm["predicted"] == 37);
  }

  TEST_CASE("greedy: equal tokens across layouts; an arm on different weights is reported failed") {
    const RunReport ok = run_text(head("greedy") + "tokens = 6\nprompt_tokens = 4\n" + kAllLayouts);
    CHECK(ok.ok);
    CHECK(ok.arm_values.size() == 4);
    const RunReport bad = run_text(head("greedy") + "tokens = 6\nprompt_tokens = 4\n[[arm]]\nlayout = \"pq2_0\"\n[[arm]]\nname = \"other\"\n"
                                   "layout = \"t2p\"\nmodel = \"" + other_weights() + "\"\n");
    CHECK_FALSE(bad.ok);
    CHECK(bad.markdown.find("**other failed verification and was not timed:** greedy token") != std::string::npos);
  }

  TEST_CASE("a failing arm in a timed kind is never timed and makes the run fail") {
    const std::string path = write_toml("broken.toml", head("decode") + "tokens = 2\n[[arm]]\nlayout = \"pq2_0\"\n[[arm]]\nname = \"other\"\n"
                                                       "layout = \"t2p\"\nmodel = \"" + other_weights() + "\"\n");
    std::ostringstream out;
    const RunOutcome o = run_experiment_file(path, RunOptions{{}, false, 0}, out);
    CHECK(o.exit_code == 1);
    const std::string csv = read(fs::path(o.folder) / "rounds.csv");
    CHECK(csv.find(",pq2_0,") != std::string::npos);
    CHECK(csv.find(",other,") == std::string::npos);
    CHECK(o.markdown.find("**FAILED**") != std::string::npos);
  }

  TEST_CASE("profile: every op of one decode token per arm") {
    const RunReport rep = run_text(head("profile") + "prompt_tokens = 4\n[[arm]]\nlayout = [\"pq2_0\", \"t2p\"]\n");
    CHECK(rep.ok);
    for (int op = 0; op < model::OpProfile::count; ++op) {
      CHECK(rep.markdown.find(model::OpProfile::name(op)) != std::string::npos);
      CHECK(csv_text(rep.rows).find(cat(",1,", model::OpProfile::name(op), ",")) != std::string::npos);  // t2p's row, 1 thread
    }
    REQUIRE(rep.json["arms"].size() == 2);
    // The state billed beside the weights: each recurrent layer's value heads' fp32 matrices and
    // its conv window of the last ssm_conv - 1 inputs.
    const model::ModelConfig& c = model::find_preset("micro").config;
    int recurrent = 0;
    for (int l = 0; l < c.n_layer; ++l) recurrent += c.is_gdn(l);
    REQUIRE(recurrent > 0);
    const double state = 4.0 * recurrent * (double(c.ssm_v_heads) * c.ssm_state * c.ssm_state + double(c.ssm_conv - 1) * c.conv_channels());
    for (const Json& arm : rep.json["arms"]) {
      const double matmul = arm["ms"]["ternary matmul"]["median"], total = arm["total_ms"]["median"];
      CHECK(matmul > 0);
      CHECK(matmul <= total);
      CHECK(arm["state_bytes_per_token"].get<double>() == state);
      // One round: the medians are that round's figures.
      const double gdn_ms = arm["ms"]["Gated DeltaNet"]["median"];
      CHECK(arm["state_gbps"]["median"].get<double>() == doctest::Approx(2 * state / gdn_ms / 1e6).epsilon(1e-9));
      const double matmul_gbs = arm["matmul_gbps"]["median"];
      const double ceiling_gbs = matmul_gbs / arm["matmul_fraction_of_read_ceiling"]["median"].get<double>();
      const double token_bytes = matmul_gbs * matmul * 1e6 + 2 * state;  // GB/s x ms = 1e6 bytes
      CHECK(arm["token_bytes_fraction_of_read_ceiling"]["median"].get<double>() ==
            doctest::Approx(token_bytes / (total * 1e6) / ceiling_gbs).epsilon(1e-9));
      // The matmul line by role: the roles hold every matmul call of the token once, so their
      // bytes are the token's weight bytes and their times add up to the matmul line.
      std::map<std::string, int> calls;
      double role_bytes = 0, role_ms = 0;
      for (const Json& role : arm["matmul_roles"]) {
        calls[role["role"].get<std::string>()] = role["calls"].get<int>();
        role_bytes += role["bytes"].get<double>();
        role_ms += role["ms"]["median"].get<double>();
      }
      CHECK(calls["output"] == 1);
      CHECK(calls["ffn_gate+ffn_up"] == c.n_layer);
      CHECK(calls["ffn_down"] == c.n_layer);
      CHECK(calls["ssm_out"] == recurrent);
      CHECK(calls["attn_qkv+attn_gate"] == recurrent);
      CHECK(role_bytes == doctest::Approx(matmul_gbs * matmul * 1e6).epsilon(1e-9));
      CHECK(role_ms == doctest::Approx(matmul).epsilon(1e-9));
    }
    CHECK(rep.markdown.find("| matmul role |") != std::string::npos);
    CHECK(rep.markdown.find("token bytes of read ceiling") != std::string::npos);
  }

  TEST_CASE("profile of a prompt batch: matmul GMAC/s against the int8 ceiling, by role; the Gated DeltaNet in either form") {
    const int batch = 6;
    // gdn_chunk 0 runs the batch's recurrence token by token (6 passes over each state), 4 the
    // chunked form (chunks of 4 and 2: 2 passes); both pass the greedy check against each other.
    const RunReport rep = run_text(head("profile") + cat("prompt_tokens = 4\ntokens = ", batch,
                                                         "\n[[arm]]\nlayout = \"t2p\"\ngdn_chunk = [0, 4]\n"));
    CHECK(rep.ok);
    CHECK(rep.json["tokens"] == batch);
    CHECK(rep.markdown.find("one 6-token prompt batch") != std::string::npos);
    CHECK(rep.markdown.find("| matmul of int8 ceiling |") != std::string::npos);
    REQUIRE(rep.json["arms"].size() == 2);
    const model::ModelConfig& c = model::find_preset("micro").config;
    for (const Json& arm : rep.json["arms"]) {
      CAPTURE(arm["name"].get<std::string>());
      CHECK(arm["verified"] == true);
      CHECK_FALSE(arm.contains("matmul_gbps"));
      const double matmul_ms = arm["ms"]["ternary matmul"]["median"], total_ms = arm["total_ms"]["median"];
      const double gmacs = arm["matmul_gmacs"]["median"];
      const double ceiling = gmacs / arm["matmul_fraction_of_int8_ceiling"]["median"].get<double>();
      // The roles hold every matmul call: their multiply-accumulates are the weights times the
      // tokens each call ran (the head one token, the last), and they add up to the matmul line's.
      double role_macs = 0, head_macs = 0;
      for (const Json& role : arm["matmul_roles"]) {
        role_macs += role["macs"].get<double>();
        if (role["role"] == "output") head_macs = role["macs"].get<double>();
      }
      CHECK(head_macs == double(c.n_vocab) * double(c.n_embd));
      CHECK(gmacs * matmul_ms * 1e6 == doctest::Approx(role_macs).epsilon(1e-9));  // GMAC/s x ms = 1e6 MACs
      // One round: the batch's whole fraction is its MACs over the total time against the same ceiling.
      CHECK(arm["batch_fraction_of_int8_ceiling"]["median"].get<double>() ==
            doctest::Approx(role_macs / (total_ms * 1e6) / ceiling).epsilon(1e-9));
      CHECK(arm["tok_s"]["median"].get<double>() == doctest::Approx(batch / (total_ms * 1e-3)).epsilon(1e-9));
      const int chunk = arm["gdn_chunk"].get<int>();
      const double passes = chunk == 0 ? batch : 2;
      CHECK(arm["state_passes"].get<double>() == passes);
      const double gdn_ms = arm["ms"]["Gated DeltaNet"]["median"];
      CHECK(arm["state_gbps"]["median"].get<double>() ==
            doctest::Approx(2 * arm["state_bytes_per_token"].get<double>() * passes / gdn_ms / 1e6).epsilon(1e-9));
    }
    CHECK(rep.json["arms"][0]["gdn_chunk"] == 0);
    CHECK(rep.json["arms"][1]["gdn_chunk"] == 4);
  }

  TEST_CASE("configs/model-*.toml validate, and model-tiny.toml runs on the micro preset") {
    int files = 0;
    {
      // The configs name files relative to the repository root, where the docs run them.
      const fs::path was = fs::current_path();
      fs::current_path(TERNLAB_SOURCE_DIR);
      for (const auto& e : fs::directory_iterator("configs"))
        if (e.path().filename().string().rfind("model-", 0) == 0) {
          INFO(e.path().string());
          CHECK_NOTHROW(load_plan(e.path().string(), {}));
          ++files;
        }
      fs::current_path(was);
    }
    CHECK(files >= 5);
    std::ostringstream out;
    const RunOutcome o = run_experiment_file(TERNLAB_SOURCE_DIR "/configs/model-tiny.toml",
                                             RunOptions{{"preset=micro", "output=" + (scratch() / "results").string(), "rounds=1",
                                                         "warmup=0", "ceiling_mib=1", "prefill_tokens=8", "decode_tokens=4"},
                                                        false, 0},
                                             out);
    INFO(out.str());
    CHECK(o.exit_code == 0);
    CHECK(fs::is_regular_file(fs::path(o.folder) / "summary.md"));
  }

  TEST_CASE("a load sweep on every arm keeps the baseline: each arm against the baseline arm at its own load") {
    const RunReport rep = run_text(head("decode") + "tokens = 2\nbaseline = \"pq2_0\"\n[[arm]]\nlayout = [\"pq2_0\", \"t2p\"]\n",
                                   {"arm.load=[\"mmap\", \"memory\"]"});
    CHECK(rep.ok);
    CHECK(rep.markdown.find("| pq2_0 load=mmap (baseline) |") != std::string::npos);
    CHECK(rep.markdown.find("| pq2_0 load=memory (baseline) |") != std::string::npos);
    CHECK(rep.markdown.find("| t2p load=memory |") != std::string::npos);
    CHECK(rep.markdown.find("ratios against 'pq2_0' at each arm's load ('pq2_0 load=mmap', 'pq2_0 load=memory')") != std::string::npos);
    // In the JSON each arm names its own baseline.
    const auto baseline_of = [&](const std::string& arm) {
      for (const Json& a : rep.json["arms"])
        if (a["name"] == arm) return a["baseline"].get<std::string>();
      FAIL("no arm named ", arm);
      return std::string();
    };
    CHECK(baseline_of("t2p load=mmap") == "pq2_0 load=mmap");
    CHECK(baseline_of("t2p load=memory") == "pq2_0 load=memory");
    CHECK(baseline_of("pq2_0 load=memory") == "pq2_0 load=memory");
  }

  TEST_CASE("a decode whose weights a token fit twice the last-level cache is flagged, naming the arm with the fewest") {
    const RunReport rep = run_text(head("decode") + "tokens = 2\n[[arm]]\nlayout = [\"pq2_0\", \"ptq1_0\"]\n");
    CHECK(rep.ok);
    std::vector<NoiseWarning> found;
    for (const NoiseWarning& w : rep.warnings)
      if (w.check == "weights_fit_cache") found.push_back(w);
    // The tiny preset's few megabytes fit any cache; where the size is unknown the check stays quiet.
    if (last_level_cache_bytes() > 0) {
      REQUIRE(found.size() == 1);
      CHECK(found[0].arm == "ptq1_0");  // base-3: fewer bytes than pq2_0
      CHECK(found[0].text.find("arm 'ptq1_0' reads") == 0);
    } else {
      CHECK(found.empty());
    }
  }

  TEST_CASE("MemAvailable is read from /proc/meminfo's format") {
    CHECK(parse_mem_available("MemTotal:       24684084 kB\nMemFree:        22928500 kB\nMemAvailable:   23067860 kB\n") ==
          std::int64_t(23067860) * 1024);
    CHECK(parse_mem_available("MemTotal:       24684084 kB\n") == -1);
    CHECK(parse_mem_available("MemAvailable:   many kB\n") == -1);
  }

  TEST_CASE("arms that cannot fit together are refused in the plan, with each arm's estimate and the memory available") {
    // Only planned: the mid preset's estimate comes from its hyperparameters, nothing is written.
    const std::string mid = cat("kind = \"decode\"\npreset = \"mid\"\noutput = \"", (scratch() / "results").string(),
                                "\"\nceiling_mib = 1\n[[arm]]\nlayout = [\"pq2_0\", \"ptq1_0\", \"t2x4\", \"t2p\"]\n");
    {
      MemoryLimit limit("1024");  // ~0.35 GiB per arm: four together need ~1.7 GiB, one at a time ~0.63
      check_error([&] { load_plan_text(mid, "model.toml", {}); }, "model.toml:5: key 'arm[0]'", "the 4 arms cannot fit in memory together",
                  "'pq2_0' 0.346 GiB", "'ptq1_0' 0.300 GiB", "'t2p' 0.346 GiB", "1.00 GiB available (TERNLAB_MEMORY_LIMIT_MIB=1024)",
                  "arms = \"one-at-a-time\"", "(needs 0.6");
      // A key given names itself.
      check_error([&] { load_plan_text(mid, "model.toml", {"arms=interleaved"}); }, "--set arms=interleaved: key 'arms'", "cannot fit");
      CHECK_NOTHROW(load_plan_text(mid, "model.toml", {"arms=one-at-a-time"}));
      // The dry run prints the estimate.
      const std::string path = write_toml("mid.toml", mid);
      std::ostringstream out;
      run_experiment_file(path, RunOptions{{"arms=one-at-a-time"}, true, 0}, out);
      CHECK(out.str().find("memory (estimate): 'pq2_0' 0.346 GiB, 'ptq1_0' 0.300 GiB") != std::string::npos);
      CHECK(out.str().find("one at a time, the largest arm 0.346 GiB") != std::string::npos);
    }
    {
      MemoryLimit limit("300");
      check_error([&] { load_plan_text(mid, "model.toml", {"arms=one-at-a-time"}); }, "--set arms=one-at-a-time: key 'arms'",
                  "even one arm at a time needs more memory than there is", "0.293 GiB available");
      // Interleaved, the way out is not offered where it would not fit either.
      check_error([&] { load_plan_text(mid, "model.toml", {}); }, "cannot fit in memory together, nor one at a time",
                  "one at a time would need 0.6");
    }
    {
      MemoryLimit limit("lots");
      check_error([&] { load_plan_text(mid, "model.toml", {}); }, "TERNLAB_MEMORY_LIMIT_MIB='lots'", "whole number of MiB");
    }
    check_error([&] { load_plan_text(mid, "model.toml", {"arms=sequential"}); }, "--set arms=sequential: key 'arms'", "interleaved or one-at-a-time");
  }

  TEST_CASE("the memory estimate covers what a loaded arm holds, and follows the layout's bits per weight") {
    const std::string& path = test::synthetic_model(scratch(), "tiny", {.seed = 5});
    const Plan plan = load_plan_text(cat("kind = \"decode\"\nmodel = \"", path, "\"\nceiling_mib = 1\n[[arm]]\nlayout = [\"pq2_0\", \"ptq1_0\"]\n"),
                                     "model.toml", {});
    const std::string notes = describe(plan);
    const auto estimate_of = [&](const std::string& arm) {
      const std::size_t at = notes.find("'" + arm + "' ");
      REQUIRE(at != std::string::npos);
      return std::stod(notes.substr(at + arm.size() + 3)) * double(1 << 30);
    };
    const double pq2 = estimate_of("pq2_0"), ptq1 = estimate_of("ptq1_0");
    CHECK(ptq1 < pq2);  // 1.6 bits per weight against 2.125
    for (const char* layout : {"pq2_0", "ptq1_0"}) {
      model::LoadOptions o;
      o.layout = layout;
      const auto m = model::Model::load(path, o);
      INFO(layout);
      CHECK(double(m->ternary_bytes_per_token()) < (std::string(layout) == "pq2_0" ? pq2 : ptq1));
    }
  }

  TEST_CASE("one arm at a time: each arm loaded, checked, timed in its own pass and freed; the results say not interleaved") {
    const std::string path = write_toml("one.toml", head("decode") + "tokens = 2\nbaseline = \"pq2_0\"\narms = \"one-at-a-time\"\n"
                                                     "[[arm]]\nlayout = [\"pq2_0\", \"t2p\"]\n");
    std::ostringstream out;
    const RunOutcome o = run_experiment_file(path, RunOptions{{"rounds=2"}, false, 0}, out);
    INFO(out.str());
    CHECK(o.exit_code == 0);
    CHECK(o.markdown.find("arms NOT interleaved (arms = \"one-at-a-time\")") != std::string::npos);
    CHECK(o.markdown.find("| vs baseline (separate passes) |") != std::string::npos);
    CHECK(o.markdown.find("round i of the baseline's pass and round i of the arm's pass") != std::string::npos);
    CHECK(o.markdown.find("one arm's model at a time") != std::string::npos);
    const Json json = Json::parse(read(fs::path(o.folder) / "summary.json"));
    CHECK(json["runs"][0]["interleaved"] == false);
    CHECK(json["runs"][0]["arm_order"] == "one-at-a-time");
    CHECK(json["runs"][0]["arms"].size() == 2);
    CHECK(json["runs"][0]["ratios"] == "separate passes");
    const std::string csv = read(fs::path(o.folder) / "rounds.csv");
    for (const char* layout : {"pq2_0", "t2p"})
      for (int round = 0; round < 2; ++round) CHECK_MESSAGE(csv.find(cat(",tg2,", round, ",", layout, ",")) != std::string::npos, layout);
    CHECK(o.markdown.find("FAILED") == std::string::npos);

    // The same as interleaved says so.
    const RunReport inter = run_text(head("decode") + "tokens = 2\n[[arm]]\nlayout = [\"pq2_0\", \"t2p\"]\n");
    CHECK(inter.markdown.find("arms interleaved in the order below") != std::string::npos);
    CHECK(inter.json["interleaved"] == true);

    // speed times both phases per arm; an arm on other weights still fails against the baseline's kept tokens.
    const RunReport speed = run_text(head("speed") + "prefill_tokens = 4\ndecode_tokens = 2\narms = \"one-at-a-time\"\n" + kAllLayouts);
    CHECK(speed.ok);
    CHECK(speed.arm_values.size() == 4);
    CHECK(speed.markdown.find("pp4") != std::string::npos);
    CHECK(speed.markdown.find("arms NOT interleaved") != speed.markdown.rfind("arms NOT interleaved"));  // in both tables
    const RunReport bad = run_text(head("greedy") + "tokens = 6\nprompt_tokens = 4\narms = \"one-at-a-time\"\n[[arm]]\nlayout = \"pq2_0\"\n"
                                   "[[arm]]\nname = \"other\"\nlayout = \"t2p\"\nmodel = \"" + other_weights() + "\"\n");
    CHECK_FALSE(bad.ok);
    CHECK(bad.markdown.find("**other failed verification and was not timed:** greedy token") != std::string::npos);
    const RunReport ppl = run_text(head("perplexity") + "tokens = 20\nchunk = 8\narms = \"one-at-a-time\"\n[[arm]]\nlayout = [\"pq2_0\", \"t2p\"]\n");
    CHECK(ppl.ok);
    REQUIRE(ppl.arm_values.size() == 2);
    CHECK(ppl.arm_values[0].get("perplexity") == ppl.arm_values[1].get("perplexity"));
    const RunReport prof = run_text(head("profile") + "prompt_tokens = 4\narms = \"one-at-a-time\"\n[[arm]]\nlayout = [\"pq2_0\", \"t2p\"]\n");
    CHECK(prof.ok);
    for (const Json& arm : prof.json["arms"]) CHECK(arm["total_ms"]["median"].get<double>() > 0);
  }

  TEST_CASE("bad input names the file, line and key before anything runs") {
    const auto plan = [](const std::string& text) { load_plan_text(text, "model.toml", {}); };
    check_error([&] { plan(head("decode") + "tokenz = 3\n" + kAllLayouts); }, "model.toml:10: key 'tokenz'", "unknown key", "tokens");
    check_error([&] { plan("kind = \"decode\"\npreset = \"huge\"\n" + kAllLayouts); }, "model.toml:2: key 'preset'", "huge", "tiny");
    check_error([&] { plan("kind = \"decode\"\nmodel = \"/nonexistent/m.gguf\"\n" + kAllLayouts); }, "model.toml:2: key 'model'",
                "no such model file '/nonexistent/m.gguf'");
    check_error([&] { plan("kind = \"decode\"\n" + kAllLayouts); }, "model.toml", "needs model", "micro");
    check_error([&] { plan("kind = \"decode\"\nmodel = \"a.gguf\"\npreset = \"tiny\"\n" + kAllLayouts); }, "key 'preset'", "not both");
    // `--set model=FILE` replaces the file's preset (the configs' documented way to run a real
    // model): the missing file is then what is reported, not an ambiguity.
    check_error([&] { load_plan_text("kind = \"decode\"\npreset = \"tiny\"\n" + kAllLayouts, "model.toml", {"model=/nonexistent/real.gguf"}); },
                "--set model=/nonexistent/real.gguf", "no such model file");
    check_error([&] { plan(head("decode") + "load = \"mapped\"\n" + kAllLayouts); }, "model.toml:10: key 'load'", "mmap or memory");
    check_error([&] { plan(head("decode") + "[[arm]]\nlayout = \"t9\"\n"); }, "model.toml:11: key 'arm[0].layout'", "t9");
    check_error([&] { plan(head("decode") + "[[arm]]\nlayout = \"t2p\"\nmodel = \"missing.gguf\"\n"); }, "key 'arm[0].model'", "missing.gguf");
    check_error([&] { plan(head("perplexity") + "text = \"missing.txt\"\n" + kAllLayouts); }, "model.toml:10: key 'text'", "no such text file");
    check_error([&] { plan(head("decode") + "baseline = \"t3\"\n" + kAllLayouts); }, "key 'baseline'", "no arm is called 't3'");
    check_error([&] { plan(head("greedy") + "[[arm]]\nlayout = \"t2p\"\nkernel = \"nope\"\n"); }, "key 'arm[0].kernel'", "nope");
  }
}
