// The record layouts, one declaration per file, and their runtime list (the ternary layouts'
// registry is layouts/registry.hpp).
#pragma once
#include <span>
#include <string_view>

#include "layouts/record_dsl.hpp"
#include "layouts/records/golay70.hpp"
#include "layouts/records/planes12x.hpp"
#include "layouts/records/planes14.hpp"
#include "layouts/records/slot32.hpp"

namespace ternlab::records {

inline constexpr std::array<const RecordSpec*, 4> kRecordLayouts{&Slot32::spec, &Planes14::spec, &Planes12x::spec,
                                                                 &Golay70::spec};

static_assert(kRecordLayouts[std::size_t(RecordId::slot32)]->id == RecordId::slot32 &&
              kRecordLayouts[std::size_t(RecordId::planes14)]->id == RecordId::planes14 &&
              kRecordLayouts[std::size_t(RecordId::planes12x)]->id == RecordId::planes12x &&
              kRecordLayouts[std::size_t(RecordId::golay70)]->id == RecordId::golay70,
              "kRecordLayouts is indexed by RecordId");

inline const RecordSpec& record_spec(RecordId id) { return *kRecordLayouts[std::size_t(id)]; }

// The record layout of this name, or nullptr.
inline const RecordSpec* find_record_layout(std::string_view name) {
  for (const RecordSpec* s : kRecordLayouts)
    if (s->name == name) return s;
  return nullptr;
}

// The 252 projections of Qwen3-4B (36 layers: q 4096x2560, k and v 1024x2560, o 2560x4096, gate
// and up 9728x2560, down 2560x9728), the matrix set of spec §5.8 and [U] Table 1, with an exception
// count from a block fraction (the published artifact's: 3.3824 % five-level, 7.4357 % Golay70).
constexpr MatrixCounts qwen3_4b_counts(double exception_fraction = 0) {
  struct Shape {
    std::uint64_t rows, cols;
  };
  constexpr Shape layer[] = {{4096, 2560}, {1024, 2560}, {1024, 2560}, {2560, 4096},
                             {9728, 2560}, {9728, 2560}, {2560, 9728}};
  MatrixCounts c;
  c.matrices = 0;
  for (int l = 0; l < 36; ++l)
    for (const Shape& s : layer) {
      c.rows += s.rows;
      c.blocks += s.rows * (s.cols / 24);
      c.tail_weights += s.rows * (s.cols % 24);
      ++c.matrices;
    }
  c.exceptions = std::uint64_t(exception_fraction * double(c.blocks) + 0.5);
  return c;
}

}  // namespace ternlab::records
