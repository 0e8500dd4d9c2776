// Experiment hooks as plain functions, for the TOML runner and the CLI: prefill / decode speed,
// perplexity, greedy continuations (for equivalence across arms) and a per-op profile of decode.
#pragma once

#include <cstdint>
#include <functional>
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
// every step (for max |logit difference| reports) when `logits` is given. With `gdn_steps` the
// prompt's Gated DeltaNet runs token by token too (Session::gdn_steps), so the tokens do not
// depend on the chunked form's rounding: models that differ only in LoadOptions::gdn_chunk agree.
std::vector<std::int32_t> greedy(Model& m, std::span<const std::int32_t> prompt, int n,
                                 std::vector<std::vector<float>>* logits = nullptr, bool gdn_steps = false);

struct Perplexity {
  double nll_sum = 0, nll_sq_sum = 0;  // over predicted tokens (natural log)
  std::int64_t predicted = 0;
  std::vector<double> chunk_values;    // each chunk's (window's) own perplexity, in order
  double value() const;
  // Standard error of value(): the per-token negative log-likelihoods' standard error of the mean,
  // carried through exp (delta method), as llama-perplexity reports it. 0 below two tokens.
  double standard_error() const;
};
// Called for every predicted position: its logits (vocab floats) and the token that came next.
using ScoredPosition = std::function<void(const float* logits, std::int32_t next)>;
// Splits `tokens` into windows of `chunk` tokens, each from a fresh state. With stride 0 the windows
// do not overlap and every token after a window's first is predicted. With 0 < stride < chunk each
// window starts `stride` tokens after the last and predicts only its last `stride` tokens (the first
// window predicts all of its own): every token is scored once, each with up to chunk - 1 of context.
Perplexity perplexity(Model& m, std::span<const std::int32_t> tokens, int chunk, int stride = 0,
                      const ScoredPosition& on_position = {});

// Logits at every position of `tokens` (tokens x vocab, row-major) from one fresh session: row t
// scores the token after tokens[t]. Refuses an empty sequence, an id outside the vocabulary, and a
// sequence longer than the file's qwen35.context_length (naming the file and the key).
std::vector<float> all_logits(Model& m, std::span<const std::int32_t> tokens);

// How far one model's next-token distributions are from a reference's: KL(p_ref || p_other) per
// predicted position, the share of positions whose argmax agrees, both perplexities and the
// log-ratio of the two with its standard error (as llama-perplexity's KL-divergence mode reports).
struct LogitDivergence {
  std::int64_t positions = 0;
  double kl_mean = 0, kl_p90 = 0, kl_p99 = 0, kl_max = 0;
  double top1_agreement = 0;  // fraction of positions
  double max_abs_logit = 0;   // max |logit difference|
  Perplexity ref_ppl, other_ppl;
  double log_ratio = 0, log_ratio_error = 0;  // mean of nll_other - nll_ref per position, its standard error
};
// Accumulates LogitDivergence position by position (reference logits, other logits, next token).
class DivergenceAccumulator {
 public:
  explicit DivergenceAccumulator(int vocab) : vocab_(vocab) {}
  void add(const float* ref_logits, const float* other_logits, std::int32_t next);
  LogitDivergence result() const;

 private:
  int vocab_;
  std::vector<double> kl_, diff_;
  std::int64_t agree_ = 0;
  double max_abs_ = 0;
  Perplexity ref_, other_;
  std::vector<double> lp_, lq_;
};
// The two models over `tokens` in chunks of `chunk` tokens from a fresh state (as perplexity). They
// must share a vocabulary.
LogitDivergence logit_divergence(Model& ref, Model& other, std::span<const std::int32_t> tokens, int chunk);

// Per-op wall time of one decode token after prefilling `prompt`.
OpProfile profile_decode(Model& m, std::span<const std::int32_t> prompt);

// Deterministic pseudo-random token ids below `vocab` (prompts for speed runs).
std::vector<std::int32_t> random_tokens(int n, int vocab, std::uint64_t seed);

}  // namespace ternlab::model
