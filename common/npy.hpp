// NumPy .npy (format version 1.0) for a 2-D little-endian float32 array, and the same matrix as CSV:
// ways to hand ternlab's numbers to outside tools. Files are written to a temporary name and renamed,
// so a failed write never leaves a half file under the requested name.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace ternlab {

// The .npy header for a C-order float32 array of shape (rows, cols): magic, version 1.0, a header
// length, and a Python dict literal padded with spaces and a newline to a multiple of 64 bytes.
std::string npy_header_f32(std::int64_t rows, std::int64_t cols);

// Writes `values` (rows x cols, row-major) as .npy / as CSV (one row per line, shortest round-trip
// float text); refuses a size that is not rows x cols, and names the path on any I/O failure.
void write_npy_f32(const std::string& path, std::span<const float> values, std::int64_t rows, std::int64_t cols);
// Reads a 2-D C-order little-endian float32 ('<f4') or float16 ('<f2') .npy file (a 1-D array is one
// row) as float32; anything else is refused naming the path and the header field.
struct NpyMatrix {
  std::int64_t rows = 0, cols = 0;
  std::vector<float> values;
};
NpyMatrix read_npy_f32(const std::string& path);

void write_csv_f32(const std::string& path, std::span<const float> values, std::int64_t rows, std::int64_t cols);

}  // namespace ternlab
