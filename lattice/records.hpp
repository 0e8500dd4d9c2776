// Transcoders between the format-v1 code (index + gain bit per block, lattice/quantise.hpp) and the
// decoded-record layouts declared in layouts/records/ (spec §5), and the resident class tables the
// record kernels read (lattice/record_kernels.hpp).
//
// Every field is written and read at the offset its declaration gives; records are LSB-first.
// Layouts with an exception rule keep an origin record (gain copied) in the main stream for an
// exception block and its exact Planes14 record in the exception table.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "lattice/leech.hpp"
#include "lattice/quantise.hpp"
#include "layouts/records/all.hpp"

namespace ternlab::lattice {

using records::RecordSpec;

// Zero bytes after every record stream and exception table: the kernels read fields with 8-byte
// loads at the field's byte, so the last record's farthest field needs 8 bytes beyond its start
// byte + 17.
inline constexpr int kRecordPadBytes = 32;
inline constexpr int kExceptionRecordBytes = 14;  // a Planes14 record

// True when the layout's main stream cannot hold a block of this class (origin: never).
bool is_exception_class(const RecordSpec& s, int class_id);

// The record of one block (its main-stream record for an exception class), record_bytes(levels)
// bytes long. Errors name `what` (e.g. "tensor 'w', block 3"): an index outside the ball, a gain
// that is not one bit.
std::vector<std::uint8_t> encode_record(const RecordSpec& s, std::uint64_t index, int gain, const std::string& what);

// What a record says: its class, gain and point (the archive decode's, for an exact record).
struct RecordContent {
  int class_id = 0;
  int gain = 0;
  Point x{};
};

// Reads one record. Errors name `what` and the field: a class id that is not one of the 301, an
// exception class in a main stream, a level a class does not have, a golay rank or level pattern
// that is not a point of the class, a sign bit on a zero weight, non-zero padding.
RecordContent decode_record(const RecordSpec& s, const std::uint8_t* rec, const std::string& what);

// Golay70's second decoder (spec §5.5, hoisted): three words per block, then every slot by mask
// tests and a negation. Same bytes, same point; used to check the per-slot decoder.
Point golay70_hoisted_decode(const std::uint8_t* rec);

// A matrix in a record layout: the stream, its side channels and the per-matrix side data.
struct RecordMatrix {
  const RecordSpec* layout = nullptr;
  std::string name;
  std::int64_t rows = 0, cols = 0, tail = 0;
  std::vector<std::uint8_t> stream;         // records in block order b = row * blocks_per_row + p, zero-padded
  std::vector<std::uint32_t> base;          // grouped32: byte offset of every group of 32, then the stream length
  std::vector<std::uint32_t> exc_index;     // exception blocks, strictly ascending
  std::vector<std::uint8_t> exc_data;       // their Planes14 records, 14 bytes each, zero-padded
  std::vector<float> row_scale;             // one per row
  std::array<float, 2> centroid{};          // indexed by the gain bit
  std::vector<float> tail_values;           // rows x tail, row-major
  std::int64_t blocks_per_row() const { return (cols - tail) / 24; }
  std::uint64_t blocks() const { return std::uint64_t(rows) * std::uint64_t(blocks_per_row()); }
  // Record b's first byte in the stream.
  std::uint64_t record_offset(std::uint64_t b) const;
  // What the accounting of spec §5.8 needs, from this matrix.
  records::MatrixCounts counts() const;
};

// Index + gain -> records. Errors name the tensor, block and field: a width that is not a whole
// number of 24-weight blocks plus the declared tail, sizes that do not match, an index outside the
// ball, a gain that is not one bit. Row scales and centroids are stored as f32 (what kernels read).
RecordMatrix transcode(const EncodedMatrix& m, const RecordSpec& s);

// Records -> index + gain (exceptions applied), with the checks of decode_record per block and of
// the side channels (base table, exception order and main-stream origin records).
EncodedMatrix untranscode(const RecordMatrix& m);

// The resident class tables (spec §5.1, §5.5), 512 entries so any 9-bit id indexes in bounds:
// level values / √(16 m) in level order (Slot32, Planes14, Planes12x), and Golay70's
// v = (r0[0], r0[1], r2[0], r2[1]) for even classes or the ≤ 4 level values for odd ones, with the
// flag bits (level k ≡ 3 mod 4) and the odd bit. Unused entries, exception classes and the origin
// are zero.
struct ClassValues {
  std::array<float, 8> v{};
  std::uint32_t flags = 0;
  std::uint32_t odd = 0;
};
const std::array<ClassValues, 512>& level_table();
const std::array<ClassValues, 512>& golay70_table();
// Levels L of each class id (the origin 1, unused ids 0): Slot32's kernels force masks k ≥ L to 0.
const std::array<std::uint8_t, 512>& class_levels();

}  // namespace ternlab::lattice
