// `ternlab layouts` and `ternlab layout show NAME`: what the registry holds, and the byte map of one
// block as a text grid a reading group can project.
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "common/error.hpp"
#include "common/table.hpp"
#include "common/files.hpp"
#include "common/strings.hpp"
#include "kernels/catalog.hpp"
#include "layouts/byte_map.hpp"
#include "layouts/matrix.hpp"
#include "layouts/records/all.hpp"
#include "layouts/registry.hpp"

namespace ternlab::cli {

namespace {

void print_layouts(bool as_json) {
  Table table({{"layout"}, {"bits", Align::right}, {"block", Align::right}, {"bytes", Align::right}, {"strategies"}, {"properties"}});
  nlohmann::ordered_json json = nlohmann::ordered_json::array();
  for (const LayoutInfo* L : all_layouts()) {
    // The reference kernel runs every layout; the strategies after it read the layout's properties.
    std::vector<std::string> strategies{std::string(strategy_name(Strategy::reference))};
    for (const Strategy s : admitted_strategies(*L)) strategies.emplace_back(strategy_name(s));
    table.add({std::string(L->name), fixed_text(L->bits_per_weight(), 3), cat(L->rows, "x", L->k), cat(L->block_bytes()),
               join(strategies), join(layout_properties(*L))});
    json.push_back({{"layout", std::string(L->name)}, {"summary", std::string(L->summary)}, {"bits_per_weight", L->bits_per_weight()},
                    {"rows", L->rows}, {"k", L->k}, {"block_bytes", L->block_bytes()}, {"strategies", strategies},
                    {"properties", layout_properties(*L)}, {"gguf_type", L->gguf_type >= 0 ? nlohmann::ordered_json(L->gguf_type) : nullptr}});
  }
  std::cout << (as_json ? json.dump(1) + "\n" : table.text());
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
                : L.code == Code::base3 ? "base-3 digits t = w + 1, digit 0 most significant, byte = ceil(256 q / 243)"
                                        : "base-3 digits t = w + 1, byte = 84 t0 + (t1 t2 t3 t4 in base 3, t1 most significant)")
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

// A record layout (layouts/record_dsl.hpp): its fields as a bit map, addressing, side channels and
// the byte accounting of spec §5.8 on Qwen3-4B's projections.
void show_record_layout(const records::RecordSpec& s) {
  using namespace records;
  std::cout << s.name << ": " << s.summary << "\n"
            << "Leech-lattice record layout: one record per 24-weight block, LSB-first, "
            << (s.addressing == Addressing::uniform ? cat("record b at byte ", s.record_bits / 8, " b")
                                                    : std::string("groups of 32 records at the widest record's byte stride"))
            << "; GPU read window " << s.window_bytes << " bytes\n\n";
  Table fields({{"bits"}, {"field"}, {"kind"}, {"present"}});
  for (int i = 0; i < n_fields(s); ++i) {
    const Field& f = s.fields[std::size_t(i)];
    std::string kind(field_kind_name(f.kind));
    if (f.kind == FieldKind::level_plane) kind += cat(" (level bit ", f.level, ")");
    if (f.kind == FieldKind::level_mask) kind += cat(" (level ", f.level, ")");
    fields.add({cat(f.bit, "-", f.bit + f.bits - 1), std::string(f.name), kind,
                f.min_levels > 0 ? cat("L >= ", f.min_levels) : std::string("always")});
  }
  std::cout << fields.text() << "\n";
  std::cout << "record width by levels L:";
  for (int l = 1; l <= 5; ++l) std::cout << "  L=" << l << ": " << record_bits(s, l) << " bits";
  std::cout << "\nlevels a main-stream record names: " << max_levels(s) << "\n";
  for (int i = 0; i < n_side(s); ++i)
    std::cout << "side channel: " << s.side[std::size_t(i)].name << ", " << s.side[std::size_t(i)].bits_per_entry
              << " bits per entry (" << s.side[std::size_t(i)].what << ")\n";
  const double fraction = s.exceptions == ExceptionRule::five_levels        ? 0.033824
                          : s.exceptions == ExceptionRule::golay_or_5levels ? 0.074357
                                                                            : 0.0;
  MatrixCounts c = qwen3_4b_counts(fraction);
  if (s.addressing == Addressing::grouped32) c.stream_bytes = c.blocks * std::uint64_t(record_bytes(s, 4));
  const Accounting a = account(s, c);
  std::cout << "\nbyte accounting (spec 5.8), Qwen3-4B's 252 projections (" << c.weights() << " weights, " << c.blocks
            << " blocks, f32 tail and row scales"
            << (fraction > 0 ? cat(", ", fixed_text(100 * fraction, 4), " % of blocks as exceptions") : std::string())
            << (s.addressing == Addressing::grouped32 ? ", every group at the L=4 stride (the stream is data-dependent)"
                                                      : std::string())
            << "):\n  in memory (what the kernel streams): " << fixed_text(a.memory_bpw, 4) << " bits/weight\n"
            << "  on disk (47-bit index + gain bit, f32 tail, f64 row scales and centroids): " << fixed_text(a.disk_bpw, 4)
            << " bits/weight (code alone " << fixed_text(a.code_bpw, 4) << ")\n";
}

}  // namespace

CLI::Validator known_layouts() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        std::stringstream in(value);
        std::string name;
        while (std::getline(in, name, ','))
          if (!name.empty() && std::none_of(all_layouts().begin(), all_layouts().end(),
                                            [&](const LayoutInfo* L) { return L->name == name; }))
            return cat("unknown layout '", name, "' (layouts: ", layout_names(), ")");
        return {};
      },
      "LAYOUT[,LAYOUT...]");
}

void add_layout_commands(CLI::App& app) {
  static bool layouts_json = false;
  auto* layouts = app.add_subcommand("layouts", "List the declared layouts: bits per weight, block geometry, strategies");
  layouts->add_flag("--json", layouts_json, "Print the list as JSON");
  layouts->callback([] { print_layouts(layouts_json); });
  auto* layout = app.add_subcommand("layout", "Inspect one layout");
  layout->require_subcommand(1);
  auto* show = layout->add_subcommand("show", "Print the byte map of one block (which row and weight each slot holds)");
  static std::string name;
  static std::string svg_path;
  show->add_option("name", name, "Layout name (see `ternlab layouts`; or a Leech-lattice record layout: slot32, planes14, planes12x, golay70)")->required();
  show->add_option("--svg", svg_path,
                   "Also draw the byte map as an SVG figure into this file (bytes as columns, slots as rows, "
                   "colour by row, weight index in each cell)");
  show->callback([] {
    if (const records::RecordSpec* r = records::find_record_layout(name)) {
      if (!svg_path.empty()) fail("layout show: --svg draws ternary layouts; ", name, " is a record layout");
      show_record_layout(*r);
      return;
    }
    const LayoutInfo& layout = find_layout(name);
    show_layout(layout);
    if (!svg_path.empty()) {
      write_file_atomically(svg_path, byte_map_svg(layout));
      std::cout << "\nbyte map figure: " << svg_path << "\n";
    }
  });
}

}  // namespace ternlab::cli
