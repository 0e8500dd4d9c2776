#include "model/weight_codes.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <fstream>
#include <mutex>

#include "common/error.hpp"
#include "common/files.hpp"
#include "common/fp16.hpp"
#include "common/strings.hpp"

namespace ternlab::model {

std::vector<float> read_float_matrix(const gguf::File& file, const std::string& path, const std::string& name,
                                     std::int64_t rows, std::int64_t cols) {
  const gguf::TensorInfo* t = file.find(name);
  if (!t) fail(path, ": tensor '", name, "' is missing (the model has it as ", rows, " x ", cols, ")");
  const bool f32 = t->tensor_type() == gguf::TensorType::f32, f16 = t->tensor_type() == gguf::TensorType::f16;
  if (!f32 && !f16) fail(path, ": tensor '", name, "' has type ", t->type, "; float weights must be F32 or F16");
  if (t->ne.size() != 2 || std::int64_t(t->ne[0]) != cols || std::int64_t(t->ne[1]) != rows) {
    std::string shape;
    for (std::size_t i = t->ne.size(); i-- > 0;) shape += cat(t->ne[i], i ? " x " : "");
    fail(path, ": tensor '", name, "' is ", shape, " (rows x cols); the model's is ", rows, " x ", cols);
  }
  const auto bytes = file.data(*t);
  std::vector<float> out(std::size_t(rows * cols));
  if (f32) {
    std::memcpy(out.data(), bytes.data(), out.size() * 4);
  } else {
    for (std::size_t i = 0; i < out.size(); ++i) {
      std::uint16_t h;
      std::memcpy(&h, bytes.data() + 2 * i, 2);
      out[i] = fp16_to_float(h);
    }
  }
  file.release(*t);
  return out;
}

std::uint64_t file_fnv1a64(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(path.string(), ": cannot read");
  std::uint64_t h = 0xcbf29ce484222325ull;
  std::vector<char> buf(1 << 20);
  while (f) {
    f.read(buf.data(), std::streamsize(buf.size()));
    const auto n = std::size_t(f.gcount());
    for (std::size_t i = 0; i < n; ++i) h = (h ^ std::uint8_t(buf[i])) * 0x100000001b3ull;
  }
  return h;
}

std::filesystem::path default_lattice_cache(const std::filesystem::path& float_path) {
  return float_path.string() + ".l24";
}

// Cache format, little-endian: "TLL24C1\n", u64 source hash, u64 matrix count; per matrix: u64 name
// length, the name, i64 rows, cols, tail, f64 row scales [rows], f64 centroids [2], u64 indices
// [rows * blocks], u8 gain bits [rows * blocks], f32 tail values [rows * tail]. Doubles are kept so
// that a cached encoding is bit for bit the one encode_matrix returns.
namespace {

constexpr char kMagic[8] = {'T', 'L', 'L', '2', '4', 'C', '1', '\n'};

template <class T>
void put(std::ostream& o, const T* p, std::size_t n) {
  o.write(reinterpret_cast<const char*>(p), std::streamsize(n * sizeof(T)));
}

struct Reader {
  std::ifstream f;
  std::string path;
  template <class T>
  void get(T* p, std::size_t n) {
    f.read(reinterpret_cast<char*>(p), std::streamsize(n * sizeof(T)));
    if (!f) fail(path, ": the Λ24 encoding cache is cut short (delete it to encode again)");
  }
  template <class T>
  T one() {
    T v;
    get(&v, 1);
    return v;
  }
};

}  // namespace

LatticeEncodings read_lattice_cache(const std::filesystem::path& path) {
  LatticeEncodings e;
  if (!std::filesystem::exists(path)) return e;
  Reader r{std::ifstream(path, std::ios::binary), path.string()};
  if (!r.f) fail(path.string(), ": cannot read");
  char magic[8];
  r.get(magic, 8);
  if (std::memcmp(magic, kMagic, 8) != 0) fail(path.string(), ": not a Λ24 encoding cache (no TLL24C1 header)");
  e.source_hash = r.one<std::uint64_t>();
  const auto n = r.one<std::uint64_t>();
  for (std::uint64_t i = 0; i < n; ++i) {
    lattice::EncodedMatrix m;
    const auto len = r.one<std::uint64_t>();
    if (len > 4096) fail(path.string(), ": matrix ", i, ": name length ", len, " (a damaged cache?)");
    m.name.resize(len);
    r.get(m.name.data(), len);
    m.rows = r.one<std::int64_t>(), m.cols = r.one<std::int64_t>(), m.tail = r.one<std::int64_t>();
    if (m.rows < 0 || m.cols < 0 || m.tail < 0 || m.tail >= 24 || m.cols < m.tail || (m.cols - m.tail) % 24 != 0 ||
        m.rows * m.cols > (std::int64_t(1) << 34))
      fail(path.string(), ": tensor '", m.name, "': shape ", m.rows, " x ", m.cols, " tail ", m.tail,
           " is not a Λ24 matrix (a damaged cache?)");
    const auto blocks = std::size_t(m.rows * m.blocks_per_row());
    m.row_scale.resize(std::size_t(m.rows));
    r.get(m.row_scale.data(), m.row_scale.size());
    r.get(m.centroid.data(), 2);
    m.index.resize(blocks);
    r.get(m.index.data(), blocks);
    m.gain.resize(blocks);
    r.get(m.gain.data(), blocks);
    m.tail_values.resize(std::size_t(m.rows * m.tail));
    r.get(m.tail_values.data(), m.tail_values.size());
    std::string key = m.name;
    e.matrices.emplace(std::move(key), std::move(m));
  }
  return e;
}

void write_lattice_cache(const std::filesystem::path& path, const LatticeEncodings& e) {
  write_atomically(path, [&](std::ostream& o) {
    o.write(kMagic, 8);
    const std::uint64_t n = e.matrices.size();
    put(o, &e.source_hash, 1);
    put(o, &n, 1);
    for (const auto& [name, m] : e.matrices) {
      const std::uint64_t len = name.size();
      put(o, &len, 1);
      o.write(name.data(), std::streamsize(len));
      put(o, &m.rows, 1), put(o, &m.cols, 1), put(o, &m.tail, 1);
      put(o, m.row_scale.data(), m.row_scale.size());
      put(o, m.centroid.data(), 2);
      put(o, m.index.data(), m.index.size());
      put(o, m.gain.data(), m.gain.size());
      put(o, m.tail_values.data(), m.tail_values.size());
    }
  });
}

lattice::EncodedMatrix encode_matrix_parallel(std::span<const float> w, std::int64_t rows, std::int64_t cols,
                                              const std::string& name, ThreadPool& pool,
                                              const std::function<void(std::int64_t, std::int64_t)>& progress) {
  const lattice::RowRunner runner = [&](std::int64_t n, const std::function<void(std::int64_t, std::int64_t)>& encode) {
    constexpr std::int64_t kChunk = 4;  // rows per grab: small, so threads finish together
    std::atomic<std::int64_t> next{0}, done{0};
    std::mutex report;
    pool.run([&](int) {
      for (std::int64_t r0; (r0 = next.fetch_add(kChunk)) < n;) {
        const std::int64_t r1 = std::min(n, r0 + kChunk);
        encode(r0, r1);
        const std::int64_t d = done.fetch_add(r1 - r0) + (r1 - r0);
        if (progress) {
          const std::lock_guard<std::mutex> lock(report);
          progress(d, n);
        }
      }
    });
  };
  return lattice::encode_matrix(w, rows, cols, cols % 24, name, runner);
}

}  // namespace ternlab::model
