// Layout spaces: reading, constraints, enumeration, headers and run-time registration
// (explore/space.hpp).
#include "explore/space.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>
#include <sstream>

#include <toml++/toml.h>

#include "common/error.hpp"
#include "common/files.hpp"
#include "common/strings.hpp"
#include "explore/families.hpp"

namespace ternlab::explore {

std::string value_text(const Value& v) {
  return std::holds_alternative<std::int64_t>(v) ? std::to_string(std::get<std::int64_t>(v)) : std::get<std::string>(v);
}

std::string Where::text() const { return cat(file, ":", line, ": key '", key, "'"); }

// --- constraint expressions ---------------------------------------------------------------------
// Integer arithmetic (+ - * / %), comparisons, && || ! and parentheses over axis names, integer
// literals and 'quoted' words; a comparison of words is == or != only.
struct Constraint::Expr {
  enum class Op { value, name, neg, not_, mul, div, mod, add, sub, lt, le, gt, ge, eq, ne, and_, or_ };
  Op op = Op::value;
  Value value;
  std::string name;
  std::shared_ptr<const Expr> a, b;
};

namespace {

using Expr = Constraint::Expr;
using ExprPtr = std::shared_ptr<const Expr>;

class Parser {
 public:
  Parser(std::string text, const Where& where) : s_(std::move(text)), where_(where) {}
  ExprPtr parse(std::vector<std::string>& names) {
    names_ = &names;
    ExprPtr e = or_();
    skip();
    if (i_ != s_.size()) error(cat("unexpected '", s_.substr(i_, 8), "'"));
    return e;
  }

 private:
  [[noreturn]] void error(const std::string& what) const {
    fail(where_.text(), ": constraint '", s_, "': ", what, " at column ", i_ + 1);
  }
  void skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool eat(std::string_view t) {
    skip();
    if (s_.compare(i_, t.size(), t) != 0) return false;
    i_ += t.size();
    return true;
  }
  static ExprPtr node(Expr::Op op, ExprPtr a, ExprPtr b = nullptr) {
    auto e = std::make_shared<Expr>();
    e->op = op, e->a = std::move(a), e->b = std::move(b);
    return e;
  }
  ExprPtr or_() {
    ExprPtr e = and_();
    while (eat("||")) e = node(Expr::Op::or_, e, and_());
    return e;
  }
  ExprPtr and_() {
    ExprPtr e = compare();
    while (eat("&&")) e = node(Expr::Op::and_, e, compare());
    return e;
  }
  ExprPtr compare() {
    ExprPtr e = sum();
    for (auto [t, op] : {std::pair{"==", Expr::Op::eq}, {"!=", Expr::Op::ne}, {"<=", Expr::Op::le}, {">=", Expr::Op::ge},
                         {"<", Expr::Op::lt}, {">", Expr::Op::gt}})
      if (eat(t)) return node(op, e, sum());
    return e;
  }
  ExprPtr sum() {
    ExprPtr e = product();
    for (;;) {
      if (eat("+")) e = node(Expr::Op::add, e, product());
      else if (eat("-")) e = node(Expr::Op::sub, e, product());
      else return e;
    }
  }
  ExprPtr product() {
    ExprPtr e = unary();
    for (;;) {
      if (eat("*")) e = node(Expr::Op::mul, e, unary());
      else if (eat("/")) e = node(Expr::Op::div, e, unary());
      else if (eat("%")) e = node(Expr::Op::mod, e, unary());
      else return e;
    }
  }
  ExprPtr unary() {
    if (eat("!")) return node(Expr::Op::not_, unary());
    if (eat("-")) return node(Expr::Op::neg, unary());
    if (eat("(")) {
      ExprPtr e = or_();
      if (!eat(")")) error("missing ')'");
      return e;
    }
    skip();
    auto e = std::make_shared<Expr>();
    if (i_ < s_.size() && (s_[i_] == '\'' || s_[i_] == '"')) {
      const char q = s_[i_];
      const std::size_t end = s_.find(q, i_ + 1);
      if (end == std::string::npos) error("unterminated word");
      e->value = s_.substr(i_ + 1, end - i_ - 1);
      i_ = end + 1;
      return e;
    }
    const std::size_t start = i_;
    if (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) {
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
      e->value = std::int64_t(std::stoll(s_.substr(start, i_ - start)));
      return e;
    }
    while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_')) ++i_;
    if (i_ == start) error("expected a number, an axis name, a 'word' or '('");
    e->op = Expr::Op::name;
    e->name = s_.substr(start, i_ - start);
    names_->push_back(e->name);
    return e;
  }

  std::string s_;
  Where where_;
  std::size_t i_ = 0;
  std::vector<std::string>* names_ = nullptr;
};

Value eval(const Expr& e, const std::map<std::string, Value>& point, const Constraint& c) {
  using Op = Expr::Op;
  const auto num = [&](const Value& v) {
    if (!std::holds_alternative<std::int64_t>(v))
      fail(c.where.text(), ": constraint '", c.rule, "' does arithmetic or an ordering on the word '", value_text(v), "'");
    return std::get<std::int64_t>(v);
  };
  switch (e.op) {
    case Op::value: return e.value;
    case Op::name: return point.at(e.name);
    case Op::neg: return -num(eval(*e.a, point, c));
    case Op::not_: return std::int64_t(num(eval(*e.a, point, c)) == 0);
    default: break;
  }
  const Value a = eval(*e.a, point, c);
  if (e.op == Op::and_ && num(a) == 0) return std::int64_t{0};
  if (e.op == Op::or_ && num(a) != 0) return std::int64_t{1};
  const Value b = eval(*e.b, point, c);
  if (e.op == Op::eq || e.op == Op::ne) {
    if (a.index() != b.index())
      fail(c.where.text(), ": constraint '", c.rule, "' compares a word with a number ('", value_text(a), "', '", value_text(b), "')");
    return std::int64_t((a == b) == (e.op == Op::eq));
  }
  const std::int64_t x = num(a), y = num(b);
  switch (e.op) {
    case Op::mul: return x * y;
    case Op::div:
    case Op::mod:
      if (y == 0) fail(c.where.text(), ": constraint '", c.rule, "' divides by zero");
      return e.op == Op::div ? x / y : x % y;
    case Op::add: return x + y;
    case Op::sub: return x - y;
    case Op::lt: return std::int64_t(x < y);
    case Op::le: return std::int64_t(x <= y);
    case Op::gt: return std::int64_t(x > y);
    case Op::ge: return std::int64_t(x >= y);
    case Op::and_:
    case Op::or_: return std::int64_t(y != 0);
    default: break;
  }
  fail("unreachable constraint operator");
}

// --- reading the space --------------------------------------------------------------------------

Where where_of(const std::string& file, const toml::node& n, const std::string& key) {
  return {file, int(n.source().begin.line), key};
}
std::string string_at(const std::string& file, const toml::node& n, const std::string& key) {
  if (!n.is_string()) fail(where_of(file, n, key).text(), ": expected a string");
  return std::string(*n.value<std::string>());
}
std::vector<std::string> strings_at(const std::string& file, const toml::node& n, const std::string& key) {
  std::vector<std::string> out;
  if (const toml::array* a = n.as_array())
    for (std::size_t i = 0; i < a->size(); ++i) out.push_back(string_at(file, *a->get(i), cat(key, "[", i, "]")));
  else
    out.push_back(string_at(file, n, key));
  return out;
}
std::int64_t integer_at(const std::string& file, const toml::node& n, const std::string& key, std::int64_t lo, std::int64_t hi) {
  const auto v = n.value<std::int64_t>();
  if (!n.is_integer() || !v) fail(where_of(file, n, key).text(), ": expected an integer");
  if (*v < lo || *v > hi) fail(where_of(file, n, key).text(), ": ", *v, " is outside ", lo, "..", hi);
  return *v;
}

Value axis_value(const std::string& file, const toml::node& n, const std::string& key, const AxisDomain& d) {
  if (d.integer) return integer_at(file, n, key, 1, 1 << 20);
  const std::string w = string_at(file, n, key);
  if (std::find(d.words.begin(), d.words.end(), w) == d.words.end())
    fail(where_of(file, n, key).text(), ": axis '", d.name, "' takes ", join(d.words), "; '", w, "' is not one of them");
  return w;
}

void read_measure(const std::string& file, const toml::table& t, MeasureSpec& m) {
  for (const auto& [k, n] : t) {
    const std::string key = cat("measure.", k.str());
    if (k == "gemv") m.gemv = string_at(file, n, key);
    else if (k == "gemm") m.gemm = string_at(file, n, key);
    else if (k == "weights") m.weights = string_at(file, n, key);
    else if (k == "decode") m.decode = string_at(file, n, key);
    else if (k == "decode_tokens") m.decode_tokens = integer_at(file, n, key, 1, 4096);
    else if (k == "gemm_tokens" || k == "threads") {
      std::vector<std::int64_t> v;
      if (const toml::array* a = n.as_array())
        for (std::size_t i = 0; i < a->size(); ++i) v.push_back(integer_at(file, *a->get(i), cat(key, "[", i, "]"), 1, 4096));
      else
        v.push_back(integer_at(file, n, key, 1, 4096));
      (k == "threads" ? m.threads : m.gemm_tokens) = v;
    } else if (k == "leaders") m.leaders = integer_at(file, n, key, 1, 1000);
    else if (k == "batch") m.batch = integer_at(file, n, key, 0, 100000);
    else if (k == "first_rounds") m.first_rounds = integer_at(file, n, key, 1, 100);
    else if (k == "rounds") m.rounds = integer_at(file, n, key, 1, 100);
    else if (k == "ceiling_mib") m.ceiling_mib = integer_at(file, n, key, 1, 1 << 20);
    else if (k == "keep" || k == "sample_ms" || k == "first_sample_ms") {
      const auto v = n.value<double>();
      if (!v || !(n.is_floating_point() || n.is_integer())) fail(where_of(file, n, key).text(), ": expected a number");
      if (k == "keep") {
        if (*v <= 0 || *v >= 1) fail(where_of(file, n, key).text(), ": keep is a fraction between 0 and 1, not ", *v);
        m.keep = *v;
      } else {
        if (*v < 1 || *v > 10000) fail(where_of(file, n, key).text(), ": ", *v, " ms is outside 1..10000");
        (k == "sample_ms" ? m.sample_ms : m.first_sample_ms) = *v;
      }
    } else
      fail(where_of(file, n, key).text(), ": unknown key (measure takes gemv, gemm, gemm_tokens, threads, weights, keep, leaders, "
                                           "first_rounds, rounds, first_sample_ms, sample_ms, ceiling_mib, decode, decode_tokens, batch)");
  }
  if (m.weights != "cold" && m.weights != "warm") fail(file, ": key 'measure.weights': cold or warm, not '", m.weights, "'");
}

}  // namespace

bool Constraint::holds(const std::map<std::string, Value>& point) const {
  const Value v = eval(*expr, point, *this);
  if (!std::holds_alternative<std::int64_t>(v)) fail(where.text(), ": constraint '", rule, "' is a word, not a condition");
  return std::get<std::int64_t>(v) != 0;
}

Space load_space_text(const std::string& text, const std::string& origin) {
  toml::table doc;
  try {
    doc = toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    fail(origin, ":", e.source().begin.line, ": ", e.description());
  }
  Space s;
  s.file = origin;
  const auto required = [&](const char* key) -> const toml::node& {
    const toml::node* n = doc.get(key);
    if (!n) fail(origin, ": key '", key, "' is missing (a space names its ", key, ")");
    return *n;
  };
  s.name = string_at(origin, required("name"), "name");
  const toml::node& fam = required("family");
  const std::string family_name = string_at(origin, fam, "family");
  const Family* family = nullptr;
  try {
    family = &find_family(family_name);
  } catch (const Error& e) {
    fail(where_of(origin, fam, "family").text(), ": ", e.what());
  }
  s.family = family->name;
  s.prefix = family->prefix;
  std::set<std::string> seen_axes;
  for (const auto& [k, n] : doc) {
    const std::string key(k.str());
    if (key == "name" || key == "family") continue;
    if (key == "prefix") {
      s.prefix = string_at(origin, n, key);
      const bool ok = !s.prefix.empty() && std::all_of(s.prefix.begin(), s.prefix.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-';
      });
      if (!ok) fail(where_of(origin, n, key).text(), ": a prefix is letters, digits and '-'");
    } else if (key == "compare") {
      s.compare = strings_at(origin, n, key);
      const toml::array* a = n.as_array();
      for (std::size_t i = 0; i < s.compare.size(); ++i) {
        try {
          find_layout(s.compare[i]);
        } catch (const Error& e) {
          fail(where_of(origin, a ? *a->get(i) : n, cat(key, "[", i, "]")).text(), ": ", e.what());
        }
      }
    } else if (key == "axes") {
      const toml::table* t = n.as_table();
      if (!t) fail(where_of(origin, n, key).text(), ": expected a table of axes");
      for (const auto& [ak, an] : *t) {
        const std::string name(ak.str()), akey = cat("axes.", name);
        const auto d = std::find_if(family->axes.begin(), family->axes.end(), [&](const AxisDomain& x) { return x.name == name; });
        if (d == family->axes.end()) {
          std::vector<std::string> names;
          for (const AxisDomain& x : family->axes) names.push_back(x.name);
          fail(where_of(origin, an, akey).text(), ": unknown axis '", name, "' for family ", family->name, " (its axes: ", join(names), ")");
        }
        Axis axis{name, {}, where_of(origin, an, akey)};
        if (const toml::array* a = an.as_array()) {
          if (a->empty()) fail(axis.where.text(), ": an axis needs at least one value");
          for (std::size_t i = 0; i < a->size(); ++i) axis.values.push_back(axis_value(origin, *a->get(i), cat(akey, "[", i, "]"), *d));
        } else {
          axis.values.push_back(axis_value(origin, an, akey, *d));
        }
        seen_axes.insert(name);
        s.axes.push_back(std::move(axis));
      }
    } else if (key == "constraint") {
      const toml::array* a = n.as_array();
      if (!a || !a->is_array_of_tables()) fail(where_of(origin, n, key).text(), ": write constraints as [[constraint]] tables");
      for (std::size_t i = 0; i < a->size(); ++i) {
        const toml::table& t = *a->get(i)->as_table();
        const std::string base = cat("constraint[", i, "]");
        Constraint c;
        for (const auto& [ck, cn] : t) {
          if (ck == "rule") c.rule = string_at(origin, cn, base + ".rule"), c.where = where_of(origin, cn, base + ".rule");
          else if (ck == "why") c.why = string_at(origin, cn, base + ".why");
          else fail(where_of(origin, cn, cat(base, ".", ck.str())).text(), ": unknown key (a constraint has rule and why)");
        }
        if (c.rule.empty()) fail(where_of(origin, t, base).text(), ": a constraint needs its rule");
        s.constraints.push_back(std::move(c));
      }
    } else if (key == "measure") {
      const toml::table* t = n.as_table();
      if (!t) fail(where_of(origin, n, key).text(), ": expected a table");
      read_measure(origin, *t, s.measure);
    } else {
      fail(where_of(origin, n, key).text(), ": unknown key (a space has name, family, prefix, compare, [axes], [[constraint]], [measure])");
    }
  }
  // In the file's order (a TOML table iterates its keys sorted): the first axis varies slowest.
  std::stable_sort(s.axes.begin(), s.axes.end(), [](const Axis& a, const Axis& b) { return a.where.line < b.where.line; });
  // Axes the space leaves out take the family's value, after the declared ones.
  for (const AxisDomain& d : family->axes)
    if (!seen_axes.count(d.name)) s.axes.push_back({d.name, {d.fallback}, {origin, 0, cat("axes.", d.name)}, false});
  for (Constraint& c : s.constraints) {
    c.expr = Parser(c.rule, c.where).parse(c.names);
    if (c.names.empty()) fail(c.where.text(), ": constraint '", c.rule, "' names no axis, so it removes all or nothing");
    for (const std::string& name : c.names)
      if (std::none_of(s.axes.begin(), s.axes.end(), [&](const Axis& a) { return a.name == name; })) {
        std::vector<std::string> names;
        for (const Axis& a : s.axes) names.push_back(a.name);
        fail(c.where.text(), ": constraint '", c.rule, "' names '", name, "', which is no axis (axes: ", join(names), ")");
      }
  }
  return s;
}

Space load_space(const std::filesystem::path& path) { return load_space_text(read_text(path), path.string()); }

namespace {

// "rows=8 lane_bytes=4" -> "ri-r8-lb4-after-fp16": words as they are, numbers after their axis's initials.
std::string candidate_name(const Space& s, const std::vector<std::pair<std::string, Value>>& point) {
  std::string name = s.prefix;
  for (const auto& [axis, v] : point) {
    const auto a = std::find_if(s.axes.begin(), s.axes.end(), [&](const Axis& x) { return x.name == axis; });
    if (a != s.axes.end() && !a->declared) continue;
    name += "-";
    if (std::holds_alternative<std::int64_t>(v)) {
      for (std::size_t i = 0; i < axis.size(); ++i)
        if (i == 0 || axis[i - 1] == '_') name += axis[i];
    }
    name += value_text(v);
  }
  return name;
}

bool same_layout(const LayoutSpec& a, const Facts& fa, const LayoutInfo& b) {
  if (a.rows != b.rows || a.k != b.k || a.code != b.code || fa.block_bytes != b.block_bytes() ||
      a.scales.format != b.scale_format() || fa.scales_per_row != b.scales_per_row() || fa.per_tensor_scale != b.per_tensor_scale())
    return false;
  for (int r = 0; r < a.rows; ++r) {
    for (int g = 0; g < fa.scales_per_row; ++g)
      if (scale_offset(a, r, g) != b.scale_offset(r, g)) return false;
    for (int k = 0; k < a.k; ++k) {
      const Loc x = locate(a, r, k), y = b.placement[std::size_t(r * a.k + k)];
      if (x.byte != y.byte || x.slot != y.slot) return false;
    }
  }
  return true;
}

}  // namespace

SpacePlan enumerate(const Space& space) {
  SpacePlan plan;
  const Family& family = find_family(space.family);
  std::vector<std::size_t> at(space.axes.size(), 0);
  std::set<std::string> names;
  for (;;) {
    std::vector<std::pair<std::string, Value>> point;
    std::map<std::string, Value> by_name;
    for (std::size_t i = 0; i < space.axes.size(); ++i) {
      point.emplace_back(space.axes[i].name, space.axes[i].values[at[i]]);
      by_name[space.axes[i].name] = space.axes[i].values[at[i]];
    }
    std::string refused_by, reason;
    for (const Constraint& c : space.constraints)
      if (!c.holds(by_name)) {
        refused_by = "constraint";
        reason = cat("'", c.rule, "' (", c.where.file, ":", c.where.line, ")", c.why.empty() ? "" : cat(": ", c.why));
        break;
      }
    auto cand = std::make_unique<Candidate>();
    if (refused_by.empty()) {
      cand->name = candidate_name(space, point);
      cand->point = point;
      if (std::string why = family.declare(by_name, *cand); !why.empty()) {
        refused_by = "family", reason = why;
      } else if (std::string_view rule = validate(cand->spec); !rule.empty()) {
        refused_by = "dsl", reason = std::string(rule);
      }
    }
    if (refused_by.empty()) {
      if (!names.insert(cand->name).second) fail(space.file, ": two candidates are named '", cand->name, "' (repeated axis values?)");
      cand->spec.name = cand->strings.emplace_back(cand->name);
      std::vector<std::string> said;
      for (const auto& [axis, v] : point) said.push_back(cat(axis, "=", value_text(v)));
      cand->spec.summary = cand->strings.emplace_back(cat("explore ", space.name, " (", family.name, "): ", join(said, " ")));
      cand->facts = derive(cand->spec);
      for (const LayoutInfo* l : all_layouts()) {
        const bool same = same_layout(cand->spec, cand->facts, *l);
        // A layout of the candidate's name is the candidate itself, registered earlier in this
        // process, or a clash.
        if (l->name == cand->name) {
          if (!same) fail(space.file, ": candidate '", cand->name, "' has the name of a registered layout; set a prefix");
        } else if (same) {
          cand->same_as = std::string(l->name);
        }
      }
      plan.candidates.push_back(std::move(cand));
    } else {
      plan.refused.push_back({point, refused_by, reason});
    }
    std::size_t i = space.axes.size();
    while (i > 0 && ++at[i - 1] == space.axes[i - 1].values.size()) at[--i] = 0;
    if (i == 0) break;
  }
  plan.space = space;
  return plan;
}

std::vector<std::string> refusal_summary(const SpacePlan& plan) {
  std::map<std::string, int> counts;
  std::vector<std::string> order;
  for (const Refusal& r : plan.refused) {
    const std::string key = cat(r.by, " ", r.reason);
    if (!counts.count(key)) order.push_back(key);
    ++counts[key];
  }
  std::vector<std::string> out;
  for (const std::string& k : order) out.push_back(cat(k, ": ", counts[k]));
  return out;
}

namespace {

std::string identifier(const std::string& name) {
  std::string id = "Explore_";
  for (char c : name) id += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return id;
}

std::string mode_text(const Mode& m) {
  if (m.slot_stride == 0) return cat("bytes(\"", m.name, "\", ", m.extent, ", ", m.byte_stride, ")");
  if (m.byte_stride == 0) return cat("slots(\"", m.name, "\", ", m.extent, ", ", m.slot_stride, ")");
  return cat("Mode{\"", m.name, "\", ", m.extent, ", ", m.byte_stride, ", ", m.slot_stride, "}");
}
std::string modes_text(const Modes& ms) {
  std::vector<std::string> v;
  for (int i = 0; i < ms.n; ++i) v.push_back(mode_text(ms.m[std::size_t(i)]));
  return cat("modes(", join(v), ")");
}
std::string_view code_text(Code c) {
  return c == Code::two_bit ? "Code::two_bit" : c == Code::base3 ? "Code::base3" : "Code::base3_banded";
}

}  // namespace

std::string header_text(const Candidate& c, const std::string& space_file) {
  const LayoutSpec& s = c.spec;
  const std::string id = identifier(c.name);
  std::ostringstream h;
  h << "// Written by `ternlab explore plan " << space_file << "`: " << s.summary << ".\n"
    << "// " << c.facts.bits_per_weight << " bits a weight, " << c.facts.block_bytes << " bytes a block"
    << (c.same_as.empty() ? "" : cat(", the placement and scales of ", c.same_as)) << ".\n"
    << "#pragma once\n#include \"layouts/dsl.hpp\"\n#include \"layouts/registry.hpp\"\n\n"
    << "namespace ternlab::explore_candidates {\n\n"
    << "struct " << id << " {\n  static constexpr LayoutSpec spec{\n"
    << "      .name = \"" << s.name << "\",\n      .summary = \"" << s.summary << "\",\n"
    << "      .rows = " << s.rows << ",\n      .k = " << s.k << ",\n      .code = " << code_text(s.code) << ",\n"
    << "      .scales = {.offset = " << s.scales.offset << ", .row_stride = " << s.scales.row_stride
    << ", .format = ScaleFormat::" << scale_format_name(s.scales.format) << "},\n      .pieces = pieces(";
  for (int p = 0; p < n_pieces(s); ++p) {
    const Piece& pc = s.pieces[std::size_t(p)];
    h << (p ? ",\n                       " : "") << "Piece{.k_begin = " << pc.k_begin << ", .row = " << modes_text(pc.row)
      << ", .k = " << modes_text(pc.k) << ", .byte_base = " << pc.byte_base << ", .slot_base = " << pc.slot_base << "}";
  }
  h << "),\n  };\n};\nTERNLAB_REGISTER_LAYOUT(" << id << ");\n\n}  // namespace ternlab::explore_candidates\n";
  return h.str();
}

std::vector<std::string> register_candidates(const SpacePlan& plan) {
  // Registered layouts live for the process (the registry holds pointers); each candidate's
  // LayoutInfo and placement are kept here with the plan's specs.
  struct Registered {
    LayoutSpec spec;
    std::deque<std::string> strings;
    std::vector<Loc> placement;
    LayoutInfo info;
  };
  static std::deque<Registered> kept;
  std::vector<std::string> names;
  for (const auto& c : plan.candidates) {
    names.push_back(c->name);
    if (std::any_of(all_layouts().begin(), all_layouts().end(), [&](const LayoutInfo* l) { return l->name == c->name; }))
      continue;  // registered by an earlier call in this process
    Registered& r = kept.emplace_back();
    r.strings = c->strings;
    r.spec = c->spec;
    // The spec's string_views into the copied strings: its name, summary and mode names, by position.
    const auto same = [&](std::string_view v) {
      for (std::size_t i = 0; i < c->strings.size(); ++i)
        if (c->strings[i].data() == v.data()) return std::string_view(r.strings[i]);
      return v;
    };
    r.spec.name = same(r.spec.name);
    r.spec.summary = same(r.spec.summary);
    for (Piece& p : r.spec.pieces) {
      for (Mode& m : p.row.m) m.name = same(m.name);
      for (Mode& m : p.k.m) m.name = same(m.name);
    }
    for (int row = 0; row < r.spec.rows; ++row)
      for (int k = 0; k < r.spec.k; ++k) r.placement.push_back(locate(r.spec, row, k));
    r.info = LayoutInfo{&r.spec, r.spec.name, r.spec.summary, r.spec.rows, r.spec.k, r.spec.code, c->facts, r.placement, -1};
    detail::add_layout(&r.info);
  }
  return names;
}

}  // namespace ternlab::explore
