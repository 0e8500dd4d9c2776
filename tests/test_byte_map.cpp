// The byte-map figures: every weight of every registered layout is drawn once, in the (byte, slot)
// its declaration places it, every scale byte is drawn as one, and the figures the docs embed are
// exactly what the code draws today.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "layouts/byte_map.hpp"
#include "layouts/stock.hpp"

using namespace ternlab;
namespace fs = std::filesystem;

TEST_SUITE("dsl") {
  TEST_CASE("byte map: every weight drawn once, where the declaration places it") {
    const std::regex weight_cell(R"(<title>byte (\d+), (slot|digit) (\d+): row (\d+), weight (\d+)</title>)");
    const std::regex scale_cell(R"(<title>byte (\d+): fp16 scale of row (\d+) \((low|high) byte\)</title>)");
    for (const LayoutInfo* L : all_layouts()) {
      CAPTURE(L->name);
      const std::string svg = byte_map_svg(*L);
      REQUIRE(svg.rfind("<?xml", 0) == 0);
      REQUIRE(svg.find("</svg>") != std::string::npos);
      std::map<std::pair<int, int>, int> drawn;  // (row, k) -> times drawn
      for (auto it = std::sregex_iterator(svg.begin(), svg.end(), weight_cell); it != std::sregex_iterator(); ++it) {
        const auto& m = *it;
        const int byte = std::stoi(m[1]), slot = std::stoi(m[3]), row = std::stoi(m[4]), k = std::stoi(m[5]);
        REQUIRE(row < L->rows);
        REQUIRE(k < L->k);
        const Loc placed = L->placement[std::size_t(row * L->k + k)];
        CHECK(placed.byte == byte);
        CHECK(placed.slot == slot);
        ++drawn[{row, k}];
      }
      CHECK(drawn.size() == std::size_t(L->rows * L->k));
      for (const auto& [rk, times] : drawn) CHECK(times == 1);
      int scale_bytes = 0;
      for (auto it = std::sregex_iterator(svg.begin(), svg.end(), scale_cell); it != std::sregex_iterator(); ++it) {
        const int byte = std::stoi((*it)[1]), row = std::stoi((*it)[2]);
        CHECK(byte == L->scale_offset(row) + ((*it)[3] == "high" ? 1 : 0));
        ++scale_bytes;
      }
      CHECK(scale_bytes == 2 * L->rows);
    }
  }

  TEST_CASE("byte map: the figures in docs/figures are what the declarations draw today") {
    const fs::path dir = fs::path(TERNLAB_SOURCE_DIR) / "docs" / "figures";
    int checked = 0;
    for (const auto& e : fs::directory_iterator(dir)) {
      const std::string file = e.path().filename().string();
      if (!file.starts_with("byte-map-") || e.path().extension() != ".svg") continue;
      const std::string name = file.substr(9, file.size() - 9 - 4);
      CAPTURE(file);
      std::ifstream in(e.path(), std::ios::binary);
      std::stringstream committed;
      committed << in.rdbuf();
      INFO("redraw it with: ternlab layout show " << name << " --svg docs/figures/" << file);
      CHECK(committed.str() == byte_map_svg(find_layout(name)));
      ++checked;
    }
    // The docs show the five stock layouts' maps at least (docs/layouts.md).
    CHECK(checked >= 5);
  }
}
