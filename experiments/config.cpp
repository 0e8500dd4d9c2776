#include "experiments/config.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "common/strings.hpp"
#include "experiments/arms.hpp"
#include "experiments/kinds.hpp"
#include "experiments/report.hpp"

namespace ternlab::experiments {

namespace {

struct Documents {
  toml::table file;
  std::vector<toml::table> overrides;
};

Located locate(const toml::node& n, const std::string& origin, const std::string& key) {
  return Located{&n, origin, key, n.source().begin.line > 0 && origin.rfind("--set", 0) != 0 ? int(n.source().begin.line) : 0};
}

Type type_of(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::integer: return Type::integer;
    case toml::node_type::floating_point: return Type::number;
    case toml::node_type::boolean: return Type::boolean;
    case toml::node_type::string: return Type::string;
    case toml::node_type::table: return Type::section;
    default: return Type::section;  // arrays are handled by the caller; dates are never accepted
  }
}

bool type_fits(Type want, const toml::node& n) {
  if (n.is_array() || n.is_table()) return false;
  if (n.is_date() || n.is_time() || n.is_date_time()) return false;
  const Type got = type_of(n);
  return got == want || (want == Type::number && got == Type::integer);
}

struct Flat {
  Entries params;
  std::vector<Entries> arms;
  std::vector<Located> arm_tables;
};

// The document as dotted keys: top-level values, one level of [section] values, and [[arm]] tables.
Flat flatten(const toml::table& doc, const std::string& origin) {
  Flat f;
  for (auto&& [k, v] : doc) {
    const std::string key(k.str());
    if (key == "arm") {
      const toml::array* list = v.as_array();
      if (!list || !list->is_array_of_tables())
        fail_at(locate(v, origin, key), "arms are an array of tables: write each as [[arm]]");
      int i = 0;
      for (auto&& a : *list) {
        Entries e;
        const std::string prefix = cat("arm[", i, "]");
        for (auto&& [ak, av] : *a.as_table()) {
          if (av.is_table()) fail_at(locate(av, origin, prefix + "." + std::string(ak.str())), "nested tables are not accepted in an arm");
          e[std::string(ak.str())] = locate(av, origin, prefix + "." + std::string(ak.str()));
        }
        f.arms.push_back(std::move(e));
        f.arm_tables.push_back(locate(a, origin, prefix));
        ++i;
      }
      continue;
    }
    if (const toml::table* t = v.as_table()) {
      for (auto&& [sk, sv] : *t) {
        const std::string sub = key + "." + std::string(sk.str());
        if (sv.is_table()) fail_at(locate(sv, origin, sub), "nested sections are not accepted");
        f.params[sub] = locate(sv, origin, sub);
      }
      continue;
    }
    f.params[key] = locate(v, origin, key);
  }
  return f;
}

std::string quote_toml(const std::string& s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') q += '\\';
    q += c;
  }
  return q + "\"";
}

// Parses "key=value": the value as TOML, or as a plain string when it is not valid TOML.
toml::table parse_override(const std::string& text, std::string& key) {
  const auto eq = text.find('=');
  key = eq == std::string::npos ? "" : text.substr(0, eq);
  key.erase(0, key.find_first_not_of(' '));
  key.erase(key.find_last_not_of(' ') + 1);
  if (eq == std::string::npos || key.empty()) fail("--set ", text, ": expected key=value (e.g. --set shape.rows=512)");
  const std::string value = text.substr(eq + 1);
  const std::string origin = "--set " + text;
  try {
    return toml::parse("v = " + value, origin);
  } catch (const toml::parse_error&) {
    return toml::parse("v = " + quote_toml(value), origin);
  }
}

void check_type(const KeySpec& spec, const Located& v) {
  const toml::node& n = *v.node;
  if (const toml::array* a = n.as_array()) {
    if (!spec.sweepable) fail_at(v, "takes one ", type_name(spec.type), ", not an array (it cannot be swept)");
    if (a->empty()) fail_at(v, "an empty array sweeps over nothing");
    for (auto&& e : *a)
      if (!type_fits(spec.type, e))
        fail_at(v, "array elements must be of type ", type_name(spec.type), ", found ", value_text(e));
    return;
  }
  if (!type_fits(spec.type, n)) fail_at(v, "expected ", type_name(spec.type), ", found ", value_text(n));
}

const KeySpec* find_spec(const std::vector<KeySpec>& keys, const std::string& path) {
  for (const KeySpec& k : keys)
    if (k.path == path) return &k;
  return nullptr;
}

std::string known_keys(const std::vector<KeySpec>& keys, const std::string& prefix) {
  std::vector<std::string> names;
  for (const KeySpec& k : keys)
    if (prefix.empty() ? k.path.rfind("arm.", 0) != 0 : k.path.rfind(prefix, 0) == 0)
      names.push_back(prefix.empty() ? k.path : k.path.substr(prefix.size()));
  return join(names);
}

bool in_grid(const KindInfo& kind, const std::string& key) {
  for (const std::string& s : kind.grid_sections)
    if (key.rfind(s + ".", 0) == 0) return true;
  return false;
}

// Cartesian product over the array-valued keys: the first key varies slowest.
std::vector<std::vector<std::pair<std::string, const toml::node*>>> product(const Entries& e,
                                                                          const std::function<bool(const std::string&)>& sweeps) {
  std::vector<std::vector<std::pair<std::string, const toml::node*>>> out{{}};
  for (const auto& [key, v] : e) {
    if (!sweeps(key) || !v.node->is_array()) continue;
    std::vector<std::vector<std::pair<std::string, const toml::node*>>> next;
    for (const auto& partial : out)
      for (auto&& el : *v.node->as_array()) {
        auto p = partial;
        p.emplace_back(key, &el);
        next.push_back(std::move(p));
      }
    out = std::move(next);
  }
  return out;
}

std::string default_arm_name(const Entries& arm) {
  std::vector<std::string> parts;
  if (auto it = arm.find("layout"); it != arm.end()) parts.push_back(plain_text(*it->second.node));
  for (const char* k : {"layout_map", "kernel", "threads", "gdn_chunk", "spawn", "acts", "leftover", "load", "model"})
    if (auto it = arm.find(k); it != arm.end()) parts.push_back(cat(k, "=", plain_text(*it->second.node)));
  return parts.empty() ? "arm" : join(parts, " ");
}

Plan expand(std::shared_ptr<Documents> docs, const std::string& origin, const std::vector<std::string>& override_texts) {
  Flat flat = flatten(docs->file, origin);
  // Overrides replace (or add) values; arm.KEY reaches every arm, arm.N.KEY the N-th.
  for (std::size_t i = 0; i < override_texts.size(); ++i) {
    std::string key;
    toml::table t = parse_override(override_texts[i], key);
    docs->overrides.push_back(std::move(t));
    const toml::node& n = *docs->overrides.back().get("v");
    const std::string set_origin = "--set " + override_texts[i];
    if (key.rfind("arm.", 0) == 0) {
      std::string rest = key.substr(4);
      const auto dot = rest.find('.');
      if (dot != std::string::npos && std::all_of(rest.begin(), rest.begin() + std::ptrdiff_t(dot), ::isdigit) && dot > 0) {
        const std::size_t a = std::stoul(rest.substr(0, dot));
        rest = rest.substr(dot + 1);
        if (a >= flat.arms.size())
          fail(set_origin, ": key '", key, "': there is no arm ", a, " (the file declares ", flat.arms.size(), " arms, numbered from 0)");
        flat.arms[a][rest] = Located{&n, set_origin, cat("arm[", a, "].", rest), 0};
      } else {
        if (flat.arms.empty()) fail(set_origin, ": key '", key, "': the file declares no [[arm]] tables");
        for (std::size_t a = 0; a < flat.arms.size(); ++a)
          flat.arms[a][rest] = Located{&n, set_origin, cat("arm[", a, "].", rest), 0};
      }
    } else {
      flat.params[key] = Located{&n, set_origin, key, 0};
    }
  }

  const auto kind_it = flat.params.find("kind");
  if (kind_it == flat.params.end()) fail(origin, ": key 'kind' is missing (one of: ", join(kind_names()), ")");
  const Located& kind_at = kind_it->second;
  if (!kind_at.node->is_string()) fail_at(kind_at, "expected string (one of: ", join(kind_names()), "), found ", value_text(*kind_at.node));
  const KindInfo& kind = find_kind(as_string(kind_at), kind_at);

  for (const auto& [key, v] : flat.params) {
    const KeySpec* spec = find_spec(kind.keys, key);
    if (!spec) {
      const auto dot = key.find('.');
      const std::string section = dot == std::string::npos ? "" : key.substr(0, dot + 1);
      fail_at(v, "unknown key for kind '", kind.name, "' (known", section.empty() ? "" : " in [" + section.substr(0, dot) + "]",
              ": ", known_keys(kind.keys, section), ")");
    }
    check_type(*spec, v);
  }
  const bool has_arm_keys = std::any_of(kind.keys.begin(), kind.keys.end(), [](const KeySpec& k) { return k.path.rfind("arm.", 0) == 0; });
  if (!flat.arms.empty() && !has_arm_keys) fail_at(flat.arm_tables[0], "kind '", kind.name, "' takes no [[arm]] tables");
  for (const Entries& arm : flat.arms)
    for (const auto& [key, v] : arm) {
      const KeySpec* spec = find_spec(kind.keys, "arm." + key);
      if (!spec) fail_at(v, "unknown key in [[arm]] for kind '", kind.name, "' (known: ", known_keys(kind.keys, "arm."), ")");
      check_type(*spec, v);
    }

  // Arms: arrays inside an [[arm]] table expand into several arms.
  std::vector<ArmSpec> arms;
  std::set<std::string> names;
  for (std::size_t a = 0; a < flat.arms.size(); ++a) {
    for (const auto& point : product(flat.arms[a], [](const std::string&) { return true; })) {
      ArmSpec arm;
      arm.keys = flat.arms[a];
      arm.table = flat.arm_tables[a];
      std::vector<std::string> sweep;
      for (const auto& [key, node] : point) {
        Located& l = arm.keys[key];
        l = Located{node, l.origin, l.key, l.line ? int(node->source().begin.line) : 0};
        sweep.push_back(cat(key, "=", plain_text(*node)));
      }
      arm.sweep = join(sweep, " ");
      arm.declared = int(a);
      const auto named = arm.keys.find("name");
      arm.name = named != arm.keys.end() ? as_string(named->second) : default_arm_name(arm.keys);
      if (named != arm.keys.end() && !sweep.empty()) arm.name += " " + arm.sweep;
      // The identity: what the file declared, so a sweep or --set inside the arm does not rename it.
      const auto layout = arm.keys.find("layout");
      const bool by_layout = named == arm.keys.end() && layout != arm.keys.end() && layout->second.node->is_string();
      arm.identity = named != arm.keys.end() ? as_string(named->second)
                     : by_layout             ? plain_text(*layout->second.node)
                                             : cat("arm ", a);
      for (const auto& [key, node] : point)
        if (!(by_layout && key == "layout")) arm.point.emplace_back(key, plain_text(*node));
      if (!names.insert(arm.name).second)
        fail_at(arm.table, "two arms are both called '", arm.name, "' (give each [[arm]] a distinct name)");
      arms.push_back(std::move(arm));
    }
  }

  Plan plan;
  plan.file = origin;
  const auto points = product(flat.params, [&](const std::string& key) { return !in_grid(kind, key); });
  for (const auto& point : points) {
    RunSpec r;
    r.index = int(plan.runs.size());
    r.file = origin;
    r.kind = kind.name;
    r.params = flat.params;
    for (const auto& [key, node] : point) {
      Located& l = r.params[key];
      l = Located{node, l.origin, l.key, l.line ? int(node->source().begin.line) : 0};
      r.sweep_point.emplace_back(key, plain_text(*node));
    }
    r.arms = arms;
    r.keep_alive = docs;
    plan.runs.push_back(std::move(r));
  }
  for (const RunSpec& r : plan.runs) kind.validate(r);
  return plan;
}

}  // namespace

std::string Located::where() const {
  std::string s = origin;
  if (line > 0) s += cat(":", line);
  return s + ": key '" + key + "'";
}

std::string_view type_name(Type t) {
  switch (t) {
    case Type::integer: return "integer";
    case Type::number: return "number";
    case Type::boolean: return "boolean";
    case Type::string: return "string";
    case Type::section: return "section";
  }
  return "?";
}

std::string value_text(const toml::node& n) {
  if (const auto* s = n.as_string()) return quote_toml(s->get());
  std::ostringstream os;
  n.visit([&](auto&& v) { os << v; });
  std::string t = os.str();
  std::replace(t.begin(), t.end(), '\n', ' ');
  return t;
}

std::string plain_text(const toml::node& n) {
  if (const auto* s = n.as_string()) return s->get();
  return value_text(n);
}

std::int64_t as_integer(const Located& v, std::int64_t lo, std::int64_t hi) {
  const auto* i = v.node->as_integer();
  if (!i) fail_at(v, "expected integer, found ", value_text(*v.node));
  const std::int64_t x = i->get();
  if (x < lo || x > hi) fail_at(v, x, " is out of range [", lo, ", ", hi, "]");
  return x;
}

double as_number(const Located& v, double lo, double hi) {
  double x = 0;
  if (const auto* i = v.node->as_integer())
    x = double(i->get());
  else if (const auto* f = v.node->as_floating_point())
    x = f->get();
  else
    fail_at(v, "expected number, found ", value_text(*v.node));
  if (!(x >= lo && x <= hi)) fail_at(v, x, " is out of range [", lo, ", ", hi, "]");
  return x;
}

bool as_boolean(const Located& v) {
  const auto* b = v.node->as_boolean();
  if (!b) fail_at(v, "expected boolean, found ", value_text(*v.node));
  return b->get();
}

std::string as_string(const Located& v) {
  const auto* s = v.node->as_string();
  if (!s) fail_at(v, "expected string, found ", value_text(*v.node));
  return s->get();
}

std::vector<const toml::node*> elements(const Located& v) {
  std::vector<const toml::node*> out;
  if (const toml::array* a = v.node->as_array())
    for (auto&& e : *a) out.push_back(&e);
  else
    out.push_back(v.node);
  return out;
}

Located ArmSpec::at(const std::string& key) const {
  if (auto it = keys.find(key); it != keys.end()) return it->second;
  return Located{nullptr, table.origin, table.key + "." + key, table.line};
}

Located RunSpec::at(const std::string& key) const {
  if (auto it = params.find(key); it != params.end()) return it->second;
  return Located{nullptr, file, key, 0};
}

std::int64_t RunSpec::integer(const std::string& key, std::int64_t fallback, std::int64_t lo, std::int64_t hi) const {
  const Located v = at(key);
  return v ? as_integer(v, lo, hi) : fallback;
}
double RunSpec::number(const std::string& key, double fallback, double lo, double hi) const {
  const Located v = at(key);
  return v ? as_number(v, lo, hi) : fallback;
}
bool RunSpec::boolean(const std::string& key, bool fallback) const {
  const Located v = at(key);
  return v ? as_boolean(v) : fallback;
}
KeySpec IntegerKey::spec(const std::string& help, const std::string& note) const {
  return {path, Type::integer, sweepable, cat(help, " (default ", fallback, note, ")")};
}
KeySpec BooleanKey::spec(const std::string& help, const std::string& note) const {
  return {path, Type::boolean, sweepable, cat(help, " (default ", fallback ? "true" : "false", note, ")")};
}
std::string RunSpec::string(const std::string& key, const std::string& fallback) const {
  const Located v = at(key);
  return v ? as_string(v) : fallback;
}

std::string RunSpec::name() const {
  std::string n = string("name", std::filesystem::path(file).stem().string());
  std::vector<std::string> sw;
  for (const auto& [k, v] : sweep_point) sw.push_back(k + "=" + v);
  return sw.empty() ? n : n + " [" + join(sw, " ") + "]";
}

Plan load_plan_text(const std::string& text, const std::string& origin, const std::vector<std::string>& overrides) {
  auto docs = std::make_shared<Documents>();
  try {
    docs->file = toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    fail(origin, ":", e.source().begin.line, ":", e.source().begin.column, ": TOML syntax error: ", e.description());
  }
  return expand(docs, origin, overrides);
}

Plan load_plan(const std::string& path, const std::vector<std::string>& overrides) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, ": cannot read the experiment file");
  std::ostringstream text;
  text << in.rdbuf();
  return load_plan_text(text.str(), path, overrides);
}

std::string describe(const Plan& plan) {
  std::ostringstream os;
  os << plan.file << ": " << plan.runs.size() << (plan.runs.size() == 1 ? " run" : " runs") << "\n";
  for (const RunSpec& r : plan.runs) {
    os << "  run " << r.index + 1 << "/" << plan.runs.size() << ": " << r.name() << " (kind " << r.kind << ")\n";
    std::vector<std::string> settings;
    for (const auto& [k, v] : r.params)
      if (k != "kind" && k != "name" && k != "description")
        settings.push_back(k + "=" + value_text(*v.node) + (v.line == 0 ? " (--set)" : ""));
    if (!settings.empty()) os << "    " << join(settings, " ") << "\n";
    // The baseline as resolved, when the kind takes one: each arm's, where they differ.
    Baselines b;
    const KindInfo& kind = find_kind(r.kind, r.at("kind"));
    const bool has_baseline = std::any_of(kind.keys.begin(), kind.keys.end(), [](const KeySpec& k) { return k.path == "baseline"; });
    if (has_baseline && !r.arms.empty()) {
      b = resolve_baselines(r);
      os << "    baseline: " << b.label << "\n";
    }
    const bool per_arm = has_baseline && std::any_of(b.of.begin(), b.of.end(), [&](std::size_t i) { return i != b.primary; });
    std::vector<std::string> warnings;
    const auto threads_of = [&](const Located& at) { return at && at.node->is_integer() ? at.node->as_integer()->get() : 0; };
    for (std::size_t a = 0; a < r.arms.size(); ++a) {
      std::vector<std::string> s;
      for (const auto& [k, v] : r.arms[a].keys)
        if (k != "name") s.push_back(k + "=" + value_text(*v.node) + (v.line == 0 ? " (--set)" : ""));
      os << "    arm " << a << " '" << r.arms[a].name << "': " << (s.empty() ? "(defaults)" : join(s, " "))
         << (per_arm ? " [vs '" + r.arms[b.of[a]].name + "']" : "") << "\n";
      const std::int64_t threads = r.arms[a].at("threads") ? threads_of(r.arms[a].at("threads")) : threads_of(r.at("threads"));
      if (oversubscribed(int(std::min<std::int64_t>(threads, 1 << 20))))
        warnings.push_back(cat("arm ", a, " '", r.arms[a].name, "' runs ", threads, " threads"));
    }
    if (r.arms.empty() && oversubscribed(int(std::min<std::int64_t>(threads_of(r.at("threads")), 1 << 20))))
      warnings.push_back(cat("threads = ", threads_of(r.at("threads"))));
    if (!warnings.empty())
      os << "    warning: more threads than this machine's " << logical_cores() << " logical cores (" << join(warnings, "; ")
         << "): they time-slice, so those timings measure the scheduler too; kept, and marked in the results\n";
    os << plan_notes(r);
  }
  return os.str();
}

}  // namespace ternlab::experiments
