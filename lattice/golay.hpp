// The extended binary Golay code G24 in the coordinatisation format v1 pins (spec §1): the cyclic
// [23,12,7] code of g(x) = 0xC75 extended by a parity bit, its 4096 words in canonical order
// (weight ascending, then value ascending). Bit i of a word is coordinate i.
#pragma once
#include <array>
#include <cstdint>

namespace ternlab::lattice {

inline constexpr std::uint32_t kGolayGenerator = 0xC75;  // x^11+x^10+x^6+x^5+x^4+x^2+1
inline constexpr std::uint32_t kGolayAllOnes = 0xFFFFFF;

// Carry-less (GF(2)[x]) product.
std::uint64_t clmul(std::uint64_t a, std::uint64_t b);

// The 4096 codewords in canonical order; the position of a word is its flat rank.
const std::array<std::uint32_t, 4096>& golay_words();

// Number of codewords of a weight (γ(w): 1, 759, 2576, 759, 1; 0 for other weights) and the flat
// rank of the first of them.
int golay_count(int weight);
int golay_bucket_start(int weight);

// Flat rank 0..4095 of a codeword, or -1 when the word is not in the code.
int golay_flat_rank(std::uint32_t word);

}  // namespace ternlab::lattice
