#include "model/experiments.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "common/error.hpp"
#include "model/sampler.hpp"

namespace ternlab::model {

namespace {
double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
}  // namespace

Speed measure_speed(Model& m, std::span<const std::int32_t> prompt, int n) {
  Speed s;
  s.prompt_tokens = int(prompt.size());
  s.decode_tokens = n;
  Session session = m.new_session();
  double t0 = now();
  auto logits = m.forward(session, prompt);
  s.prefill_seconds = now() - t0;
  t0 = now();
  for (int i = 0; i < n; ++i) {
    const std::int32_t next = argmax(logits);
    logits = m.forward(session, std::span(&next, 1));
  }
  s.decode_seconds = now() - t0;
  return s;
}

std::vector<std::int32_t> greedy(Model& m, std::span<const std::int32_t> prompt, int n,
                                 std::vector<std::vector<float>>* logits, bool gdn_steps) {
  Session s = m.new_session();
  s.gdn_steps = gdn_steps;
  std::vector<std::int32_t> out;
  auto l = m.forward(s, prompt);
  for (int i = 0; i < n; ++i) {
    if (logits) logits->push_back(l);
    out.push_back(argmax(l));
    if (i + 1 < n) l = m.forward(s, std::span(&out.back(), 1));
  }
  return out;
}

double Perplexity::value() const { return predicted ? std::exp(nll_sum / double(predicted)) : 0.0; }

double Perplexity::standard_error() const {
  if (predicted < 2) return 0.0;
  const double n = double(predicted), mean = nll_sum / n;
  const double var = std::max(0.0, (nll_sq_sum / n - mean * mean) * n / (n - 1));
  return value() * std::sqrt(var / n);
}

namespace {

// log sum exp(l), in double, shifted by the largest logit.
double log_sum_exp(const float* l, int vocab) {
  double mx = l[0];
  for (int v = 1; v < vocab; ++v) mx = std::max(mx, double(l[v]));
  double sum = 0;
  for (int v = 0; v < vocab; ++v) sum += std::exp(double(l[v]) - mx);
  return std::log(sum) + mx;
}

// -log softmax(l)[next].
double negative_log_likelihood(const float* l, int vocab, std::int32_t next) { return log_sum_exp(l, vocab) - double(l[next]); }

void add_token(Perplexity& p, double nll) {
  p.nll_sum += nll;
  p.nll_sq_sum += nll * nll;
  ++p.predicted;
}

}  // namespace

Perplexity perplexity(Model& m, std::span<const std::int32_t> tokens, int chunk, int stride,
                      const ScoredPosition& on_position) {
  if (chunk < 2) fail("perplexity: chunk must be at least 2 tokens");
  if (stride < 0 || stride >= chunk) fail("perplexity: stride ", stride, " must be 0 (no overlap) or below the chunk ", chunk);
  Perplexity p;
  const int vocab = m.config().n_vocab;
  const std::size_t step = std::size_t(stride ? stride : chunk);
  for (std::size_t i = 0; i + 1 < tokens.size(); i += step) {
    const auto part = tokens.subspan(i, std::min(tokens.size() - i, std::size_t(chunk)));
    if (part.size() < 2) break;
    // A strided window predicts only the tokens the one before did not reach: past position
    // chunk - stride - 1 (its last `stride` positions, fewer in a short last window).
    const std::size_t first = (stride && i > 0) ? std::size_t(chunk - stride - 1) : 0;
    Session s = m.new_session();
    const auto logits = m.forward(s, part, true);
    double chunk_nll = 0;
    for (std::size_t t = first; t + 1 < part.size(); ++t) {
      const float* l = logits.data() + t * std::size_t(vocab);
      const double nll = negative_log_likelihood(l, vocab, part[t + 1]);
      add_token(p, nll);
      chunk_nll += nll;
      if (on_position) on_position(l, part[t + 1]);
    }
    p.chunk_values.push_back(std::exp(chunk_nll / double(part.size() - 1 - first)));
    if (i + part.size() >= tokens.size()) break;  // the last window reached the end
  }
  return p;
}

std::vector<float> all_logits(Model& m, std::span<const std::int32_t> tokens) {
  const auto& c = m.config();
  const std::string& file = m.file().source;
  if (tokens.empty()) fail(file, ": logits of an empty token sequence");
  if (c.context_length && tokens.size() > c.context_length)
    fail(file, ": ", tokens.size(), " tokens exceed the model's context length (qwen35.context_length = ",
         c.context_length, ")");
  for (std::size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] < 0 || tokens[i] >= c.n_vocab)
      fail(file, ": token ", i, " is id ", tokens[i], ", outside the vocabulary [0, ", c.n_vocab,
           ") of token_embd.weight");
  Session s = m.new_session();
  return m.forward(s, tokens, true);
}

void DivergenceAccumulator::add(const float* la, const float* lb, std::int32_t next) {
  const auto log_softmax = [&](const float* l, std::vector<double>& out) {
    const double lse = log_sum_exp(l, vocab_);
    out.resize(std::size_t(vocab_));
    for (int v = 0; v < vocab_; ++v) out[std::size_t(v)] = double(l[v]) - lse;
  };
  if (next < 0 || next >= vocab_) fail("logit divergence: token ", next, " outside the vocabulary of ", vocab_);
  log_softmax(la, lp_);
  log_softmax(lb, lq_);
  double kl = 0;
  for (int v = 0; v < vocab_; ++v) {
    kl += std::exp(lp_[std::size_t(v)]) * (lp_[std::size_t(v)] - lq_[std::size_t(v)]);
    max_abs_ = std::max(max_abs_, std::fabs(double(la[v]) - double(lb[v])));
  }
  kl_.push_back(std::max(0.0, kl));
  agree_ += std::max_element(la, la + vocab_) - la == std::max_element(lb, lb + vocab_) - lb;
  const double nll_ref = -lp_[std::size_t(next)], nll_other = -lq_[std::size_t(next)];
  add_token(ref_, nll_ref);
  add_token(other_, nll_other);
  diff_.push_back(nll_other - nll_ref);
}

LogitDivergence DivergenceAccumulator::result() const {
  if (kl_.empty()) fail("logit divergence: no predicted position");
  LogitDivergence d;
  d.positions = std::int64_t(kl_.size());
  for (double k : kl_) d.kl_mean += k;
  d.kl_mean /= double(kl_.size());
  std::vector<double> sorted = kl_;
  std::sort(sorted.begin(), sorted.end());
  const auto at = [&](double q) { return sorted[std::min(sorted.size() - 1, std::size_t(q * double(sorted.size())))]; };
  d.kl_p90 = at(0.90);
  d.kl_p99 = at(0.99);
  d.kl_max = sorted.back();
  d.top1_agreement = double(agree_) / double(kl_.size());
  d.max_abs_logit = max_abs_;
  d.ref_ppl = ref_;
  d.other_ppl = other_;
  const double n = double(diff_.size());
  double sum = 0, sq = 0;
  for (double x : diff_) sum += x, sq += x * x;
  d.log_ratio = sum / n;
  d.log_ratio_error = n > 1 ? std::sqrt(std::max(0.0, (sq / n - d.log_ratio * d.log_ratio) * n / (n - 1)) / n) : 0.0;
  return d;
}

LogitDivergence logit_divergence(Model& ref, Model& other, std::span<const std::int32_t> tokens, int chunk) {
  const int vocab = ref.config().n_vocab;
  if (other.config().n_vocab != vocab)
    fail(other.file().source, ": vocabulary of ", other.config().n_vocab, " tokens, ", ref.file().source, " has ", vocab);
  if (chunk < 2) fail("logit divergence: chunks of at least 2 tokens");
  if (tokens.size() < 2) fail("logit divergence: no predicted position (", tokens.size(), " tokens)");
  DivergenceAccumulator acc(vocab);
  for (std::size_t at = 0; at + 1 < tokens.size(); at += std::size_t(chunk)) {
    const auto part = tokens.subspan(at, std::min(tokens.size() - at, std::size_t(chunk)));
    if (part.size() < 2) break;
    const auto a = all_logits(ref, part), b = all_logits(other, part);
    for (std::size_t t = 0; t + 1 < part.size(); ++t)
      acc.add(a.data() + t * std::size_t(vocab), b.data() + t * std::size_t(vocab), part[t + 1]);
  }
  return acc.result();
}

OpProfile profile_decode(Model& m, std::span<const std::int32_t> prompt) {
  Session s = m.new_session();
  const auto logits = m.forward(s, prompt);
  const std::int32_t next = argmax(logits);
  OpProfile prof;
  m.forward(s, std::span(&next, 1), false, &prof);
  return prof;
}

std::vector<std::int32_t> random_tokens(int n, int vocab, std::uint64_t seed) {
  std::vector<std::int32_t> out;
  std::uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  for (int i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    out.push_back(std::int32_t(x % std::uint64_t(vocab)));
  }
  return out;
}

}  // namespace ternlab::model
