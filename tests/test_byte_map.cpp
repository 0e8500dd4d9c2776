// The byte-map figures: every weight of every registered layout is drawn once, in the (byte, slot)
// its declaration places it, every scale byte is drawn as one, and the figures the docs embed are
// exactly what the code draws today.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <cstdio>
#include <sstream>

#include "layouts/byte_map.hpp"
#include "layouts/registry.hpp"

using namespace ternlab;
namespace fs = std::filesystem;

TEST_SUITE("dsl") {
  TEST_CASE("byte map: every weight drawn once, where the declaration places it") {
    for (const LayoutInfo* L : all_layouts()) {
      CAPTURE(L->name);
      const std::string svg = byte_map_svg(*L);
      REQUIRE(svg.rfind("<?xml", 0) == 0);
      REQUIRE(svg.find("</svg>") != std::string::npos);
      std::map<std::pair<int, int>, int> drawn;  // (row, k) -> times drawn
      int scale_bytes = 0;
      for (std::size_t at = svg.find("<title>"); at != std::string::npos; at = svg.find("<title>", at + 1)) {
        const std::size_t end = svg.find("</title>", at);
        REQUIRE(end != std::string::npos);
        const std::string title = svg.substr(at + 7, end - at - 7);
        int byte = -1, slot = -1, row = -1, k = -1;
        char unit[8] = {}, format[8] = {};
        if (std::sscanf(title.c_str(), "byte %d, %7[a-z] %d: row %d, weight %d", &byte, unit, &slot, &row, &k) == 5) {
          REQUIRE(row < L->rows);
          REQUIRE(k < L->k);
          const Loc placed = L->placement[std::size_t(row * L->k + k)];
          CHECK(placed.byte == byte);
          CHECK(placed.slot == slot);
          CHECK(std::string(unit) == (L->code == Code::two_bit ? "slot" : "digit"));
          ++drawn[{row, k}];
        } else if (std::sscanf(title.c_str(), "byte %d: %7[a-z0-9] scale of row %d", &byte, format, &row) == 3) {
          CHECK(std::string(format) == scale_format_name(L->scale_format()));
          const bool high = title.ends_with(" (high byte)");
          CHECK(title.ends_with(L->scale_bytes() == 1 ? "row " + std::to_string(row) : high ? " (high byte)" : " (low byte)"));
          int group = 0;
          if (const std::size_t at = title.find(", group "); at != std::string::npos) group = std::stoi(title.substr(at + 8));
          CHECK(byte == L->scale_offset(row, group) + (high ? 1 : 0));
          ++scale_bytes;
        } else {
          CHECK_MESSAGE(title.ends_with(": unused"), "unexpected cell title: ", title);
        }
      }
      CHECK(drawn.size() == std::size_t(L->rows * L->k));
      for (const auto& [rk, times] : drawn) CHECK(times == 1);
      CHECK(scale_bytes == L->scale_bytes() * L->rows * L->scales_per_row());  // none for a per-tensor scale
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
