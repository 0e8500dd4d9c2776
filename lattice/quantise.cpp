#include "lattice/quantise.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "common/error.hpp"
#include "lattice/golay.hpp"

namespace ternlab::lattice {

namespace {

// A class's score against sorted prefix sums, by Abel summation: Σ_k V_k·A_k over values V sorted
// descending (piecewise constant) and A sorted descending = Σ_runs (v_run − v_next)·P[end_run].
struct Runs {
  int n = 0;
  double coef[5]{};
  int end[5]{};
  double score(const double* prefix) const {
    double s = 0;
    for (int r = 0; r < n; ++r) s += coef[r] * prefix[end[r]];
    return s;
  }
};

Runs make_runs(const std::vector<int>& values_desc_with_counts_flat) {
  Runs r;
  const auto& v = values_desc_with_counts_flat;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i + 1 < v.size() && v[i + 1] == v[i]) continue;
    const double next = i + 1 < v.size() ? v[i + 1] : 0.0;
    r.coef[r.n] = v[i] - next;
    r.end[r.n] = static_cast<int>(i) + 1;
    ++r.n;
  }
  return r;
}

struct ClassSearch {
  int id = 0;
  int shell = 0;
  bool odd = false;
  int w = 0, parity = 0, word_min = 0;
  double inv_r = 0;
  Runs on, off;                  // even: word values on the support, free values off it
  std::vector<int> word, free_;  // descending, expanded (for materialising)
  std::vector<int> odd_values;   // odd: signed values s(a), descending, expanded
};

const std::vector<ClassSearch>& search_table() {
  static const std::vector<ClassSearch> table = [] {
    std::vector<ClassSearch> t;
    for (const LatticeClass& k : lattice_classes(kServedCap)) {
      ClassSearch s;
      s.id = k.id;
      s.shell = k.shell;
      s.odd = k.odd;
      s.inv_r = 1.0 / std::sqrt(16.0 * k.shell);
      if (k.odd) {
        for (int a = 1; a <= kMaxMagnitude; a += 2)
          for (int n = 0; n < k.count[a]; ++n) s.odd_values.push_back(odd_signed(a));
        std::sort(s.odd_values.rbegin(), s.odd_values.rend());
        s.on = make_runs(s.odd_values);
      } else {
        s.w = k.golay_weight;
        s.parity = k.parity;
        for (int a = kMaxMagnitude; a >= 1; --a)
          for (int n = 0; n < k.count[a]; ++n) (a % 4 == 2 ? s.word : s.free_).push_back(a);
        s.word_min = s.word.empty() ? 0 : s.word.back();
        s.on = make_runs(s.word);
        s.off = make_runs(s.free_);
      }
      t.push_back(std::move(s));
    }
    return t;
  }();
  return table;
}

}  // namespace

Direction nearest_direction(std::span<const double, 24> q, int max_shell) {
  Direction best;
  if (std::all_of(q.begin(), q.end(), [](double v) { return v == 0; })) return best;
  const auto& table = search_table();
  std::array<int, 24> by_abs, by_value;  // coordinates by |q| / q descending, ties by coordinate
  std::iota(by_abs.begin(), by_abs.end(), 0);
  std::iota(by_value.begin(), by_value.end(), 0);
  std::stable_sort(by_abs.begin(), by_abs.end(), [&](int a, int b) { return std::abs(q[a]) > std::abs(q[b]); });
  std::stable_sort(by_value.begin(), by_value.end(), [&](int a, int b) { return q[a] > q[b]; });

  constexpr double kNone = -std::numeric_limits<double>::infinity();
  std::vector<double> class_score(table.size(), kNone);
  std::vector<std::uint32_t> class_word(table.size(), 0);
  const auto& words = golay_words();
  // The classes each codeword is scored against: the odd ones, and the even ones by Golay weight.
  std::vector<std::size_t> odd_classes, even_classes[25];
  for (std::size_t i = 0; i < table.size(); ++i)
    if (table[i].shell <= max_shell) (table[i].odd ? odd_classes : even_classes[table[i].w]).push_back(i);
  const bool any_odd = !odd_classes.empty();

  if (any_odd) {
    double prefix[25];
    for (std::uint32_t c : words) {
      // y_i = q_i on the codeword, −q_i off it; descending y merges q descending on the support
      // with q ascending off it.
      int a = 0, b = 23, n = 0;
      prefix[0] = 0;
      auto next_on = [&] {
        while (a < 24 && !((c >> by_value[a]) & 1)) ++a;
      };
      auto next_off = [&] {
        while (b >= 0 && ((c >> by_value[b]) & 1)) --b;
      };
      next_on();
      next_off();
      while (n < 24) {
        const double yon = a < 24 ? q[by_value[a]] : kNone;
        const double yoff = b >= 0 ? -q[by_value[b]] : kNone;
        double y;
        if (yon >= yoff) {
          y = yon, ++a, next_on();
        } else {
          y = yoff, --b, next_off();
        }
        prefix[n + 1] = prefix[n] + y;
        ++n;
      }
      for (std::size_t i : odd_classes) {
        const ClassSearch& k = table[i];
        const double s = k.on.score(prefix);
        if (s > class_score[i]) class_score[i] = s, class_word[i] = c;
      }
    }
  }
  for (int w : {0, 8, 12, 16, 24}) {
    if (even_classes[w].empty()) continue;
    const int start = golay_bucket_start(w);
    double on[25], off[25];
    for (int g = 0; g < golay_count(w); ++g) {
      const std::uint32_t c = words[static_cast<std::size_t>(start + g)];
      int non = 0, noff = 0, negatives = 0;
      on[0] = off[0] = 0;
      for (int i : by_abs) {
        const double a = std::abs(q[i]);
        if ((c >> i) & 1) {
          on[non + 1] = on[non] + a, ++non;
          negatives += q[i] < 0;
        } else {
          off[noff + 1] = off[noff] + a, ++noff;
        }
      }
      const double smallest_on = non > 0 ? on[non] - on[non - 1] : 0;
      for (std::size_t i : even_classes[w]) {
        const ClassSearch& k = table[i];
        double s = k.on.score(on) + k.off.score(off);
        // One sign flip of the smallest word value on the smallest support |q| repairs the parity.
        if (w > 0 && (negatives & 1) != k.parity) s -= 2.0 * k.word_min * smallest_on;
        if (s > class_score[i]) class_score[i] = s, class_word[i] = c;
      }
    }
  }

  std::size_t pick = table.size();
  double best_objective = kNone;
  for (std::size_t i = 0; i < table.size(); ++i) {
    if (class_score[i] == kNone) continue;
    const double o = class_score[i] * table[i].inv_r;
    if (o > best_objective) best_objective = o, pick = i;
  }
  const ClassSearch& k = table[pick];
  const std::uint32_t c = class_word[pick];
  Point& x = best.point;
  if (k.odd) {
    std::array<double, 24> y;
    for (int i = 0; i < 24; ++i) y[i] = ((c >> i) & 1) ? q[i] : -q[i];
    std::array<int, 24> order;
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return y[a] > y[b]; });
    for (int r = 0; r < 24; ++r) {
      const int i = order[r];
      x[i] = ((c >> i) & 1) ? k.odd_values[r] : -k.odd_values[r];
    }
  } else {
    int non = 0, noff = 0, negatives = 0, last_on = -1;
    for (int i : by_abs) {
      if ((c >> i) & 1) {
        x[i] = q[i] < 0 ? -k.word[non] : k.word[non];
        negatives += q[i] < 0;
        last_on = i, ++non;
      } else {
        const int v = noff < static_cast<int>(k.free_.size()) ? k.free_[noff] : 0;
        x[i] = q[i] < 0 ? -v : v;
        ++noff;
      }
    }
    if (k.w > 0 && (negatives & 1) != k.parity) x[last_on] = -x[last_on];
  }
  best.class_id = k.id;
  best.objective = best_objective;
  best.index = rank_point(x, kServedCap, "nearest direction");
  return best;
}

std::array<double, 2> fit_gain_centroids(std::vector<double> gains) {
  if (gains.empty()) return {1.0, 1.0};
  std::sort(gains.begin(), gains.end());
  const std::size_t n = gains.size();
  std::array<double, 2> c{gains[std::min(n - 1, n / 4)], gains[std::min(n - 1, 3 * n / 4)]};
  for (int it = 0; it < 40; ++it) {
    double sum[2] = {0, 0};
    std::size_t cnt[2] = {0, 0};
    for (double g : gains) {
      const int j = std::abs(g - c[1]) < std::abs(g - c[0]) ? 1 : 0;
      sum[j] += g, ++cnt[j];
    }
    for (int j = 0; j < 2; ++j)
      if (cnt[j]) c[j] = sum[j] / static_cast<double>(cnt[j]);
    if (c[1] < c[0]) std::swap(c[0], c[1]);
  }
  return c;
}

EncodedMatrix encode_matrix(std::span<const float> w, std::int64_t rows, std::int64_t cols, std::int64_t tail,
                            const std::string& name, const RowRunner& runner) {
  const std::string tensor = cat("tensor '", name, "'");
  if (rows < 0 || cols < 0) fail(tensor, ": negative shape ", rows, " x ", cols);
  if (static_cast<std::int64_t>(w.size()) != rows * cols)
    fail(tensor, ": ", w.size(), " values for a ", rows, " x ", cols, " matrix");
  if (tail < 0 || tail >= 24 || (cols - tail) < 0 || (cols - tail) % 24 != 0)
    fail(tensor, ": width ", cols, " is not a whole number of 24-weight blocks plus the declared tail of ", tail,
         " columns (field tail: the tail must be width mod 24 = ", cols % 24, ")");
  EncodedMatrix m;
  m.name = name;
  m.rows = rows, m.cols = cols, m.tail = tail;
  const std::int64_t blocks = m.blocks_per_row();
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t j = 0; j < cols; ++j) {
      const float v = w[static_cast<std::size_t>(r * cols + j)];
      if (!std::isfinite(v)) {
        if (j < blocks * 24)
          fail(tensor, ": row ", r, ", block ", r * blocks + j / 24, " (column ", j, "), field weight: ", v,
               " is not finite");
        fail(tensor, ": row ", r, ", tail column ", j, ", field tail: ", v, " is not finite");
      }
    }
  m.row_scale.assign(static_cast<std::size_t>(rows), 0.0);
  m.index.assign(static_cast<std::size_t>(rows * blocks), 0);
  m.gain.assign(static_cast<std::size_t>(rows * blocks), 0);
  m.tail_values.assign(static_cast<std::size_t>(rows * tail), 0.0f);
  std::vector<double> rel_gain(static_cast<std::size_t>(rows * blocks), 0.0);
  std::vector<std::uint8_t> nonzero(static_cast<std::size_t>(rows * blocks), 0);
  // Rows are independent up to the centroid fit below, so a runner may split them over threads.
  const auto encode_rows = [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      const float* row = w.data() + r * cols;
      double ss = 0;
      for (std::int64_t j = 0; j < cols; ++j) ss += double(row[j]) * row[j];
      const double s = blocks > 0 ? std::sqrt(ss / static_cast<double>(blocks)) : 0.0;
      m.row_scale[static_cast<std::size_t>(r)] = s;
      for (std::int64_t p = 0; p < blocks; ++p) {
        std::array<double, 24> q;
        double nq = 0;
        for (int i = 0; i < 24; ++i) q[i] = row[p * 24 + i], nq += q[i] * q[i];
        const auto b = static_cast<std::size_t>(r * blocks + p);
        if (nq == 0) continue;  // the origin, gain bit 0
        m.index[b] = nearest_direction(q).index;
        rel_gain[b] = std::sqrt(nq) / s;
        nonzero[b] = 1;
      }
      for (std::int64_t j = 0; j < tail; ++j) m.tail_values[static_cast<std::size_t>(r * tail + j)] = row[blocks * 24 + j];
    }
  };
  if (runner)
    runner(rows, encode_rows);
  else
    encode_rows(0, rows);
  std::vector<double> nonzero_gains;
  for (std::size_t b = 0; b < rel_gain.size(); ++b)
    if (nonzero[b]) nonzero_gains.push_back(rel_gain[b]);
  m.centroid = fit_gain_centroids(nonzero_gains);
  for (std::size_t b = 0; b < m.index.size(); ++b)
    if (m.index[b] != 0)
      m.gain[b] = std::abs(rel_gain[b] - m.centroid[1]) < std::abs(rel_gain[b] - m.centroid[0]) ? 1 : 0;
  return m;
}

std::vector<float> decode_matrix(const EncodedMatrix& m) {
  const std::string tensor = cat("tensor '", m.name, "'");
  const std::int64_t blocks = m.blocks_per_row();
  if (m.tail < 0 || m.tail >= 24 || m.cols < m.tail || (m.cols - m.tail) % 24 != 0)
    fail(tensor, ": width ", m.cols, " is not a whole number of 24-weight blocks plus the declared tail of ", m.tail,
         " columns (field tail)");
  const auto nb = static_cast<std::size_t>(m.rows * blocks);
  if (m.index.size() != nb || m.gain.size() != nb)
    fail(tensor, ": ", m.index.size(), " indices and ", m.gain.size(), " gain bits for ", nb, " blocks");
  if (m.row_scale.size() != static_cast<std::size_t>(m.rows))
    fail(tensor, ": ", m.row_scale.size(), " row scales for ", m.rows, " rows (field row_scale)");
  if (m.tail_values.size() != static_cast<std::size_t>(m.rows * m.tail))
    fail(tensor, ": ", m.tail_values.size(), " tail values for ", m.rows, " x ", m.tail, " (field tail)");
  std::vector<float> out(static_cast<std::size_t>(m.rows * m.cols), 0.0f);
  for (std::int64_t r = 0; r < m.rows; ++r) {
    for (std::int64_t p = 0; p < blocks; ++p) {
      const auto b = static_cast<std::size_t>(r * blocks + p);
      if (m.gain[b] > 1) fail(tensor, ": block ", b, ", field gain: ", int(m.gain[b]), " is not one bit");
      const Point x = unrank_index(m.index[b], kServedCap, cat(tensor, ": block ", b, ", field index"));
      if (m.index[b] == 0) continue;
      const double scale = m.row_scale[static_cast<std::size_t>(r)] * m.centroid[m.gain[b]] / std::sqrt(double(norm2(x)));
      for (int i = 0; i < 24; ++i) out[static_cast<std::size_t>(r * m.cols + p * 24 + i)] = static_cast<float>(scale * x[i]);
    }
    for (std::int64_t j = 0; j < m.tail; ++j)
      out[static_cast<std::size_t>(r * m.cols + blocks * 24 + j)] = m.tail_values[static_cast<std::size_t>(r * m.tail + j)];
  }
  return out;
}

}  // namespace ternlab::lattice
