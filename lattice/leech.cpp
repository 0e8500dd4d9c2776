#include "lattice/leech.hpp"

#include <algorithm>
#include <bit>
#include <map>
#include <memory>

#include "common/error.hpp"
#include "lattice/golay.hpp"

namespace ternlab::lattice {

bool is_member(const Point& x) {
  const int p = x[0] & 1;  // & keeps negative coordinates right (two's complement)
  std::uint32_t c = 0;
  int sum = 0;
  for (int i = 0; i < 24; ++i) {
    if ((x[i] & 1) != p) return false;
    if ((x[i] & 3) == (p ? 3 : 2)) c |= 1u << i;
    sum += x[i];
  }
  return golay_flat_rank(c) >= 0 && (sum & 7) == (p ? 4 : 0);
}

int norm2(const Point& x) {
  int n = 0;
  for (int v : x) n += v * v;
  return n;
}

std::string LatticeClass::magnitudes() const {
  std::string s;
  for (int v = kMaxMagnitude; v >= 0; --v)
    if (count[v]) s += cat(s.empty() ? "" : " ", v, "^", int(count[v]));
  return s;
}

namespace {

using Counts = std::array<std::uint8_t, kMaxMagnitude + 1>;

// Pascal's triangle up to 24: the ranks call binomials in their inner loops.
constexpr auto kBinom = [] {
  std::array<std::array<std::uint64_t, 25>, 25> t{};
  for (int n = 0; n <= 24; ++n) {
    t[n][0] = 1;
    for (int k = 1; k <= n; ++k) t[n][k] = t[n - 1][k - 1] + (k <= n - 1 ? t[n - 1][k] : 0);
  }
  return t;
}();

std::uint64_t binom(int n, int k) { return kBinom[static_cast<std::size_t>(n)][static_cast<std::size_t>(k)]; }

// Multinomial n!/∏ cnt_j! as a product of binomials: every partial product is itself a multinomial
// no larger than the result, so nothing overflows while the result fits in 64 bits.
std::uint64_t multinomial(const int* cnt, int kinds) {
  std::uint64_t r = 1;
  int n = 0;
  for (int j = 0; j < kinds; ++j) {
    n += cnt[j];
    r *= binom(n, cnt[j]);
  }
  return r;
}

// Lexicographic rank of a sequence of kinds 0…kinds-1 among the permutations of its multiset.
std::uint64_t perm_rank(const int* seq, int n, const int* counts, int kinds) {
  int cnt[8];
  std::copy(counts, counts + kinds, cnt);
  std::uint64_t rank = 0;
  for (int t = 0; t < n; ++t) {
    for (int j = 0; j < seq[t]; ++j) {
      if (cnt[j] == 0) continue;
      --cnt[j];
      rank += multinomial(cnt, kinds);
      ++cnt[j];
    }
    --cnt[seq[t]];
  }
  return rank;
}

void perm_unrank(std::uint64_t rank, int* seq, int n, const int* counts, int kinds) {
  int cnt[8];
  std::copy(counts, counts + kinds, cnt);
  for (int t = 0; t < n; ++t) {
    for (int j = 0; j < kinds; ++j) {
      if (cnt[j] == 0) continue;
      --cnt[j];
      const std::uint64_t m = multinomial(cnt, kinds);
      if (rank < m) {
        seq[t] = j;
        break;
      }
      rank -= m;
      ++cnt[j];
    }
  }
}

// The kinds of a class: the values each rank runs over, in kind order (kind 0 first).
struct Kinds {
  int value[8];
  int count[8];
  int n = 0;
  void add(int v, int c) {
    if (c > 0) value[n] = v, count[n] = c, ++n;
  }
  int kind_of(int v) const {
    for (int j = 0; j < n; ++j)
      if (value[j] == v) return j;
    return -1;
  }
};

Kinds word_kinds(const LatticeClass& k) {  // word values descending
  Kinds r;
  for (int v : {14, 10, 6, 2}) r.add(v, k.count[v]);
  return r;
}
Kinds off_kinds(const LatticeClass& k) {  // free values descending, then zero
  Kinds r;
  for (int v : {12, 8, 4, 0}) r.add(v, k.count[v]);
  return r;
}
Kinds odd_kinds(const LatticeClass& k) {  // magnitudes descending
  Kinds r;
  for (int v = 13; v >= 1; v -= 2) r.add(v, k.count[v]);
  return r;
}

std::uint64_t kinds_multinomial(const Kinds& k) { return multinomial(k.count, k.n); }

void finish_class(LatticeClass& k) {
  int order[kMaxMagnitude + 1];
  int nv = 0;
  for (int v = 0; v <= kMaxMagnitude; ++v)
    if (k.count[v]) order[nv++] = v;
  std::sort(order, order + nv, [&](int a, int b) { return k.count[a] != k.count[b] ? k.count[a] > k.count[b] : a > b; });
  k.levels = nv;
  for (int j = 0; j < nv && j < 5; ++j) k.level_values[j] = static_cast<std::uint8_t>(order[j]);
  if (k.odd) {
    k.size = 4096 * kinds_multinomial(odd_kinds(k));
  } else {
    const int w = k.golay_weight;
    k.size = static_cast<std::uint64_t>(golay_count(w)) * (std::uint64_t{1} << (w > 0 ? w - 1 : 0)) *
             (std::uint64_t{1} << k.free_nonzero) * kinds_multinomial(word_kinds(k)) * kinds_multinomial(off_kinds(k));
  }
}

// Count vectors in lexicographic order of the counts of `values` (outer first), the count of
// `implied` taking the rest of the 24 coordinates, with Σ n_v·v² ≤ budget.
void enumerate(const std::vector<int>& values, std::size_t at, int left, int budget, Counts& c, int implied,
               std::vector<Counts>& out) {
  if (at == values.size()) {
    const int rest_norm = left * implied * implied;
    if (rest_norm > budget) return;
    c[implied] = static_cast<std::uint8_t>(left);
    out.push_back(c);
    c[implied] = 0;
    return;
  }
  const int v = values[at];
  for (int n = 0; n <= left && n * v * v <= budget; ++n) {
    c[v] = static_cast<std::uint8_t>(n);
    enumerate(values, at + 1, left - n, budget - n * v * v, c, implied, out);
  }
  c[v] = 0;
}

std::vector<LatticeClass> make_classes(int cap) {
  std::vector<Counts> even, odd;
  Counts c{};
  enumerate({14, 10, 6, 2, 12, 8, 4}, 0, 24, 16 * cap, c, 0, even);
  enumerate({13, 11, 9, 7, 5, 3}, 0, 24, 16 * cap, c, 1, odd);
  std::vector<LatticeClass> all;
  auto shell_of = [](const Counts& n) {
    int s = 0;
    for (int v = 0; v <= kMaxMagnitude; ++v) s += n[v] * v * v;
    return s % 16 == 0 ? s / 16 : -1;
  };
  for (const Counts& n : even) {
    LatticeClass k;
    k.count = n;
    k.shell = shell_of(n);
    if (k.shell < 2) continue;
    k.golay_weight = n[2] + n[6] + n[10] + n[14];
    if (golay_count(k.golay_weight) == 0) continue;
    int s0 = 0;
    for (int v = 0; v <= kMaxMagnitude; ++v) s0 += n[v] * v;
    k.parity = (s0 / 4) & 1;
    if (k.golay_weight == 0 && k.parity) continue;
    k.free_nonzero = n[4] + n[8] + n[12];
    all.push_back(k);
  }
  for (const Counts& n : odd) {
    LatticeClass k;
    k.count = n;
    k.odd = true;
    k.shell = shell_of(n);
    if (k.shell < 2) continue;
    if (((n[1] + n[7] + n[9] + n[15]) & 1) == 0) continue;
    all.push_back(k);
  }
  std::stable_sort(all.begin(), all.end(), [](const LatticeClass& a, const LatticeClass& b) {
    return a.shell != b.shell ? a.shell < b.shell : (!a.odd && b.odd);
  });
  std::uint64_t next = 1;
  for (std::size_t i = 0; i < all.size(); ++i) {
    all[i].id = static_cast<int>(i) + 1;
    finish_class(all[i]);
    all[i].first = next;
    next += all[i].size;
  }
  return all;
}

struct Ball {
  std::vector<LatticeClass> classes;
  std::map<Counts, int> by_counts;
  std::uint64_t points = 0;
};

const Ball& ball(int cap) {
  if (cap != 12 && cap != 13) fail("lattice ball cap ", cap, " is not supported (12 or 13)");
  static const std::unique_ptr<Ball> balls[2] = {
      [] {
        auto b = std::make_unique<Ball>();
        b->classes = make_classes(12);
        return b;
      }(),
      [] {
        auto b = std::make_unique<Ball>();
        b->classes = make_classes(13);
        return b;
      }()};
  Ball& b = *balls[cap - 12];
  static const bool indexed = [] {
    for (const auto& bp : balls) {
      for (const LatticeClass& k : bp->classes) {
        bp->by_counts[k.count] = k.id;
        bp->points += k.size;
      }
    }
    return true;
  }();
  (void)indexed;
  return b;
}

}  // namespace

const std::vector<LatticeClass>& lattice_classes(int cap) { return ball(cap).classes; }

const LatticeClass& lattice_class(int id, int cap, const std::string& what) {
  const auto& cls = ball(cap).classes;
  if (id < 1 || id > static_cast<int>(cls.size()))
    fail(what, ": class id ", id, " is not one of the ", cls.size(), " classes of the ball Λ24(", cap, ") (ids 1…", cls.size(),
         ")");
  return cls[static_cast<std::size_t>(id - 1)];
}

std::uint64_t ball_points(int cap) { return ball(cap).points; }

int index_bits(int cap) { return std::bit_width(ball_points(cap)); }

int class_of(const Point& x, int cap, const std::string& what) {
  if (!is_member(x)) fail(what, ": not a point of the Leech lattice (parity, Golay or sum condition fails)");
  Counts n{};
  for (int v : x) {
    const int a = v < 0 ? -v : v;
    if (a > kMaxMagnitude) fail(what, ": magnitude ", a, " is outside the ball Λ24(", cap, ")");
    ++n[a];
  }
  if (n[0] == 24) return 0;
  const auto& b = ball(cap);
  const auto it = b.by_counts.find(n);
  if (it == b.by_counts.end())
    fail(what, ": lattice point of squared norm ", norm2(x), " is outside the ball Λ24(", cap, ") (‖x‖² ≤ ", 16 * cap,
         ")");
  return it->second;
}

std::uint64_t rank_point(const Point& x, int cap, const std::string& what) {
  const int id = class_of(x, cap, what);
  if (id == 0) return 0;
  const LatticeClass& k = lattice_class(id, cap);
  std::uint64_t local = 0;
  if (k.odd) {
    std::uint32_t c = 0;
    int seq[24];
    const Kinds kinds = odd_kinds(k);
    for (int i = 0; i < 24; ++i) {
      if ((x[i] & 3) == 3) c |= 1u << i;
      seq[i] = kinds.kind_of(x[i] < 0 ? -x[i] : x[i]);
    }
    local = static_cast<std::uint64_t>(golay_flat_rank(c)) * kinds_multinomial(kinds) +
            perm_rank(seq, 24, kinds.count, kinds.n);
  } else {
    std::uint32_t c = 0;
    for (int i = 0; i < 24; ++i)
      if ((x[i] & 3) == 2) c |= 1u << i;  // |x| ≡ 2 (mod 4) whatever the sign
    const int w = k.golay_weight;
    const std::uint64_t g = static_cast<std::uint64_t>(golay_flat_rank(c) - golay_bucket_start(w));
    const Kinds on = word_kinds(k), off = off_kinds(k);
    int on_seq[24], off_seq[24], non = 0, noff = 0;
    std::uint64_t sw = 0, sf = 0;
    int nsw = 0, nsf = 0;
    for (int i = 0; i < 24; ++i) {
      const int a = x[i] < 0 ? -x[i] : x[i];
      if ((c >> i) & 1) {
        on_seq[non++] = on.kind_of(a);
        if (nsw < w - 1 && x[i] < 0) sw |= std::uint64_t{1} << nsw;
        if (nsw < w - 1) ++nsw;
      } else {
        off_seq[noff++] = off.kind_of(a);
        if (a != 0) {
          if (x[i] < 0) sf |= std::uint64_t{1} << nsf;
          ++nsf;
        }
      }
    }
    const std::uint64_t a_on = kinds_multinomial(on), a_off = kinds_multinomial(off);
    const std::uint64_t s_w = std::uint64_t{1} << (w > 0 ? w - 1 : 0), s_f = std::uint64_t{1} << k.free_nonzero;
    local = (((g * a_on + perm_rank(on_seq, non, on.count, on.n)) * a_off + perm_rank(off_seq, noff, off.count, off.n)) *
                 s_w +
             sw) *
                s_f +
            sf;
  }
  return k.first + local;
}

Point unrank_index(std::uint64_t index, int cap, const std::string& what) {
  const auto& b = ball(cap);
  Point x{};
  if (index == 0) return x;
  if (index > b.points)
    fail(what, ": lattice index ", index, " is outside the format-v1 range 0…", b.points, " of the ball Λ24(", cap,
         ")");
  const auto it = std::upper_bound(b.classes.begin(), b.classes.end(), index,
                                   [](std::uint64_t i, const LatticeClass& k) { return i < k.first; });
  const LatticeClass& k = *(it - 1);
  std::uint64_t local = index - k.first;
  if (k.odd) {
    const Kinds kinds = odd_kinds(k);
    const std::uint64_t m = kinds_multinomial(kinds);
    const std::uint32_t c = golay_words()[local / m];
    int seq[24];
    perm_unrank(local % m, seq, 24, kinds.count, kinds.n);
    for (int i = 0; i < 24; ++i) {
      const int s = odd_signed(kinds.value[seq[i]]);
      x[i] = ((c >> i) & 1) ? s : -s;
    }
    return x;
  }
  const int w = k.golay_weight;
  const Kinds on = word_kinds(k), off = off_kinds(k);
  const std::uint64_t a_on = kinds_multinomial(on), a_off = kinds_multinomial(off);
  const std::uint64_t s_w = std::uint64_t{1} << (w > 0 ? w - 1 : 0), s_f = std::uint64_t{1} << k.free_nonzero;
  const std::uint64_t sf = local % s_f;
  local /= s_f;
  const std::uint64_t sw = local % s_w;
  local /= s_w;
  const std::uint64_t r_off = local % a_off;
  local /= a_off;
  const std::uint64_t r_on = local % a_on;
  const std::uint64_t g = local / a_on;
  const std::uint32_t c = golay_words()[static_cast<std::size_t>(golay_bucket_start(w)) + g];
  int on_seq[24], off_seq[24];
  perm_unrank(r_on, on_seq, w, on.count, on.n);
  perm_unrank(r_off, off_seq, 24 - w, off.count, off.n);
  int non = 0, noff = 0, nsf = 0, parity = k.parity;
  for (int i = 0; i < 24; ++i) {
    if ((c >> i) & 1) {
      const int v = on.value[on_seq[non]];
      int neg;
      if (non < w - 1) {
        neg = static_cast<int>((sw >> non) & 1);
        parity ^= neg;
      } else {
        neg = parity;  // the last support sign is implied by the class parity
      }
      x[i] = neg ? -v : v;
      ++non;
    } else {
      const int v = off.value[off_seq[noff++]];
      if (v != 0) {
        x[i] = ((sf >> nsf) & 1) ? -v : v;
        ++nsf;
      }
    }
  }
  return x;
}

}  // namespace ternlab::lattice
