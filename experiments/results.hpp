// The results model every experiment kind fills: typed raw rows (one per round, or per oracle
// case) and a JSON summary object built through nlohmann-json, never by string concatenation.
// The runner writes the rows as RFC 4180 CSV and the objects as summary.json (schema: docs/
// experiments.md, "Results"); tables go through common/table.hpp.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace ternlab::experiments {

struct Stat;

// Members keep the order they were written in, so summary.json reads like the tables.
using Json = nlohmann::ordered_json;

// One CSV cell: empty, an integer, a number (written with 9 significant digits; NaN and infinity
// as an empty cell) or text.
struct Cell {
  std::variant<std::monostate, std::int64_t, double, std::string> value;
  Cell() = default;
  template <class T>
    requires(std::is_integral_v<T> && !std::is_same_v<T, bool>)
  Cell(T v) : value(std::int64_t(v)) {}
  Cell(double v) : value(v) {}
  Cell(std::string v) : value(std::move(v)) {}
  Cell(const char* v) : value(std::string(v)) {}
};
// The i-th value of a per-round series, or an empty cell past its end.
Cell cell_at(const std::vector<double>& v, std::size_t i);

// A run's raw rows: the header and every row, cell by cell, written to `file` in the results folder.
struct Rows {
  std::string file = "rounds.csv";
  std::vector<std::string> columns;
  std::vector<std::vector<Cell>> rows;
  // Throws ternlab::Error naming the file unless the row has one cell per column.
  void add(std::vector<Cell> row);
};

// RFC 4180: a field holding a comma, a double quote, CR or LF is quoted, its quotes doubled;
// records end in CRLF.
std::string csv_field(std::string_view s);
std::string csv_text(const Rows& r);

// A number for JSON (null when not finite, as JSON has no NaN); a Stat as {median, min, max} or null.
Json json_number(double v);
Json stat_json(const Stat& s);
// Read back: a number (NaN for null), a {median, min, max} object (invalid for null). Plots are
// drawn from the rows through these, so a plot shows what summary.json says.
double number_of(const Json& j);
Stat stat_from(const Json& j);
// A summary object as written to disk: indented, one trailing newline.
std::string json_text(const Json& j);

}  // namespace ternlab::experiments
