// The peers' formats that run as baseline arms beside the layouts: the name an arm's `layout` key
// takes, the one kernel each has, the weights per block its rows must hold, and whether the port
// was measured within 10% of the original's own build, which decides what its timed arms are called.
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace ternlab {
struct TernaryMatrix;
}

namespace ternlab::peers {

class PeerMatmul;  // kernels/peers/peer_matmul.hpp
struct PeerFormat;
using PackPeer = std::unique_ptr<const PeerMatmul> (*)(const PeerFormat& peer, const TernaryMatrix& m, std::string name);
// Each peer's packer (kernels/peers/peer_matmul.cpp).
std::unique_ptr<const PeerMatmul> pack_i2s_matmul(const PeerFormat& peer, const TernaryMatrix& m, std::string name);
std::unique_ptr<const PeerMatmul> pack_tq2_matmul(const PeerFormat& peer, const TernaryMatrix& m, std::string name);
std::unique_ptr<const PeerMatmul> pack_tq1_matmul(const PeerFormat& peer, const TernaryMatrix& m, std::string name);

struct PeerFormat {
  std::string_view layout;  // the arm's layout key, as `ternlab bench --layouts` takes it
  std::string_view kernel;  // its one kernel (AVX2 in every peer)
  std::string_view label;   // the peer's format and algorithm, "BitNet I2_S": for messages
  std::string_view owner;   // whose algorithm: "BitNet"
  std::string_view format;  // "I2_S"
  // The port ran within 10% of the original's own build, as its project builds it (BitNet: clang,
  // -O3 -march=native; ggml: the system's compiler, -O3 -march=native), at 1, 4 and 64 tokens,
  // same shapes and machine, interleaved. Only then does a timed arm carry the peer's own name;
  // the measured ratios to each build, and why they differ, are in docs/kernels.md, "Peer ports
  // and their originals".
  bool faithful;
  int block;      // columns must be a multiple of it
  PackPeer pack;  // the matrix in the peer's format, with its kernel
  // The kernel's name without its path: "bitnet-i2s".
  std::string_view strategy() const { return kernel.substr(0, kernel.find('/')); }
  // What a timed arm, a table row or a ratio column calls the port: the peer itself where it is
  // faithful, otherwise "TQ2_0 after ggml's algorithm", so no table credits the original with the
  // port's speed.
  std::string arm_label() const {
    return faithful ? std::string(label) : std::string(format) + " after " + std::string(owner) + "'s algorithm";
  }
  // A table's "whose" entry for the port: "BitNet I2_S's own" or, as above, "TQ2_0 after ggml's algorithm".
  std::string own_label() const { return faithful ? std::string(label) + "'s own" : arm_label(); }
  // How the port stands to its original, for kernel notes.
  std::string port_note() const {
    return faithful ? "a faithful port, measured within 10% of the speed of " + std::string(owner) + "'s own build"
                    : "a port whose measured speed is not within 10% of " + std::string(owner) + "'s own build";
  }
};

inline constexpr PeerFormat kPeerFormats[] = {
    {"i2_s", "bitnet-i2s/avx2", "BitNet I2_S", "BitNet", "I2_S", true, 128, pack_i2s_matmul},
    {"tq2_0", "ggml-tq2_0/avx2", "ggml TQ2_0", "ggml", "TQ2_0", false, 256, pack_tq2_matmul},
    {"tq1_0", "ggml-tq1_0/avx2", "ggml TQ1_0", "ggml", "TQ1_0", true, 256, pack_tq1_matmul},
};

inline const PeerFormat* find_peer(std::string_view layout) {
  for (const PeerFormat& p : kPeerFormats)
    if (p.layout == layout) return &p;
  return nullptr;
}

}  // namespace ternlab::peers
