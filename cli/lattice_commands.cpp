// `ternlab lattice encode`: shape-gain Λ24 quantisation of one float matrix (a .npy file or an F32/F16
// GGUF tensor), reporting the reconstruction error and the encoder's time; optionally writes the
// decoded matrix back as .npy.
#include <chrono>
#include <cstring>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "common/error.hpp"
#include "common/fp16.hpp"
#include "common/npy.hpp"
#include "lattice/quantise.hpp"
#include "model/gguf.hpp"

namespace ternlab::cli {

namespace {

struct EncodeArgs {
  std::string npy, gguf, tensor, out;
  std::int64_t tail = -1;  // -1: width mod 24
  std::int64_t max_rows = 0;
};

struct Matrix {
  std::string name;
  std::int64_t rows = 0, cols = 0;
  std::vector<float> values;
};

Matrix load(const EncodeArgs& a) {
  Matrix m;
  if (!a.npy.empty() == !a.gguf.empty()) fail("lattice encode: give exactly one of --npy or --gguf");
  if (!a.npy.empty()) {
    NpyMatrix n = read_npy_f32(a.npy);
    m.name = a.npy, m.rows = n.rows, m.cols = n.cols, m.values = std::move(n.values);
    return m;
  }
  if (a.tensor.empty()) fail("lattice encode: --gguf needs --tensor NAME");
  const gguf::File f = gguf::File::open(a.gguf, gguf::LoadMode::mmap);
  const gguf::TensorInfo& t = f.tensor(a.tensor);
  if (t.ne.empty() || t.ne.size() > 2)
    fail(a.gguf, ": tensor '", a.tensor, "' has ", t.ne.size(), " dimensions, expected a matrix");
  m.name = a.tensor;
  m.cols = static_cast<std::int64_t>(t.ne[0]);
  m.rows = t.ne.size() == 2 ? static_cast<std::int64_t>(t.ne[1]) : 1;
  const auto bytes = f.data(t);
  const auto n = static_cast<std::size_t>(m.rows * m.cols);
  m.values.resize(n);
  if (t.tensor_type() == gguf::TensorType::f32) {
    std::memcpy(m.values.data(), bytes.data(), n * 4);
  } else if (t.tensor_type() == gguf::TensorType::f16) {
    for (std::size_t i = 0; i < n; ++i) {
      std::uint16_t h;
      std::memcpy(&h, bytes.data() + 2 * i, 2);
      m.values[i] = fp16_to_float(h);
    }
  } else {
    fail(a.gguf, ": tensor '", a.tensor, "' has type ", t.type, "; lattice encode reads F32 or F16 tensors");
  }
  return m;
}

void run_encode(const EncodeArgs& a) {
  Matrix m = load(a);
  if (a.max_rows > 0 && a.max_rows < m.rows) {
    m.rows = a.max_rows;
    m.values.resize(static_cast<std::size_t>(m.rows * m.cols));
  }
  const std::int64_t tail = a.tail >= 0 ? a.tail : m.cols % 24;
  const auto t0 = std::chrono::steady_clock::now();
  const lattice::EncodedMatrix e = lattice::encode_matrix(m.values, m.rows, m.cols, tail, m.name);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::vector<float> r = lattice::decode_matrix(e);
  double err = 0, ref = 0;
  for (std::size_t i = 0; i < r.size(); ++i) {
    const double d = double(m.values[i]) - r[i];
    err += d * d, ref += double(m.values[i]) * m.values[i];
  }
  const auto blocks = static_cast<double>(e.index.size());
  std::printf("tensor            %s\n", m.name.c_str());
  std::printf("shape             %lld x %lld (%lld blocks of 24 per row, tail %lld)\n", (long long)m.rows,
              (long long)m.cols, (long long)e.blocks_per_row(), (long long)tail);
  std::printf("code              Λ24(12) format v1: 47-bit index + 1 gain bit per block (2.000 b/w), f32 tail\n");
  std::printf("gain centroids    %.6f %.6f\n", e.centroid[0], e.centroid[1]);
  std::printf("relative error    %.6f  (‖W − Ŵ‖ / ‖W‖, whole matrix, tail exact)\n", ref > 0 ? std::sqrt(err / ref) : 0.0);
  std::printf("SNR               %.3f dB\n", err > 0 && ref > 0 ? 10 * std::log10(ref / err) : INFINITY);
  std::printf("encode time       %.3f s (%.3f ms/block, 1 thread)\n", seconds, blocks > 0 ? 1e3 * seconds / blocks : 0.0);
  if (!a.out.empty()) {
    write_npy_f32(a.out, r, m.rows, m.cols);
    std::printf("decoded matrix    %s\n", a.out.c_str());
  }
}

}  // namespace

void add_lattice_commands(CLI::App& app) {
  auto* lat = app.add_subcommand("lattice", "Leech-lattice (Λ24) 2-bit code: shape-gain encoder");
  lat->require_subcommand(1);
  static EncodeArgs a;
  auto* enc = lat->add_subcommand("encode", "Quantise one float matrix to Λ24(12) blocks and report the error");
  enc->add_option("--npy", a.npy, "A 2-D float32/float16 .npy matrix");
  enc->add_option("--gguf", a.gguf, "A GGUF file (with --tensor, an F32 or F16 tensor)");
  enc->add_option("--tensor", a.tensor, "Tensor name in the GGUF file");
  enc->add_option("--tail", a.tail, "Unquantised tail columns (default: width mod 24)");
  enc->add_option("--rows", a.max_rows, "Encode only the first N rows (0: all)")->check(CLI::NonNegativeNumber);
  enc->add_option("--out", a.out, "Write the decoded matrix as .npy");
  enc->callback([] { run_encode(a); });
}

}  // namespace ternlab::cli
