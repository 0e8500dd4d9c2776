#include "model/export.hpp"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>

#include "common/error.hpp"
#include "common/files.hpp"
#include "common/fp16.hpp"
#include "common/strings.hpp"
#include "layouts/registry.hpp"
#include "model/config.hpp"
#include "model/gguf.hpp"
#include "model/hadamard.hpp"

namespace ternlab::model {

namespace {

const std::map<std::string, gguf::TensorType>& targets() {
  static const std::map<std::string, gguf::TensorType> t{{"tq2_0", gguf::TensorType::tq2_0},
                                                          {"tq1_0", gguf::TensorType::tq1_0},
                                                          {"pq2_0", gguf::TensorType::pq2_0},
                                                          {"ptq1_0", gguf::TensorType::ptq1_0},
                                                          {"f32", gguf::TensorType::f32}};
  return t;
}

// One ternary tensor as the F32 weights an engine without the fold multiplies by: rows of R^T w'
// (the folded weights and the embedding's rotated rows alike, spec §6.2-6.3), and ssm_out's columns
// moved from grouped to tiled value-head order (§6.4), the order the rest of the layer runs in.
void write_unfolded(const TernaryMatrix& m, const ModelConfig& c, const std::string& name, bool permute_grouped,
                    std::span<std::uint8_t> out, ExportReport& rep) {
  const std::int64_t cols = m.cols;
  const bool rotate = !c.rotation.identity && (c.folded.count(name) || c.inverse_folded.count(name));
  const std::vector<float>* signs = rotate ? &c.rotation.signs_for(cols) : nullptr;
  std::vector<double> row(static_cast<std::size_t>(cols)), moved(static_cast<std::size_t>(cols));
  const int hd = c.ssm_state, nk = c.ssm_k_heads, rep_heads = c.ssm_v_heads / std::max(1, c.ssm_k_heads);
  for (std::int64_t r = 0; r < m.rows; ++r) {
    for (std::int64_t k = 0; k < cols; ++k)
      row[std::size_t(k)] = double(m.weight(r, k)) * double(fp16_to_float(m.scale_bits(r, k / kBlockK)));
    if (rotate) {
      // In double: the block sums are exact, and each weight is rounded to float once, below.
      for (std::int64_t b = 0; b < cols; b += c.rotation.block) fwht(row.data() + b, c.rotation.block);
      for (std::int64_t k = 0; k < cols; ++k) row[std::size_t(k)] *= double((*signs)[std::size_t(k)]);
    }
    if (permute_grouped) {
      grouped_to_tiled(row.data(), moved.data(), hd, nk, rep_heads);
      row.swap(moved);
    }
    for (std::int64_t k = 0; k < cols; ++k) {
      const double v = row[std::size_t(k)];
      const float f = float(v);
      ++rep.unfolded_weights;
      if (double(f) != v) {
        ++rep.unfolded_rounded;
        if (v != 0) rep.unfolded_max_rel_error = std::max(rep.unfolded_max_rel_error, std::fabs(double(f) - v) / std::fabs(v));
      }
      std::memcpy(out.data() + 4 * std::size_t(r * cols + k), &f, 4);
    }
  }
}

}  // namespace

std::uint32_t export_type(const std::string& name) {
  const auto it = targets().find(name);
  if (it == targets().end()) {
    std::vector<std::string> names;
    for (const auto& [n, t] : targets()) names.push_back(n);
    fail("unknown export type '", name, "' (", join(names), ")");
  }
  return std::uint32_t(it->second);
}

ExportReport export_model(const std::string& in, const std::string& out, const ExportOptions& o) {
  const gguf::File f = gguf::File::open(in, gguf::LoadMode::mmap);
  const ModelConfig c = ModelConfig::from_gguf(f);
  ExportReport rep;
  rep.type = export_type(o.type);
  const bool to_float = rep.type == std::uint32_t(gguf::TensorType::f32);
  const bool unfold = o.unfold && !c.rotation.identity;
  if (to_float && !o.unfold && !c.rotation.identity)
    fail(in, ": --type f32 writes the weights an engine without the Hadamard fold multiplies by; add --unfold "
             "(a folded model's F32 weights would be its rotated ones, which no engine reads as such)");
  if (unfold && !to_float) {
    const std::string first = c.folded.empty() ? "token_embd.weight" : *c.folded.begin();
    fail(in, ": tensor '", first, "': undoing the Hadamard fold (block ", c.rotation.block,
         ") makes its weights real-valued, which ", gguf::traits_of(rep.type, first).name,
         " cannot hold; --type f32 --unfold writes them as floats, or keep the fold (no --unfold)");
  }
  if (out == in) fail("model export: the output path is the input file, ", in);
  rep.fold_kept = !c.rotation.identity && !unfold;
  const LayoutInfo* to = to_float ? nullptr : &find_layout(gguf::ternary_layout_name(rep.type, "export"));

  gguf::Writer w;
  const std::string file_type = "general.file_type";
  for (const auto& key : f.key_order) {
    if (unfold && key.starts_with("prism.hadamard.")) continue;
    if (key == file_type) {
      w.set(key, gguf::Value::u32(std::uint32_t(llama_file_type(rep.type))));
      continue;
    }
    w.set(key, f.at(key));
  }
  if (!f.has(file_type)) w.set(file_type, gguf::Value::u32(std::uint32_t(llama_file_type(rep.type))));
  for (const auto& t : f.tensors) {
    const bool ternary = gguf::is_ternary(t.tensor_type());
    w.add_tensor(t.name, ternary ? gguf::TensorType(rep.type) : t.tensor_type(), t.ne);
  }

  replace_file_atomically(out, [&](const std::filesystem::path& part) {
    w.write(part.string(), [&](std::size_t i, const gguf::TensorInfo&, std::span<std::uint8_t> dst) {
      const gguf::TensorInfo& t = f.tensors[i];
      const auto src = f.data(t);
      if (!gguf::is_ternary(t.tensor_type())) {
        std::memcpy(dst.data(), src.data(), src.size());
      } else {
        const LayoutInfo& from = find_layout(gguf::ternary_layout_name(t.type, t.name));
        const auto rows = std::int64_t(t.ne.size() > 1 ? t.ne[1] : 1), cols = std::int64_t(t.ne[0]);
        const PackedMatrix p = adopt_bytes(from, rows, cols, src.data(), src.size(), t.name);
        if (to_float) {
          const bool grouped = unfold && c.gdn_v_grouped && t.name.ends_with("ssm_out.weight");
          write_unfolded(unpack(p), c, t.name, grouped, dst, rep);
        } else if (o.lossy) {
          ScaleRequantisation one;
          const PackedMatrix q = requantise(p, *to, t.name, &one);
          accumulate(rep.scales, one, t.name);
          std::memcpy(dst.data(), q.bytes.data(), q.blocks_bytes());
        } else {
          const PackedMatrix q = transcode(p, *to, t.name);
          std::memcpy(dst.data(), q.bytes.data(), q.blocks_bytes());
        }
        ++rep.converted;
      }
      f.release(t);
      if (o.progress) o.progress(i + 1, f.tensors.size(), t.name);
    });
    if (to_float && rep.unfolded_rounded && !o.lossy)
      fail(in, ": undoing the fold rounds ", rep.unfolded_rounded, " of ", rep.unfolded_weights,
           " weights to float32 (max relative error ", rep.unfolded_max_rel_error, "; exact only when the block ",
           c.rotation.block, "'s 1/sqrt is a power of two); --lossy writes them anyway");
  });
  rep.bytes = std::filesystem::file_size(out);
  return rep;
}

}  // namespace ternlab::model
