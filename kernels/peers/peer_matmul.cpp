#include "kernels/peers/peer_matmul.hpp"

#include <vector>

#include "common/error.hpp"
#include "kernels/cpu.hpp"
#include "kernels/peers/i2s.hpp"
#include "kernels/peers/tq1.hpp"
#include "kernels/peers/tq2.hpp"

namespace ternlab::peers {

namespace {

// What a failed peer check says, or nothing.
template <class Check>
std::string failure_of(Check&& check) {
  try {
    check();
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

// The values of a q8_K batch as floats (d * q), token after token: BitNet's I8_S quantiser's input.
std::vector<float> dequantise(const Q8KBatch& x) {
  std::vector<float> f(std::size_t(x.tokens * x.cols));
  for (std::int64_t t = 0; t < x.tokens; ++t)
    for (std::int64_t b = 0; b < x.blocks(); ++b) {
      const BlockQ8K& q = x.row(t)[b];
      for (std::int64_t j = 0; j < kQK && b * kQK + j < x.cols; ++j)
        f[std::size_t(t * x.cols + b * kQK + j)] = q.d * float(q.qs[j]);
    }
  return f;
}

class I2sMatmul final : public PeerMatmul {
 public:
  I2sMatmul(const PeerFormat& peer, I2sMatrix w) : peer_(peer), w_(std::move(w)) {}
  const PeerFormat& format() const override { return peer_; }
  std::int64_t rows() const override { return w_.rows; }
  std::int64_t cols() const override { return w_.cols; }
  std::size_t bytes() const override { return w_.bytes.size(); }
  void apply(ThreadPool& pool, const Q8KBatch& x, float* y, std::int64_t ldy) const override { run(pool, acts(x), y, ldy); }
  std::string apply_checked(ThreadPool& pool, const Q8KBatch& x, float* y, std::int64_t ldy) const override {
    const I8sActs a = acts(x);
    run(pool, a, y, ldy);
    return failure_of([&] { check_i2s(w_, a, {y, std::size_t(a.tokens * ldy)}, ldy); });
  }

 private:
  static I8sActs acts(const Q8KBatch& x) { return quantize_i8s(dequantise(x).data(), x.tokens, x.cols); }
  void run(ThreadPool& pool, const I8sActs& a, float* y, std::int64_t ldy) const {
    // BitNet runs one token through its gemv (1x1 dots) and a batch through its ACT_PARALLEL gemm.
    if (a.tokens == 1) return run_i2s_gemv(pool, w_, a, y);
    run_i2s_gemm(pool, w_, a, y, ldy);
  }
  const PeerFormat& peer_;
  I2sMatrix w_;
};

// ggml's formats read the q8_K blocks as they are; Matrix is Tq2Matrix or Tq1Matrix, with its
// mul_mat and its bit-exact check.
template <class Matrix, void (*MulMat)(ThreadPool&, const Matrix&, const Q8KBatch&, float*, std::int64_t),
          void (*Check)(const Matrix&, const Q8KBatch&, std::span<const float>, std::int64_t)>
class GgmlMatmul final : public PeerMatmul {
 public:
  GgmlMatmul(const PeerFormat& peer, Matrix w) : peer_(peer), w_(std::move(w)) {}
  const PeerFormat& format() const override { return peer_; }
  std::int64_t rows() const override { return w_.rows; }
  std::int64_t cols() const override { return w_.cols; }
  std::size_t bytes() const override { return w_.bytes.size(); }
  void apply(ThreadPool& pool, const Q8KBatch& x, float* y, std::int64_t ldy) const override { MulMat(pool, w_, x, y, ldy); }
  std::string apply_checked(ThreadPool& pool, const Q8KBatch& x, float* y, std::int64_t ldy) const override {
    apply(pool, x, y, ldy);
    return failure_of([&] { Check(w_, x, {y, std::size_t(x.tokens * ldy)}, ldy); });
  }

 private:
  const PeerFormat& peer_;
  Matrix w_;
};
using Tq2Matmul = GgmlMatmul<Tq2Matrix, run_tq2_mul_mat, check_tq2>;
using Tq1Matmul = GgmlMatmul<Tq1Matrix, run_tq1_mul_mat, check_tq1>;

}  // namespace

std::unique_ptr<const PeerMatmul> pack_i2s_matmul(const PeerFormat& peer, const TernaryMatrix& m, std::string name) {
  return std::make_unique<I2sMatmul>(peer, pack_i2s(m, std::move(name)));
}

std::unique_ptr<const PeerMatmul> pack_tq2_matmul(const PeerFormat& peer, const TernaryMatrix& m, std::string name) {
  return std::make_unique<Tq2Matmul>(peer, pack_tq2(m, std::move(name)));
}

std::unique_ptr<const PeerMatmul> pack_tq1_matmul(const PeerFormat& peer, const TernaryMatrix& m, std::string name) {
  return std::make_unique<Tq1Matmul>(peer, pack_tq1(m, std::move(name)));
}

std::unique_ptr<const PeerMatmul> pack_peer(const PeerFormat& peer, const TernaryMatrix& m, std::string name) {
  return peer.pack(peer, m, std::move(name));
}

std::string peer_kernel_name(const PeerFormat& peer) {
  // Both peers' kernels are AVX2 code with the originals' portable C beside them (ggml's generic
  // path, BitNet's plain loop), chosen once by what the CPU runs.
  return std::string(peer.strategy()) + (isa_supported(Isa::avx2) ? "/avx2" : "/generic");
}

const PeerFormat* find_peer_kernel(std::string_view name) {
  for (const PeerFormat& p : kPeerFormats) {
    const std::string_view s = p.strategy();
    if (name == s || (name.starts_with(s) && (name.substr(s.size()) == "/avx2" || name.substr(s.size()) == "/generic")))
      return &p;
  }
  return nullptr;
}

}  // namespace ternlab::peers
