// Speculative decoding: a verification batch gives each token the float bits of single-token
// decode, rollback leaves exactly the state of running only the kept tokens, and every drafter and
// rollback mode emits the plain greedy continuation token for token, rejections at every draft
// position included.
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <span>

#include "kernels/catalog.hpp"
#include "model/experiments.hpp"
#include "model/sampler.hpp"
#include "model/speculative.hpp"
#include "model/synth.hpp"
#include "tests/support.hpp"

using namespace ternlab;
using namespace ternlab::model;

namespace {

// The micro preset (3 GDN layers + 1 attention layer, hidden 128), written once per process: the
// smallest model with both layer kinds, so the many decodes below stay quick under qemu too.
struct MicroFile {
  std::string path;
  MicroFile() {
    path = (std::filesystem::temp_directory_path() / cat("ternlab-spec-", getpid(), "-micro.gguf")).string();
    write_synthetic(find_preset("micro"), path, {2026, 142});
  }
  ~MicroFile() { std::filesystem::remove(path); }
};
const std::string& micro_path() {
  static MicroFile f;
  return f.path;
}

// Under qemu (TERNLAB_EXPECT_CPU set) everything runs ~50x slower: shorter runs there.
const bool kEmulated = std::getenv("TERNLAB_EXPECT_CPU") != nullptr;
const int kTokens = kEmulated ? 10 : 24;
const std::vector<int> kDraftLens = kEmulated ? std::vector<int>{2, 5} : std::vector<int>{1, 2, 3, 4, 5};
// Repetitive, so prompt lookup finds matches.
const std::vector<std::int32_t> kPrompt = {72, 101, 108, 108, 111, 32, 72, 101, 108, 108, 111, 32, 72, 101};

bool same_bits(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

void check_same_session(const Session& a, const Session& b) {
  CHECK(a.pos == b.pos);
  REQUIRE(a.conv.size() == b.conv.size());
  for (std::size_t l = 0; l < a.conv.size(); ++l) {
    INFO("layer ", l);
    CHECK(same_bits(a.conv[l], b.conv[l]));
    CHECK(same_bits(a.state[l], b.state[l]));
    CHECK(same_bits(a.k_cache[l].rows(), b.k_cache[l].rows()));
    CHECK(same_bits(a.v_cache[l], b.v_cache[l]));
  }
}

// Replays the greedy continuation, each pass's draft `reject_at` (from 0) replaced by a wrong
// token: every full-length pass accepts exactly reject_at drafts.
class RejectAtDrafter final : public Drafter {
 public:
  RejectAtDrafter(std::vector<std::int32_t> continuation, int prompt_tokens, int reject_at, int vocab)
      : oracle_(std::move(continuation), prompt_tokens), reject_at_(reject_at), vocab_(vocab) {}
  std::string name() const override { return "reject-at"; }
  std::vector<std::int32_t> draft(std::span<const std::int32_t> context, int n) override {
    auto d = oracle_.draft(context, n);
    if (reject_at_ < int(d.size())) d[std::size_t(reject_at_)] = (d[std::size_t(reject_at_)] + 1) % vocab_;
    return d;
  }

 private:
  OracleDrafter oracle_;
  int reject_at_, vocab_;
};

}  // namespace

TEST_SUITE("speculative") {
  TEST_CASE("a verification batch of 2-5 tokens (gemm, padded tiles) gives decode's float bits, every kernel") {
    for (const char* layout : {"pq2_0", "t2p"}) {
      for (const KernelVariant& k : kernels_for(find_layout(layout))) {
        INFO(layout, " ", k.name());
        LoadOptions o;
        o.layout = layout;
        o.kernel = k.name();
        auto m = Model::load(micro_path(), o);
        const std::vector<std::int32_t> next = {7, 230, 42, 251, 3};
        for (int T = 2; T <= 5; ++T) {
          INFO("batch ", T);
          Session batched = m->new_session(), serial = m->new_session();
          m->forward(batched, std::span(kPrompt).first(4));
          m->forward(serial, std::span(kPrompt).first(4));
          batched.gdn_steps = true;  // as generate_speculative's verify passes
          const auto all = m->forward(batched, std::span(next).first(std::size_t(T)), true);
          const auto vocab = std::size_t(m->config().n_vocab);
          REQUIRE(all.size() == std::size_t(T) * vocab);
          for (int t = 0; t < T; ++t) {
            const auto one = m->forward(serial, std::span(next).subspan(std::size_t(t), 1));
            CHECK(std::memcmp(one.data(), all.data() + std::size_t(t) * vocab, vocab * sizeof(float)) == 0);
          }
          check_same_session(batched, serial);
        }
        if (kEmulated) break;  // one kernel per layout under qemu
      }
    }
  }

  TEST_CASE("rollback to any kept prefix leaves the state of running only that prefix") {
    auto m = Model::load(micro_path());
    const std::vector<std::int32_t> batch = {9, 200, 13, 77, 141};
    Session base = m->new_session();
    m->forward(base, kPrompt);
    base.gdn_steps = true;  // the prefix alone runs token by token, as the ring's recorded pass does
    for (int keep = 1; keep <= int(batch.size()); ++keep) {
      INFO("keep ", keep);
      Session s = base, expect = base;
      StateRing ring;
      m->forward(s, batch, true, nullptr, &ring);
      CHECK(ring.slots == int(batch.size()) - 1);
      m->rollback(s, ring, keep);
      m->forward(expect, std::span(batch).first(std::size_t(keep)));
      check_same_session(s, expect);
      // And decoding goes on from there as from the prefix alone.
      const std::int32_t t = 55;
      CHECK(same_bits(m->forward(s, std::span(&t, 1)), m->forward(expect, std::span(&t, 1))));
    }
  }

  TEST_CASE("every drafter and both rollbacks emit the plain greedy tokens") {
    auto m = Model::load(micro_path());
    const int vocab = m->config().n_vocab;
    // The synthetic model's text hardly repeats, so prompt lookup gets a prompt holding every token
    // id: whatever the model emits has occurred before, and every pass has drafts.
    std::vector<std::int32_t> lookup_prompt = kPrompt;
    for (int t = 0; t < vocab; ++t) lookup_prompt.push_back(t);
    for (const auto& name : drafter_names()) {
      const auto& prompt = name == "prompt-lookup" ? lookup_prompt : kPrompt;
      const auto want = greedy(*m, prompt, kTokens);
      for (const Rollback rb : {Rollback::ring, Rollback::recompute}) {
        // Recompute is covered at every draft length by the forced-rejection case below.
        for (const int k : rb == Rollback::ring ? kDraftLens : std::vector<int>{3}) {
          INFO(name, " rollback ", std::string(rb == Rollback::ring ? "ring" : "recompute"), " draft length ", k);
          DrafterOptions d;
          d.name = name;
          d.ngram = 2;
          d.continuation = want;
          d.prompt_tokens = int(prompt.size());
          d.corrupt = 0.3;
          auto drafter = make_drafter(d, vocab);
          SpeculativeStats st;
          const auto got = generate_speculative(*m, prompt, kTokens, *drafter, {k, rb, -1}, &st);
          CHECK(got == want);
          CHECK(st.tokens == kTokens);
          CHECK(st.drafted > 0);
          CHECK(st.accepted <= st.drafted);
          if (name == "oracle") {
            CHECK(st.accepted == st.drafted);
            CHECK(st.rollbacks == 0);
            CHECK(st.passes == (kTokens - 1 + k) / (k + 1));  // k + 1 tokens a pass, the last one shorter
          }
          if (name == "junk") CHECK(st.accepted * 20 <= st.drafted);  // chance: about 1 in 512
          if (name == "controlled") {
            CHECK(st.accepted > 0);
            CHECK(st.accepted < st.drafted);
          }
        }
      }
    }
  }

  TEST_CASE("a rejection forced at every draft position keeps greedy identity") {
    auto m = Model::load(micro_path());
    const int vocab = m->config().n_vocab;
    const auto want = greedy(*m, kPrompt, kTokens);
    for (const Rollback rb : {Rollback::ring, Rollback::recompute})
      for (const int k : kDraftLens)
        for (int r = 0; r < k; ++r) {
          INFO("draft length ", k, ", rejected draft ", r, ", ", std::string(rb == Rollback::ring ? "ring" : "recompute"));
          RejectAtDrafter drafter(want, int(kPrompt.size()), r, vocab);
          SpeculativeStats st;
          CHECK(generate_speculative(*m, kPrompt, kTokens, drafter, {k, rb, -1}, &st) == want);
          // The counts follow from the rule: a pass drafts min(k, tokens still wanted - 1) and,
          // when draft r is among them, accepts the r before it and rolls back.
          int emitted = 1, passes = 0, drafted = 0, accepted = 0, rollbacks = 0;
          while (emitted < kTokens) {
            const int d = std::min(k, kTokens - emitted - 1), a = d > r ? r : d;
            ++passes, drafted += d, accepted += a, rollbacks += d > r, emitted += a + 1;
          }
          CHECK(st.passes == passes);
          CHECK(st.drafted == drafted);
          CHECK(st.accepted == accepted);
          CHECK(st.rollbacks == rollbacks);
          CHECK(rollbacks > 0);
        }
  }

  TEST_CASE("an end-of-sequence token stops both decoders at the same place") {
    auto m = Model::load(micro_path());
    const auto want = greedy(*m, kPrompt, kTokens);
    const std::int32_t eos = want[std::size_t(kTokens / 2)];
    const auto stop = std::find(want.begin(), want.end(), eos);
    const std::vector<std::int32_t> expect(want.begin(), stop + 1);
    DrafterOptions d;
    d.name = "oracle";
    d.continuation = want;
    d.prompt_tokens = int(kPrompt.size());
    auto drafter = make_drafter(d, m->config().n_vocab);
    CHECK(generate_speculative(*m, kPrompt, kTokens, *drafter, {3, Rollback::ring, eos}) == expect);
  }

  TEST_CASE("drafters: prompt lookup's most recent longest match, oracle slices, controlled corruption") {
    PromptLookupDrafter pl(3);
    const std::vector<std::int32_t> ctx = {1, 2, 3, 9, 1, 2, 3, 8, 5, 2, 3};
    // "5 2 3" has not occurred before; "2 3" has, most recently at 5..6 (and at 1..2).
    CHECK(pl.draft(ctx, 2) == std::vector<std::int32_t>{8, 5});
    CHECK(pl.draft(ctx, 9) == std::vector<std::int32_t>{8, 5, 2, 3});
    const std::vector<std::int32_t> tri = {4, 1, 2, 3, 7, 1, 2, 3};
    CHECK(pl.draft(tri, 1) == std::vector<std::int32_t>{7});
    const std::vector<std::int32_t> none = {1, 2, 3, 4};
    CHECK(pl.draft(none, 3).empty());

    const std::vector<std::int32_t> cont = {10, 11, 12, 13};
    OracleDrafter oracle(cont, 2);
    const std::vector<std::int32_t> at1 = {0, 0, 10};
    CHECK(oracle.draft(at1, 2) == std::vector<std::int32_t>{11, 12});
    CHECK(oracle.draft(at1, 9) == std::vector<std::int32_t>{11, 12, 13});
    const std::vector<std::int32_t> past = {0, 0, 10, 11, 12, 13};
    CHECK(oracle.draft(past, 2).empty());

    ControlledDrafter exact(cont, 2, 0.0, 16, 1), wrong(cont, 2, 1.0, 16, 1);
    CHECK(exact.draft(at1, 3) == std::vector<std::int32_t>{11, 12, 13});
    const auto w = wrong.draft(at1, 3);
    REQUIRE(w.size() == 3);
    for (std::size_t i = 0; i < 3; ++i) {
      CHECK(w[i] != cont[i + 1]);
      CHECK((w[i] >= 0 && w[i] < 16));
    }
  }

  TEST_CASE("verify costs: an entry per batch, a slot's bytes from the config, the ring's copies inside its pass") {
    auto m = Model::load(micro_path());
    const ModelConfig& c = m->config();
    const VerifyCosts v = measure_verify_costs(*m, kPrompt, 3, 1);
    CHECK(v.forward_seconds.size() == 3);
    CHECK(v.record_seconds.size() == 3);
    CHECK(v.record_seconds[0] == 0.0);  // a batch of 1 records no slot
    for (std::size_t i = 1; i < 3; ++i) {
      CHECK(v.record_seconds[i] > 0.0);
      CHECK(v.record_seconds[i] < v.ring_forward_seconds[i]);
    }
    std::uint64_t per_layer = std::uint64_t(c.ssm_conv - 1) * std::uint64_t(c.conv_channels()) +
                              std::uint64_t(c.ssm_v_heads) * std::uint64_t(c.ssm_state) * std::uint64_t(c.ssm_state);
    int gdn = 0;
    for (int l = 0; l < c.n_layer; ++l) gdn += c.is_gdn(l);
    CHECK(v.state_bytes == per_layer * std::uint64_t(gdn) * 4u);
    test::check_error([&] { measure_verify_costs(*m, kPrompt, m->max_batch() + 1, 1); }, "gemm batch");
  }

  TEST_CASE("bad input: draft length, drafter name, options, rollback") {
    auto m = Model::load(micro_path());
    test::check_error([&] { check_draft_len(*m, 0, "--draft-len"); }, "--draft-len", "at least 1", "got 0");
    CHECK_NOTHROW(check_draft_len(*m, m->max_batch() - 1));
    test::check_error([&] { check_draft_len(*m, m->max_batch(), "--draft-len"); }, "--draft-len",
                      cat(m->max_batch()), "gemm batch", cat("at most ", m->max_batch() - 1));
    DrafterOptions d;
    d.name = "lookahead";
    test::check_error([&] { make_drafter(d, 512); }, "unknown drafter 'lookahead'", "prompt-lookup", "oracle", "junk",
                      "controlled");
    d.name = "controlled";
    d.corrupt = 1.5;
    test::check_error([&] { make_drafter(d, 512); }, "corruption probability", "1.5");
    d.name = "prompt-lookup";
    d.ngram = 0;
    test::check_error([&] { make_drafter(d, 512); }, "n-gram", "at least 1");
    test::check_error([] { parse_rollback("snapshot"); }, "unknown rollback 'snapshot'", "ring", "recompute");
    PromptLookupDrafter pl(2);
    test::check_error([&] { generate_speculative(*m, kPrompt, 4, pl, {0, Rollback::ring, -1}); }, "at least 1");
    Session s = m->new_session();
    StateRing ring;
    const std::vector<std::int32_t> three = {1, 2, 3};
    m->forward(s, three, false, nullptr, &ring);
    test::check_error([&] { m->rollback(s, ring, 0); }, "rollback", "keep 0");
    test::check_error([&] { m->rollback(s, ring, 4); }, "rollback", "keep 4");
    const std::vector<std::int32_t> long_batch(std::size_t(m->max_batch() + 1), 1);
    test::check_error([&] { m->forward(s, long_batch, false, nullptr, &ring); }, "one gemm batch");
  }
}
