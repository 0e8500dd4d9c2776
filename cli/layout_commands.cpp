// `ternlab layouts` and `ternlab layout show NAME`: what the registry holds, and the byte map of one
// block as a text grid a reading group can project.
#include <iomanip>
#include <iostream>
#include <sstream>

#include "cli/commands.hpp"
#include "common/error.hpp"
#include "common/table.hpp"
#include "common/files.hpp"
#include "common/strings.hpp"
#include "layouts/byte_map.hpp"
#include "layouts/matrix.hpp"
#include "layouts/stock.hpp"

namespace ternlab::cli {

namespace {

void print_layouts() {
  Table table({{"layout"}, {"bits", Align::right}, {"block", Align::right}, {"bytes", Align::right}, {"strategies"}, {"properties"}});
  for (const LayoutInfo* L : all_layouts())
    table.add({std::string(L->name), fixed_text(L->bits_per_weight(), 3), cat(L->rows, "x", L->k), cat(L->block_bytes()),
               join(L->strategies()), join(L->properties())});
  std::cout << table.text();
}

// One line per byte: which row and weight each slot holds. Scale bytes name their row.
void show_layout(const LayoutInfo& L) {
  const int nb = L.block_bytes();
  const int ns = slots_per_byte(L.code);
  auto cell = std::vector<std::vector<RowK>>(std::size_t(nb), std::vector<RowK>(std::size_t(ns)));
  for (int r = 0; r < L.rows; ++r)
    for (int k = 0; k < L.k; ++k) {
      const Loc l = L.placement[std::size_t(r * L.k + k)];
      cell[std::size_t(l.byte)][std::size_t(l.slot)] = {r, k};
    }
  std::cout << L.name << ": " << L.summary << "\n"
            << "block = " << L.rows << " row" << (L.rows > 1 ? "s" : "") << " x " << L.k << " weights in " << nb
            << " bytes (" << L.bits_per_weight() << " bits/weight); "
            << (L.code == Code::two_bit ? "2-bit fields u = w + 1, slot s = bits 2s..2s+1"
                                        : "base-3 digits t = w + 1, digit 0 most significant, byte = ceil(256 q / 243)")
            << "\n";
  for (const std::string& f : L.formulas()) std::cout << "  " << f << "\n";
  std::cout << "cell = r<row>:<weight>\n\n";
  std::cout << "byte |";
  for (int s = 0; s < ns; ++s) std::cout << "  " << (L.code == Code::two_bit ? "slot " : "digit ") << s << "   ";
  std::cout << "\n";
  for (int b = 0; b < nb; ++b) {
    std::cout << std::right << std::setw(4) << b << " |";
    bool scale = false;
    for (int r = 0; r < L.rows; ++r)
      if (b == L.scale_offset(r) || b == L.scale_offset(r) + 1) {
        std::cout << "  fp16 scale of row " << r << (b == L.scale_offset(r) ? " (low byte)" : " (high byte)");
        scale = true;
      }
    if (!scale) {
      bool any = false;
      for (int s = 0; s < ns; ++s) {
        const RowK c = cell[std::size_t(b)][std::size_t(s)];
        std::ostringstream o;
        if (c.row >= 0) {
          o << "r" << c.row << ":" << c.k;
          any = true;
        } else {
          o << "-";
        }
        std::cout << "  " << std::left << std::setw(9) << o.str();
      }
      if (!any) std::cout << "  (unused)";
    }
    std::cout << "\n";
  }
}

}  // namespace

void add_layout_commands(CLI::App& app) {
  app.add_subcommand("layouts", "List the declared layouts: bits per weight, block geometry, strategies")
      ->callback(print_layouts);
  auto* layout = app.add_subcommand("layout", "Inspect one layout");
  layout->require_subcommand(1);
  auto* show = layout->add_subcommand("show", "Print the byte map of one block (which row and weight each slot holds)");
  static std::string name;
  static std::string svg_path;
  show->add_option("name", name, "Layout name (see `ternlab layouts`)")->required();
  show->add_option("--svg", svg_path,
                   "Also draw the byte map as an SVG figure into this file (bytes as columns, slots as rows, "
                   "colour by row, weight index in each cell)");
  show->callback([] {
    const LayoutInfo& layout = find_layout(name);
    show_layout(layout);
    if (!svg_path.empty()) {
      write_file_atomically(svg_path, byte_map_svg(layout));
      std::cout << "\nbyte map figure: " << svg_path << "\n";
    }
  });
}

}  // namespace ternlab::cli
