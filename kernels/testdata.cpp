#include "kernels/testdata.hpp"

#include <random>

#include "common/fp16.hpp"

namespace ternlab {

TernaryMatrix make_weights(std::int64_t rows, std::int64_t cols, std::uint64_t seed, Fill fill, ScaleKind scales) {
  TernaryMatrix m(rows, cols);
  std::mt19937_64 rng(seed);
  for (auto& u : m.codes) {
    switch (fill) {
      case Fill::random: u = std::uint8_t(rng() % 3); break;
      case Fill::zero: u = 1; break;
      case Fill::all_plus: u = 2; break;
      case Fill::all_minus: u = 0; break;
      case Fill::code3: u = std::uint8_t(rng() % 8 == 0 ? 3 : rng() % 3); break;
      case Fill::all_code3: u = 3; break;
    }
  }
  std::uniform_real_distribution<float> sd(0.005f, 0.05f);
  for (auto& s : m.scales) s = float_to_fp16(scales == ScaleKind::unit ? 1.0f : sd(rng));
  return m;
}

UnitActivations make_unit_activations(std::int64_t tokens, std::int64_t cols, std::uint64_t seed, ActFill fill,
                                      ForcedMax forced) {
  UnitActivations a;
  a.f.resize(std::size_t(tokens * cols));
  a.i8.resize(a.f.size());
  std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ull);
  for (std::int64_t t = 0; t < tokens; ++t)
    for (std::int64_t b0 = 0; b0 < cols; b0 += kQK) {
      const std::int64_t n = std::min<std::int64_t>(kQK, cols - b0);
      for (std::int64_t j = 0; j < n; ++j) {
        int v = 0;
        switch (fill) {
          case ActFill::random: v = int(rng() % 253) - 126; break;  // [-126, 126]
          case ActFill::extreme: v = rng() % 2 ? 126 : -127; break;
          case ActFill::constant: v = -127; break;
          case ActFill::zero: v = 0; break;
        }
        a.i8[std::size_t(t * cols + b0 + j)] = std::int8_t(v);
      }
      // One -127 per block makes it the first element of greatest magnitude: the scale is exactly 1.
      if (fill != ActFill::zero && (forced == ForcedMax::every_block || b0 == 0)) a.i8[std::size_t(t * cols + b0 + std::int64_t(rng() % std::uint64_t(n)))] = -127;
    }
  for (std::size_t i = 0; i < a.f.size(); ++i) a.f[i] = float(a.i8[i]);
  return a;
}

std::vector<float> make_float_activations(std::int64_t tokens, std::int64_t cols, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(std::size_t(tokens * cols));
  for (auto& v : x) v = nd(rng);
  return x;
}

}  // namespace ternlab
