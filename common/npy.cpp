#include "common/npy.hpp"

#include <bit>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "common/error.hpp"

namespace ternlab {

namespace {

void check_shape(const std::string& path, std::span<const float> values, std::int64_t rows, std::int64_t cols) {
  if (rows < 0 || cols < 0 || std::uint64_t(rows) * std::uint64_t(cols) != values.size())
    fail(path, ": ", values.size(), " values do not form a ", rows, " x ", cols, " matrix");
}

// Writes through `body` into path.partial-<pid>, then renames it over `path`.
template <class Body>
void write_atomically(const std::string& path, Body&& body) {
  const std::string partial = cat(path, ".partial-", getpid());
  {
    std::ofstream f(partial, std::ios::binary | std::ios::trunc);
    if (!f) fail(path, ": cannot open for writing");
    body(f);
    f.flush();
    if (!f) {
      std::error_code ec;
      std::filesystem::remove(partial, ec);
      fail(path, ": write failed");
    }
  }
  std::error_code ec;
  std::filesystem::rename(partial, path, ec);
  if (ec) {
    std::filesystem::remove(partial, ec);
    fail(path, ": cannot rename the finished file into place");
  }
}

}  // namespace

std::string npy_header_f32(std::int64_t rows, std::int64_t cols) {
  static_assert(std::endian::native == std::endian::little, "the header declares little-endian floats");
  std::string dict = cat("{'descr': '<f4', 'fortran_order': False, 'shape': (", rows, ", ", cols, "), }");
  const std::size_t fixed = 6 + 2 + 2;  // magic, version, header length
  const std::size_t total = (fixed + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - fixed - dict.size() - 1, ' ');
  dict += '\n';
  std::string h = "\x93NUMPY";
  h += char(1);
  h += char(0);
  h += char(dict.size() & 0xff);
  h += char((dict.size() >> 8) & 0xff);
  return h + dict;
}

void write_npy_f32(const std::string& path, std::span<const float> values, std::int64_t rows, std::int64_t cols) {
  check_shape(path, values, rows, cols);
  write_atomically(path, [&](std::ofstream& f) {
    const std::string h = npy_header_f32(rows, cols);
    f.write(h.data(), std::streamsize(h.size()));
    f.write(reinterpret_cast<const char*>(values.data()), std::streamsize(values.size_bytes()));
  });
}

void write_csv_f32(const std::string& path, std::span<const float> values, std::int64_t rows, std::int64_t cols) {
  check_shape(path, values, rows, cols);
  write_atomically(path, [&](std::ofstream& f) {
    std::string line;
    char buf[32];
    for (std::int64_t r = 0; r < rows; ++r) {
      line.clear();
      for (std::int64_t c = 0; c < cols; ++c) {
        if (c) line += ',';
        const auto res = std::to_chars(buf, buf + sizeof buf, values[std::size_t(r * cols + c)]);
        line.append(buf, res.ptr);
      }
      line += '\n';
      f.write(line.data(), std::streamsize(line.size()));
    }
  });
}

}  // namespace ternlab
