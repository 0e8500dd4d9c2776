// The layout DSL: a ternary block layout is *data*, declared once.
//
// A block holds `rows` consecutive weight rows x `k` consecutive weights (128, or 256 for ggml's
// TQ formats) plus the rows' scales in the scale site's format (fp16 unless declared otherwise;
// layouts/scale_format.hpp): one per row per `group` weights (the whole block row unless declared:
// 64, 128 or 256), or one for the whole tensor, stored after its last block (BitNet's I2_S). Where
// weight (row, k) sits is a function of coordinates, in the spirit of CuTe
// layouts: `row` and `k - piece.k_begin` are each split into named mixed-radix modes (first mode
// varies fastest), and every mode carries a byte stride and a slot stride:
//
//     byte = piece.byte_base + sum(coord_m * byte_stride_m)
//     slot = piece.slot_base + sum(coord_m * slot_stride_m)   (2-bit field s, or base-3 digit n)
//
// t2p, for instance, is row = (half:2, pair:2), k = (kk:8, s:4, word:4), byte = 8 + kk + 8 half +
// 16 word + 64 pair, slot = s. Formats whose order changes along k (ptq1_0's staged trits) are a
// concatenation of pieces, each owning a k range.
//
// Everything else (block size, bits per weight, bijectivity, which kernel strategies apply and the
// kernel plans they follow) is derived from that declaration at compile time, below.
#pragma once

#include <algorithm>
#include <array>
#include <concepts>
#include <cstdint>
#include <string_view>

#include "layouts/scale_format.hpp"

namespace ternlab {

// How a byte stores its weights.
enum class Code : std::uint8_t {
  two_bit,  // u = w + 1 in 2-bit fields, field s at bits 2s..2s+1; u = 3 decodes to +2
  base3,    // trits t = w + 1, five per byte, digit 0 most significant, byte = ceil(256 q / 243)
  // Trits as base3, byte = 84 t0 + (t1 t2 t3 t4 read in base 3, t1 most significant): digit 0 is
  // a function of byte >> 2 (bands 0-20, 21-41, 42-62) and digits 1-4 of byte mod 84, so a
  // 64-entry and a 128-entry table read them (ternlab's own; base3 is ggml's TQ1_0 byte).
  base3_banded,
};

constexpr int slots_per_byte(Code c) { return c == Code::two_bit ? 4 : 5; }
constexpr bool is_base3(Code c) { return c != Code::two_bit; }

// One mode of a coordinate: its extent and how one step along it moves the weight.
struct Mode {
  std::string_view name;
  int extent = 1;
  int byte_stride = 0;
  int slot_stride = 0;
};

// A mode whose steps move whole bytes / whole slots.
constexpr Mode bytes(std::string_view name, int extent, int stride) { return {name, extent, stride, 0}; }
constexpr Mode slots(std::string_view name, int extent, int stride) { return {name, extent, 0, stride}; }

inline constexpr int kMaxModes = 4;

// A list of modes; the first varies fastest (coord = c0 + e0 * (c1 + e1 * (c2 + ...))).
struct Modes {
  std::array<Mode, kMaxModes> m{};
  int n = 0;
  constexpr int size() const {
    int s = 1;
    for (int i = 0; i < n; ++i) s *= m[i].extent;
    return s;
  }
};

template <std::same_as<Mode>... M>
constexpr Modes modes(M... ms) {
  static_assert(sizeof...(M) <= kMaxModes, "at most kMaxModes modes per coordinate");
  return Modes{{ms...}, int(sizeof...(M))};
}

// The weights k in [k_begin, k_begin + k-modes' size) of every row, placed from byte_base on
// (slot_base 3 with a slot stride of -1 fills a byte's fields from the top, as I2_S does).
struct Piece {
  int k_begin = 0;
  Modes row;
  Modes k;
  int byte_base = 0;
  int slot_base = 0;
};

inline constexpr int kMaxPieces = 4;
inline constexpr int kMaxBlockBytes = 2048;  // see kMaxCells

// Where the scales sit and how they are stored. Per block: the scale of row r's weights
// [g * group, g * group + group) is the scale_bytes(format) bytes at offset + r * row_stride +
// g * group_stride (group 0: the whole block row, one scale per row). Per tensor: one scale at
// byte `offset` of a `tail_bytes` tail after the tensor's last block (group, strides unused).
struct ScaleSite {
  int offset = 0;
  int row_stride = 2;
  ScaleFormat format = ScaleFormat::fp16;
  int group = 0;
  int group_stride = 0;
  bool per_tensor = false;
  int tail_bytes = 0;
};

// Weights per scale within a block row (the block's k for per-tensor scales, whose one scale
// covers every block alike).
constexpr int scale_group(const ScaleSite& sc, int k) { return sc.per_tensor || sc.group == 0 ? k : sc.group; }

struct LayoutSpec {
  std::string_view name;
  std::string_view summary;
  int rows = 1;
  int k = 128;
  Code code = Code::two_bit;
  ScaleSite scales;
  std::array<Piece, kMaxPieces> pieces{};
};

template <std::same_as<Piece>... P>
constexpr std::array<Piece, kMaxPieces> pieces(P... ps) {
  static_assert(sizeof...(P) <= kMaxPieces, "at most kMaxPieces pieces per layout");
  return {ps...};
}

// ------------------------------------------------------------------------------------------------
// Derived properties
// ------------------------------------------------------------------------------------------------

// Where one weight lives.
struct Loc {
  int byte = -1;
  int slot = -1;
};

namespace detail {
constexpr void apply_modes(const Modes& ms, int coord, int& byte, int& slot) {
  for (int i = 0; i < ms.n; ++i) {
    const int c = coord % ms.m[i].extent;
    coord /= ms.m[i].extent;
    byte += c * ms.m[i].byte_stride;
    slot += c * ms.m[i].slot_stride;
  }
}
constexpr int count_pieces(const LayoutSpec& s) {
  int n = 0;
  for (const Piece& p : s.pieces) n += p.k.n > 0 ? 1 : 0;
  return n;
}
}  // namespace detail

constexpr int n_pieces(const LayoutSpec& s) { return detail::count_pieces(s); }

// Location of weight (row, k) of a block; {-1,-1} if no piece covers it.
constexpr Loc locate(const LayoutSpec& s, int row, int k) {
  for (int p = 0; p < n_pieces(s); ++p) {
    const Piece& pc = s.pieces[p];
    if (k < pc.k_begin || k >= pc.k_begin + pc.k.size() || row >= pc.row.size()) continue;
    Loc l{pc.byte_base, pc.slot_base};
    detail::apply_modes(pc.row, row, l.byte, l.slot);
    detail::apply_modes(pc.k, k - pc.k_begin, l.byte, l.slot);
    return l;
  }
  return {};
}

// Scales per row per block: 0 for a per-tensor scale, else k / group.
constexpr int scales_per_row(const LayoutSpec& s) {
  return s.scales.per_tensor ? 0 : s.k / scale_group(s.scales, s.k);
}

constexpr int scale_offset(const LayoutSpec& s, int row, int group) {
  return s.scales.offset + row * s.scales.row_stride + group * s.scales.group_stride;
}

// One past the last scale byte of a block (0 when the scale is per tensor).
constexpr int scale_end(const LayoutSpec& s) {
  int end = 0;
  for (int r = 0; r < s.rows; ++r)
    for (int g = 0; g < scales_per_row(s); ++g) end = std::max(end, scale_offset(s, r, g) + scale_bytes(s.scales.format));
  return end;
}

constexpr bool is_scale_byte(const LayoutSpec& s, int byte) {
  for (int r = 0; r < s.rows; ++r)
    for (int g = 0; g < scales_per_row(s); ++g) {
      const int o = scale_offset(s, r, g);
      if (byte >= o && byte < o + scale_bytes(s.scales.format)) return true;
    }
  return false;
}

// Two scales of a block that share a byte; false when every scale has its own bytes.
constexpr bool scales_collide(const LayoutSpec& s) {
  const int n = s.rows * scales_per_row(s), w = scale_bytes(s.scales.format);
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b) {
      const int oa = scale_offset(s, a / scales_per_row(s), a % scales_per_row(s));
      const int ob = scale_offset(s, b / scales_per_row(s), b % scales_per_row(s));
      if (oa < ob + w && ob < oa + w) return true;
    }
  return false;
}

inline constexpr int kMaxStrips = 16;   // row-interleaved strips per block (at least 16 weights of every row each)
// The lane widths of row-interleaved strips: a row's lane is one dword (t2r), a qword or 16 bytes,
// what a broadcast of one activation dword, qword or 16-byte word serves.
inline constexpr int kRowLaneBytes[] = {4, 8, 16};
inline constexpr int kWordBytes = 16;  // one 128-bit vector: the unit the slot-mask strategy reasons in
inline constexpr int kMaxCells = 4096;  // rows * k of the largest block the DSL accepts

// Which (row, k) sits in a (byte, slot); row = -1 for none.
struct RowK {
  int row = -1;
  int k = -1;
};

// The lanes of one (16-byte word, slot): 16 consecutive weights of row_a, or (row pair) 8
// consecutive weights of row_a followed by the same 8 of row_b.
struct SlotLanes {
  int row_a = -1;
  int row_b = -1;  // -1: all 16 lanes belong to row_a
  int k0 = 0;      // first weight (within the block) of the 8 or 16 consecutive ones
};

struct WordPlan {
  int byte_offset = 0;  // from the block start
  std::array<SlotLanes, 4> slot{};
};

// Everything derived from a declaration, computed once per layout (see `facts<L>`).
struct Facts {
  std::string_view error;  // why the declaration is not a valid layout; empty when it is
  int block_bytes = 0;
  int payload_begin = 0;  // first weight byte
  int payload_bytes = 0;  // first to last weight byte (scales placed between pieces count)
  int weight_bytes = 0;   // bytes that hold weights
  double bits_per_weight = 0;  // of the blocks (a per-tensor scale's tail is not counted)
  int scale_group = 0;         // weights per scale within a block row
  int scales_per_row = 0;      // per block; 0 for a per-tensor scale
  bool per_tensor_scale = false;
  int tail_bytes = 0;          // after the tensor's last block (per-tensor scale)
  bool slot_vectorizable = false;  // see SlotVectorizable
  bool pairs_rows = false;         // slot-vectorizable words are row pairs (not single rows)
  bool natural_two_bit = false;    // see NaturalTwoBit
  bool digit_planar = false;       // see DigitPlanar
  bool row_interleaved = false;    // see RowInterleaved
  int row_lane_bytes = 0;          // row-interleaved: bytes of a row's lane in a strip (4, 8 or 16)
  bool row_interleaved_base3 = false;  // see RowInterleavedBase3
};

namespace detail {

constexpr bool classify_word(const std::array<RowK, kMaxBlockBytes * 5>& inv, int word, int slot, SlotLanes& out) {
  std::array<RowK, kWordBytes> lane{};
  for (int j = 0; j < kWordBytes; ++j) {
    lane[j] = inv[(word + j) * 5 + slot];
    if (lane[j].row < 0) return false;
  }
  const auto consecutive = [&](int from, int to) {
    for (int j = from + 1; j < to; ++j)
      if (lane[j].row != lane[from].row || lane[j].k != lane[from].k + (j - from)) return false;
    return true;
  };
  if (consecutive(0, 16)) {
    out = {lane[0].row, -1, lane[0].k};
    return true;
  }
  if (consecutive(0, 8) && consecutive(8, 16) && lane[8].k == lane[0].k && lane[8].row != lane[0].row) {
    out = {lane[0].row, lane[8].row, lane[0].k};
    return true;
  }
  return false;
}

// The next 16-byte word of weights at or after `byte`: words start at a weight byte, so scales
// placed between pieces are stepped over and the words need not sit on a 16-byte grid.
constexpr int next_word(const std::array<RowK, kMaxBlockBytes * 5>& inv, int byte, int payload_end) {
  const auto holds_weight = [&](int b) {
    for (int sl = 0; sl < 5; ++sl)
      if (inv[b * 5 + sl].row >= 0) return true;
    return false;
  };
  while (byte < payload_end && !holds_weight(byte)) ++byte;
  return byte;
}

// The inverse placement, (byte, slot) -> (row, k).
constexpr std::array<RowK, kMaxBlockBytes * 5> inverse(const LayoutSpec& s) {
  std::array<RowK, kMaxBlockBytes * 5> inv;
  inv.fill(RowK{});  // a loop, not `{}`: see find_violation
  for (int r = 0; r < s.rows; ++r)
    for (int k = 0; k < s.k; ++k) {
      const Loc l = locate(s, r, k);
      inv[l.byte * 5 + l.slot] = {r, k};
    }
  return inv;
}

// Row-interleaved strips (see RowInterleaved) with lanes of `lane` bytes: strip t of the payload is
// lane * rows bytes, row j's lane at lane * j; slot s of the lane's bytes holds weights k0[t][s] ..
// k0[t][s] + lane - 1 of row j, the same k0 for every row. True and k0 filled when the whole
// payload is such strips.
constexpr bool row_strips(const LayoutSpec& s, const std::array<RowK, kMaxBlockBytes * 5>& inv, int payload_begin,
                          int lane, std::array<std::array<int, 4>, kMaxStrips>& k0) {
  const int strip = lane * s.rows, strips = s.k / (4 * lane);
  if (s.k % (4 * lane) != 0 || strips > kMaxStrips) return false;
  for (int t = 0; t < strips; ++t)
    for (int sl = 0; sl < 4; ++sl) {
      const int base = payload_begin + t * strip;
      k0[t][sl] = inv[base * 5 + sl].k;
      if (k0[t][sl] < 0 || k0[t][sl] % 4 != 0) return false;
      for (int j = 0; j < s.rows; ++j)
        for (int b = 0; b < lane; ++b) {
          const RowK w = inv[(base + lane * j + b) * 5 + sl];
          if (w.row != j || w.k != k0[t][sl] + b) return false;
        }
    }
  return true;
}

// The lane width (kRowLaneBytes) whose strips the payload is, 0 for none; k0 as row_strips.
constexpr int row_lane_bytes(const LayoutSpec& s, const std::array<RowK, kMaxBlockBytes * 5>& inv, int payload_begin,
                             std::array<std::array<int, 4>, kMaxStrips>& k0) {
  for (const int lane : kRowLaneBytes)
    if (row_strips(s, inv, payload_begin, lane, k0)) return lane;
  return 0;
}

}  // namespace detail

// Base-3 row-interleaved blocks (see RowInterleavedBase3): 128 weights a row as six strips of
// 20 (five digits x four bytes) and a tail of 8 (four digits x two bytes).
inline constexpr int kBase3Strips = 6;
inline constexpr int kBase3StripWeights = 20;
inline constexpr int kBase3TailLanes = 2;  // bytes of every row in the tail
inline constexpr int kBase3TailDigits = 4;

// The base-3 broadcast plan: strip t < strips is 4 * rows bytes from payload_begin + t * 4 * rows,
// row j's byte 4 j + b holding in digit n the weight k0[t][n] + b; the tail is 2 * rows bytes from
// tail_begin, row j's byte 2 j + b holding in digit n < 4 the weight k0[strips][n] + b (digit 4
// empty, so zero). The same k0 for every row.
struct Base3StripPlan {
  int payload_begin = 0;
  int strips = 0;
  int tail_begin = 0;
  std::array<std::array<int, 5>, kBase3Strips + 1> k0{};
};

namespace detail {
// True, and `p` filled, when the payload from payload_begin is such strips and tail.
constexpr bool base3_strips(const LayoutSpec& s, const std::array<RowK, kMaxBlockBytes * 5>& inv, int payload_begin,
                            Base3StripPlan& p) {
  if (s.k != kBase3Strips * kBase3StripWeights + kBase3TailLanes * kBase3TailDigits) return false;
  p.payload_begin = payload_begin;
  p.strips = kBase3Strips;
  p.tail_begin = payload_begin + kBase3Strips * 4 * s.rows;
  for (int t = 0; t <= kBase3Strips; ++t) {
    const bool tail = t == kBase3Strips;
    const int lane = tail ? kBase3TailLanes : 4, digits = tail ? kBase3TailDigits : 5;
    const int base = payload_begin + t * 4 * s.rows;
    for (int n = 0; n < 5; ++n) {
      p.k0[t][n] = n < digits ? inv[base * 5 + n].k : 0;
      for (int j = 0; j < s.rows; ++j)
        for (int b = 0; b < lane; ++b) {
          const RowK w = inv[(base + lane * j + b) * 5 + n];
          if (n < digits ? w.row != j || w.k != p.k0[t][n] + b : w.row >= 0) return false;
        }
    }
  }
  return true;
}
}  // namespace detail

// The rules a declaration must satisfy, each with its reason in words (one X-macro feeds the enum,
// the runtime text and the compile-time diagnostics below, so they cannot drift apart).
#define TERNLAB_LAYOUT_RULES(X)                                                                     \
  X(shape, "rows must be >= 1 and k a positive multiple of 8")                                     \
  X(too_many_cells, "block too large: rows * k must be <= 4096 (kMaxCells: every placement is checked at compile time, and GCC's constexpr step limit bounds that loop)") \
  X(scales_overlap, "scales overlap: row and group strides must give every scale its own bytes")   \
  X(scale_group, "a declared scale group must be 64, 128 or 256 weights and divide k")              \
  X(tensor_tail, "a per-tensor scale must lie inside its tail_bytes")                              \
  X(piece_rows, "every piece must span all rows of the block")                                     \
  X(uncovered, "a (row, k) of the block is covered by no piece")                                   \
  X(beyond_block, "block larger than 2048 bytes (kMaxBlockBytes: the compile-time tables of who holds each byte and slot have that many bytes)") \
  X(slot_range, "slot index out of range for the code")                                            \
  X(on_scale_byte, "a weight is placed on a scale byte")                                           \
  X(shared_slot, "two weights share one (byte, slot): placement is not injective")

enum class Rule : std::uint8_t {
  valid,
#define TERNLAB_RULE_ENUM(name, text) name,
  TERNLAB_LAYOUT_RULES(TERNLAB_RULE_ENUM)
#undef TERNLAB_RULE_ENUM
};

constexpr std::string_view rule_text(Rule r) {
  switch (r) {
#define TERNLAB_RULE_TEXT(name, text) \
  case Rule::name:                    \
    return text;
    TERNLAB_LAYOUT_RULES(TERNLAB_RULE_TEXT)
#undef TERNLAB_RULE_TEXT
    case Rule::valid:
      break;
  }
  return "";
}

// The first rule a declaration breaks, and where: the weight (row, k), the (byte, slot) it lands
// on, the weight already there (shared_slot) or the piece (piece_rows); -1 where not applicable.
struct Violation {
  Rule rule = Rule::valid;
  int row = -1, k = -1, byte = -1, slot = -1, held_row = -1, held_k = -1, piece = -1;
};

// Checked exhaustively: every (row, k) placed once, inside the block, off the scale bytes, in a
// slot the code has.
constexpr Violation find_violation(const LayoutSpec& s) {
  if (s.rows < 1 || s.k < 8 || s.k % 8 != 0) return {.rule = Rule::shape};
  if (s.rows * s.k > kMaxCells) return {.rule = Rule::too_many_cells};
  const int group = scale_group(s.scales, s.k);
  if (!s.scales.per_tensor && s.scales.group != 0 && (s.k % group != 0 || (group != 64 && group != 128 && group != 256)))
    return {.rule = Rule::scale_group};
  if (s.scales.per_tensor && (s.scales.offset < 0 || s.scales.offset + scale_bytes(s.scales.format) > s.scales.tail_bytes))
    return {.rule = Rule::tensor_tail};
  if (scales_collide(s)) return {.rule = Rule::scales_overlap};
  for (int p = 0; p < n_pieces(s); ++p)
    if (s.pieces[p].row.size() != s.rows) return {.rule = Rule::piece_rows, .piece = p};
  // Emptied by a loop, not by `{}`: for the braced form GCC 12.2 emitted run-time code that read a
  // slot as held by (0, 0) it never stored, in units that also constant-evaluate this function
  // (the compile-time answer was right; suite peer-formats checks both).
  std::array<RowK, kMaxBlockBytes * 5> held;
  held.fill(RowK{});
  for (int r = 0; r < s.rows; ++r)
    for (int k = 0; k < s.k; ++k) {
      const Loc l = locate(s, r, k);
      const Violation at{.row = r, .k = k, .byte = l.byte, .slot = l.slot};
      const auto broken = [&](Rule rule) {
        Violation v = at;
        v.rule = rule;
        return v;
      };
      if (l.byte < 0) return broken(Rule::uncovered);
      if (l.byte >= kMaxBlockBytes) return broken(Rule::beyond_block);
      if (l.slot < 0 || l.slot >= slots_per_byte(s.code)) return broken(Rule::slot_range);
      if (is_scale_byte(s, l.byte)) return broken(Rule::on_scale_byte);
      RowK& h = held[l.byte * 5 + l.slot];
      if (h.row >= 0) {
        Violation v = broken(Rule::shared_slot);
        v.held_row = h.row;
        v.held_k = h.k;
        return v;
      }
      h = {r, k};
    }
  return {};
}

// Why a declaration is not a valid layout ("" when it is).
constexpr std::string_view validate(const LayoutSpec& s) { return rule_text(find_violation(s).rule); }

constexpr Facts derive(const LayoutSpec& s) {
  Facts f;
  f.error = validate(s);
  if (!f.error.empty()) return f;

  f.block_bytes = scale_end(s);
  f.payload_begin = kMaxBlockBytes;
  int payload_end = 0;  // one past the last weight byte (scales may follow it)
  std::array<bool, kMaxBlockBytes> holds_weight{};
  for (int r = 0; r < s.rows; ++r)
    for (int k = 0; k < s.k; ++k) {
      const Loc l = locate(s, r, k);
      payload_end = std::max(payload_end, l.byte + 1);
      f.payload_begin = std::min(f.payload_begin, l.byte);
      f.weight_bytes += holds_weight[l.byte] ? 0 : 1;
      holds_weight[l.byte] = true;
    }
  f.block_bytes = std::max(f.block_bytes, payload_end);
  f.payload_bytes = payload_end - f.payload_begin;
  f.bits_per_weight = 8.0 * f.block_bytes / (s.rows * s.k);
  f.scale_group = scale_group(s.scales, s.k);
  f.scales_per_row = scales_per_row(s);
  f.per_tensor_scale = s.scales.per_tensor;
  f.tail_bytes = s.scales.per_tensor ? s.scales.tail_bytes : 0;

  if (s.code == Code::two_bit && s.rows == 1) {
    f.natural_two_bit = true;
    for (int k = 0; k < s.k; ++k) {
      const Loc l = locate(s, 0, k);
      f.natural_two_bit = f.natural_two_bit && l.byte == f.payload_begin + k / 4 && l.slot == k % 4;
    }
  }

  if (s.code == Code::two_bit && f.weight_bytes == s.rows * s.k / 4 && f.weight_bytes % kWordBytes == 0) {
    const auto inv = detail::inverse(s);
    bool pairs = false, singles = false, ok = true;
    for (int w = detail::next_word(inv, f.payload_begin, payload_end); ok && w < payload_end;
         w = detail::next_word(inv, w + kWordBytes, payload_end))
      for (int sl = 0; ok && sl < 4; ++sl) {
        SlotLanes lanes;
        ok = detail::classify_word(inv, w, sl, lanes);
        (lanes.row_b < 0 ? singles : pairs) = true;
      }
    // One kind of word per layout keeps each kernel a single template.
    f.slot_vectorizable = ok && !(pairs && singles);
    f.pairs_rows = f.slot_vectorizable && pairs;
  }

  if (s.code == Code::two_bit && s.rows % 8 == 0 && s.rows <= 16) {
    std::array<std::array<int, 4>, kMaxStrips> k0{};
    if (payload_end - f.payload_begin == s.rows * s.k / 4)
      f.row_lane_bytes = detail::row_lane_bytes(s, detail::inverse(s), f.payload_begin, k0);
    f.row_interleaved = f.row_lane_bytes != 0;
  }

  if (is_base3(s.code) && (s.rows == 8 || s.rows == 16)) {
    Base3StripPlan p;
    f.row_interleaved_base3 = payload_end - f.payload_begin == s.rows * (kBase3Strips * 4 + kBase3TailLanes) &&
                              detail::base3_strips(s, detail::inverse(s), f.payload_begin, p);
  }

  if (s.code == Code::base3 && s.rows == 1) {
    f.digit_planar = true;
    for (int p = 0; p < n_pieces(s); ++p) {
      const Modes& km = s.pieces[p].k;
      f.digit_planar = f.digit_planar && km.n == 2 && km.m[0].byte_stride == 1 && km.m[0].slot_stride == 0 &&
                       km.m[1].byte_stride == 0 && km.m[1].slot_stride == 1;
    }
  }
  return f;
}

// ------------------------------------------------------------------------------------------------
// Concepts
// ------------------------------------------------------------------------------------------------

template <class L>
concept DeclaresLayout = requires {
  { L::spec } -> std::convertible_to<LayoutSpec>;
};

// Derived once per layout type.
template <DeclaresLayout L>
inline constexpr Facts facts = derive(L::spec);

// A layout declaration: a type with a `static constexpr LayoutSpec spec` whose placement is a
// bijection onto (byte, slot)s of the block that avoids the scale bytes (checked exhaustively).
template <class L>
concept TernaryLayout = DeclaresLayout<L> && facts<L>.error.empty();

// Readable errors for invalid declarations. check_declaration<L>() instantiates violated<rule,
// where...> for the rule L breaks; each rule's specialisation fails a static_assert whose message
// is the rule in words, so that is the compiler's first error, and the instantiation line just
// above it names the offending weight, byte, slot or piece (-1: not applicable).
namespace layout_rules {
template <int V> struct weight_row {};
template <int V> struct weight_k {};
template <int V> struct at_byte {};
template <int V> struct in_slot {};
template <int V> struct already_holding_row {};
template <int V> struct already_holding_k {};
template <int V> struct piece {};
template <class... Where>
inline constexpr bool always_false = false;

template <Rule R, class... Where>
struct violated {
  static constexpr bool ok = true;
};
#define TERNLAB_RULE_DIAGNOSTIC(name, text)                                    \
  template <class... Where>                                                    \
  struct violated<Rule::name, Where...> {                                      \
    static_assert(always_false<Where...>, "invalid layout declaration: " text); \
    static constexpr bool ok = false;                                          \
  };
TERNLAB_LAYOUT_RULES(TERNLAB_RULE_DIAGNOSTIC)
#undef TERNLAB_RULE_DIAGNOSTIC
}  // namespace layout_rules

template <DeclaresLayout L>
constexpr bool check_declaration() {
  constexpr Violation v = find_violation(L::spec);
  namespace lr = layout_rules;
  return lr::violated<v.rule, lr::weight_row<v.row>, lr::weight_k<v.k>, lr::at_byte<v.byte>, lr::in_slot<v.slot>,
                      lr::already_holding_row<v.held_row>, lr::already_holding_k<v.held_k>, lr::piece<v.piece>>::ok;
}

// Slot-vectorizable (the slot-mask strategy): the weight bytes after the scales form 16-byte words,
// and for every word and 2-bit slot the 16 lanes are 16 consecutive weights of one row, or 8
// consecutive weights of row a then the same 8 of row b. One AND per slot then yields a vector ready
// for a 4-wide dot (sdot / vpdpbusd) or, for row pairs, a 2x8 matrix-multiply operand (smmla).
template <class L>
concept SlotVectorizable = TernaryLayout<L> && facts<L>.slot_vectorizable;

// Natural 2-bit order (the stock unpack strategy): one row per block, weight k in byte
// payload + k/4, field k%4 - what table-lookup / shift / mask unpackers assume.
template <class L>
concept NaturalTwoBit = TernaryLayout<L> && facts<L>.natural_two_bit;

// Digit-planar base-3 (the base-3 strategy): one row per block; every piece is `lanes` consecutive
// bytes whose digit n holds weights k_begin + n * lanes + j, so multiplying the byte vector by 3^n
// exposes digit n of every lane at once, for consecutive weights.
template <class L>
concept DigitPlanar = TernaryLayout<L> && facts<L>.digit_planar;

// Row-interleaved (the broadcast strategy): 8 or 16 rows per block, the payload read as strips of
// lane * rows bytes (lanes of 4, 8 or 16 bytes) in which every lane belongs to one row (lane j =
// row j) and each slot of a lane holds `lane` consecutive weights at the same k for every row. One
// AND per slot then gives a vector whose 32-bit lanes dot4 (vpdpbusd) against a broadcast of the
// slot's `lane` activation bytes (a dword, qword or 16-byte word), each 32-bit lane accumulating
// part of its own row: no horizontal sums across rows, and per block one convert and one fma for
// all rows (with wider lanes after adding each row's lane / 4 dwords).
template <class L>
concept RowInterleaved = TernaryLayout<L> && facts<L>.row_interleaved;

// Base-3 row-interleaved (the broadcast strategy's base-3 build): 8 or 16 rows per block, the same
// lanes as RowInterleaved but five digits a byte (1.75 bits a weight with an fp16 scale, against
// t2r's 2.125). A byte vector's digits come out through byte tables (digit 0 and the other four
// as 2-bit fields), after which each lane dots against broadcast activation dwords as in t2r.
template <class L>
concept RowInterleavedBase3 = TernaryLayout<L> && facts<L>.row_interleaved_base3;

// ------------------------------------------------------------------------------------------------
// Kernel plans
// ------------------------------------------------------------------------------------------------

// Per-weight placement, the form runtime code (packers, unpackers) consumes.
template <TernaryLayout L>
inline constexpr auto placement_table = [] {
  constexpr LayoutSpec s = L::spec;
  std::array<Loc, s.rows * s.k> t{};
  for (int r = 0; r < s.rows; ++r)
    for (int k = 0; k < s.k; ++k) t[r * s.k + k] = locate(s, r, k);
  return t;
}();

// The slot-mask plan: for each 16-byte word, which rows and weights each slot feeds. Slot s masked
// in place (AND 3 << 2s) leaves the factor 4^s on u; kernels fold it back once per block.
template <SlotVectorizable L>
inline constexpr auto slot_plan = [] {
  constexpr Facts f = facts<L>;
  std::array<WordPlan, f.weight_bytes / kWordBytes> plan{};
  const auto inv = detail::inverse(L::spec);
  const int payload_end = f.payload_begin + f.payload_bytes;
  int byte = f.payload_begin;
  for (WordPlan& w : plan) {
    w.byte_offset = byte = detail::next_word(inv, byte, payload_end);
    for (int sl = 0; sl < 4; ++sl) detail::classify_word(inv, w.byte_offset, sl, w.slot[sl]);
    byte += kWordBytes;
  }
  return plan;
}();

constexpr int slot_factor(int slot) { return 1 << (2 * slot); }

// The base-3 plan: byte segments whose digit n holds consecutive weights.
struct DigitSegment {
  int byte_offset = 0;
  int lanes = 0;
  int digits = 0;
  int k_begin = 0;
};

template <DigitPlanar L>
inline constexpr auto digit_plan = [] {
  constexpr LayoutSpec s = L::spec;
  std::array<DigitSegment, n_pieces(s)> plan{};
  for (int p = 0; p < n_pieces(s); ++p) {
    const Piece& pc = s.pieces[p];
    plan[p] = {pc.byte_base, pc.k.m[0].extent, pc.k.m[1].extent, pc.k_begin};
  }
  return plan;
}();

// The broadcast plan: where each strip's slot s takes its lane_bytes activations (k0) and where the
// strips start; strips follow one another every lane_bytes * rows bytes.
struct StripPlan {
  int payload_begin = 0;
  int strips = 0;
  int lane_bytes = 4;
  std::array<std::array<int, 4>, kMaxStrips> k0{};
};

template <RowInterleavedBase3 L>
inline constexpr Base3StripPlan base3_strip_plan = [] {
  Base3StripPlan p;
  detail::base3_strips(L::spec, detail::inverse(L::spec), facts<L>.payload_begin, p);
  return p;
}();

template <RowInterleaved L>
inline constexpr StripPlan strip_plan = [] {
  constexpr int lane = facts<L>.row_lane_bytes;
  StripPlan p{facts<L>.payload_begin, L::spec.k / (4 * lane), lane, {}};
  detail::row_strips(L::spec, detail::inverse(L::spec), p.payload_begin, lane, p.k0);
  return p;
}();

}  // namespace ternlab
