// The experiment kind `speculative` on the synthetic micro preset (4 layers, vocab 260): the rows
// and summary of every drafter (oracle all accepted, a fully corrupted controlled drafter none,
// every call token-identical with plain greedy decoding), an arm on different weights failed and
// never timed, and bad draft lengths, drafters and rollbacks refused naming file, line and key.
#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "common/strings.hpp"
#include "experiments/config.hpp"
#include "experiments/kinds.hpp"
#include "experiments/report.hpp"
#include "experiments/run_context.hpp"
#include "model/synth.hpp"
#include "tests/support.hpp"

using namespace ternlab;
using namespace ternlab::experiments;
using test::check_error;
namespace fs = std::filesystem;

namespace {

constexpr char kScratchName[] = "ternlab-speculative-kind";
const fs::path& scratch() { return test::scratch_folder<kScratchName>(); }

std::string head() {
  return cat("kind = \"speculative\"\npreset = \"micro\"\nseed = 7\noutput = \"", (scratch() / "results").string(),
             "\"\nrounds = 2\nwarmup = 0\nceiling_mib = 1\nverify_tokens = 3\ntokens = 12\nprompt_tokens = 6\n");
}

RunReport run_text(const std::string& text) {
  const Plan plan = load_plan_text(text, "spec.toml", {});
  Pools pools;
  Progress progress(0, false);
  std::ostringstream log;
  RunContext ctx{pools, progress, log};
  const RunSpec& run = plan.runs.front();
  return find_kind(run.kind, run.at("kind")).run(run, ctx);
}

// The summary's point of `arm` for drafter `d` at draft length k (and corruption p, controlled).
const Json& point(const RunReport& rep, const std::string& arm, const std::string& d, int k, double p = -1) {
  for (const Json& a : rep.json["arms"])
    if (a["name"] == arm)
      for (const Json& x : a["points"])
        if (x["drafter"] == d && x["draft_len"] == k && (p < 0 || x["corrupt"] == p)) return x;
  FAIL("no point ", arm, " ", d, " k=", k);
  static const Json none;
  return none;
}

}  // namespace

TEST_SUITE("speculative") {
  TEST_CASE("kind speculative: every drafter token-identical with plain greedy; oracle all accepted, corrupted none") {
    const RunReport rep = run_text(head() +
                                   "[speculate]\ndrafter = [\"prompt-lookup\", \"oracle\", \"junk\", \"controlled\"]\n"
                                   "draft_len = [1, 3]\ncorrupt = [0.0, 1.0]\n[[arm]]\nlayout = [\"pq2_0\", \"t2p\"]\n");
    INFO(rep.markdown);
    CHECK(rep.ok);
    // Per arm: the plain decode and 2 x (prompt-lookup, oracle, junk) + 2 x 2 controlled points, 2 rounds each.
    CHECK(rep.rows.rows.size() == 2 * (1 + 6 + 4) * 2);
    for (const char* arm : {"pq2_0", "t2p"}) {
      for (const Json& a : rep.json["arms"])
        if (a["name"] == arm)
          for (const Json& x : a["points"]) CHECK_MESSAGE(x["identical"] == true, x.dump());
      for (int k : {1, 3}) {
        const Json& oracle = point(rep, arm, "oracle", k);
        CHECK(oracle["drafted"].get<int>() > 0);
        CHECK(oracle["accepted"] == oracle["drafted"]);
        CHECK(oracle["tokens_per_pass"].get<double>() > 1.0);
        const Json& exact = point(rep, arm, "controlled", k, 0.0);
        CHECK(exact["accepted"] == exact["drafted"]);
        // Every draft replaced by a different token: none can be the model's own.
        const Json& corrupted = point(rep, arm, "controlled", k, 1.0);
        CHECK(corrupted["drafted"].get<int>() > 0);
        CHECK(corrupted["accepted"] == 0);
        // Every pass with drafts rolls back; the last token's pass has no room for drafts.
        CHECK(corrupted["rollbacks"].get<int>() == corrupted["passes"].get<int>() - 1);
        // Seeded random drafts over 260 tokens: this draw accepts none.
        const Json& junk = point(rep, arm, "junk", k);
        CHECK(junk["drafted"].get<int>() > 0);
        CHECK(junk["accepted"] == 0);
        CHECK(point(rep, arm, "none", 0)["tokens_per_pass"] == 1.0);
      }
    }
    REQUIRE(rep.svgs.size() == 1);
    CHECK(rep.svgs.front().first == "speedup.svg");
    CHECK(rep.svgs.front().second.find("pq2_0 k=3") != std::string::npos);
  }

  TEST_CASE("kind speculative: an arm whose greedy tokens differ from the baseline's fails and is never timed (arms one at a time)") {
    const std::string& other = test::synthetic_model(scratch(), "micro", {.seed = 99});
    const RunReport rep = run_text(head() + "arms = \"one-at-a-time\"\n[speculate]\ndrafter = \"oracle\"\n[[arm]]\nlayout = \"pq2_0\"\n"
                                            "[[arm]]\nname = \"other\"\nlayout = \"pq2_0\"\nmodel = \"" + other + "\"\n");
    CHECK(point(rep, "pq2_0", "oracle", 2)["identical"] == true);
    CHECK(rep.json["interleaved"] == false);
    CHECK_FALSE(rep.ok);
    CHECK(rep.markdown.find("other failed verification and was not timed") != std::string::npos);
    CHECK(point(rep, "other", "oracle", 2)["identical"] == false);
  }

  TEST_CASE("kind speculative: bad draft lengths, drafters and rollbacks are refused with file, line and key") {
    const std::string arm = "[[arm]]\nlayout = \"pq2_0\"\n";
    check_error([&] { load_plan_text(head() + "[speculate]\ndraft_len = [2, 0]\n" + arm, "spec.toml", {}); },
                "spec.toml:12: key 'speculate.draft_len'", "draft length must be at least 1, got 0");
    check_error([&] { load_plan_text(head() + "[speculate]\ndraft_len = 64\n" + arm, "spec.toml", {}); },
                "spec.toml:12: key 'speculate.draft_len'", "draft length 64 is too long", "gemm batch of 64 tokens", "at most 63");
    check_error([&] { load_plan_text(head() + "prefill_chunk = 4\n[speculate]\ndraft_len = 4\n" + arm, "spec.toml", {}); },
                "spec.toml:13: key 'speculate.draft_len'", "at most 3");
    check_error([&] { load_plan_text(head() + arm, "spec.toml", {"speculate.draft_len=0"}); },
                "--set speculate.draft_len=0: key 'speculate.draft_len'", "at least 1");
    check_error([&] { load_plan_text(head() + "[speculate]\ndrafter = [\"oracle\", \"medusa\"]\n" + arm, "spec.toml", {}); },
                "spec.toml:12: key 'speculate.drafter'", "unknown drafter 'medusa'", "prompt-lookup", "controlled");
    check_error([&] { load_plan_text(head() + "rollback = \"undo\"\n" + arm, "spec.toml", {}); }, "spec.toml:11: key 'rollback'",
                "unknown rollback 'undo'");
    check_error([&] { load_plan_text(head() + "[speculate]\ncorrupt = 1.5\n" + arm, "spec.toml", {}); }, "key 'speculate.corrupt'");
  }
}
