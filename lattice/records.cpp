#include "lattice/records.hpp"

#include <algorithm>
#include <cmath>

#include "common/error.hpp"
#include "lattice/golay.hpp"

namespace ternlab::lattice {

namespace {

using records::Field;
using records::FieldKind;

std::uint32_t get_bits(const std::uint8_t* rec, int bit, int n) {
  std::uint32_t v = 0;
  for (int i = 0; i < n; ++i) v |= std::uint32_t((rec[(bit + i) / 8] >> ((bit + i) % 8)) & 1) << i;
  return v;
}
void set_bits(std::uint8_t* rec, int bit, int n, std::uint32_t v) {
  for (int i = 0; i < n; ++i)
    if ((v >> i) & 1) rec[(bit + i) / 8] = std::uint8_t(rec[(bit + i) / 8] | (1u << ((bit + i) % 8)));
}
std::uint32_t get(const RecordSpec& s, const std::uint8_t* rec, FieldKind k, int level = 0) {
  const Field& f = records::field(s, k, level);
  return get_bits(rec, f.bit, f.bits);
}
void put(const RecordSpec& s, std::uint8_t* rec, FieldKind k, std::uint32_t v, int level = 0) {
  const Field& f = records::field(s, k, level);
  set_bits(rec, f.bit, f.bits, v);
}

int magnitude(int v) { return v < 0 ? -v : v; }

int level_of(const LatticeClass& k, int a) {
  for (int l = 0; l < k.levels; ++l)
    if (k.level_values[std::size_t(l)] == a) return l;
  return -1;
}

// Golay70's magnitudes per residue (0: ≡ 0 mod 4, zero included; 1: ≡ 2 mod 4), canonical level order.
struct Residues {
  std::array<std::array<int, 5>, 2> mag{};
  std::array<int, 2> n{};
};
Residues residues(const LatticeClass& k) {
  Residues r;
  for (int l = 0; l < k.levels; ++l) {
    const int a = k.level_values[std::size_t(l)];
    const std::size_t q = (a & 3) == 2 ? 1 : 0;
    const std::size_t at = std::size_t(r.n[q]);
    r.mag[q][at] = a;
    r.n[q] = int(at) + 1;
  }
  return r;
}

std::string field_what(const std::string& what, std::string_view field) { return cat(what, ", field ", field); }

}  // namespace

bool is_exception_class(const RecordSpec& s, int class_id) {
  if (class_id == 0) return false;
  const LatticeClass& k = lattice_class(class_id);
  switch (s.exceptions) {
    case records::ExceptionRule::none:
      return false;
    case records::ExceptionRule::five_levels:
      return k.levels > 4;
    case records::ExceptionRule::golay_or_5levels: {
      if (k.levels > 4) return true;
      if (k.odd) return false;
      const Residues r = residues(k);
      return r.n[0] > 2 || r.n[1] > 2;
    }
  }
  return false;
}

std::vector<std::uint8_t> encode_record(const RecordSpec& s, std::uint64_t index, int gain, const std::string& what) {
  if (gain != 0 && gain != 1) fail(field_what(what, "gain"), ": gain ", gain, " is not one bit");
  const Point x = unrank_index(index, kServedCap, field_what(what, "index"));
  const int id = class_of(x);
  const int levels = id == 0 ? 1 : lattice_class(id).levels;
  std::vector<std::uint8_t> rec(std::size_t(records::record_bytes(s, levels)), 0);
  put(s, rec.data(), FieldKind::gain, std::uint32_t(gain));
  if (id == 0 || is_exception_class(s, id)) return rec;  // origin record, gain copied
  const LatticeClass& k = lattice_class(id);
  put(s, rec.data(), FieldKind::class_id, std::uint32_t(id));
  if (records::has_field(s, FieldKind::golay_rank)) {
    std::uint32_t c = 0, a = 0, b = 0;
    if (k.odd) {
      for (int j = 0; j < 24; ++j) {
        if ((x[std::size_t(j)] & 3) == 3) c |= 1u << j;
        const int l = level_of(k, magnitude(x[std::size_t(j)]));
        a |= std::uint32_t(l & 1) << j;
        b |= std::uint32_t(l >> 1) << j;
      }
    } else {
      const Residues r = residues(k);
      for (int j = 0; j < 24; ++j) {
        const int m = magnitude(x[std::size_t(j)]);
        const std::size_t q = (m & 3) == 2 ? 1 : 0;
        if (q == 1) c |= 1u << j;
        if (m != r.mag[q][0]) a |= 1u << j;  // the residue's second magnitude
        if (x[std::size_t(j)] < 0) b |= 1u << j;
      }
    }
    put(s, rec.data(), FieldKind::golay_rank, std::uint32_t(golay_flat_rank(c)));
    put(s, rec.data(), FieldKind::golay_pick, a);
    put(s, rec.data(), FieldKind::golay_sign, b);
    return rec;
  }
  std::uint32_t sign = 0;
  std::array<std::uint32_t, 5> plane{}, mask{};
  for (int j = 0; j < 24; ++j) {
    sign |= std::uint32_t(x[std::size_t(j)] < 0) << j;
    const int l = level_of(k, magnitude(x[std::size_t(j)]));
    for (int p = 0; p < 3; ++p) plane[std::size_t(p)] |= std::uint32_t((l >> p) & 1) << j;
    mask[std::size_t(l)] |= 1u << j;
  }
  put(s, rec.data(), FieldKind::sign_mask, sign);
  for (int p = 0; p < 3; ++p)
    if (records::has_field(s, FieldKind::level_plane, p)) put(s, rec.data(), FieldKind::level_plane, plane[std::size_t(p)], p);
  for (int l = 1; l < k.levels; ++l)
    if (records::has_field(s, FieldKind::level_mask, l)) put(s, rec.data(), FieldKind::level_mask, mask[std::size_t(l)], l);
  return rec;
}

RecordContent decode_record(const RecordSpec& s, const std::uint8_t* rec, const std::string& what) {
  RecordContent out;
  out.class_id = int(get(s, rec, FieldKind::class_id));
  out.gain = int(get(s, rec, FieldKind::gain));
  const int levels = out.class_id == 0 ? 1 : lattice_class(out.class_id, kServedCap, field_what(what, "class id")).levels;
  // Every bit past the fields the class uses must be zero (canonical records), except Slot32's
  // masks beyond L, which are not part of the record (the window holds the next record there).
  for (int i = 0; i < records::n_fields(s); ++i) {
    const Field& f = s.fields[std::size_t(i)];
    if (f.kind == FieldKind::padding && get_bits(rec, f.bit, f.bits) != 0)
      fail(field_what(what, f.name), ": padding bits are not zero");
  }
  if (out.class_id == 0) {
    for (int i = 0; i < records::n_fields(s); ++i) {
      const Field& f = s.fields[std::size_t(i)];
      if (f.kind != FieldKind::class_id && f.kind != FieldKind::gain && levels >= f.min_levels &&
          get_bits(rec, f.bit, f.bits) != 0)
        fail(field_what(what, f.name), ": an origin record (class 0) must be a header followed by zeros");
    }
    return out;
  }
  if (is_exception_class(s, out.class_id))
    fail(field_what(what, "class id"), ": class ", out.class_id, " cannot be held by a ", s.name,
         " main-stream record (its blocks belong in the exception table)");
  const LatticeClass& k = lattice_class(out.class_id);
  if (records::has_field(s, FieldKind::golay_rank)) {
    const std::uint32_t rank = get(s, rec, FieldKind::golay_rank);
    const std::uint32_t c = golay_words()[rank];
    const std::uint32_t a = get(s, rec, FieldKind::golay_pick), b = get(s, rec, FieldKind::golay_sign);
    const Residues r = residues(k);
    for (int j = 0; j < 24; ++j) {
      const int cj = int((c >> j) & 1), aj = int((a >> j) & 1), bj = int((b >> j) & 1);
      int v = 0;
      if (k.odd) {
        const int l = aj | bj << 1;
        if (l >= k.levels) fail(field_what(what, "A/B"), ": slot ", j, " names level ", l, " of a ", k.levels, "-level class");
        const int m = k.level_values[std::size_t(l)];
        const int flag = (m & 3) == 3 ? 1 : 0;
        v = cj == flag ? m : -m;
      } else {
        if (aj >= r.n[std::size_t(cj)])
          fail(field_what(what, "A"), ": slot ", j, " picks magnitude ", aj, " of a residue with ", r.n[std::size_t(cj)]);
        const int m = r.mag[std::size_t(cj)][std::size_t(aj)];
        if (m == 0 && bj) fail(field_what(what, "B"), ": slot ", j, " is zero but its sign bit is set");
        v = bj ? -m : m;
      }
      out.x[std::size_t(j)] = v;
    }
  } else {
    const std::uint32_t sign = get(s, rec, FieldKind::sign_mask);
    std::array<int, 24> lvl{};
    if (records::has_field(s, FieldKind::level_plane, 0)) {
      for (int p = 0; p < 3; ++p) {
        if (!records::has_field(s, FieldKind::level_plane, p)) continue;
        const std::uint32_t w = get(s, rec, FieldKind::level_plane, p);
        for (int j = 0; j < 24; ++j) lvl[std::size_t(j)] |= int((w >> j) & 1) << p;
      }
    } else {
      std::uint32_t seen = 0;
      for (int l = 1; l < levels; ++l) {
        const std::uint32_t m = get(s, rec, FieldKind::level_mask, l);
        if (m & seen) fail(field_what(what, records::field(s, FieldKind::level_mask, l).name), ": level masks overlap");
        seen |= m;
        for (int j = 0; j < 24; ++j)
          if ((m >> j) & 1) lvl[std::size_t(j)] = l;
      }
    }
    for (int j = 0; j < 24; ++j) {
      const int l = lvl[std::size_t(j)];
      if (l >= k.levels) fail(field_what(what, "level planes"), ": slot ", j, " names level ", l, " of a ", k.levels, "-level class");
      const int m = k.level_values[std::size_t(l)];
      const bool neg = (sign >> j) & 1;
      if (m == 0 && neg) fail(field_what(what, "smask"), ": slot ", j, " is zero but its sign bit is set");
      out.x[std::size_t(j)] = neg ? -m : m;
    }
  }
  // The fields name magnitudes of the class; whether their arrangement, signs and codeword make a
  // point of it is the lattice's to say.
  const int id = class_of(out.x, kServedCap, what);
  if (id != out.class_id)
    fail(field_what(what, "class id"), ": the record's fields decode to a point of class ", id, ", not of class ", out.class_id);
  return out;
}

Point golay70_hoisted_decode(const std::uint8_t* rec) {
  const RecordSpec& s = records::Golay70::spec;
  const int id = int(get(s, rec, FieldKind::class_id));
  const ClassValues& t = golay70_table()[std::size_t(id)];
  const std::uint32_t c = golay_words()[get(s, rec, FieldKind::golay_rank)];
  const std::uint32_t a = get(s, rec, FieldKind::golay_pick), b = get(s, rec, FieldKind::golay_sign);
  // fw: slot j's flag = flag bit (a_j | b_j << 1) of the class, by three muxes of the 4 flag bits.
  const auto all = [](std::uint32_t bit) { return bit ? 0xFFFFFFu : 0u; };
  const std::uint32_t f0 = all(t.flags & 1), f1 = all(t.flags >> 1 & 1), f2 = all(t.flags >> 2 & 1), f3 = all(t.flags >> 3 & 1);
  const std::uint32_t lo = (a & f1) | (~a & f0), hi = (a & f3) | (~a & f2);
  const std::uint32_t fw = t.odd ? ((b & hi) | (~b & lo)) & 0xFFFFFF : 0;
  const std::uint32_t hw = t.odd ? b : c, nw = t.odd ? (c ^ fw) : b;
  // Integer magnitudes from the class (the table holds them divided by √(16 m)).
  std::array<int, 4> v{};
  if (id != 0) {
    const LatticeClass& k = lattice_class(id);
    if (k.odd) {
      for (int l = 0; l < k.levels; ++l) v[std::size_t(l)] = k.level_values[std::size_t(l)];
    } else {
      const Residues r = residues(k);
      v = {r.mag[0][0], r.mag[0][r.n[0] > 1 ? 1 : 0], r.mag[1][0], r.mag[1][r.n[1] > 1 ? 1 : 0]};
    }
  }
  Point x{};
  for (int j = 0; j < 24; ++j) {
    const int m = v[std::size_t(((hw >> j) & 1) << 1 | ((a >> j) & 1))];
    x[std::size_t(j)] = (nw >> j) & 1 ? -m : m;
  }
  return x;
}

// ------------------------------------------------------------------------------------------------

std::uint64_t RecordMatrix::record_offset(std::uint64_t b) const {
  if (layout->addressing == records::Addressing::uniform) return b * std::uint64_t(layout->record_bits / 8);
  const std::uint64_t g = b / 32;
  const std::uint64_t stride = (base[g + 1] - base[g]) / 32;
  return base[g] + (b % 32) * stride;
}

records::MatrixCounts RecordMatrix::counts() const {
  records::MatrixCounts c;
  c.rows = std::uint64_t(rows);
  c.blocks = blocks();
  c.tail_weights = std::uint64_t(rows * tail);
  c.exceptions = exc_index.size();
  c.stream_bytes = stream.size() - kRecordPadBytes;
  c.base_entries = base.size();
  return c;
}

namespace {
void check_shape(const std::string& name, std::int64_t rows, std::int64_t cols, std::int64_t tail) {
  if (rows < 0 || cols < 0) fail("tensor '", name, "': field shape: negative size ", rows, " x ", cols);
  if (tail < 0 || tail >= 24 || tail > cols || (cols - tail) % 24 != 0)
    fail("tensor '", name, "': field tail: width ", cols, " is not a whole number of 24-weight blocks plus the declared tail ",
         tail, " (0 ≤ tail < 24)");
}
}  // namespace

RecordMatrix transcode(const EncodedMatrix& m, const RecordSpec& s) {
  check_shape(m.name, m.rows, m.cols, m.tail);
  RecordMatrix r;
  r.layout = &s;
  r.name = m.name;
  r.rows = m.rows, r.cols = m.cols, r.tail = m.tail;
  const std::uint64_t nb = r.blocks();
  if (m.index.size() != nb || m.gain.size() != nb)
    fail("tensor '", m.name, "': field index: ", m.index.size(), " indices and ", m.gain.size(), " gain bits for ", nb, " blocks");
  if (m.row_scale.size() != std::size_t(m.rows))
    fail("tensor '", m.name, "': field row scale: ", m.row_scale.size(), " scales for ", m.rows, " rows");
  if (m.tail_values.size() != std::size_t(m.rows * m.tail))
    fail("tensor '", m.name, "': field tail: ", m.tail_values.size(), " tail values for ", m.rows, " x ", m.tail);
  std::vector<std::vector<std::uint8_t>> recs(nb);
  for (std::uint64_t b = 0; b < nb; ++b) {
    const std::string what = cat("tensor '", m.name, "', block ", b);
    recs[b] = encode_record(s, m.index[b], m.gain[b], what);
    if (s.exceptions != records::ExceptionRule::none) {
      const int id = class_of(unrank_index(m.index[b]));
      if (is_exception_class(s, id)) {
        r.exc_index.push_back(std::uint32_t(b));
        const auto exact = encode_record(records::Planes14::spec, m.index[b], m.gain[b], what);
        r.exc_data.insert(r.exc_data.end(), exact.begin(), exact.end());
      }
    }
  }
  if (s.addressing == records::Addressing::uniform) {
    for (const auto& rec : recs) r.stream.insert(r.stream.end(), rec.begin(), rec.end());
  } else {
    const std::uint64_t groups = (nb + 31) / 32;
    for (std::uint64_t g = 0; g < groups; ++g) {
      r.base.push_back(std::uint32_t(r.stream.size()));
      std::size_t stride = 0;
      for (std::uint64_t b = 32 * g; b < std::min(nb, 32 * g + 32); ++b) stride = std::max(stride, recs[b].size());
      for (std::uint64_t i = 0; i < 32; ++i) {  // a trailing partial group is padded to 32 records
        const std::uint64_t b = 32 * g + i;
        const std::size_t at = r.stream.size();
        r.stream.resize(at + stride, 0);
        if (b < nb) std::copy(recs[b].begin(), recs[b].end(), r.stream.begin() + std::ptrdiff_t(at));
      }
    }
    r.base.push_back(std::uint32_t(r.stream.size()));
  }
  r.stream.resize(r.stream.size() + kRecordPadBytes, 0);
  r.exc_data.resize(r.exc_data.size() + kRecordPadBytes, 0);
  r.row_scale.assign(m.row_scale.begin(), m.row_scale.end());
  r.centroid = {float(m.centroid[0]), float(m.centroid[1])};
  r.tail_values = m.tail_values;
  return r;
}

EncodedMatrix untranscode(const RecordMatrix& m) {
  check_shape(m.name, m.rows, m.cols, m.tail);
  const RecordSpec& s = *m.layout;
  EncodedMatrix e;
  e.name = m.name;
  e.rows = m.rows, e.cols = m.cols, e.tail = m.tail;
  const std::uint64_t nb = m.blocks();
  if (s.addressing == records::Addressing::grouped32 && m.base.size() != (nb + 31) / 32 + 1)
    fail("tensor '", m.name, "': field base table: ", m.base.size(), " entries for ", nb, " blocks");
  if (m.exc_data.size() < m.exc_index.size() * kExceptionRecordBytes + kRecordPadBytes)
    fail("tensor '", m.name, "': field exceptions: ", m.exc_index.size(), " indices but ", m.exc_data.size(), " bytes of records");
  std::size_t next_exc = 0;
  e.index.resize(nb);
  e.gain.resize(nb);
  for (std::uint64_t b = 0; b < nb; ++b) {
    const std::string what = cat("tensor '", m.name, "', block ", b);
    const std::uint64_t at = m.record_offset(b);
    if (at + std::uint64_t(records::record_bytes(s, 1)) + 8 > m.stream.size())
      fail(what, ", field base table: record offset ", at, " lies beyond the stream (", m.stream.size(), " bytes)");
    RecordContent c = decode_record(s, m.stream.data() + at, what);
    if (next_exc < m.exc_index.size() && m.exc_index[next_exc] == b) {
      if (c.class_id != 0) fail(what, ", field exceptions: the main-stream record of an exception block must be an origin record");
      const RecordContent exact =
          decode_record(records::Planes14::spec, m.exc_data.data() + next_exc * kExceptionRecordBytes, cat(what, " (exception)"));
      if (exact.gain != c.gain) fail(what, ", field gain: the exception record's gain differs from the main stream's");
      if (!is_exception_class(s, exact.class_id))
        fail(what, ", field exceptions: class ", exact.class_id, " is no exception of ", s.name);
      c = exact;
      ++next_exc;
    } else if (next_exc < m.exc_index.size() && m.exc_index[next_exc] < b) {
      fail("tensor '", m.name, "', field exceptions: block indices are not strictly ascending below ", nb, " (entry ", next_exc, ")");
    }
    e.index[b] = rank_point(c.x, kServedCap, what);
    e.gain[b] = std::uint8_t(c.gain);
  }
  if (next_exc != m.exc_index.size())
    fail("tensor '", m.name, "', field exceptions: entry ", next_exc, " (block ", m.exc_index[next_exc], ") is out of order or beyond the ",
         nb, " blocks");
  e.row_scale.assign(m.row_scale.begin(), m.row_scale.end());
  e.centroid = {double(m.centroid[0]), double(m.centroid[1])};
  e.tail_values = m.tail_values;
  return e;
}

// ------------------------------------------------------------------------------------------------

const std::array<ClassValues, 512>& level_table() {
  static const auto table = [] {
    std::array<ClassValues, 512> t{};
    for (const LatticeClass& k : lattice_classes()) {
      const double norm = std::sqrt(16.0 * k.shell);
      for (int l = 0; l < k.levels; ++l) t[std::size_t(k.id)].v[std::size_t(l)] = float(k.level_values[std::size_t(l)] / norm);
    }
    return t;
  }();
  return table;
}

const std::array<ClassValues, 512>& golay70_table() {
  static const auto table = [] {
    std::array<ClassValues, 512> t{};
    for (const LatticeClass& k : lattice_classes()) {
      if (is_exception_class(records::Golay70::spec, k.id)) continue;
      ClassValues& e = t[std::size_t(k.id)];
      const double norm = std::sqrt(16.0 * k.shell);
      if (k.odd) {
        e.odd = 1;
        for (int l = 0; l < k.levels; ++l) {
          const int a = k.level_values[std::size_t(l)];
          e.v[std::size_t(l)] = float(a / norm);
          e.flags |= std::uint32_t((a & 3) == 3) << l;
        }
      } else {
        const Residues r = residues(k);
        const int v[4] = {r.mag[0][0], r.mag[0][r.n[0] > 1 ? 1 : 0], r.mag[1][0], r.mag[1][r.n[1] > 1 ? 1 : 0]};
        for (int i = 0; i < 4; ++i) e.v[std::size_t(i)] = float(v[i] / norm);
      }
    }
    return t;
  }();
  return table;
}

const std::array<std::uint8_t, 512>& class_levels() {
  static const auto table = [] {
    std::array<std::uint8_t, 512> t{};
    t[0] = 1;
    for (const LatticeClass& k : lattice_classes()) t[std::size_t(k.id)] = std::uint8_t(k.levels);
    return t;
  }();
  return table;
}

}  // namespace ternlab::lattice
