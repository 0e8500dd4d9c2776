#include "tests/support.hpp"

#include <map>

#include "common/error.hpp"
#include "kernels/cpu.hpp"
#include "kernels/strategies/slot_mask/plan.hpp"
#include "kernels/targets/x86.hpp"
#include "model/synth.hpp"

namespace ternlab::test {

const std::string& synthetic_model(const std::filesystem::path& folder, const std::string& preset,
                                   const model::SynthOptions& options) {
  static std::map<std::string, std::string> written;  // tests run on one thread
  const std::string path = (folder / cat(preset, "-seed", options.seed, "-type", options.ternary_type, "-g",
                                         options.scale_group, options.unfolded ? "-unfolded" : "", ".gguf")).string();
  auto [it, fresh] = written.try_emplace(path, path);
  if (fresh) model::write_synthetic(model::find_preset(preset), path, options);
  return it->second;
}

std::vector<KernelVariant> checked_kernels_for(const LayoutInfo& L) {
  std::vector<KernelVariant> ks = kernels_for(L);
#if defined(__x86_64__)
  // The catalog's own gate (scales_why_not): which strategies read the layout's scales.
  if (isa_supported(Isa::avx2) && (L.block_scales_128() || chunked_block_scales(L))) {
    std::vector<KernelVariant> emulated;
    detail::add_avx512vnni_emulated_kernels(L, emulated);
    for (KernelVariant& k : emulated)
      if (scales_why_not(k.strategy, L).empty()) ks.push_back(std::move(k));
  }
#endif
  return ks;
}

// Shell words: single and double quotes, backslash escapes; a '#' starting a word ends the line.
std::vector<std::string> shell_words(const std::string& s) {
  std::vector<std::string> w;
  std::string cur;
  bool in_word = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == ' ' || c == '\t') {
      if (in_word) w.push_back(cur);
      cur.clear();
      in_word = false;
    } else if (c == '#' && !in_word) {
      break;
    } else if (c == '\'') {
      const std::size_t end = s.find('\'', i + 1);
      if (end == std::string::npos) fail("unterminated ' in: ", s);
      cur += s.substr(i + 1, end - i - 1);
      i = end;
      in_word = true;
    } else if (c == '"') {
      for (++i; i < s.size() && s[i] != '"'; ++i) cur += s[i] == '\\' && i + 1 < s.size() ? s[++i] : s[i];
      if (i >= s.size()) fail("unterminated \" in: ", s);
      in_word = true;
    } else {
      cur += c == '\\' && i + 1 < s.size() ? s[++i] : c;
      in_word = true;
    }
  }
  if (in_word) w.push_back(cur);
  return w;
}

}  // namespace ternlab::test
