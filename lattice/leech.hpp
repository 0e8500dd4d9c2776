// The Leech lattice Λ24 in integer coordinates (√8·Λ24 ⊂ Z^24, spec §2), the classes of the balls
// Λ24(12) and Λ24(13) in format-v1 order (§3.1-3.2) and the format-v1 index bijection (§3.3):
// index 0 is the origin, index 1 + offset(class) + local(point) every other point of the ball.
// These are the pieces the record layouts build on: the class table (ids, levels, sizes, offsets),
// rank and unrank.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace ternlab::lattice {

using Point = std::array<int, 24>;

inline constexpr int kServedCap = 12;                   // the served ball Λ24(12), 47-bit indices
inline constexpr int kMaxMagnitude = 15;                // above every magnitude of the balls ≤ 13
inline constexpr std::uint64_t kBall12 = 111043117458000ULL;  // N(12), non-zero points
inline constexpr std::uint64_t kBall13 = 280974212784720ULL;  // N(13)

// Membership test of §2.1 (parity, Golay, sum mod 8).
bool is_member(const Point& x);
int norm2(const Point& x);  // ‖x‖² = 16·shell for members

// One class: a coset and a multiset of the 24 magnitudes.
struct LatticeClass {
  int id = 0;     // 1 … 301 (383 for cap 13); 0 = the origin
  int shell = 0;  // m, ‖x‖² = 16m
  bool odd = false;
  std::array<std::uint8_t, kMaxMagnitude + 1> count{};  // count[v] = coordinates of magnitude v
  int golay_weight = 0;  // even: number of magnitudes ≡ 2 (mod 4); odd: unused (every word is admissible)
  int parity = 0;        // even: required parity of minus signs on the codeword support
  int free_nonzero = 0;  // even: non-zero magnitudes ≡ 0 (mod 4)
  std::uint64_t size = 0;   // number of points
  std::uint64_t first = 0;  // index of the first point (1 + offset)
  int levels = 0;           // distinct magnitudes, zero included
  std::array<std::uint8_t, 5> level_values{};  // count descending, ties by value descending
  std::string magnitudes() const;              // e.g. "4^2 0^22"
};

// The classes of the ball Λ24(cap), cap 12 or 13, in format-v1 order: element k has id k+1.
const std::vector<LatticeClass>& lattice_classes(int cap = kServedCap);
// The class with this id; an error naming `what` (e.g. "tensor 'w', block 9, field class id") when
// id is not one of the ball's classes.
const LatticeClass& lattice_class(int id, int cap = kServedCap, const std::string& what = "class id");
// Number of non-zero points of the ball (N(cap)) and the index width ⌈log2(N(cap)+1)⌉.
std::uint64_t ball_points(int cap = kServedCap);
int index_bits(int cap = kServedCap);

// The class id of a lattice point of the ball (0 for the origin); an error naming `what` for a
// non-member or a point beyond the ball.
int class_of(const Point& x, int cap = kServedCap, const std::string& what = "point");

// Format-v1 rank (point → index) and unrank (index → point). Both refuse what is outside the ball
// with an error naming `what` (e.g. "tensor 'w', block 17, field index").
std::uint64_t rank_point(const Point& x, int cap = kServedCap, const std::string& what = "point");
Point unrank_index(std::uint64_t index, int cap = kServedCap, const std::string& what = "index");

// Signed value of an odd magnitude on the codeword support: +a if a ≡ 3 (mod 4), -a otherwise.
inline int odd_signed(int a) { return (a & 3) == 3 ? a : -a; }

}  // namespace ternlab::lattice
