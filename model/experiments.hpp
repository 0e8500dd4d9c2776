// Experiment hooks as plain functions, for the TOML runner and the CLI: prefill / decode speed,
// perplexity, greedy continuations (for equivalence across arms) and a per-op profile of decode.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/model.hpp"

namespace ternlab::model {

struct Speed {
  int prompt_tokens = 0, decode_tokens = 0;
  double prefill_seconds = 0, decode_seconds = 0;
  double prefill_tok_s() const { return prompt_tokens / prefill_seconds; }
  double decode_tok_s() const { return decode_tokens / decode_seconds; }
};

// Prefills `prompt` (gemm, chunked) then decodes `n` greedy tokens one at a time (gemv).
Speed measure_speed(Model& m, std::span<const std::int32_t> prompt, int n);

// Greedy continuation of `prompt`: prefill, then n - 1 decode steps. Also returns the logits of
// every step (for max |logit difference| reports) when `logits` is given.
std::vector<std::int32_t> greedy(Model& m, std::span<const std::int32_t> prompt, int n,
                                 std::vector<std::vector<float>>* logits = nullptr);

struct Perplexity {
  double nll_sum = 0;
  std::int64_t predicted = 0;
  double value() const;
};
// Splits `tokens` into chunks of `chunk` tokens, each from a fresh state; every token after the
// first of a chunk is predicted.
Perplexity perplexity(Model& m, std::span<const std::int32_t> tokens, int chunk);

// Logits at every position of `tokens` (tokens x vocab, row-major) from one fresh session: row t
// scores the token after tokens[t]. Refuses an empty sequence, an id outside the vocabulary, and a
// sequence longer than the file's qwen35.context_length (naming the file and the key).
std::vector<float> all_logits(Model& m, std::span<const std::int32_t> tokens);

// How far `other`'s next-token distributions are from `ref`'s over `tokens`, in chunks of `chunk`
// tokens from a fresh state (as perplexity): KL(p_ref || p_other) per predicted position, the share
// of positions whose argmax agrees, and both perplexities. The two models must share a vocabulary.
struct LogitDivergence {
  std::int64_t positions = 0;
  double kl_mean = 0, kl_max = 0, kl_p99 = 0;
  double top1_agreement = 0;  // fraction of positions
  double max_abs_logit = 0;   // max |logit difference|
  Perplexity ref_ppl, other_ppl;
};
LogitDivergence logit_divergence(Model& ref, Model& other, std::span<const std::int32_t> tokens, int chunk);

// Per-op wall time of one decode token after prefilling `prompt`.
OpProfile profile_decode(Model& m, std::span<const std::int32_t> prompt);

// Deterministic pseudo-random token ids below `vocab` (prompts for speed runs).
std::vector<std::int32_t> random_tokens(int n, int vocab, std::uint64_t seed);

}  // namespace ternlab::model
