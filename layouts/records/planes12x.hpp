// Planes12x: two level planes at a word-aligned 12-byte stride plus an exception table for the
// five-level classes (spec §5.4). The main stream holds an origin record (gain copied) for such a
// block, so the exact Planes14 record in the table is added, not corrected; for L ≤ 4 the record is
// the first 12 bytes of the Planes14 record.
#pragma once
#include "layouts/record_dsl.hpp"

namespace ternlab::records {

struct Planes12x {
  static constexpr RecordSpec spec{
      .name = "planes12x",
      .summary = "two level planes, 96 bits = 12 B per block at byte 12 b; five-level blocks as exceptions",
      .id = RecordId::planes12x,
      .addressing = Addressing::uniform,
      .record_bits = 96,
      .window_bytes = 12,  // always word-aligned
      .exceptions = ExceptionRule::five_levels,
      .fields = {{{"class", FieldKind::class_id, 0, 9},
                  {"gain", FieldKind::gain, 9, 1},
                  {"smask", FieldKind::sign_mask, 10, 24},
                  {"plane0", FieldKind::level_plane, 34, 24, 0},
                  {"plane1", FieldKind::level_plane, 58, 24, 1},
                  {"pad", FieldKind::padding, 82, 14}}},
      .side = {{{"exceptions", SideKind::exceptions, 32 + 112,
                 "per five-level block: u32 matrix-wide block index (ascending) + its 14-byte Planes14 record"}}},
  };
};
static_assert(RecordLayout<Planes12x>, "planes12x must be a valid record layout");

}  // namespace ternlab::records
