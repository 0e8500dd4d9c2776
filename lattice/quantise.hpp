// Shape–gain quantisation of 24-weight blocks with the Leech lattice (spec §4): per row a scale
// (the RMS block norm), per matrix two gain centroids (Lloyd–Max on the relative block gains), per
// block one gain bit and the format-v1 index of the exact angular nearest point of the ball Λ24(12).
// Offline: this is the encoder the record layouts and kernels start from, not a serving path.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "lattice/leech.hpp"

namespace ternlab::lattice {

// The best direction for a block q: the non-zero ball point v maximising ⟨q, v⟩ / ‖v‖.
struct Direction {
  Point point{};
  std::uint64_t index = 0;
  int class_id = 0;
  double objective = 0;  // ⟨q, v⟩ / ‖v‖ (exact closed-form maximum, in double)
};

// Exact search over every (class, codeword) pair of the classes with shell ≤ max_shell (≤ 12).
// Ties: classes in format-v1 order, codewords in canonical order, replaced only by a strictly larger
// objective; arrangements follow a stable order by (|q| or q descending, coordinate). A zero block
// gives the origin (index 0, objective 0).
Direction nearest_direction(std::span<const double, 24> q, int max_shell = kServedCap);

// Lloyd–Max with two levels on the relative gains (spec §4.2 step 3): start at the sorted-sample
// quantiles 1/4 and 3/4 (element ⌊q·n⌋), 40 iterations, ascending. No gains: {1, 1}.
std::array<double, 2> fit_gain_centroids(std::vector<double> gains);

// An encoded matrix: rows × blocks_per_row() blocks in matrix-wide order b = row·blocks + p,
// then `tail` unquantised columns per row.
struct EncodedMatrix {
  std::string name;
  std::int64_t rows = 0, cols = 0, tail = 0;
  std::vector<double> row_scale;      // s_r, one per row
  std::array<double, 2> centroid{};   // γ0 ≤ γ1, indexed by the gain bit
  std::vector<std::uint64_t> index;   // format-v1 index of each block's direction (0 = zero block)
  std::vector<std::uint8_t> gain;     // gain bit of each block
  std::vector<float> tail_values;     // rows × tail, row-major
  std::int64_t blocks_per_row() const { return (cols - tail) / 24; }
};

// Runs encode(r0, r1) over row ranges covering [0, rows) exactly once, in any order and on any
// threads (the ranges write disjoint rows): how a caller parallelises the encoder without this
// library depending on a thread pool.
using RowRunner =
    std::function<void(std::int64_t rows, const std::function<void(std::int64_t r0, std::int64_t r1)>& encode)>;

// Encodes a row-major rows × cols float matrix whose width is a whole number of 24-weight blocks
// plus `tail` (0 ≤ tail < 24) columns; rows through `runner` when given (the result does not depend
// on it). Errors name the tensor, block and field: a width that does not fit, a non-finite weight.
EncodedMatrix encode_matrix(std::span<const float> w, std::int64_t rows, std::int64_t cols, std::int64_t tail,
                            const std::string& name, const RowRunner& runner = {});

// Reconstruction ŵ = s_r · γ_gain · p / ‖p‖ per block, tails copied. Errors name the tensor, block
// and field: an index outside the ball, a gain that is not one bit, sizes that do not match.
std::vector<float> decode_matrix(const EncodedMatrix& m);

}  // namespace ternlab::lattice
