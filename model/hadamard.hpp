// The blockwise Hadamard rotation Bonsai's weights are folded with (spec §6):
//   R_K = blockdiag(H_B / sqrt(B), ...) . diag(s_K), natural (Sylvester) order, one sign vector per
// input width K. Forward site (before a folded matmul): signs, then FWHT per block. Inverse site
// (after an embedding row lookup): FWHT per block, then signs.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <vector>

namespace ternlab::model {

// In-place normalised Walsh-Hadamard transform of n (a power of two) values, natural order: float
// as the engine runs it, double where an exact reference is wanted (model export's unfold).
template <class T>
void fwht(T* x, int n) {
  for (int h = 1; h < n; h *= 2)
    for (int i = 0; i < n; i += 2 * h)
      for (int j = i; j < i + h; ++j) {
        const T a = x[j], b = x[j + h];
        x[j] = a + b;
        x[j + h] = a - b;
      }
  // 1/sqrt(n) is exact for n = 4^m (1/32 for 1024); other powers of two round once, in one place.
  const T scale = T(1.0 / std::sqrt(double(n)));
  for (int i = 0; i < n; ++i) x[i] *= scale;
}

struct Rotation {
  // No fold (a file without prism.hadamard keys, as upstream llama.cpp writes and reads qwen35):
  // the weights act on the activations as they are, and every transform below is the identity.
  bool identity = false;
  int block = 1024;
  std::map<std::int64_t, std::vector<float>> signs;  // by width K: +1.0f / -1.0f

  const std::vector<float>& signs_for(std::int64_t k) const;  // throws naming the width
  void forward(float* x, std::int64_t k) const;               // x <- R_K x
  // Block b of forward with the row's sign vector s = signs_for(k) (signs, then FWHT of
  // x[b*block ..]): blocks are independent, so callers may split them over threads and get the
  // same floats.
  void forward_block(float* x, const std::vector<float>& s, std::int64_t b) const;
  void inverse(float* x, std::int64_t k) const;               // x <- R_K^T x
};

// GDN output, tiled -> grouped value-head order (spec §6.4): view as [hd, nk, rep], swap the last two.
// grouped_to_tiled is its inverse (model export moves ssm_out's columns back to tiled order).
template <class T>
void tiled_to_grouped(const T* tiled, T* grouped, int head_dim, int n_k, int rep) {
  for (int r = 0; r < rep; ++r)
    for (int k = 0; k < n_k; ++k)
      for (int d = 0; d < head_dim; ++d) grouped[d + head_dim * (r + rep * k)] = tiled[d + head_dim * (k + n_k * r)];
}
template <class T>
void grouped_to_tiled(const T* grouped, T* tiled, int head_dim, int n_k, int rep) {
  for (int r = 0; r < rep; ++r)
    for (int k = 0; k < n_k; ++k)
      for (int d = 0; d < head_dim; ++d) tiled[d + head_dim * (k + n_k * r)] = grouped[d + head_dim * (r + rep * k)];
}

}  // namespace ternlab::model
