// Speculative decoding: a drafter guesses the next few tokens, one batched forward pass (gemm)
// verifies them all, greedy acceptance keeps the longest agreeing prefix plus the model's own next
// token, and the states are rolled back past the rejected drafts. The output is the plain greedy
// continuation, token for token, whatever the drafter proposes (docs/speculative.md).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "model/model.hpp"

namespace ternlab::model {

// Proposes up to `n` tokens to follow `context` (the prompt and every token emitted so far).
class Drafter {
 public:
  virtual ~Drafter() = default;
  virtual std::string name() const = 0;
  virtual std::vector<std::int32_t> draft(std::span<const std::int32_t> context, int n) = 0;
};

// Prompt lookup: the most recent earlier occurrence of the context's last `ngram` tokens (then
// ngram - 1, ... down to 1 when none matches), and the tokens that followed it there.
class PromptLookupDrafter final : public Drafter {
 public:
  explicit PromptLookupDrafter(int ngram);
  std::string name() const override { return "prompt-lookup"; }
  std::vector<std::int32_t> draft(std::span<const std::int32_t> context, int n) override;

 private:
  int ngram_;
};

// Replays a known greedy continuation of a prompt of `prompt_tokens` tokens: every draft is the
// model's own next token, so every one is accepted (while the continuation lasts).
class OracleDrafter final : public Drafter {
 public:
  OracleDrafter(std::vector<std::int32_t> continuation, int prompt_tokens);
  std::string name() const override { return "oracle"; }
  std::vector<std::int32_t> draft(std::span<const std::int32_t> context, int n) override;

 private:
  std::vector<std::int32_t> continuation_;
  int prompt_tokens_;
};

// Uniformly random tokens below `vocab`: accepted only by chance (about 1 in vocab).
class JunkDrafter final : public Drafter {
 public:
  JunkDrafter(int vocab, std::uint64_t seed);
  std::string name() const override { return "junk"; }
  std::vector<std::int32_t> draft(std::span<const std::int32_t> context, int n) override;

 private:
  int vocab_;
  std::uint64_t state_;
};

// The oracle's continuation with each drafted token replaced, with probability `corrupt`, by a
// different token: draft i (from 1) is accepted with probability (1 - corrupt)^i, on any model.
class ControlledDrafter final : public Drafter {
 public:
  ControlledDrafter(std::vector<std::int32_t> continuation, int prompt_tokens, double corrupt, int vocab,
                    std::uint64_t seed);
  std::string name() const override { return "controlled"; }
  std::vector<std::int32_t> draft(std::span<const std::int32_t> context, int n) override;

 private:
  OracleDrafter oracle_;
  double corrupt_;
  int vocab_;
  std::uint64_t state_;
};

// The drafter names make_drafter accepts.
const std::vector<std::string>& drafter_names();

struct DrafterOptions {
  std::string name = "prompt-lookup";
  int ngram = 3;                           // prompt-lookup: longest n-gram matched
  double corrupt = 0.5;                    // controlled: probability that a draft is replaced
  std::uint64_t seed = 1;                  // junk, controlled
  std::vector<std::int32_t> continuation;  // oracle, controlled: the greedy continuation
  int prompt_tokens = 0;                   // oracle, controlled: tokens of context before it
};
// Throws naming the drafter and the known names, or the bad option.
std::unique_ptr<Drafter> make_drafter(const DrafterOptions& o, int vocab);

// How a rejected draft is undone in the Gated DeltaNet layers. ring: the verify pass records the
// states after each token (StateRing) and rollback swaps one back in. recompute: the states before
// the pass are copied once, and on a rejection restored and the accepted tokens run again.
enum class Rollback { ring, recompute };
Rollback parse_rollback(const std::string& name);  // "ring" | "recompute"; throws otherwise

// Refuses a draft length below 1 or one whose verification batch (drafts + 1) is above the
// model's gemm batch (Model::max_batch), naming `what` (a flag or a config key).
void check_draft_len(const Model& m, int draft_len, const std::string& what = "draft length");

struct SpeculativeOptions {
  int draft_len = 2;
  Rollback rollback = Rollback::ring;
  std::int32_t eos = -1;  // stop after emitting this token (-1: never)
};

struct SpeculativeStats {
  int tokens = 0;    // emitted, the first one (from the prompt's logits) included
  int passes = 0;    // forward passes after the prompt: verifications, and plain steps without drafts
  int drafted = 0;   // drafts verified
  int accepted = 0;  // drafts accepted
  int rollbacks = 0;
  double prefill_seconds = 0, draft_seconds = 0, verify_seconds = 0, rollback_seconds = 0;
  double decode_seconds() const { return draft_seconds + verify_seconds + rollback_seconds; }
  double acceptance() const { return drafted ? double(accepted) / drafted : 0.0; }
  // Tokens emitted per forward pass after the prompt (1 without speculation).
  double tokens_per_pass() const { return passes ? double(tokens - 1) / passes : 0.0; }
  // Decode tok/s after the first token, comparable with Speed::decode_tok_s.
  double decode_tok_s() const { return decode_seconds() > 0 ? (tokens - 1) / decode_seconds() : 0.0; }
};

// Up to `n` greedy tokens after `prompt`, verified `draft_len` drafts at a time: the same tokens
// as plain greedy decoding (experiments.hpp greedy), stopping early only at `eos`.
std::vector<std::int32_t> generate_speculative(Model& m, std::span<const std::int32_t> prompt, int n,
                                               Drafter& drafter, const SpeculativeOptions& o,
                                               SpeculativeStats* stats = nullptr);

// What verification and rollback cost on a model, per verification batch of T = 1 .. max_batch
// tokens (T - 1 drafts), each the median over `rounds` interleaved rounds from the same state
// (after `prompt`): a forward of T tokens without and with the ring recording, the ring's copies
// alone, and a ring rollback to 1 kept token. Recomputation after keeping j tokens costs one
// state copy (one ring slot) plus a forward of j tokens: forward_seconds[j - 1]. With `cpu_clock`
// every time is process CPU time (seconds_now).
struct VerifyCosts {
  std::vector<double> forward_seconds, ring_forward_seconds, record_seconds, rollback_seconds;  // [T - 1]
  std::uint64_t state_bytes = 0;  // one slot: every GDN layer's conv window and recurrent state
};
VerifyCosts measure_verify_costs(Model& m, std::span<const std::int32_t> prompt, int max_batch, int rounds,
                                 bool cpu_clock = false);

}  // namespace ternlab::model
