#include "model/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "common/error.hpp"

namespace ternlab::model {

std::int32_t argmax(std::span<const float> logits) {
  if (logits.empty()) fail("argmax of no logits");
  return std::int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

double Sampler::uniform() {
  std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return double((z ^ (z >> 31)) >> 11) * 0x1.0p-53;
}

std::int32_t Sampler::sample(std::span<const float> logits) {
  if (o_.temperature <= 0.0f) return argmax(logits);
  if (!(o_.top_p > 0.0f && o_.top_p <= 1.0f)) fail("top_p must be in (0, 1], got ", o_.top_p);
  const float mx = *std::max_element(logits.begin(), logits.end());
  std::vector<std::int32_t> idx(logits.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::vector<double> p(logits.size());
  double sum = 0;
  for (std::size_t i = 0; i < p.size(); ++i) sum += (p[i] = std::exp(double(logits[i] - mx) / o_.temperature));
  std::sort(idx.begin(), idx.end(), [&](auto a, auto b) { return p[std::size_t(a)] > p[std::size_t(b)]; });
  // Keep the smallest prefix whose mass reaches top_p, then draw from it.
  double kept = 0;
  std::size_t n = 0;
  while (n < idx.size() && kept < o_.top_p * sum) kept += p[std::size_t(idx[n++])];
  double r = uniform() * kept;
  for (std::size_t i = 0; i < n; ++i) {
    r -= p[std::size_t(idx[i])];
    if (r <= 0) return idx[i];
  }
  return idx[n - 1];
}

}  // namespace ternlab::model
