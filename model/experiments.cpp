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
                                 std::vector<std::vector<float>>* logits) {
  Session s = m.new_session();
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

Perplexity perplexity(Model& m, std::span<const std::int32_t> tokens, int chunk) {
  if (chunk < 2) fail("perplexity: chunk must be at least 2 tokens");
  Perplexity p;
  const int vocab = m.config().n_vocab;
  for (std::size_t i = 0; i + 1 < tokens.size(); i += std::size_t(chunk)) {
    const auto part = tokens.subspan(i, std::min(tokens.size() - i, std::size_t(chunk)));
    if (part.size() < 2) break;
    Session s = m.new_session();
    const auto logits = m.forward(s, part, true);
    for (std::size_t t = 0; t + 1 < part.size(); ++t) {
      const float* l = logits.data() + t * std::size_t(vocab);
      double mx = l[0];
      for (int v = 1; v < vocab; ++v) mx = std::max(mx, double(l[v]));
      double sum = 0;
      for (int v = 0; v < vocab; ++v) sum += std::exp(double(l[v]) - mx);
      p.nll_sum += std::log(sum) + mx - double(l[part[t + 1]]);
      ++p.predicted;
    }
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

LogitDivergence logit_divergence(Model& ref, Model& other, std::span<const std::int32_t> tokens, int chunk) {
  const int vocab = ref.config().n_vocab;
  if (other.config().n_vocab != vocab)
    fail(other.file().source, ": vocabulary of ", other.config().n_vocab, " tokens, ", ref.file().source, " has ", vocab);
  if (chunk < 2) fail("logit divergence: chunks of at least 2 tokens");
  LogitDivergence d;
  std::vector<double> kls;
  std::int64_t agree = 0;
  const auto log_softmax = [&](const float* l, std::vector<double>& out) {
    double mx = l[0];
    for (int v = 1; v < vocab; ++v) mx = std::max(mx, double(l[v]));
    double sum = 0;
    for (int v = 0; v < vocab; ++v) sum += std::exp(double(l[v]) - mx);
    const double lse = std::log(sum) + mx;
    out.resize(std::size_t(vocab));
    for (int v = 0; v < vocab; ++v) out[std::size_t(v)] = double(l[v]) - lse;
  };
  std::vector<double> lp, lq;
  for (std::size_t at = 0; at + 1 < tokens.size(); at += std::size_t(chunk)) {
    const auto part = tokens.subspan(at, std::min(tokens.size() - at, std::size_t(chunk)));
    if (part.size() < 2) break;
    const auto a = all_logits(ref, part), b = all_logits(other, part);
    for (std::size_t t = 0; t + 1 < part.size(); ++t) {
      const float* la = a.data() + t * std::size_t(vocab);
      const float* lb = b.data() + t * std::size_t(vocab);
      log_softmax(la, lp);
      log_softmax(lb, lq);
      double kl = 0;
      for (int v = 0; v < vocab; ++v) {
        kl += std::exp(lp[std::size_t(v)]) * (lp[std::size_t(v)] - lq[std::size_t(v)]);
        d.max_abs_logit = std::max(d.max_abs_logit, std::fabs(double(la[v]) - double(lb[v])));
      }
      kls.push_back(std::max(0.0, kl));
      agree += std::max_element(la, la + vocab) - la == std::max_element(lb, lb + vocab) - lb;
      const auto next = std::size_t(part[t + 1]);
      d.ref_ppl.nll_sum -= lp[next];
      d.other_ppl.nll_sum -= lq[next];
      ++d.ref_ppl.predicted;
      ++d.other_ppl.predicted;
    }
  }
  d.positions = std::int64_t(kls.size());
  if (kls.empty()) fail("logit divergence: no predicted position (", tokens.size(), " tokens)");
  for (double k : kls) d.kl_mean += k;
  d.kl_mean /= double(kls.size());
  std::sort(kls.begin(), kls.end());
  d.kl_max = kls.back();
  d.kl_p99 = kls[std::min(kls.size() - 1, std::size_t(0.99 * double(kls.size())))];
  d.top1_agreement = double(agree) / double(kls.size());
  return d;
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
