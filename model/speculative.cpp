#include "model/speculative.hpp"

#include <algorithm>
#include <chrono>

#include "common/error.hpp"
#include "common/strings.hpp"
#include "model/sampler.hpp"

namespace ternlab::model {

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// xorshift64*: a small seeded stream, so the junk and controlled drafts are reproducible.
std::uint64_t next_random(std::uint64_t& s) {
  s ^= s >> 12;
  s ^= s << 25;
  s ^= s >> 27;
  return s * 0x2545f4914f6cdd1dull;
}
std::uint64_t seed_state(std::uint64_t seed) { return seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull; }

}  // namespace

// --- drafters -----------------------------------------------------------------------------------

PromptLookupDrafter::PromptLookupDrafter(int ngram) : ngram_(ngram) {
  if (ngram < 1) fail("prompt lookup: the n-gram size must be at least 1, got ", ngram);
}

std::vector<std::int32_t> PromptLookupDrafter::draft(std::span<const std::int32_t> context, int n) {
  const std::size_t size = context.size();
  for (std::size_t g = std::min<std::size_t>(std::size_t(ngram_), size > 0 ? size - 1 : 0); g >= 1; --g) {
    const auto tail = context.last(g);
    // Most recent first: the match must end before the context does, so something follows it.
    for (std::size_t start = size - g; start-- > 0;) {
      if (!std::equal(tail.begin(), tail.end(), context.begin() + std::ptrdiff_t(start))) continue;
      const std::size_t from = start + g;
      const std::size_t take = std::min(std::size_t(std::max(n, 0)), size - from);
      return {context.begin() + std::ptrdiff_t(from), context.begin() + std::ptrdiff_t(from + take)};
    }
  }
  return {};
}

OracleDrafter::OracleDrafter(std::vector<std::int32_t> continuation, int prompt_tokens)
    : continuation_(std::move(continuation)), prompt_tokens_(prompt_tokens) {}

std::vector<std::int32_t> OracleDrafter::draft(std::span<const std::int32_t> context, int n) {
  const std::int64_t at = std::int64_t(context.size()) - prompt_tokens_;
  if (at < 0 || at >= std::int64_t(continuation_.size()) || n < 1) return {};
  const std::int64_t end = std::min<std::int64_t>(at + n, std::int64_t(continuation_.size()));
  return {continuation_.begin() + at, continuation_.begin() + end};
}

JunkDrafter::JunkDrafter(int vocab, std::uint64_t seed) : vocab_(vocab), state_(seed_state(seed)) {
  if (vocab < 1) fail("junk drafter: vocabulary of ", vocab, " tokens");
}

std::vector<std::int32_t> JunkDrafter::draft(std::span<const std::int32_t>, int n) {
  std::vector<std::int32_t> out;
  for (int i = 0; i < n; ++i) out.push_back(std::int32_t(next_random(state_) % std::uint64_t(vocab_)));
  return out;
}

ControlledDrafter::ControlledDrafter(std::vector<std::int32_t> continuation, int prompt_tokens, double corrupt,
                                     int vocab, std::uint64_t seed)
    : oracle_(std::move(continuation), prompt_tokens), corrupt_(corrupt), vocab_(vocab), state_(seed_state(seed)) {
  if (!(corrupt >= 0.0 && corrupt <= 1.0))
    fail("controlled drafter: the corruption probability must be within [0, 1], got ", corrupt);
  if (vocab < 2) fail("controlled drafter: a corrupted token needs a vocabulary of at least 2, got ", vocab);
}

std::vector<std::int32_t> ControlledDrafter::draft(std::span<const std::int32_t> context, int n) {
  std::vector<std::int32_t> out = oracle_.draft(context, n);
  for (auto& t : out) {
    const double u = double(next_random(state_) >> 11) * 0x1.0p-53;  // [0, 1)
    // A different token for sure: shifted by 1 .. vocab - 1.
    if (u < corrupt_) t = std::int32_t((std::uint64_t(t) + 1 + next_random(state_) % std::uint64_t(vocab_ - 1)) %
                                       std::uint64_t(vocab_));
  }
  return out;
}

const std::vector<std::string>& drafter_names() {
  static const std::vector<std::string> names = {"prompt-lookup", "oracle", "junk", "controlled"};
  return names;
}

std::unique_ptr<Drafter> make_drafter(const DrafterOptions& o, int vocab) {
  if (o.name == "prompt-lookup") return std::make_unique<PromptLookupDrafter>(o.ngram);
  if (o.name == "oracle") return std::make_unique<OracleDrafter>(o.continuation, o.prompt_tokens);
  if (o.name == "junk") return std::make_unique<JunkDrafter>(vocab, o.seed);
  if (o.name == "controlled")
    return std::make_unique<ControlledDrafter>(o.continuation, o.prompt_tokens, o.corrupt, vocab, o.seed);
  fail("unknown drafter '", o.name, "' (known: ", join(drafter_names()), ")");
}

Rollback parse_rollback(const std::string& name) {
  if (name == "ring") return Rollback::ring;
  if (name == "recompute") return Rollback::recompute;
  fail("unknown rollback '", name, "' (known: ring, recompute)");
}

void check_draft_len(const Model& m, int draft_len, const std::string& what) {
  if (draft_len < 1) fail(what, " must be at least 1, got ", draft_len);
  if (draft_len + 1 > m.max_batch())
    fail(what, " ", draft_len, " is too long: a verification pass (drafts + 1 tokens) must fit one gemm batch of ",
         m.max_batch(), " tokens, so at most ", m.max_batch() - 1);
}

// --- decoding -----------------------------------------------------------------------------------

namespace {

// The recompute rollback's copy of the Gated DeltaNet states before a verify pass.
struct SavedStates {
  int pos = 0;
  std::vector<std::vector<float>> conv;
  std::vector<GdnState> state;
  void save(const Session& s) {
    pos = s.pos;
    conv.resize(s.conv.size());
    state.resize(s.state.size());
    for (std::size_t l = 0; l < s.conv.size(); ++l) {
      conv[l].assign(s.conv[l].begin(), s.conv[l].end());
      state[l].assign(s.state[l].begin(), s.state[l].end());
    }
  }
  // Back to the saved position: GDN states swapped in, KV caches cut to `pos` tokens.
  void restore(const ModelConfig& c, Session& s) {
    const std::size_t kv = std::size_t(c.n_head_kv) * std::size_t(c.head_dim);
    for (std::size_t l = 0; l < s.conv.size(); ++l) {
      s.conv[l].swap(conv[l]);
      s.state[l].swap(state[l]);
      if (!c.is_gdn(int(l))) {
        s.k_cache[l].cut(pos);
        s.v_cache[l].resize(std::size_t(pos) * kv);
      }
    }
    s.pos = pos;
  }
};

}  // namespace

std::vector<std::int32_t> generate_speculative(Model& m, std::span<const std::int32_t> prompt, int n,
                                               Drafter& drafter, const SpeculativeOptions& o,
                                               SpeculativeStats* stats) {
  check_draft_len(m, o.draft_len);
  if (prompt.empty()) fail("speculative decoding: empty prompt");
  SpeculativeStats st;
  std::vector<std::int32_t> out;
  if (n < 1) {
    if (stats) *stats = st;
    return out;
  }
  const int vocab = m.config().n_vocab;
  Session s = m.new_session();
  StateRing ring;
  SavedStates saved;
  std::vector<std::int32_t> context(prompt.begin(), prompt.end());
  double t0 = now();
  out.push_back(argmax(m.forward(s, prompt)));
  st.prefill_seconds = now() - t0;
  // A verify pass is several tokens in one call; its recurrence runs token by token, as plain
  // decoding's does, so that its logits are plain decoding's bits.
  s.gdn_steps = true;
  context.push_back(out.back());

  while (int(out.size()) < n && out.back() != o.eos) {
    // Never draft past the last token asked for: every accepted draft is an emitted token.
    const int room = std::min(o.draft_len, n - int(out.size()) - 1);
    t0 = now();
    std::vector<std::int32_t> batch = {out.back()};
    if (room > 0) {
      auto d = drafter.draft(context, room);
      if (int(d.size()) > room) d.resize(std::size_t(room));
      for (auto t : d)
        if (t < 0 || t >= vocab) fail(drafter.name(), " drafter proposed token ", t, " outside the vocabulary (", vocab, ")");
      batch.insert(batch.end(), d.begin(), d.end());
    }
    const int drafts = int(batch.size()) - 1;
    st.draft_seconds += now() - t0;

    const bool ring_rollback = o.rollback == Rollback::ring && drafts > 0;
    if (o.rollback == Rollback::recompute && drafts > 0) {
      t0 = now();
      saved.save(s);  // paid on every pass with drafts: rollback cost, like the ring's copies
      st.rollback_seconds += now() - t0;
    }
    t0 = now();
    const double recorded = ring.record_seconds;
    const auto logits = m.forward(s, batch, true, nullptr, ring_rollback ? &ring : nullptr);
    // Greedy acceptance: draft i + 1 stands while it is the model's own choice after token i.
    int accepted = 0;
    std::int32_t next = argmax(std::span(logits).first(std::size_t(vocab)));
    while (accepted < drafts && next == batch[std::size_t(accepted + 1)]) {
      ++accepted;
      next = argmax(std::span(logits).subspan(std::size_t(accepted) * std::size_t(vocab), std::size_t(vocab)));
    }
    const double verify_end = now();
    // The ring's copies are rollback cost paid in advance: counted there, not as verification.
    const double copies = ring.record_seconds - recorded;
    st.verify_seconds += verify_end - t0 - copies;
    st.rollback_seconds += copies;
    ++st.passes;
    st.drafted += drafts;
    st.accepted += accepted;

    if (accepted < drafts) {
      t0 = now();
      ++st.rollbacks;
      if (o.rollback == Rollback::ring) {
        m.rollback(s, ring, accepted + 1);
      } else {
        saved.restore(m.config(), s);
        m.forward(s, std::span(batch).first(std::size_t(accepted + 1)));
      }
      st.rollback_seconds += now() - t0;
    }
    for (int i = 1; i <= accepted && out.back() != o.eos; ++i) {
      out.push_back(batch[std::size_t(i)]);
      context.push_back(out.back());
    }
    if (out.back() == o.eos) break;
    out.push_back(next);
    context.push_back(next);
  }
  st.tokens = int(out.size());
  if (stats) *stats = st;
  return out;
}

// --- costs --------------------------------------------------------------------------------------

VerifyCosts measure_verify_costs(Model& m, std::span<const std::int32_t> prompt, int max_batch, int rounds,
                                 bool cpu_clock) {
  if (max_batch < 1 || max_batch > m.max_batch())
    fail("verification batch ", max_batch, " outside 1 .. ", m.max_batch(), " (the gemm batch)");
  if (rounds < 1) fail("rounds must be at least 1, got ", rounds);
  if (prompt.empty()) fail("measure_verify_costs: empty prompt");
  Session base = m.new_session();
  m.forward(base, prompt);
  base.gdn_steps = true;  // as generate_speculative's verify passes
  const auto vocab = std::uint64_t(m.config().n_vocab);
  std::vector<std::int32_t> batch;
  for (int t = 0; t < max_batch; ++t) batch.push_back(std::int32_t((std::uint64_t(prompt[0]) + 7919u * std::uint64_t(t)) % vocab));
  const auto B = std::size_t(max_batch);
  std::vector<std::vector<double>> plain(B), ringed(B), record(B), back(B);
  StateRing ring;
  ring.cpu_clock = cpu_clock;
  const auto now = [cpu_clock] { return seconds_now(cpu_clock); };
  for (int r = 0; r < rounds; ++r)
    for (std::size_t T = 1; T <= B; ++T) {  // interleaved: every batch size once per round
      const auto tokens = std::span(batch).first(T);
      Session s = base;
      double t0 = now();
      m.forward(s, tokens, true);
      plain[T - 1].push_back(now() - t0);
      s = base;
      const double before = ring.record_seconds;
      t0 = now();
      m.forward(s, tokens, true, nullptr, &ring);
      ringed[T - 1].push_back(now() - t0);
      record[T - 1].push_back(ring.record_seconds - before);
      t0 = now();
      m.rollback(s, ring, 1);
      back[T - 1].push_back(now() - t0);
    }
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  VerifyCosts c;
  for (std::size_t i = 0; i < B; ++i) {
    c.forward_seconds.push_back(median(plain[i]));
    c.ring_forward_seconds.push_back(median(ringed[i]));
    c.record_seconds.push_back(median(record[i]));
    c.rollback_seconds.push_back(median(back[i]));
  }
  for (std::size_t l = 0; l < base.conv.size(); ++l)
    c.state_bytes += (base.conv[l].size() + base.state[l].size()) * sizeof(float);
  return c;
}

}  // namespace ternlab::model
