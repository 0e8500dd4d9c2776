// One table writer for every listing and results table: the same rows as aligned text for a
// terminal (`ternlab model bench`, `ternlab bench`, `ternlab kernels`, `ternlab layouts`) or as a
// Markdown table (run summaries). Columns are always separated (two spaces in text, " | " in
// Markdown), so adjacent numbers can never run together, whatever their width.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace ternlab {

enum class Align { left, right };

struct Column {
  std::string header;
  Align align = Align::left;  // numbers right, names left
};

class Table {
 public:
  explicit Table(std::vector<Column> columns);
  // One cell per column; throws ternlab::Error naming the header otherwise.
  Table& add(std::vector<std::string> cells);
  std::size_t rows() const { return rows_.size(); }

  // "| a | b |" rows under a "|---|--:|" rule; a '|' inside a cell is escaped.
  std::string markdown() const;
  // Every column padded to its widest cell (header included) and separated by two spaces, the
  // header underlined with dashes; each line starts with `indent`, trailing blanks trimmed.
  std::string text(std::string_view indent = "") const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// A number with a fixed count of decimals ("280.77"): the cell text of listings.
std::string fixed_text(double v, int digits);

// Columns a terminal shows for UTF-8 text: one per code point (the tables print ×, – and —).
std::size_t display_width(std::string_view s);

}  // namespace ternlab
