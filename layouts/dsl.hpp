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
// Its geometry (block size, bits per weight, where the payload and the scales sit, bijectivity) is
// derived from that declaration at compile time, below. Which kernel strategies read a layout, and
// the plans they follow, is each strategy's own question, asked of the placement at run time
// (kernels/strategies/<name>/plan.hpp): this header knows no kernel.
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

inline constexpr int kMaxCells = 4096;  // rows * k of the largest block the DSL accepts

// Which (row, k) sits in a (byte, slot); row = -1 for none.
struct RowK {
  int row = -1;
  int k = -1;
};

// The geometry derived from a declaration, computed once per layout (see `facts<L>`).
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
};

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

// ------------------------------------------------------------------------------------------------
// Placement
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

}  // namespace ternlab
