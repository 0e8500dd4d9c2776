#include "layouts/registry.hpp"

#include <algorithm>
#include <cstdlib>
#include <ranges>

#include "common/error.hpp"
#include "common/strings.hpp"
#include "layouts/stock.hpp"  // links the stock declarations (and their registrations) into every binary

namespace ternlab {

namespace {
std::vector<const LayoutInfo*>& registry() {
  static std::vector<const LayoutInfo*> r;
  return r;
}
}  // namespace

void detail::add_layout(const LayoutInfo* info) {
  for (const LayoutInfo* l : registry())
    if (l->name == info->name) {
      if (l == info) return;
      fail("two layouts are declared with the name '", info->name, "'");
    }
  // Sorted by name: registration runs during static initialisation, whose order across files is
  // unspecified, and listings should not depend on it.
  auto& r = registry();
  r.insert(std::upper_bound(r.begin(), r.end(), info, [](auto* a, auto* b) { return a->name < b->name; }), info);
}

std::span<const LayoutInfo* const> all_layouts() { return registry(); }

std::string layout_names() {
  return join(registry() | std::views::transform([](const LayoutInfo* l) { return l->name; }));
}

const LayoutInfo& find_layout(std::string_view name) {
  for (const LayoutInfo* l : registry())
    if (l->name == name) return *l;
  fail("unknown layout '", name, "' (known: ", layout_names(), ")");
}

std::string LayoutInfo::lossy_scales_why() const {
  if (holds_exact_fp16_per128_scales()) return "";
  if (scale_format() != ScaleFormat::fp16)
    return cat("stores ", scale_format_name(scale_format()), " scales, which round the model's fp16 scales");
  if (per_tensor_scale()) return "stores one scale per tensor, which merges the model's per-128-weight scales";
  return cat("stores one scale per ", scale_group(), " weights, which merges the model's per-128-weight scales");
}

std::string LayoutInfo::block_scales_why_not() const {
  if (block_scales_128()) return "";
  const char* need = " (the SIMD kernels read one scale per row per 128-weight block, from the block)";
  if (per_tensor_scale()) return cat("one scale for the whole tensor", need);
  return cat(k, "-weight blocks with ", scale_group(), "-weight scale groups", need);
}

std::vector<std::string> LayoutInfo::formulas() const {
  std::vector<std::string> out;
  for (int p = 0; p < n_pieces(*spec); ++p) {
    const Piece& pc = spec->pieces[std::size_t(p)];
    const auto coords = [](const Modes& ms) {
      std::vector<std::string> m;
      for (int i = 0; i < ms.n; ++i) m.push_back(cat(ms.m[std::size_t(i)].name, ":", ms.m[std::size_t(i)].extent));
      return cat("(", join(m), ")");
    };
    // Terms by increasing stride (the fastest-moving coordinate first); stride 1 is left implicit.
    std::vector<std::pair<int, std::string_view>> byte_terms, slot_terms;
    for (const Modes* ms : {&pc.row, &pc.k})
      for (int i = 0; i < ms->n; ++i) {
        const Mode& m = ms->m[std::size_t(i)];
        if (m.extent > 1 && m.byte_stride != 0) byte_terms.emplace_back(m.byte_stride, m.name);
        if (m.extent > 1 && m.slot_stride != 0) slot_terms.emplace_back(m.slot_stride, m.name);
      }
    const auto sum = [](std::vector<std::pair<int, std::string_view>> terms, int base) {
      std::stable_sort(terms.begin(), terms.end(),
                       [](const auto& a, const auto& b) { return std::abs(a.first) < std::abs(b.first); });
      std::string t = base != 0 || terms.empty() ? std::to_string(base) : "";
      for (const auto& [stride, name] : terms) {
        const int m = std::abs(stride);
        t += cat(t.empty() ? (stride < 0 ? "-" : "") : (stride < 0 ? " - " : " + "), m == 1 ? "" : cat(m, " "), name);
      }
      return t;
    };
    out.push_back(cat("k ", pc.k_begin, "..", pc.k_begin + pc.k.size() - 1, ": row = ", coords(pc.row), ", k = ",
                      coords(pc.k), "; byte = ", sum(byte_terms, pc.byte_base), ", ", Code::two_bit == code ? "slot" : "digit",
                      " = ", sum(slot_terms, pc.slot_base)));
  }
  const ScaleSite& sc = spec->scales;
  if (per_tensor_scale())
    out.push_back(cat(scale_format_name(scale_format()), " scale of the whole tensor at byte ", sc.offset, " of a ",
                      sc.tail_bytes, "-byte tail after the last block"));
  else if (scales_per_row() > 1)
    out.push_back(cat(scale_format_name(scale_format()), " scale of row r, weights g*", scale_group(), "..g*", scale_group(),
                      "+", scale_group() - 1, ", at byte ", sc.offset, rows > 1 ? cat(" + ", sc.row_stride, " r") : "", " + ",
                      sc.group_stride, " g"));
  else
    out.push_back(cat(scale_format_name(scale_format()), " scale of row r at byte ", sc.offset,
                      rows > 1 ? cat(" + ", sc.row_stride, " r") : ""));
  return out;
}

std::vector<std::string> LayoutInfo::properties() const {
  std::vector<std::string> p;
  if (code == Code::two_bit) p.push_back("carries-code-3");
  if (per_tensor_scale()) p.push_back("per-tensor-scale");
  else if (scale_group() != k) p.push_back(cat("scale-group-", scale_group()));
  return p;
}

BlockInverse::BlockInverse(const LayoutInfo& L)
    : block_bytes_(L.block_bytes()), at_(std::size_t(L.block_bytes()) * 5) {
  for (int r = 0; r < L.rows; ++r)
    for (int k = 0; k < L.k; ++k) {
      const Loc l = L.placement[std::size_t(r * L.k + k)];
      at_[std::size_t(l.byte * 5 + l.slot)] = {r, k};
    }
}

bool BlockInverse::holds_weight(int byte) const {
  for (int slot = 0; slot < 5; ++slot)
    if ((*this)(byte, slot).row >= 0) return true;
  return false;
}

}  // namespace ternlab
