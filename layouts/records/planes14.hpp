// Planes14: three binary level planes at a uniform 14-byte stride (spec §5.3, the served layout of
// [U]). Level of slot j = p0_j | p1_j << 1 | p2_j << 2; level 0 explicit, no level cap, no side data.
#pragma once
#include "layouts/record_dsl.hpp"

namespace ternlab::records {

struct Planes14 {
  static constexpr RecordSpec spec{
      .name = "planes14",
      .summary = "three level planes, 112 bits = 14 B per block at byte 14 b; every class exact",
      .id = RecordId::planes14,
      .addressing = Addressing::uniform,
      .record_bits = 112,
      .window_bytes = 16,  // 14 b mod 4 is 0 or 2: a 16-bit shift + 106 payload bits fit in 4 words
      .exceptions = ExceptionRule::none,
      .fields = {{{"class", FieldKind::class_id, 0, 9},
                  {"gain", FieldKind::gain, 9, 1},
                  {"smask", FieldKind::sign_mask, 10, 24},
                  {"plane0", FieldKind::level_plane, 34, 24, 0},
                  {"plane1", FieldKind::level_plane, 58, 24, 1},
                  {"plane2", FieldKind::level_plane, 82, 24, 2},
                  {"pad", FieldKind::padding, 106, 6}}},
  };
};
static_assert(RecordLayout<Planes14>, "planes14 must be a valid record layout");

}  // namespace ternlab::records
