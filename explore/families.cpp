// The layout families of `ternlab explore` (explore/families.hpp). Each declaration is written the
// way the hand-designed member of its family is (layouts/t2r.hpp, layouts/b3r.hpp, layouts/t2p.hpp),
// with the axes in place of its constants.
#include "explore/families.hpp"

#include <string_view>

#include "common/error.hpp"
#include "common/strings.hpp"
#include "layouts/scale_format.hpp"

namespace ternlab::explore {
namespace {

std::int64_t integer(const Point& p, const std::string& axis) { return std::get<std::int64_t>(p.at(axis)); }
const std::string& word(const Point& p, const std::string& axis) { return std::get<std::string>(p.at(axis)); }

std::string_view keep(Candidate& c, std::string s) { return c.strings.emplace_back(std::move(s)); }

const std::vector<std::string> kScalePlaces{"before", "after"};
std::vector<std::string> format_names() {
  std::vector<std::string> v;
  for (ScaleFormat f : {ScaleFormat::fp16, ScaleFormat::bf16, ScaleFormat::e4m3, ScaleFormat::e8m0, ScaleFormat::fp32})
    v.emplace_back(scale_format_name(f));
  return v;
}
ScaleFormat format_of(const std::string& name) {
  for (ScaleFormat f : {ScaleFormat::fp16, ScaleFormat::bf16, ScaleFormat::e4m3, ScaleFormat::e8m0, ScaleFormat::fp32})
    if (scale_format_name(f) == name) return f;
  fail("unknown scale format '", name, "'");
}

AxisDomain scale_format_axis() {
  return {"scale_format", false, format_names(), std::string("fp16"), "the scales' format (layouts/scale_format.hpp)"};
}
AxisDomain scales_axis(std::vector<std::string> places) {
  return {"scales", false, std::move(places), std::string("before"), "where the block's scales sit: before or after the payload"};
}

// t2r's family: row j owns lane j (lane_bytes bytes) of every strip, slot s of a lane byte holds
// weights 4 b + s ... of the strip: rows x lane_bytes bytes a strip, 128 / (4 lane_bytes) strips.
std::string declare_row_interleaved(const Point& p, Candidate& c) {
  const int rows = int(integer(p, "rows")), lane = int(integer(p, "lane_bytes"));
  if (lane < 1 || 32 % lane != 0) return "lane_bytes must divide 32 (128 weights a row, four 2-bit slots a byte)";
  const ScaleFormat f = format_of(word(p, "scale_format"));
  const bool after = word(p, "scales") == "after";
  const int strips = 32 / lane, payload = 32 * rows, scale_block = rows * scale_bytes(f);
  c.spec.rows = rows;
  c.spec.code = Code::two_bit;
  c.spec.scales = {.offset = after ? payload : 0, .row_stride = scale_bytes(f), .format = f};
  c.spec.pieces = pieces(Piece{.row = modes(bytes(keep(c, "lane"), rows, lane)),
                               .k = modes(bytes(keep(c, "b"), lane, 1), slots(keep(c, "s"), 4, 1),
                                          bytes(keep(c, "strip"), strips, lane * rows)),
                               .byte_base = after ? 0 : scale_block});
  return "";
}

// b3r's family: base-3 digits five a byte (Code::base3_banded or ggml's base3 byte), row j owning a
// 4-byte lane of six strips (120 weights a row), then the last 8 weights of each row in a 2-byte lane.
std::string declare_base3_row_interleaved(const Point& p, Candidate& c) {
  const int rows = int(integer(p, "rows"));
  const ScaleFormat f = format_of(word(p, "scale_format"));
  const bool after = word(p, "scales") == "after";
  const int payload = 26 * rows, base = after ? 0 : rows * scale_bytes(f);
  c.spec.rows = rows;
  c.spec.code = word(p, "code") == "base3" ? Code::base3 : Code::base3_banded;
  c.spec.scales = {.offset = after ? payload : 0, .row_stride = scale_bytes(f), .format = f};
  c.spec.pieces = pieces(Piece{.row = modes(bytes(keep(c, "lane"), rows, 4)),
                               .k = modes(bytes(keep(c, "b"), 4, 1), slots(keep(c, "n"), 5, 1), bytes(keep(c, "strip"), 6, 4 * rows)),
                               .byte_base = base},
                         Piece{.k_begin = 120,
                               .row = modes(bytes(keep(c, "lane"), rows, 2)),
                               .k = modes(bytes(keep(c, "b"), 2, 1), slots(keep(c, "n"), 4, 1)),
                               .byte_base = base + 24 * rows});
  return "";
}

// t2p's family: four rows as two row pairs, slot s of a 16-byte word holding 8 weights of row a
// and the same 8 of row b; the scales' format and place vary (before, after, or between the two
// halves of k, as tests/layouts/t2p_split.hpp).
std::string declare_row_pairs(const Point& p, Candidate& c) {
  const ScaleFormat f = format_of(word(p, "scale_format"));
  const std::string& place = word(p, "scales");
  const int scale_block = 4 * scale_bytes(f);
  c.spec.rows = 4;
  c.spec.code = Code::two_bit;
  const auto piece = [&](int k_begin, int words, int base) {
    return Piece{.k_begin = k_begin,
                 .row = modes(bytes(keep(c, "half"), 2, 8), bytes(keep(c, "pair"), 2, 16 * words)),
                 .k = modes(bytes(keep(c, "kk"), 8, 1), slots(keep(c, "s"), 4, 1), bytes(keep(c, "word"), words, 16)),
                 .byte_base = base};
  };
  if (place == "between") {
    c.spec.scales = {.offset = 64, .row_stride = scale_bytes(f), .format = f};
    c.spec.pieces = pieces(piece(0, 2, 0), piece(64, 2, 64 + scale_block));
  } else {
    const bool after = place == "after";
    c.spec.scales = {.offset = after ? 128 : 0, .row_stride = scale_bytes(f), .format = f};
    c.spec.pieces = pieces(piece(0, 4, after ? 0 : scale_block));
  }
  return "";
}

}  // namespace

const std::vector<Family>& families() {
  static const std::vector<Family> all{
      {"row_interleaved",
       "ri",
       "t2r's family: each row owns a lane of every strip, read against broadcast activations",
       {{"rows", true, {}, std::int64_t{16}, "rows a block (a lane each)"},
        {"lane_bytes", true, {}, std::int64_t{4}, "bytes of a row's lane in a strip (divides 32)"},
        scales_axis(kScalePlaces),
        scale_format_axis()},
       {"t2r", "t2r8", "t2x4"},
       &declare_row_interleaved},
      {"base3_row_interleaved",
       "b3",
       "b3r's family: five base-3 digits a byte, each row owning a 4-byte lane of six strips and a 2-byte tail",
       {{"rows", true, {}, std::int64_t{16}, "rows a block (a lane each)"},
        scales_axis(kScalePlaces),
        scale_format_axis(),
        {"code", false, {"base3_banded", "base3"}, std::string("base3_banded"), "the byte's digit code (layouts/dsl.hpp, Code)"}},
       {"b3r"},
       &declare_base3_row_interleaved},
      {"row_pairs",
       "rp",
       "t2p's family: two row pairs, slot s of a word holding 8 weights of each row of a pair; the scales vary",
       {scales_axis({"before", "after", "between"}), scale_format_axis()},
       {"t2p", "t2p-bf16", "t2p-e4m3", "t2p-e8m0"},
       &declare_row_pairs},
  };
  return all;
}

const Family& find_family(const std::string& name) {
  for (const Family& f : families())
    if (f.name == name) return f;
  std::vector<std::string> names;
  for (const Family& f : families()) names.push_back(f.name);
  fail("unknown layout family '", name, "' (known: ", join(names), ")");
}

}  // namespace ternlab::explore
