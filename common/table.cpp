#include "common/table.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/error.hpp"

namespace ternlab {

std::size_t display_width(std::string_view s) {
  return std::size_t(std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

std::string fixed_text(double v, int digits) {
  if (!std::isfinite(v)) return "—";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

Table::Table(std::vector<Column> columns) : columns_(std::move(columns)) {
  if (columns_.empty()) fail("table: no columns");
}

Table& Table::add(std::vector<std::string> cells) {
  if (cells.size() != columns_.size())
    fail("table: a row of ", cells.size(), " cells under ", columns_.size(), " columns (first: '", columns_.front().header, "')");
  rows_.push_back(std::move(cells));
  return *this;
}

namespace {

std::string markdown_cell(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '|') o += '\\';
    o += c == '\n' ? ' ' : c;
  }
  return o;
}

void pad(std::string& line, const std::string& cell, std::size_t width, Align align) {
  const std::size_t fill = width - std::min(width, display_width(cell));
  if (align == Align::right) line.append(fill, ' ');
  line += cell;
  if (align == Align::left) line.append(fill, ' ');
}

void trim_right(std::string& s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
}

}  // namespace

std::string Table::markdown() const {
  // Appended piece by piece: GCC 12's -Wrestrict misfires on `" " + std::string&&` at -O3.
  const auto cell = [](std::string& line, const std::string& text) {
    line += ' ';
    line += markdown_cell(text);
    line += " |";
  };
  std::string s = "|";
  for (const Column& c : columns_) cell(s, c.header);
  s += "\n|";
  for (const Column& c : columns_) s += c.align == Align::right ? "--:|" : "---|";
  s += "\n";
  for (const auto& row : rows_) {
    s += "|";
    for (const std::string& text : row) cell(s, text);
    s += "\n";
  }
  return s;
}

std::string Table::text(std::string_view indent) const {
  std::vector<std::size_t> width(columns_.size());
  for (std::size_t i = 0; i < columns_.size(); ++i) {
    width[i] = display_width(columns_[i].header);
    for (const auto& row : rows_) width[i] = std::max(width[i], display_width(row[i]));
  }
  const auto line = [&](const auto& cell_of) {
    std::string l(indent);
    for (std::size_t i = 0; i < columns_.size(); ++i) {
      if (i) l += "  ";
      pad(l, cell_of(i), width[i], columns_[i].align);
    }
    trim_right(l);
    return l + "\n";
  };
  std::string s = line([&](std::size_t i) { return columns_[i].header; });
  s += line([&](std::size_t i) { return std::string(width[i], '-'); });
  for (const auto& row : rows_) s += line([&](std::size_t i) { return row[i]; });
  return s;
}

}  // namespace ternlab
