// A peer's matrix in its own byte format, multiplied by its own algorithm, behind one interface, so
// that every tool that meets a peer format (the model, quickstart, `kernels`) runs the peer's kernel
// rather than a kernel ternlab generated for the same bytes.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "kernels/peers/peers.hpp"
#include "kernels/q8k.hpp"
#include "kernels/thread_pool.hpp"
#include "layouts/matrix.hpp"

namespace ternlab::peers {

class PeerMatmul {
 public:
  virtual ~PeerMatmul() = default;
  virtual const PeerFormat& format() const = 0;
  virtual std::int64_t rows() const = 0;
  virtual std::int64_t cols() const = 0;
  virtual std::size_t bytes() const = 0;
  // y[t * ldy + row] for every token of x, by the peer's own algorithm (gemv for one token, its
  // batched path for more). x is the q8_K batch every ternlab kernel reads: ggml's formats read its
  // blocks as ggml does; BitNet's I2_S quantises their values to its own I8_S first (BitNet
  // quantises the layer's floats; the q8_K values are those floats rounded once already).
  virtual void apply(ThreadPool& pool, const Q8KBatch& x, float* y, std::int64_t ldy) const = 0;
  // The same, then the peer's own bit-exact check of the first and last rows of every token:
  // returns what differs, or nothing.
  virtual std::string apply_checked(ThreadPool& pool, const Q8KBatch& x, float* y, std::int64_t ldy) const = 0;
};

// The peer's matrix for a ternary matrix. Exact or refused: throws naming `name` where the format
// cannot hold the scales or the shape.
std::unique_ptr<const PeerMatmul> pack_peer(const PeerFormat& peer, const TernaryMatrix& m, std::string name);

// The name of the path the peer's kernel takes on this CPU: "bitnet-i2s/avx2", or
// "bitnet-i2s/generic" where AVX2 is missing (the peers' own portable code runs there).
std::string peer_kernel_name(const PeerFormat& peer);

// The peer whose kernel `name` names: "ggml-tq2_0", "ggml-tq2_0/avx2", ... (strategy alone or with
// either path); null for any other name.
const PeerFormat* find_peer_kernel(std::string_view name);

}  // namespace ternlab::peers
