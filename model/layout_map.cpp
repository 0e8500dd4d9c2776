#include "model/layout_map.hpp"

#include <algorithm>
#include <map>
#include <sstream>

#include "common/error.hpp"
#include "common/strings.hpp"
#include "kernels/dispatch.hpp"

namespace ternlab::model {

namespace {

std::string trimmed(std::string s) {
  const auto a = s.find_first_not_of(" \t\n");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t\n") - a + 1);
}

// A layout a map may name: registered, and holding the model's scales exactly.
void check_exact(const std::string& name, const std::string& item) {
  const LayoutInfo& L = [&]() -> const LayoutInfo& {
    try {
      return find_layout(name);
    } catch (const Error& e) {
      fail("layout map item '", item, "': ", e.what());
    }
  }();
  if (!L.holds_exact_fp16_per128_scales())
    fail("layout map item '", item, "': layout ", name, " ", L.lossy_scales_why(),
         ": a mixture takes only layouts that hold the model's fp16 per-128 scales exactly, so its logits stay exact");
}

}  // namespace

bool LayoutMap::measured() const {
  return std::any_of(rules.begin(), rules.end(), [](const LayoutRule& r) { return r.measured(); });
}

std::string LayoutMap::text() const {
  std::vector<std::string> items;
  for (const LayoutRule& r : rules) items.push_back(r.pattern + "=" + r.target);
  return join(items, ",");
}

int LayoutMap::match(const std::string& tensor) const {
  for (std::size_t i = 0; i < rules.size(); ++i)
    if (pattern_matches(rules[i].pattern, tensor)) return int(i);
  return -1;
}

LayoutMap parse_layout_map(const std::string& text) {
  LayoutMap m;
  std::stringstream items(text);
  for (std::string item; std::getline(items, item, ',');) {
    item = trimmed(item);
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string::npos)
      fail("layout map item '", item, "' is not pattern=layout (e.g. ffn_*=b3r, *=t2r, or *=measure)");
    LayoutRule r;
    r.pattern = trimmed(item.substr(0, eq));
    r.target = trimmed(item.substr(eq + 1));
    if (r.pattern.empty()) fail("layout map item '", item, "' has no pattern before '='");
    if (r.target.empty()) fail("layout map item '", item, "' has no layout after '='");
    if (r.target == "measure") {
      r.measure_all = true;
    } else {
      std::stringstream alts(r.target);
      for (std::string a; std::getline(alts, a, '|');) {
        a = trimmed(a);
        if (a.empty()) fail("layout map item '", item, "' has an empty layout between '|'");
        check_exact(a, item);
        if (std::find(r.layouts.begin(), r.layouts.end(), a) != r.layouts.end())
          fail("layout map item '", item, "' names layout ", a, " twice");
        r.layouts.push_back(a);
      }
    }
    for (const LayoutRule& before : m.rules)
      if (before.pattern == r.pattern) fail("layout map: pattern '", r.pattern, "' is given twice (the second would never match)");
    m.rules.push_back(std::move(r));
  }
  if (m.rules.empty()) fail("layout map '", text, "' has no pattern=layout item");
  return m;
}

bool glob_match(std::string_view p, std::string_view s) {
  // Iterative with one backtrack point: the last '*' absorbs one more character on a mismatch.
  std::size_t i = 0, j = 0, star = std::string_view::npos, mark = 0;
  while (j < s.size()) {
    if (i < p.size() && (p[i] == '?' || p[i] == s[j])) {
      ++i, ++j;
    } else if (i < p.size() && p[i] == '*') {
      star = i++;
      mark = j;
    } else if (star != std::string_view::npos) {
      i = star + 1;
      j = ++mark;
    } else {
      return false;
    }
  }
  while (i < p.size() && p[i] == '*') ++i;
  return i == p.size();
}

std::string short_tensor_name(const std::string& name) {
  std::string s = name;
  if (s.starts_with("blk.")) {
    const auto dot = s.find('.', 4);
    if (dot != std::string::npos) s = s.substr(dot + 1);
  }
  if (s.ends_with(".weight")) s.resize(s.size() - 7);
  return s;
}

bool pattern_matches(const std::string& pattern, const std::string& tensor) {
  return glob_match(pattern, pattern.find('.') == std::string::npos ? short_tensor_name(tensor) : tensor);
}

std::vector<std::string> matmul_tensors(const ModelConfig& c) {
  std::vector<std::string> out;
  for (const TensorSpec& t : tensor_specs(c))
    if (t.kind == Kind::ternary && t.name != "token_embd.weight") out.push_back(t.name);
  return out;
}

void check_layout_map(const LayoutMap& m, const std::vector<std::string>& tensors, bool has_fallback, const std::string& model) {
  std::vector<int> hits(m.rules.size(), 0);
  for (const std::string& t : tensors) {
    const int r = m.match(t);
    if (r >= 0) {
      ++hits[std::size_t(r)];
    } else if (!has_fallback) {
      fail("layout map '", m.text(), "': no pattern matches tensor ", t, " of ", model,
           " (end the map with *=LAYOUT, or give the layout the rest take)");
    }
  }
  for (std::size_t i = 0; i < m.rules.size(); ++i) {
    if (hits[i] > 0) continue;
    // Said apart: a pattern that names tensors an earlier one has taken, and one that names none.
    const bool shadowed = std::any_of(tensors.begin(), tensors.end(), [&](const std::string& t) { return pattern_matches(m.rules[i].pattern, t); });
    std::vector<std::string> examples;
    for (std::size_t k = 0; k < tensors.size() && examples.size() < 3; ++k) {
      const std::string s = short_tensor_name(tensors[k]);
      if (std::find(examples.begin(), examples.end(), s) == examples.end()) examples.push_back(s);
    }
    if (shadowed)
      fail("layout map '", m.text(), "': pattern '", m.rules[i].pattern, "' matches only tensors an earlier pattern takes (first match wins)");
    fail("layout map '", m.text(), "': pattern '", m.rules[i].pattern, "' matches no matmul tensor of ", model, " (patterns without '.' see short names such as ",
         join(examples), "; with '.' the whole name, e.g. ", tensors.empty() ? std::string("blk.0.ffn_up.weight") : tensors.back(), ")");
  }
}

std::vector<const LayoutInfo*> measure_candidates(const LayoutRule& r, std::int64_t rows, std::int64_t cols,
                                                  std::vector<std::string>* skipped) {
  std::vector<const LayoutInfo*> named;
  if (r.measure_all) {
    for (const LayoutInfo* L : all_layouts())
      if (L->holds_exact_fp16_per128_scales()) named.push_back(L);
  } else {
    for (const std::string& n : r.layouts) named.push_back(&find_layout(n));
  }
  std::vector<const LayoutInfo*> out;
  const auto skip = [&](const LayoutInfo* L, const std::string& why) {
    if (skipped) skipped->push_back(cat(L->name, ": ", why));
  };
  for (const LayoutInfo* L : named) {
    if (rows % L->rows != 0 || cols % L->k != 0) {
      skip(L, cat("its ", L->rows, " x ", L->k, " blocks do not tile ", rows, " x ", cols));
      continue;
    }
    std::vector<KernelVariant> k = kernels_under_ceiling(*L);
    std::erase_if(k, [](const KernelVariant& v) { return v.strategy == Strategy::reference; });
    if (k.empty()) {
      skip(L, "only the reference kernel runs it here");
      continue;
    }
    out.push_back(L);
  }
  return out;
}

std::string layout_summary(const LayoutMap& m, const std::vector<TensorLayout>& t) {
  std::vector<std::string> parts;
  const auto counts = [&](int rule) {
    std::map<std::string, int> n;
    for (const TensorLayout& x : t)
      if (x.rule == rule) ++n[x.layout];
    return n;
  };
  const auto listed = [](const std::map<std::string, int>& n, bool with_word) {
    std::vector<std::string> s;
    for (const auto& [layout, k] : n) s.push_back(cat(layout, " (", k, with_word ? (k == 1 ? " tensor" : " tensors") : "", ")"));
    return join(s);
  };
  for (std::size_t i = 0; i < m.rules.size(); ++i) {
    const LayoutRule& r = m.rules[i];
    const auto n = counts(int(i));
    parts.push_back(r.measured() ? cat(r.pattern, ": measured ", r.measure_all ? "" : r.target + " ", "-> ", listed(n, false))
                                 : cat(r.pattern, ": ", listed(n, true)));
  }
  const auto rest = counts(-1);
  if (!rest.empty()) parts.push_back(cat("rest: ", listed(rest, false)));
  return join(parts, "; ");
}

double mixture_bits_per_weight(const std::vector<TensorLayout>& t) {
  double bytes = 0, weights = 0;
  for (const TensorLayout& x : t) {
    bytes += double(x.bytes);
    weights += double(x.rows) * double(x.cols);
  }
  return weights > 0 ? bytes * 8 / weights : 0;
}

}  // namespace ternlab::model
