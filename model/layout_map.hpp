// Mixed layouts per tensor: an ordered map from glob patterns over a model's matmul tensor names to
// layouts, first match wins. The one text form serves the experiment key `arm.layout_map` and the
// CLI's --layout-map:
//
//   ffn_*=b3r, *=t2r          the FFN matrices in b3r, every other matmul in t2r
//   ffn_down=measure, *=t2r   ffn_down in whichever exact layout the planner measures fastest
//   *=t2r|b3r|t2p             each matrix in the fastest of these three, per shape
//
// A pattern without '.' is matched against a tensor's short name (blk.N. and .weight removed:
// "ffn_down", "attn_qkv", "output" for the head); one with a '.' against the whole GGUF name
// ("blk.1?.ffn_*.weight"). '*' matches any run of characters, '?' one. The embedding table is a
// lookup table, not a matmul, and stays in the file's format: no pattern sees it.
//
// A target naming several layouts ("a|b"), or "measure" (every layout that holds the file's fp16
// per-128 scales exactly and has a SIMD kernel here), is chosen per matrix shape: each candidate's
// kernels are timed on the real matrix with the planner (kernels/planner.hpp) at the load's thread
// count and token batch, and the fastest (layout, kernel) pair wins. The planner's wisdom file keeps
// each candidate's best rate keyed by CPU, layout, operation, shape, threads and ISA ceiling, so a
// later load on the same machine reads the choice instead of timing again.
//
// Only layouts that hold the model's scales exactly are accepted: a mixture's logits are then the
// same bits as any single layout's (every kernel returns the same bits, kernels/kernel.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "layouts/registry.hpp"
#include "model/config.hpp"

namespace ternlab::model {

struct LayoutRule {
  std::string pattern;
  std::string target;                // as written: "b3r", "t2r|b3r", "measure"
  std::vector<std::string> layouts;  // the layouts named; empty for "measure"
  bool measure_all = false;          // "measure": every exact layout with a SIMD kernel here
  bool measured() const { return measure_all || layouts.size() > 1; }
};

struct LayoutMap {
  std::vector<LayoutRule> rules;
  bool empty() const { return rules.empty(); }
  bool measured() const;
  std::string text() const;  // "ffn_*=b3r,*=t2r": parses back to the same map
  // The first rule matching `tensor` (a GGUF name), or -1.
  int match(const std::string& tensor) const;
};

// Parses "pattern=target, pattern=target, ...". Every layout named must be registered and hold the
// model's fp16 per-128 scales exactly; errors name the item and the layout.
LayoutMap parse_layout_map(const std::string& text);

// '*' any run of characters (dots included), '?' any one; everything else literally.
bool glob_match(std::string_view pattern, std::string_view text);
// "blk.3.ffn_down.weight" -> "ffn_down"; "output.weight" -> "output".
std::string short_tensor_name(const std::string& gguf_name);
// A pattern without '.' against the short name, with one against the whole name.
bool pattern_matches(const std::string& pattern, const std::string& tensor);

// The model's matmul tensors (every ternary tensor but the embedding), in the order a load reads them.
std::vector<std::string> matmul_tensors(const ModelConfig& c);

// A map checked against a model's matmul tensors before anything is repacked: a pattern that matches
// no tensor, or a tensor no pattern matches when there is no fallback layout, is refused naming it.
// `model` names the model in the message.
void check_layout_map(const LayoutMap& m, const std::vector<std::string>& tensors, bool has_fallback,
                      const std::string& model);

// The layouts a measured rule chooses among for a rows x cols matrix: those it names, or for
// "measure" every registered layout that holds fp16 per-128 scales exactly; either way only those
// whose blocks tile the shape and that have a kernel here other than the reference. Each one left
// out is said in `skipped`, with why.
std::vector<const LayoutInfo*> measure_candidates(const LayoutRule& r, std::int64_t rows, std::int64_t cols,
                                                  std::vector<std::string>* skipped = nullptr);

// Which layout each matmul tensor took and why: the record of a load, and its summary.
struct TensorLayout {
  std::string tensor;
  std::string layout;
  std::string kernel;  // "strategy/isa"
  int rule = -1;       // index into the map's rules; -1: the fallback (the load's own layout)
  std::int64_t rows = 0, cols = 0;
  std::uint64_t bytes = 0;
};

// "ffn_*: b3r (48 tensors); rest: t2r (64)"; a measured rule lists what it chose:
// "*: measured t2r|b3r -> b3r (32), t2r (80)". Rules in map order, the fallback last.
std::string layout_summary(const LayoutMap& m, const std::vector<TensorLayout>& t);
// Bits per weight over all the matmul tensors together (bytes x 8 / weights).
double mixture_bits_per_weight(const std::vector<TensorLayout>& t);

}  // namespace ternlab::model
