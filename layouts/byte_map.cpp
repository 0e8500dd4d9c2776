#include "layouts/byte_map.hpp"

#include <algorithm>
#include <array>
#include <vector>

#include "common/error.hpp"
#include "common/xml.hpp"

namespace ternlab {

namespace {

constexpr int kCellW = 30;
constexpr int kCellH = 22;
constexpr int kLeft = 70;     // room for the slot labels
constexpr int kTop = 58;      // title and summary
constexpr int kLineGap = 30;  // between lines of bytes: the byte numbers of the next line

// Sixteen colours that stay distinct side by side (a block has at most 16 rows in the stock
// layouts); rows beyond that reuse them, and the label still names the row.
constexpr std::array<const char*, 16> kRowColours = {
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#8cd17d", "#86bcb6", "#f1ce63", "#d37295", "#a0cbe8", "#ffbe7d", "#d4a6c8"};
constexpr const char* kScaleColour = "#d9d9d9";
constexpr const char* kUnusedColour = "#ffffff";

}  // namespace

std::string byte_map_svg(const LayoutInfo& L) {
  const int nb = L.block_bytes();
  const int ns = slots_per_byte(L.code);
  std::vector<RowK> cell(std::size_t(nb * ns));
  for (int r = 0; r < L.rows; ++r)
    for (int k = 0; k < L.k; ++k) {
      const Loc l = L.placement[std::size_t(r * L.k + k)];
      cell[std::size_t(l.byte * ns + l.slot)] = {r, k};
    }
  // The (row, group) whose scale holds byte b; row -1 for none (a per-tensor scale is not in the block).
  int scale_group_at = 0;
  auto scale_row = [&](int b) {
    for (int r = 0; r < L.rows; ++r)
      for (int g = 0; g < L.scales_per_row(); ++g)
        if (b >= L.scale_offset(r, g) && b < L.scale_offset(r, g) + L.scale_bytes()) {
          scale_group_at = g;
          return r;
        }
    return -1;
  };

  const int per_line = std::min(nb, kByteMapBytesPerLine);
  const int lines = (nb + per_line - 1) / per_line;
  const int line_h = ns * kCellH + kLineGap;
  const int legend_rows = (L.rows + 7) / 8;
  const int width = kLeft + per_line * kCellW + 20;
  const int height = kTop + lines * line_h + 16 + legend_rows * 20 + 24;
  const char* slot_word = L.code == Code::two_bit ? "slot" : "digit";

  std::string s = cat("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"",
                      width, "\" height=\"", height, "\" viewBox=\"0 0 ", width, " ", height,
                      "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"10\">\n",
                      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
  s += cat("<text x=\"", kLeft, "\" y=\"20\" font-size=\"15\" font-weight=\"bold\">", xml_escape(std::string(L.name)),
           ": one block, ", L.rows, " row", L.rows > 1 ? "s" : "", " x ", L.k, " weights in ", nb, " bytes</text>\n");
  s += cat("<text x=\"", kLeft, "\" y=\"38\" font-size=\"11\">",
           L.code == Code::two_bit ? "columns: bytes; rows: 2-bit slot s = bits 2s..2s+1; cell: weight k, colour: row"
                                   : "columns: bytes; rows: base-3 digit (0 most significant); cell: weight k, colour: row",
           "</text>\n");

  for (int line = 0; line < lines; ++line) {
    const int y0 = kTop + line * line_h + 14;
    for (int slot = 0; slot < ns; ++slot)
      s += cat("<text x=\"", kLeft - 6, "\" y=\"", y0 + slot * kCellH + kCellH / 2 + 4, "\" text-anchor=\"end\">",
               slot_word, " ", slot, "</text>\n");
    for (int col = 0; col < per_line; ++col) {
      const int b = line * per_line + col;
      if (b >= nb) break;
      const int x = kLeft + col * kCellW;
      s += cat("<text x=\"", x + kCellW / 2, "\" y=\"", y0 - 4, "\" text-anchor=\"middle\" fill=\"#555\">", b,
               "</text>\n");
      const int sr = scale_row(b);
      if (sr >= 0) {
        s += cat("<rect x=\"", x, "\" y=\"", y0, "\" width=\"", kCellW, "\" height=\"", ns * kCellH, "\" fill=\"",
                 kScaleColour, "\" stroke=\"#888\" stroke-width=\"0.5\"><title>byte ", b, ": ", scale_format_name(L.scale_format()),
                 " scale of row ", sr, L.scales_per_row() > 1 ? cat(", group ", scale_group_at) : "",
                 L.scale_bytes() == 1                           ? ""
                 : b == L.scale_offset(sr, scale_group_at)      ? " (low byte)"
                 : b == L.scale_offset(sr, scale_group_at) + L.scale_bytes() - 1 ? " (high byte)"
                                                                : cat(" (byte ", b - L.scale_offset(sr, scale_group_at), ")"),
                 "</title></rect>\n");
        s += cat("<text x=\"", x + kCellW / 2, "\" y=\"", y0 + ns * kCellH / 2 + 4,
                 "\" text-anchor=\"middle\" transform=\"rotate(-90 ", x + kCellW / 2, " ", y0 + ns * kCellH / 2,
                 ")\">scale r", sr, "</text>\n");
        continue;
      }
      for (int slot = 0; slot < ns; ++slot) {
        const RowK c = cell[std::size_t(b * ns + slot)];
        const int y = y0 + slot * kCellH;
        const char* fill = c.row >= 0 ? kRowColours[std::size_t(c.row) % kRowColours.size()] : kUnusedColour;
        s += cat("<rect x=\"", x, "\" y=\"", y, "\" width=\"", kCellW, "\" height=\"", kCellH, "\" fill=\"", fill,
                 "\" stroke=\"#888\" stroke-width=\"0.5\">");
        if (c.row >= 0)
          s += cat("<title>byte ", b, ", ", slot_word, " ", slot, ": row ", c.row, ", weight ", c.k, "</title>");
        else
          s += cat("<title>byte ", b, ", ", slot_word, " ", slot, ": unused</title>");
        s += "</rect>\n";
        if (c.row >= 0)
          s += cat("<text x=\"", x + kCellW / 2, "\" y=\"", y + kCellH / 2 + 4, "\" text-anchor=\"middle\">", c.k,
                   "</text>\n");
      }
      // A heavier line at every 16-byte word boundary: the unit the SIMD strategies load.
      if (b % 16 == 0)
        s += cat("<line x1=\"", x, "\" y1=\"", y0 - 14, "\" x2=\"", x, "\" y2=\"", y0 + ns * kCellH,
                 "\" stroke=\"black\" stroke-width=\"2\"/>\n");
    }
  }

  const int ly = kTop + lines * line_h + 16;
  for (int r = 0; r < L.rows; ++r) {
    const int x = kLeft + (r % 8) * 80;
    const int y = ly + (r / 8) * 20;
    s += cat("<rect x=\"", x, "\" y=\"", y - 10, "\" width=\"14\" height=\"14\" fill=\"",
             kRowColours[std::size_t(r) % kRowColours.size()], "\" stroke=\"#888\" stroke-width=\"0.5\"/>",
             "<text x=\"", x + 18, "\" y=\"", y + 1, "\">row ", r, "</text>\n");
  }
  s += cat("<rect x=\"", kLeft, "\" y=\"", ly + legend_rows * 20 - 10, "\" width=\"14\" height=\"14\" fill=\"",
           kScaleColour, "\" stroke=\"#888\" stroke-width=\"0.5\"/><text x=\"", kLeft + 18, "\" y=\"",
           ly + legend_rows * 20 + 1, "\">", scale_format_name(L.scale_format()), " scale byte</text>\n");
  s += "</svg>\n";
  return s;
}

}  // namespace ternlab
