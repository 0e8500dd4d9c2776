// The peers' formats that run as faithful baseline arms beside the layouts: the name an arm's
// `layout` key takes, the one kernel each has, and the weights per block its rows must hold.
#pragma once

#include <string_view>

namespace ternlab::peers {

struct PeerFormat {
  std::string_view layout;  // the arm's layout key, as `ternlab bench --layouts` takes it
  std::string_view kernel;  // its one kernel (AVX2 in every peer)
  std::string_view label;   // for tables
  int block;                // columns must be a multiple of it
};

inline constexpr PeerFormat kPeerFormats[] = {
    {"i2_s", "bitnet-i2s/avx2", "BitNet I2_S", 128},
    {"tq2_0", "ggml-tq2_0/avx2", "ggml TQ2_0", 256},
    {"tq1_0", "ggml-tq1_0/avx2", "ggml TQ1_0", 256},
};

inline const PeerFormat* find_peer(std::string_view layout) {
  for (const PeerFormat& p : kPeerFormats)
    if (p.layout == layout) return &p;
  return nullptr;
}

}  // namespace ternlab::peers
