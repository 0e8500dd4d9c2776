// The byte map of one block as an SVG figure, drawn from the registered declaration: bytes as
// columns, slots (or base-3 digits) as rows, each cell coloured by the weight's row and labelled
// with its index k. The docs embed these figures, and a test redraws them, so a figure can never
// disagree with the code that packs the bytes.
#pragma once

#include <string>

#include "layouts/registry.hpp"

namespace ternlab {

// Bytes per line of the figure: two 16-byte words, so word boundaries line up from line to line.
inline constexpr int kByteMapBytesPerLine = 32;

std::string byte_map_svg(const LayoutInfo& layout);

}  // namespace ternlab
