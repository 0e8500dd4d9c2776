// `ternlab lattice encode`: shape-gain Λ24 quantisation of one float matrix (a .npy file or an F32/F16
// GGUF tensor), reporting the reconstruction error and the encoder's time; optionally writes the
// decoded matrix back as .npy.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "common/error.hpp"
#include "common/fp16.hpp"
#include "common/npy.hpp"
#include "kernels/measure.hpp"
#include "kernels/thread_pool.hpp"
#include "lattice/quantise.hpp"
#include "lattice/record_kernels.hpp"
#include "lattice/records.hpp"
#include "model/gguf.hpp"

namespace ternlab::cli {

namespace {

using lattice::EncodedMatrix;
using lattice::RecordKernelVariant;
using lattice::RecordMatrix;
using lattice::kExceptionRecordBytes;
using lattice::kRecordPadBytes;

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

// --- lattice bench: the record kernels against the streaming-read ceiling ------------------------

struct BenchArgs {
  double mb = 256;  // Planes14 stream size the row count is chosen for
  int rounds = 5;
  std::string kernel;  // empty: the richest variant here
};

// The matrix repeated `times` times down the rows (stream, base table, exceptions, side data): a
// large matrix from a small transcoded one, whose every row differs only by its position.
RecordMatrix tile_rows(const RecordMatrix& m, std::int64_t times) {
  RecordMatrix t = m;
  const std::size_t payload = m.stream.size() - kRecordPadBytes;
  const std::size_t exc_bytes = m.exc_index.size() * kExceptionRecordBytes;
  t.rows = m.rows * times;
  t.stream.clear(), t.base.clear(), t.exc_index.clear(), t.exc_data.clear(), t.row_scale.clear(), t.tail_values.clear();
  for (std::int64_t k = 0; k < times; ++k) {
    t.stream.insert(t.stream.end(), m.stream.begin(), m.stream.begin() + std::ptrdiff_t(payload));
    if (!m.base.empty())
      for (std::size_t g = 0; g + 1 < m.base.size(); ++g) t.base.push_back(std::uint32_t(m.base[g] + k * std::int64_t(payload)));
    for (std::uint32_t e : m.exc_index) t.exc_index.push_back(std::uint32_t(e + std::uint64_t(k) * m.blocks()));
    t.exc_data.insert(t.exc_data.end(), m.exc_data.begin(), m.exc_data.begin() + std::ptrdiff_t(exc_bytes));
    t.row_scale.insert(t.row_scale.end(), m.row_scale.begin(), m.row_scale.end());
    t.tail_values.insert(t.tail_values.end(), m.tail_values.begin(), m.tail_values.end());
  }
  if (!m.base.empty()) t.base.push_back(std::uint32_t(t.stream.size()));
  t.stream.resize(t.stream.size() + kRecordPadBytes, 0);
  t.exc_data.resize(t.exc_data.size() + kRecordPadBytes, 0);
  return t;
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

void run_bench(const BenchArgs& a) {
  // 64 distinct rows of 128 blocks (whole groups of 32, so Slot32's groups tile) and an 8-column
  // tail, uniform indices over the ball (so five-level and Golay70-exception blocks at their ball
  // frequencies, 3.5 % and 7.6 %), repeated down to the requested size.
  constexpr std::int64_t kBaseRows = 64, kBlocks = 128, kTail = 8;
  const std::int64_t times = std::max<std::int64_t>(1, std::int64_t(a.mb * 1e6 / (14.0 * kBlocks * kBaseRows)));
  EncodedMatrix e;
  e.name = "bench";
  e.rows = kBaseRows, e.cols = 24 * kBlocks + kTail, e.tail = kTail;
  std::mt19937_64 rng(2026);
  std::uniform_real_distribution<double> uni(-1.0, 1.0);
  for (std::int64_t b = 0; b < kBaseRows * kBlocks; ++b) {
    e.index.push_back(1 + rng() % lattice::ball_points());
    e.gain.push_back(std::uint8_t(rng() & 1));
  }
  e.centroid = {0.8, 1.2};
  for (std::int64_t r = 0; r < kBaseRows; ++r) e.row_scale.push_back(1.0 + 0.5 * uni(rng));
  for (std::int64_t i = 0; i < kBaseRows * kTail; ++i) e.tail_values.push_back(float(uni(rng)));
  std::vector<float> x(std::size_t(e.cols));
  for (float& v : x) v = float(uni(rng));

  // f64 reference of the distinct rows (rule M1): archive decode, f32 centroids and row scales.
  std::vector<double> ref(kBaseRows), mag(kBaseRows);
  for (std::int64_t r = 0; r < kBaseRows; ++r) {
    for (std::int64_t p = 0; p < kBlocks; ++p) {
      const std::size_t b = std::size_t(r * kBlocks + p);
      const lattice::Point pt = lattice::unrank_index(e.index[b]);
      const double k = double(float(e.row_scale[std::size_t(r)])) * double(float(e.centroid[e.gain[b]])) /
                       std::sqrt(16.0 * lattice::lattice_class(lattice::class_of(pt)).shell);
      for (int j = 0; j < 24; ++j) {
        const double t = k * pt[std::size_t(j)] * double(x[std::size_t(24 * p + j)]);
        ref[std::size_t(r)] += t, mag[std::size_t(r)] += std::fabs(t);
      }
    }
    for (std::int64_t t = 0; t < kTail; ++t) {
      const double v = double(e.tail_values[std::size_t(r * kTail + t)]) * double(x[std::size_t(24 * kBlocks + t)]);
      ref[std::size_t(r)] += v, mag[std::size_t(r)] += std::fabs(v);
    }
  }

  const std::vector<RecordKernelVariant> variants = lattice::record_kernels();
  const RecordKernelVariant* kernel = &variants.back();
  if (!a.kernel.empty()) {
    kernel = nullptr;
    for (const auto& v : variants)
      if (v.name == a.kernel) kernel = &v;
    if (kernel == nullptr) fail("lattice bench: --kernel ", a.kernel, " is not one this build and CPU run");
  }

  struct Arm {
    const records::RecordSpec* spec;
    RecordMatrix m;
    double bytes = 0, bpw = 0;
    std::vector<double> gbs, frac, cpu_gbs;
  };
  std::vector<Arm> arms;
  for (const records::RecordSpec* s : records::kRecordLayouts) {
    Arm arm{s, tile_rows(lattice::transcode(e, *s), times)};
    const records::Accounting acc = records::account(*s, arm.m.counts());
    arm.bpw = acc.memory_bpw;
    arm.bytes = acc.memory_bpw * double(arm.m.counts().weights()) / 8;
    arms.push_back(std::move(arm));
  }
  ThreadPool pool(1);
  std::vector<float> y(std::size_t(arms[0].m.rows));
  for (Arm& arm : arms) {  // every row against f64 before any timing
    lattice::record_matvec(arm.m, x, y, *kernel);
    for (std::size_t r = 0; r < y.size(); ++r)
      if (std::fabs(double(y[r]) - ref[r % kBaseRows]) > 1e-5 * mag[r % kBaseRows])
        fail("lattice bench: ", arm.spec->name, " (", kernel->name, ") row ", r, " gives ", y[r], ", f64 reference ",
             ref[r % kBaseRows]);
  }
  std::printf("record kernels, 1 thread, kernel %s; %lld x %lld (tail %lld), rounds %d (first dropped), CPU %s\n",
              kernel->name.c_str(), (long long)arms[0].m.rows, (long long)e.cols, (long long)kTail, a.rounds,
              cpu_features().model.c_str());
  std::printf("wall clock, arms interleaved each round, a streaming-read ceiling measured after each arm; CPU GB/s = bytes\n"
              "over the thread's CPU time (robust to time-sharing on a loaded machine, not to cache contention)\n\n");
  // Far beyond the caches, and at least twice the largest matrix.
  const std::size_t ceiling_bytes = std::max<std::size_t>(std::size_t(256) << 20, std::size_t(2 * arms[0].bytes));
  for (int round = 0; round < a.rounds; ++round)
    for (Arm& arm : arms) {
      const double c0 = thread_cpu_seconds();
      const double t = seconds_of([&] { lattice::record_matvec(arm.m, x, y, *kernel); });
      const double cpu = thread_cpu_seconds() - c0;
      const double ceiling = read_ceiling_gbs(pool, ceiling_bytes);
      if (round == 0) continue;  // warm-up
      arm.gbs.push_back(arm.bytes / t / 1e9);
      arm.frac.push_back(arm.bytes / t / 1e9 / ceiling);
      arm.cpu_gbs.push_back(arm.bytes / cpu / 1e9);
    }
  std::printf("%-10s %7s %9s %10s %14s %18s %10s\n", "layout", "b/w", "MB read", "GB/s", "of ceiling", "range of ceiling",
              "CPU GB/s");
  for (const Arm& arm : arms) {
    const auto [lo, hi] = std::minmax_element(arm.frac.begin(), arm.frac.end());
    std::printf("%-10s %7.3f %9.1f %10.2f %13.1f%% %8.1f%% - %5.1f%% %10.2f\n", std::string(arm.spec->name).c_str(),
                arm.bpw, arm.bytes / 1e6, median(arm.gbs), 100 * median(arm.frac), 100 * *lo, 100 * *hi, median(arm.cpu_gbs));
  }
}

}  // namespace

void add_lattice_commands(CLI::App& app) {
  auto* lat = app.add_subcommand("lattice", "Leech-lattice (Λ24) 2-bit code: shape-gain encoder, record kernels");
  lat->require_subcommand(1);
  static EncodeArgs a;
  auto* enc = lat->add_subcommand("encode", "Quantise one float matrix to Λ24(12) blocks and report the error");
  enc->add_option("--npy", a.npy, "A 2-D float32/float16 .npy matrix");
  enc->add_option("--gguf", a.gguf, "A GGUF file (with --tensor, an F32 or F16 tensor)");
  enc->add_option("--tensor", a.tensor, "Tensor name in the GGUF file");
  enc->add_option("--tail", a.tail, "Unquantised tail columns (default: width mod 24)");
  enc->add_option("--rows", a.max_rows, "Encode only the first N rows (0: all)")->check(CLI::NonNegativeNumber);
  add_output_option(enc, a.out, "Write the decoded matrix as .npy", "--out");
  enc->callback([] { run_encode(a); });
  static BenchArgs b;
  auto* bench = lat->add_subcommand("bench", "Time the record matvec kernels (1 thread) against the streaming-read ceiling");
  bench->add_option("--mb", b.mb, "Size of the Planes14 stream in MB (the other layouts hold the same matrix)")
      ->check(CLI::PositiveNumber);
  bench->add_option("--rounds", b.rounds, "Rounds, arms interleaved in each; the first is dropped")->check(CLI::Range(2, 1000));
  bench->add_option("--kernel", b.kernel, "Kernel variant (scalar, avx2, avx512, neon; default: the richest here)");
  bench->callback([] { run_bench(b); });
}

}  // namespace ternlab::cli
