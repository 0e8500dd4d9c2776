#include "lattice/golay.hpp"

#include <algorithm>
#include <bit>

namespace ternlab::lattice {

std::uint64_t clmul(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  for (int i = 0; i < 64 && (b >> i) != 0; ++i)
    if ((b >> i) & 1) r ^= a << i;
  return r;
}

namespace {

std::array<std::uint32_t, 4096> make_words() {
  std::array<std::uint32_t, 4096> w{};
  for (std::uint32_t m = 0; m < 4096; ++m) {
    // Degree <= 22, so the product is already reduced modulo x^23 + 1.
    const auto c = static_cast<std::uint32_t>(clmul(m, kGolayGenerator));
    w[m] = c | (static_cast<std::uint32_t>(std::popcount(c) & 1) << 23);
  }
  std::sort(w.begin(), w.end(), [](std::uint32_t a, std::uint32_t b) {
    const int wa = std::popcount(a), wb = std::popcount(b);
    return wa != wb ? wa < wb : a < b;
  });
  return w;
}

}  // namespace

const std::array<std::uint32_t, 4096>& golay_words() {
  static const std::array<std::uint32_t, 4096> words = make_words();
  return words;
}

int golay_count(int weight) {
  switch (weight) {
    case 0: case 24: return 1;
    case 8: case 16: return 759;
    case 12: return 2576;
    default: return 0;
  }
}

int golay_bucket_start(int weight) {
  switch (weight) {
    case 0: return 0;
    case 8: return 1;
    case 12: return 760;
    case 16: return 3336;
    case 24: return 4095;
    default: return -1;
  }
}

int golay_flat_rank(std::uint32_t word) {
  if (word > kGolayAllOnes) return -1;
  const int w = std::popcount(word);
  const int n = golay_count(w);
  if (n == 0) return -1;
  const auto& words = golay_words();
  const auto* first = words.data() + golay_bucket_start(w);
  const auto* it = std::lower_bound(first, first + n, word);
  return (it != first + n && *it == word) ? static_cast<int>(it - words.data()) : -1;
}

}  // namespace ternlab::lattice
