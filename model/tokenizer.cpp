#include "model/tokenizer.hpp"

#include <algorithm>
#include <array>
#include <climits>

#include "common/error.hpp"

namespace ternlab::model {

namespace {

void append_utf8(std::string& s, std::uint32_t cp) {
  if (cp < 0x80) {
    s += char(cp);
  } else if (cp < 0x800) {
    s += char(0xc0 | (cp >> 6));
    s += char(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    s += char(0xe0 | (cp >> 12));
    s += char(0x80 | ((cp >> 6) & 0x3f));
    s += char(0x80 | (cp & 0x3f));
  } else {
    s += char(0xf0 | (cp >> 18));
    s += char(0x80 | ((cp >> 12) & 0x3f));
    s += char(0x80 | ((cp >> 6) & 0x3f));
    s += char(0x80 | (cp & 0x3f));
  }
}

// Decodes one code point at s[i] (invalid bytes decode as themselves, one at a time).
std::uint32_t next_cp(const std::string& s, std::size_t& i) {
  const auto b = std::uint8_t(s[i]);
  int n = b < 0x80 ? 0 : (b >> 5) == 6 ? 1 : (b >> 4) == 14 ? 2 : (b >> 3) == 30 ? 3 : -1;
  if (n < 0 || i + std::size_t(n) >= s.size()) {
    ++i;
    return b;
  }
  std::uint32_t cp = n == 0 ? b : b & (0x3f >> n);
  for (int k = 1; k <= n; ++k) {
    const auto c = std::uint8_t(s[i + std::size_t(k)]);
    if ((c & 0xc0) != 0x80) {
      ++i;
      return b;
    }
    cp = (cp << 6) | (c & 0x3f);
  }
  i += std::size_t(n) + 1;
  return cp;
}

// GPT-2 bytes_to_unicode: printable bytes map to themselves, the rest to 256 + n in byte order.
const std::array<std::string, 256>& byte_table() {
  static const std::array<std::string, 256> table = [] {
    std::array<std::string, 256> t;
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
      append_utf8(t[std::size_t(b)], printable ? std::uint32_t(b) : std::uint32_t(256 + n++));
    }
    return t;
  }();
  return table;
}

// Unicode classes the Qwen split needs, approximated by ranges (no ICU): letters and marks are
// every code point >= 0x80 outside the punctuation, symbol, space and number ranges listed here.
bool is_space(std::uint32_t c) {
  return c == ' ' || (c >= 0x09 && c <= 0x0d) || c == 0x85 || c == 0xa0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}
bool is_number(std::uint32_t c) {
  return (c >= '0' && c <= '9') || c == 0xb2 || c == 0xb3 || c == 0xb9 || (c >= 0xbc && c <= 0xbe) ||
         (c >= 0x660 && c <= 0x669) || (c >= 0x6f0 && c <= 0x6f9) || (c >= 0x966 && c <= 0x96f) ||
         (c >= 0x2070 && c <= 0x2079) || (c >= 0x2080 && c <= 0x2089) || (c >= 0x2150 && c <= 0x218b) ||
         (c >= 0x2460 && c <= 0x249b) || (c >= 0x3007 && c <= 0x3007) || (c >= 0x3021 && c <= 0x3029) ||
         (c >= 0xff10 && c <= 0xff19);
}
bool is_symbol_or_punct(std::uint32_t c) {
  if (c < 0x80) return !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || is_space(c));
  return (c >= 0xa1 && c <= 0xbf && c != 0xaa && c != 0xb5 && c != 0xba) || c == 0xd7 || c == 0xf7 ||
         (c >= 0x200b && c <= 0x200f) ||  // format characters (Cf: ZWSP, ZWNJ, ZWJ, LRM, RLM)
         (c >= 0x2010 && c <= 0x2027) || (c >= 0x2060 && c <= 0x206f) || c == 0xfeff || (c >= 0x2030 && c <= 0x205e) || (c >= 0x20a0 && c <= 0x20cf) ||
         (c >= 0x2190 && c <= 0x245f) || (c >= 0x2500 && c <= 0x2bff) || (c >= 0x2e00 && c <= 0x2e7f) ||
         (c >= 0x3001 && c <= 0x3006) || (c >= 0x3008 && c <= 0x3020) || (c >= 0xfe10 && c <= 0xfe19) ||
         (c >= 0xfe30 && c <= 0xfe6f) || (c >= 0xff01 && c <= 0xff0f) || (c >= 0xff1a && c <= 0xff20) ||
         (c >= 0xff3b && c <= 0xff40) || (c >= 0xff5b && c <= 0xff65) || (c >= 0x1f000 && c <= 0x1faff);
}
bool is_letter_or_mark(std::uint32_t c) { return !is_space(c) && !is_number(c) && !is_symbol_or_punct(c); }
bool is_newline(std::uint32_t c) { return c == '\r' || c == '\n'; }
std::uint32_t lower(std::uint32_t c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

}  // namespace

const std::string& byte_symbol(std::uint8_t b) { return byte_table()[b]; }

SynthVocab synth_vocab(int n_vocab) {
  if (n_vocab < 259) fail("synth: a byte-level vocabulary needs at least 259 tokens, got ", n_vocab);
  SynthVocab v;
  for (int b = 0; b < 256; ++b) {
    v.tokens.push_back(byte_symbol(std::uint8_t(b)));
    v.types.push_back(1);
  }
  for (const char* s : {"<|endoftext|>", "<|im_start|>", "<|im_end|>"}) {
    v.tokens.emplace_back(s);
    v.types.push_back(3);
  }
  v.bos = 256;
  v.eos = 258;
  v.pad = 256;
  for (int i = int(v.tokens.size()); i < n_vocab; ++i) {
    v.tokens.push_back(cat("[PAD", i, "]"));
    v.types.push_back(5);
  }
  return v;
}

void write_tokenizer(const SynthVocab& v, gguf::Writer& w) {
  using gguf::Value;
  w.set("tokenizer.ggml.model", Value::str("gpt2"));
  w.set("tokenizer.ggml.pre", Value::str("qwen35"));
  w.set("tokenizer.ggml.tokens", Value::strings(v.tokens));
  w.set("tokenizer.ggml.token_type", Value::ints(gguf::ValueType::i32, v.types));
  w.set("tokenizer.ggml.merges", Value::strings(v.merges));
  w.set("tokenizer.ggml.bos_token_id", Value::u32(v.bos));
  w.set("tokenizer.ggml.eos_token_id", Value::u32(v.eos));
  w.set("tokenizer.ggml.padding_token_id", Value::u32(v.pad));
  w.set("tokenizer.ggml.add_bos_token", Value::boolean(false));
}

Tokenizer Tokenizer::from_gguf(const gguf::File& f) {
  Tokenizer t;
  const std::string model = f.get_string("tokenizer.ggml.model");
  if (model != "gpt2") fail(f.source, ": tokenizer.ggml.model = '", model, "' (ternlab reads gpt2 byte-level BPE)");
  t.pre_ = f.has("tokenizer.ggml.pre") ? f.get_string("tokenizer.ggml.pre") : "default";
  t.tokens_ = f.get_strings("tokenizer.ggml.tokens");
  if (t.tokens_.empty()) fail(f.source, ": tokenizer.ggml.tokens is empty");
  if (f.has("tokenizer.ggml.token_type")) t.types_ = f.get_ints("tokenizer.ggml.token_type");
  if (!t.types_.empty() && t.types_.size() != t.tokens_.size())
    fail(f.source, ": tokenizer.ggml.token_type has ", t.types_.size(), " entries for ", t.tokens_.size(), " tokens");
  for (std::size_t i = 0; i < t.tokens_.size(); ++i) {
    t.ids_.emplace(t.tokens_[i], std::int32_t(i));
    const auto type = t.types_.empty() ? 1 : t.types_[i];
    if ((type == 3 || type == 4) && !t.tokens_[i].empty()) t.specials_.emplace_back(t.tokens_[i], std::int32_t(i));
  }
  std::sort(t.specials_.begin(), t.specials_.end(),
            [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  if (f.has("tokenizer.ggml.merges")) {
    const auto merges = f.get_strings("tokenizer.ggml.merges");
    for (std::size_t i = 0; i < merges.size(); ++i) t.merge_rank_.emplace(merges[i], int(i));
  }
  const auto id = [&](const char* key) -> std::int32_t {
    if (!f.has(key)) return -1;
    const auto v = f.get_uint(key);
    if (v >= t.tokens_.size()) fail(f.source, ": ", key, " = ", v, " is past the vocabulary (", t.tokens_.size(), ")");
    return std::int32_t(v);
  };
  t.eos_ = id("tokenizer.ggml.eos_token_id");
  t.bos_ = id("tokenizer.ggml.bos_token_id");
  return t;
}

bool Tokenizer::is_control(std::int32_t id) const {
  return id >= 0 && std::size_t(id) < types_.size() && types_[std::size_t(id)] == 3;
}

std::string Tokenizer::token_text(std::int32_t id) const {
  if (id < 0 || id >= size()) fail("token id ", id, " is outside the vocabulary (", size(), ")");
  return tokens_[std::size_t(id)];
}

std::vector<std::string> Tokenizer::split(const std::string& text) const {
  std::vector<std::uint32_t> cp;
  std::vector<std::size_t> at;  // byte offset of each code point
  for (std::size_t i = 0; i < text.size();) {
    at.push_back(i);
    cp.push_back(next_cp(text, i));
  }
  at.push_back(text.size());
  const std::size_t n = cp.size();
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < n) {
    std::size_t j = i;
    const auto L = [&](std::size_t k) { return k < n && is_letter_or_mark(cp[k]); };
    const auto S = [&](std::size_t k) { return k < n && is_space(cp[k]); };
    if (cp[i] == '\'' && i + 1 < n) {  // contractions 's 't 're 've 'm 'll 'd
      const auto a = lower(cp[i + 1]);
      const auto b = i + 2 < n ? lower(cp[i + 2]) : 0;
      if (a == 's' || a == 't' || a == 'm' || a == 'd') j = i + 2;
      else if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) j = i + 3;
    }
    if (j == i && (L(i) || (!is_newline(cp[i]) && !is_number(cp[i]) && L(i + 1)))) {  // [^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+
      j = L(i) ? i : i + 1;
      while (L(j)) ++j;
    }
    if (j == i && is_number(cp[i])) j = i + 1;  // \p{N}
    if (j == i) {  // ' ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*'
      std::size_t k = cp[i] == ' ' ? i + 1 : i;
      const auto P = [&](std::size_t m) { return m < n && !is_space(cp[m]) && !L(m) && !is_number(cp[m]); };
      if (P(k)) {
        while (P(k)) ++k;
        while (k < n && is_newline(cp[k])) ++k;
        j = k;
      }
    }
    if (j == i && S(i)) {
      std::size_t end = i;
      while (S(end)) ++end;
      std::size_t last_nl = n;
      for (std::size_t k = i; k < end; ++k)
        if (is_newline(cp[k])) last_nl = k;
      if (last_nl != n)
        j = last_nl + 1;  // \s*[\r\n]+
      else if (end == n || end - i == 1)
        j = end;  // \s+(?!\S) at the end of text, or the final \s+
      else
        j = end - 1;  // \s+(?!\S): leave the last space to the next word
    }
    if (j == i) j = i + 1;
    out.push_back(text.substr(at[i], at[j] - at[i]));
    i = j;
  }
  return out;
}

void Tokenizer::bpe(const std::string& piece, std::vector<std::int32_t>& out) const {
  std::vector<std::string> sym;
  for (unsigned char b : piece) sym.push_back(byte_symbol(b));
  while (sym.size() > 1) {
    int best = INT_MAX;
    std::size_t where = 0;
    for (std::size_t i = 0; i + 1 < sym.size(); ++i) {
      const auto it = merge_rank_.find(sym[i] + " " + sym[i + 1]);
      if (it != merge_rank_.end() && it->second < best) {
        best = it->second;
        where = i;
      }
    }
    if (best == INT_MAX) break;
    sym[where] += sym[where + 1];
    sym.erase(sym.begin() + std::ptrdiff_t(where) + 1);
  }
  for (const auto& s : sym) {
    const auto it = ids_.find(s);
    if (it != ids_.end()) {
      out.push_back(it->second);
      continue;
    }
    // A symbol the vocabulary lacks: fall back to its bytes' tokens.
    for (std::size_t i = 0; i < s.size();) {
      const std::size_t start = i;
      next_cp(s, i);
      const auto b = ids_.find(s.substr(start, i - start));
      if (b == ids_.end()) fail("tokenizer: no token for symbol '", s, "'");
      out.push_back(b->second);
    }
  }
}

std::vector<std::int32_t> Tokenizer::encode(const std::string& text) const {
  std::vector<std::int32_t> out;
  std::size_t i = 0, plain = 0;
  const auto flush = [&](std::size_t end) {
    if (end > plain)
      for (const auto& piece : split(text.substr(plain, end - plain))) bpe(piece, out);
  };
  while (i < text.size()) {
    bool matched = false;
    for (const auto& [s, id] : specials_)
      if (text.compare(i, s.size(), s) == 0) {
        flush(i);
        out.push_back(id);
        i += s.size();
        plain = i;
        matched = true;
        break;
      }
    if (!matched) ++i;
  }
  flush(text.size());
  return out;
}

std::string Tokenizer::decode(const std::vector<std::int32_t>& ids) const {
  static const std::unordered_map<std::string, std::uint8_t> inverse = [] {
    std::unordered_map<std::string, std::uint8_t> m;
    for (int b = 0; b < 256; ++b) m.emplace(byte_symbol(std::uint8_t(b)), std::uint8_t(b));
    return m;
  }();
  std::string out;
  for (const auto id : ids) {
    const std::string t = token_text(id);
    const auto type = types_.empty() ? 1 : types_[std::size_t(id)];
    if (type == 3 || type == 4) {
      out += t;
      continue;
    }
    for (std::size_t i = 0; i < t.size();) {
      const std::size_t start = i;
      next_cp(t, i);
      const auto it = inverse.find(t.substr(start, i - start));
      if (it != inverse.end())
        out += char(it->second);
      else
        out += t.substr(start, i - start);
    }
  }
  return out;
}

}  // namespace ternlab::model
