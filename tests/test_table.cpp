// The one table writer: text columns padded to their widest cell and always separated, Markdown
// with the alignment rule and '|' escaped, rows that do not match the columns refused.
#include <cmath>

#include <doctest/doctest.h>

#include "common/table.hpp"
#include "tests/support.hpp"

using namespace ternlab;

TEST_SUITE("table") {
  TEST_CASE("adjacent numbers wider than their header stay separated") {
    Table t({{"layout"}, {"pp tok/s", Align::right}, {"tg tok/s", Align::right}});
    t.add({"pq2_0", "280.7668", "505084.2965"});
    t.add({"t2p", "1.5", "2.25"});
    const std::string s = t.text();
    CHECK(s ==
          "layout  pp tok/s     tg tok/s\n"
          "------  --------  -----------\n"
          "pq2_0   280.7668  505084.2965\n"
          "t2p          1.5         2.25\n");
    CHECK(s.find("280.7668505084.2965") == std::string::npos);
  }

  TEST_CASE("widths count characters, not bytes, and the indent leads every line") {
    Table t({{"arm"}, {"ratio", Align::right}});
    t.add({"a", "1.50×"});
    t.add({"—", "12.0×"});
    CHECK(t.text("  ") ==
          "  arm  ratio\n"
          "  ---  -----\n"
          "  a    1.50×\n"
          "  —    12.0×\n");
  }

  TEST_CASE("Markdown: alignment rule per column, '|' escaped, one cell per column") {
    Table t({{"arm"}, {"max |Δlogit|", Align::right}});
    t.add({"a|b", "0.5"});
    CHECK(t.markdown() == "| arm | max \\|Δlogit\\| |\n|---|--:|\n| a\\|b | 0.5 |\n");
    test::check_error([&] { t.add({"only one"}); }, "a row of 1 cells under 2 columns", "'arm'");
    CHECK(t.rows() == 1);
  }

  TEST_CASE("fixed_text rounds to the digits asked and marks a missing value") {
    CHECK(fixed_text(280.76685, 2) == "280.77");
    CHECK(fixed_text(3, 0) == "3");
    CHECK(fixed_text(std::nan(""), 1) == "—");
  }
}
