// The record layouts: decoded records of 24-weight Leech-lattice blocks (lattice/, spec §5), declared
// as data beside the ternary layouts of dsl.hpp.
//
// A ternary layout places weights; a record layout places *fields*: the header every record shares
// (class id, gain bit), then per-slot bit fields of 24 bits (sign mask, level planes, one-hot level
// masks, a Golay codeword rank and its two pick words), then zero padding. Records sit in matrix-wide
// block order b = row * blocks_per_row + p, LSB-first (stream bit n = byte[n / 8] >> (n % 8) & 1).
// Side channels (a per-group base table, an exception table) are declared with what they cost.
//
// From a declaration follow: the record width per class (Slot32 keeps only the masks its class
// needs), the stride, which classes the main stream cannot hold (exceptions), the byte accounting of
// spec §5.8, and the field offsets the transcoders and kernels read (lattice/records.hpp).
#pragma once

#include <array>
#include <concepts>
#include <cstdint>
#include <string_view>

namespace ternlab::records {

inline constexpr int kBlockWeights = 24;

enum class FieldKind : std::uint8_t {
  class_id,    // 9 bits: 0 = origin, 1 … 301
  gain,        // 1 bit: which of the matrix's two gain centroids
  sign_mask,   // bit j = 1 iff weight j < 0 (zero weights 0)
  level_plane, // bit j = bit `level` of slot j's level index
  level_mask,  // bit j = 1 iff slot j holds level `level` (one-hot; level 0 implicit)
  golay_rank,  // 12 bits: flat rank of the block's codeword (even: |x| ≡ 2 mod 4; odd: x ≡ 3 mod 4)
  golay_pick,  // A: even: which magnitude of the slot's residue; odd: level bit 0
  golay_sign,  // B: even: sign; odd: level bit 1 (the sign follows from the codeword)
  padding,     // zero
};

constexpr std::string_view field_kind_name(FieldKind k) {
  switch (k) {
    case FieldKind::class_id: return "class id";
    case FieldKind::gain: return "gain";
    case FieldKind::sign_mask: return "sign mask";
    case FieldKind::level_plane: return "level plane";
    case FieldKind::level_mask: return "level mask";
    case FieldKind::golay_rank: return "golay rank";
    case FieldKind::golay_pick: return "golay pick";
    case FieldKind::golay_sign: return "golay sign/level";
    case FieldKind::padding: return "padding";
  }
  return "";
}

struct Field {
  std::string_view name;
  FieldKind kind = FieldKind::padding;
  int bit = 0;    // first bit within the record
  int bits = 0;
  int level = 0;  // level_plane: the bit of the level index; level_mask: the level it marks
  // The field is in the record only for classes with at least this many levels (Slot32's masks);
  // 0: always.
  int min_levels = 0;
};

enum class Addressing : std::uint8_t {
  uniform,    // record b at byte stride * b
  grouped32,  // groups of 32 records, each group's stride its widest record (u32 base table)
};

// Which classes the main stream cannot hold; their blocks go to the exception table as exact
// 14-byte Planes14 records, and the main stream holds an origin record with the gain copied.
enum class ExceptionRule : std::uint8_t {
  none,
  five_levels,       // L = 5 (two level planes name four levels)
  golay_or_5levels,  // L = 5, or an even class with three magnitudes in one mod-4 residue
};

enum class SideKind : std::uint8_t { base_table, exceptions };

struct SideChannel {
  std::string_view name;
  SideKind kind = SideKind::base_table;
  int bits_per_entry = 0;  // billed per entry (spec §5.8)
  std::string_view what;
};

inline constexpr int kMaxFields = 10;
inline constexpr int kMaxSide = 2;

enum class RecordId : std::uint8_t { slot32, planes14, planes12x, golay70 };

struct RecordSpec {
  std::string_view name;
  std::string_view summary;
  RecordId id = RecordId::planes14;
  Addressing addressing = Addressing::uniform;
  int record_bits = 0;         // uniform: the stride in bits; grouped32: the widest record
  int window_bytes = 0;        // the GPU read window of spec §5 (words of 4 bytes)
  ExceptionRule exceptions = ExceptionRule::none;
  std::array<Field, kMaxFields> fields{};
  std::array<SideChannel, kMaxSide> side{};
};

constexpr int n_fields(const RecordSpec& s) {
  int n = 0;
  for (const Field& f : s.fields) n += f.bits > 0 ? 1 : 0;
  return n;
}
constexpr int n_side(const RecordSpec& s) {
  int n = 0;
  for (const SideChannel& c : s.side) n += c.bits_per_entry > 0 ? 1 : 0;
  return n;
}

// Position of the field of a kind (and level, for planes and masks) in `fields`, or -1. (An index,
// not a pointer: sanitizer builds cannot compare pointers in constant expressions.)
constexpr int field_index(const RecordSpec& s, FieldKind kind, int level = 0) {
  for (int i = 0; i < n_fields(s); ++i)
    if (s.fields[std::size_t(i)].kind == kind &&
        (s.fields[std::size_t(i)].level == level || (kind != FieldKind::level_plane && kind != FieldKind::level_mask)))
      return i;
  return -1;
}
constexpr bool has_field(const RecordSpec& s, FieldKind kind, int level = 0) { return field_index(s, kind, level) >= 0; }
constexpr const Field& field(const RecordSpec& s, FieldKind kind, int level = 0) {
  return s.fields[std::size_t(field_index(s, kind, level))];
}

// Bits of a record of a class with `levels` levels: one past the last field present for it (the
// padding of uniform records included).
constexpr int record_bits(const RecordSpec& s, int levels) {
  if (s.addressing == Addressing::uniform) return s.record_bits;
  int end = 0;
  for (int i = 0; i < n_fields(s); ++i)
    if (levels >= s.fields[i].min_levels && s.fields[i].kind != FieldKind::padding)
      end = end > s.fields[i].bit + s.fields[i].bits ? end : s.fields[i].bit + s.fields[i].bits;
  return end;
}
constexpr int record_bytes(const RecordSpec& s, int levels) { return (record_bits(s, levels) + 7) / 8; }
// Levels a main-stream record can name.
constexpr int max_levels(const RecordSpec& s) {
  int planes = 0, masks = 0;
  for (int i = 0; i < n_fields(s); ++i) {
    planes += s.fields[i].kind == FieldKind::level_plane ? 1 : 0;
    masks += s.fields[i].kind == FieldKind::level_mask ? 1 : 0;
  }
  if (has_field(s, FieldKind::golay_rank)) return 4;
  if (masks > 0) return masks + 1;
  return planes >= 3 ? 5 : 1 << planes;
}

// Why a declaration is not a valid record layout ("" when it is): the header every kernel reads
// first (class id at bits 0-8, gain at bit 9), 24-bit slot fields, no overlap, everything inside
// the record, and the fields its level numbering needs.
constexpr std::string_view validate(const RecordSpec& s) {
  if (s.name.empty()) return "a record layout needs a name";
  if (!has_field(s, FieldKind::class_id) || field(s, FieldKind::class_id).bit != 0 || field(s, FieldKind::class_id).bits != 9)
    return "the class id must be bits 0-8";
  if (!has_field(s, FieldKind::gain) || field(s, FieldKind::gain).bit != 9 || field(s, FieldKind::gain).bits != 1)
    return "the gain must be bit 9";
  if (s.record_bits <= 0) return "record_bits must be positive";
  for (int i = 0; i < n_fields(s); ++i) {
    const Field& f = s.fields[i];
    const bool slot_field = f.kind == FieldKind::sign_mask || f.kind == FieldKind::level_plane ||
                            f.kind == FieldKind::level_mask || f.kind == FieldKind::golay_pick ||
                            f.kind == FieldKind::golay_sign;
    if (slot_field && f.bits != kBlockWeights) return "a per-slot field must be 24 bits";
    if (f.kind == FieldKind::golay_rank && f.bits != 12) return "the golay rank must be 12 bits";
    if (f.bit < 0 || f.bit + f.bits > s.record_bits) return "a field lies beyond the record";
    for (int j = 0; j < i; ++j) {
      const Field& g = s.fields[j];
      if (f.bit < g.bit + g.bits && g.bit < f.bit + f.bits) return "two fields overlap";
    }
  }
  const bool golay = has_field(s, FieldKind::golay_rank);
  if (golay != (has_field(s, FieldKind::golay_pick) && has_field(s, FieldKind::golay_sign)))
    return "a golay record needs the rank and both pick words";
  if (!golay && !has_field(s, FieldKind::sign_mask)) return "a record without a golay rank needs a sign mask";
  if (!golay && max_levels(s) < 4) return "a record must name at least four levels";
  if (max_levels(s) < 5 && s.exceptions == ExceptionRule::none) return "five-level classes need an exception table";
  if (s.exceptions != ExceptionRule::none && n_side(s) == 0) return "exceptions need a side channel to bill";
  if (s.addressing == Addressing::grouped32 && n_side(s) == 0) return "grouped records need a base table";
  return "";
}

template <class R>
concept RecordLayout = requires {
  { R::spec } -> std::convertible_to<RecordSpec>;
} && validate(R::spec).empty();

// ------------------------------------------------------------------------------------------------
// Byte accounting (spec §5.8)
// ------------------------------------------------------------------------------------------------

// What a matrix (or a set of matrices) holds, as the accounting needs it.
struct MatrixCounts {
  std::uint64_t rows = 0;
  std::uint64_t blocks = 0;
  std::uint64_t tail_weights = 0;
  std::uint64_t exceptions = 0;    // blocks in the exception table
  std::uint64_t stream_bytes = 0;  // record stream (grouped32: data-dependent; 0 = blocks * stride)
  std::uint64_t base_entries = 0;  // grouped32 only; 0 = ceil(blocks / 32) + 1
  std::uint64_t matrices = 1;
  constexpr std::uint64_t weights() const { return 24 * blocks + tail_weights; }
};

struct Accounting {
  double stream_bits = 0, side_bits = 0, tail_bits = 0, scale_bits = 0;
  double memory_bpw = 0;  // what the kernel streams: records, side channels, f32 tail, f32 row scales
  double code_bpw = 0;    // the format-v1 code: 47-bit index + gain bit per block over all weights
  double disk_bpw = 0;    // the code plus the file's f32 tail, f64 row scales and two f64 centroids
};

// Kernel b/w = (8·stream bytes + 32·base entries + 144·exceptions + 32·tail + 32·rows) / weights;
// the class and codeword tables are resident constants and not billed.
constexpr Accounting account(const RecordSpec& s, const MatrixCounts& m) {
  Accounting a;
  const double w = double(m.weights());
  a.stream_bits = 8.0 * double(m.stream_bytes != 0 ? m.stream_bytes : m.blocks * std::uint64_t(record_bytes(s, 5)));
  for (int i = 0; i < n_side(s); ++i) {
    const SideChannel& c = s.side[i];
    const std::uint64_t entries =
        c.kind == SideKind::exceptions ? m.exceptions : (m.base_entries != 0 ? m.base_entries : (m.blocks + 31) / 32 + 1);
    a.side_bits += double(c.bits_per_entry) * double(entries);
  }
  a.tail_bits = 32.0 * double(m.tail_weights);
  a.scale_bits = 32.0 * double(m.rows);
  a.memory_bpw = (a.stream_bits + a.side_bits + a.tail_bits + a.scale_bits) / w;
  a.code_bpw = 48.0 * double(m.blocks) / w;
  a.disk_bpw = (48.0 * double(m.blocks) + 32.0 * double(m.tail_weights) + 64.0 * double(m.rows) +
                128.0 * double(m.matrices)) / w;
  return a;
}

}  // namespace ternlab::records
