#include "common/npy.hpp"

#include <bit>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "common/error.hpp"
#include "common/files.hpp"
#include "common/fp16.hpp"

namespace ternlab {

namespace {

void check_shape(const std::string& path, std::span<const float> values, std::int64_t rows, std::int64_t cols) {
  if (rows < 0 || cols < 0 || std::uint64_t(rows) * std::uint64_t(cols) != values.size())
    fail(path, ": ", values.size(), " values do not form a ", rows, " x ", cols, " matrix");
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
  write_atomically(path, [&](std::ostream& f) {
    const std::string h = npy_header_f32(rows, cols);
    f.write(h.data(), std::streamsize(h.size()));
    f.write(reinterpret_cast<const char*>(values.data()), std::streamsize(values.size_bytes()));
  });
}

void write_csv_f32(const std::string& path, std::span<const float> values, std::int64_t rows, std::int64_t cols) {
  check_shape(path, values, rows, cols);
  write_atomically(path, [&](std::ostream& f) {
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

NpyMatrix read_npy_f32(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(path, ": cannot open for reading");
  char magic[8];
  if (!f.read(magic, 8) || std::string(magic, 6) != "\x93NUMPY") fail(path, ": not a .npy file (magic)");
  std::uint32_t header_len = 0;
  if (magic[6] == 1) {
    unsigned char b[2];
    if (!f.read(reinterpret_cast<char*>(b), 2)) fail(path, ": truncated header length");
    header_len = b[0] | (b[1] << 8);
  } else if (magic[6] == 2 || magic[6] == 3) {
    unsigned char b[4];
    if (!f.read(reinterpret_cast<char*>(b), 4)) fail(path, ": truncated header length");
    header_len = b[0] | (b[1] << 8) | (b[2] << 16) | (std::uint32_t(b[3]) << 24);
  } else {
    fail(path, ": unsupported .npy version ", int(magic[6]));
  }
  if (header_len > (1u << 20)) fail(path, ": header length ", header_len, " is implausible");
  std::string h(header_len, '\0');
  if (!f.read(h.data(), header_len)) fail(path, ": truncated header");
  auto field = [&](const std::string& key) {
    const auto at = h.find("'" + key + "'");
    if (at == std::string::npos) fail(path, ": header has no '", key, "' field");
    auto v = h.find(':', at);
    if (v == std::string::npos) fail(path, ": header field '", key, "' has no value");
    return v + 1;
  };
  const std::size_t d = field("descr");
  const auto q1 = h.find('\'', d), q2 = h.find('\'', q1 + 1);
  const std::string descr = q1 == std::string::npos || q2 == std::string::npos ? "" : h.substr(q1 + 1, q2 - q1 - 1);
  if (descr != "<f4" && descr != "<f2") fail(path, ": field descr is '", descr, "', expected '<f4' or '<f2'");
  const std::size_t fo = h.find_first_not_of(' ', field("fortran_order"));
  if (fo == std::string::npos || h.compare(fo, 5, "False") != 0) fail(path, ": field fortran_order is not False (C order expected)");
  const std::size_t s = field("shape");
  const auto open = h.find('(', s), close = h.find(')', s);
  if (open == std::string::npos || close == std::string::npos) fail(path, ": field shape is not a tuple");
  std::vector<std::int64_t> dims;
  for (std::size_t i = open + 1; i < close;) {
    while (i < close && (h[i] == ' ' || h[i] == ',')) ++i;
    if (i >= close) break;
    std::int64_t v = 0;
    const auto r = std::from_chars(h.data() + i, h.data() + close, v);
    if (r.ec != std::errc() || v < 0) fail(path, ": field shape '", h.substr(open, close - open + 1), "' is not a shape");
    dims.push_back(v);
    i = static_cast<std::size_t>(r.ptr - h.data());
  }
  if (dims.empty() || dims.size() > 2) fail(path, ": field shape has ", dims.size(), " dimensions, expected 1 or 2");
  NpyMatrix m;
  m.rows = dims.size() == 2 ? dims[0] : 1;
  m.cols = dims.back();
  if (m.cols != 0 && m.rows > (std::int64_t{1} << 40) / m.cols) fail(path, ": field shape is too large");
  const auto n = static_cast<std::size_t>(m.rows * m.cols);
  m.values.resize(n);
  if (descr == "<f4") {
    if (!f.read(reinterpret_cast<char*>(m.values.data()), static_cast<std::streamsize>(n * 4)))
      fail(path, ": data is shorter than the shape's ", n, " values");
  } else {
    std::vector<std::uint16_t> half(n);
    if (!f.read(reinterpret_cast<char*>(half.data()), static_cast<std::streamsize>(n * 2)))
      fail(path, ": data is shorter than the shape's ", n, " values");
    for (std::size_t i = 0; i < n; ++i) m.values[i] = fp16_to_float(half[i]);
  }
  return m;
}

}  // namespace ternlab
