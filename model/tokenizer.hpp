// GGUF byte-level BPE ("gpt2" model, GPT-2 byte-to-unicode alphabet) with the Qwen pre-tokenizer
// split, and the byte-level vocabulary the synthetic presets carry.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/gguf.hpp"

namespace ternlab::model {

// GPT-2's byte -> printable code point map, as UTF-8 (e.g. ' ' -> "Ġ").
const std::string& byte_symbol(std::uint8_t b);

// Vocabulary for synthetic files: 256 byte tokens (id = byte), three control tokens, then padding.
struct SynthVocab {
  std::vector<std::string> tokens;
  std::vector<std::int64_t> types;
  std::vector<std::string> merges;
  std::uint32_t bos = 0, eos = 0, pad = 0;
};
SynthVocab synth_vocab(int n_vocab);
void write_tokenizer(const SynthVocab& v, gguf::Writer& w);

class Tokenizer {
 public:
  static Tokenizer from_gguf(const gguf::File& f);
  std::vector<std::int32_t> encode(const std::string& text) const;
  std::string decode(const std::vector<std::int32_t>& ids) const;
  std::string token_text(std::int32_t id) const;  // raw vocabulary entry
  int size() const { return int(tokens_.size()); }
  std::int32_t eos() const { return eos_; }
  std::int32_t bos() const { return bos_; }
  bool is_control(std::int32_t id) const;
  // Pre-tokenizer pieces of `text` (exposed for tests and `ternlab tokenize`).
  std::vector<std::string> split(const std::string& text) const;

 private:
  std::vector<std::string> tokens_;
  std::vector<std::int64_t> types_;
  std::unordered_map<std::string, std::int32_t> ids_;
  std::unordered_map<std::string, int> merge_rank_;  // "left right" -> rank
  std::vector<std::pair<std::string, std::int32_t>> specials_;  // control / user-defined, longest first
  std::int32_t eos_ = -1, bos_ = -1;
  std::string pre_;
  void bpe(const std::string& piece, std::vector<std::int32_t>& out) const;
};

}  // namespace ternlab::model
