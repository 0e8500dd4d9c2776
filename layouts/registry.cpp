#include "layouts/registry.hpp"

#include <algorithm>

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
  return join(registry() | ranges::views::transform([](const LayoutInfo* l) { return l->name; }));
}

const LayoutInfo& find_layout(std::string_view name) {
  for (const LayoutInfo* l : registry())
    if (l->name == name) return *l;
  fail("unknown layout '", name, "' (known: ", layout_names(), ")");
}

std::vector<std::string> LayoutInfo::strategies() const {
  std::vector<std::string> s{"reference"};
  if (facts.row_interleaved) s.push_back("broadcast");
  if (facts.slot_vectorizable) s.push_back("slot-mask");
  if (facts.natural_two_bit) s.push_back("unpack");
  if (facts.digit_planar) s.push_back("base3");
  return s;
}

std::vector<std::string> LayoutInfo::properties() const {
  std::vector<std::string> p;
  if (facts.slot_vectorizable) p.push_back(facts.pairs_rows ? "slot-vectorizable(row-pairs)" : "slot-vectorizable(rows)");
  if (facts.row_interleaved) p.push_back("row-interleaved");
  if (facts.natural_two_bit) p.push_back("natural-2bit");
  if (facts.digit_planar) p.push_back("digit-planar");
  if (code == Code::two_bit) p.push_back("carries-code-3");
  return p;
}

}  // namespace ternlab
