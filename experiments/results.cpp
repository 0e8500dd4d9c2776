#include "experiments/results.hpp"

#include <cmath>
#include <cstdio>

#include "common/error.hpp"
#include "experiments/measure.hpp"

namespace ternlab::experiments {

Cell cell_at(const std::vector<double>& v, std::size_t i) { return i < v.size() ? Cell(v[i]) : Cell(); }

void Rows::add(std::vector<Cell> row) {
  if (row.size() != columns.size())
    fail(file, ": a row of ", row.size(), " cells under ", columns.size(), " columns");
  rows.push_back(std::move(row));
}

std::string csv_field(std::string_view s) {
  if (s.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(s);
  std::string o = "\"";
  for (char c : s) {
    if (c == '"') o += '"';
    o += c;
  }
  return o + "\"";
}

namespace {
std::string csv_cell(const Cell& c) {
  struct Visit {
    std::string operator()(std::monostate) const { return ""; }
    std::string operator()(std::int64_t v) const { return std::to_string(v); }
    std::string operator()(double v) const {
      if (!std::isfinite(v)) return "";
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.9g", v);
      return buf;
    }
    std::string operator()(const std::string& v) const { return csv_field(v); }
  };
  return std::visit(Visit{}, c.value);
}
}  // namespace

std::string csv_text(const Rows& r) {
  std::string s;
  for (std::size_t i = 0; i < r.columns.size(); ++i) {
    if (i) s += ',';
    s += csv_field(r.columns[i]);
  }
  s += "\r\n";
  for (const auto& row : r.rows) {
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (i) s += ',';
      s += csv_cell(row[i]);
    }
    s += "\r\n";
  }
  return s;
}

Json json_number(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

Json stat_json(const Stat& s) {
  if (!s.valid) return nullptr;
  return Json{{"median", json_number(s.median)}, {"min", json_number(s.min)}, {"max", json_number(s.max)}};
}

double number_of(const Json& j) { return j.is_number() ? j.get<double>() : std::nan(""); }

Stat stat_from(const Json& j) {
  if (!j.is_object()) return {};
  return Stat{number_of(j.at("median")), number_of(j.at("min")), number_of(j.at("max")), true};
}

std::string json_text(const Json& j) { return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n"; }

}  // namespace ternlab::experiments
