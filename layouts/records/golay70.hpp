// Golay70: a 12-bit codeword rank instead of a sign mask, 72 bits = 9 bytes per block (spec §5.5).
// Even classes: the codeword gives each slot's residue mod 4, A picks one of that residue's (≤ 2)
// magnitudes, B is the sign. Odd classes: level = A | B << 1, the sign follows from the codeword.
// Blocks of five-level classes and of even classes with three magnitudes in one residue (47 of the
// 301 classes) are exceptions: an origin record (gain copied) here, the exact Planes14 record in
// the table.
#pragma once
#include "layouts/record_dsl.hpp"

namespace ternlab::records {

struct Golay70 {
  static constexpr RecordSpec spec{
      .name = "golay70",
      .summary = "12-bit codeword rank + two pick words, 72 bits = 9 B per block; 47 classes as exceptions",
      .id = RecordId::golay70,
      .addressing = Addressing::uniform,
      .record_bits = 72,
      .window_bytes = 12,  // a 24-bit shift + 70 bits fit in 3 words
      .exceptions = ExceptionRule::golay_or_5levels,
      .fields = {{{"class", FieldKind::class_id, 0, 9},
                  {"gain", FieldKind::gain, 9, 1},
                  {"golay", FieldKind::golay_rank, 10, 12},
                  {"A", FieldKind::golay_pick, 22, 24},
                  {"B", FieldKind::golay_sign, 46, 24},
                  {"pad", FieldKind::padding, 70, 2}}},
      .side = {{{"exceptions", SideKind::exceptions, 32 + 112,
                 "per exception block: u32 matrix-wide block index (ascending) + its 14-byte Planes14 record"}}},
  };
};
static_assert(RecordLayout<Golay70>, "golay70 must be a valid record layout");

}  // namespace ternlab::records
