// Next-token choice: greedy (temperature 0) or temperature + top-p (nucleus) sampling with a seeded
// generator, so runs are reproducible.
#pragma once

#include <cstdint>
#include <span>

namespace ternlab::model {

struct SamplerOptions {
  float temperature = 0.0f;  // 0: greedy
  float top_p = 1.0f;
  std::uint64_t seed = 1;
};

class Sampler {
 public:
  explicit Sampler(SamplerOptions o) : o_(o), state_(o.seed) {}
  std::int32_t sample(std::span<const float> logits);

 private:
  double uniform();
  SamplerOptions o_;
  std::uint64_t state_;
};

// Index of the largest logit (the lowest index on ties).
std::int32_t argmax(std::span<const float> logits);

}  // namespace ternlab::model
