// The peers' formats that run as faithful baseline arms beside the layouts: the name an arm's
// `layout` key takes, the one kernel each has, and the weights per block its rows must hold.
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
  std::string_view label;   // for tables
  int block;                // columns must be a multiple of it
  PackPeer pack;            // the matrix in the peer's format, with its kernel
  // The kernel's name without its path: "bitnet-i2s".
  std::string_view strategy() const { return kernel.substr(0, kernel.find('/')); }
};

inline constexpr PeerFormat kPeerFormats[] = {
    {"i2_s", "bitnet-i2s/avx2", "BitNet I2_S", 128, pack_i2s_matmul},
    {"tq2_0", "ggml-tq2_0/avx2", "ggml TQ2_0", 256, pack_tq2_matmul},
    {"tq1_0", "ggml-tq1_0/avx2", "ggml TQ1_0", 256, pack_tq1_matmul},
};

inline const PeerFormat* find_peer(std::string_view layout) {
  for (const PeerFormat& p : kPeerFormats)
    if (p.layout == layout) return &p;
  return nullptr;
}

}  // namespace ternlab::peers
