// The byte-level BPE tokenizer: the Qwen pre-tokenizer split, merges by rank, special tokens, and
// lossless decode of any byte string.
#include <sstream>

#include "model/gguf.hpp"
#include "model/tokenizer.hpp"
#include "tests/support.hpp"

using namespace ternlab;
using namespace ternlab::model;

namespace {

// The synthetic byte vocabulary plus a few merges and their tokens, as a parsed GGUF.
Tokenizer make_tokenizer(bool with_merges, gguf::File* keep, std::vector<std::uint8_t>* storage) {
  SynthVocab v = synth_vocab(300);
  if (with_merges) {
    // "Ġ t" -> "Ġt", "h e" -> "he", "Ġt he" -> "Ġthe"
    v.merges = {byte_symbol(' ') + " t", "h e", byte_symbol(' ') + "t he"};
    v.tokens[259] = byte_symbol(' ') + "t";
    v.tokens[260] = "he";
    v.tokens[261] = byte_symbol(' ') + "the";
    for (int i : {259, 260, 261}) v.types[std::size_t(i)] = 1;
  }
  gguf::Writer w;
  write_tokenizer(v, w);
  std::ostringstream os;
  w.write(os, nullptr);
  const std::string s = os.str();
  storage->assign(s.begin(), s.end());
  *keep = gguf::File::parse(*storage, "tok.gguf");
  return Tokenizer::from_gguf(*keep);
}

}  // namespace

TEST_SUITE("tokenizer") {
  TEST_CASE("GPT-2 byte alphabet") {
    CHECK(byte_symbol('a') == "a");
    CHECK(byte_symbol(' ') == "Ġ");
    CHECK(byte_symbol('\n') == "Ċ");
    CHECK(byte_symbol(0) == "Ā");
  }

  TEST_CASE("the Qwen pre-tokenizer split") {
    gguf::File f;
    std::vector<std::uint8_t> b;
    const Tokenizer t = make_tokenizer(false, &f, &b);
    using V = std::vector<std::string>;
    CHECK(t.split("Hello world") == V{"Hello", " world"});
    CHECK(t.split("I'm here, they'LL go") == V{"I", "'m", " here", ",", " they", "'LL", " go"});
    CHECK(t.split("x=123") == V{"x", "=", "1", "2", "3"});
    CHECK(t.split("a  b") == V{"a", " ", " b"});
    CHECK(t.split("x\n\ny") == V{"x", "\n\n", "y"});
    CHECK(t.split("foo!!\n bar") == V{"foo", "!!\n", " bar"});
    CHECK(t.split("end   ") == V{"end", "   "});
    CHECK(t.split(" 你好世界") == V{" 你好世界"});
    CHECK(t.split("café") == V{"café"});
    CHECK(t.split("hi 👋🏽") == V{"hi", " 👋🏽"});
  }

  TEST_CASE("merges apply by rank; decode inverts encode") {
    gguf::File f;
    std::vector<std::uint8_t> b;
    const Tokenizer t = make_tokenizer(true, &f, &b);
    CHECK(t.encode(" the") == std::vector<std::int32_t>{261});
    CHECK(t.encode("the the") == std::vector<std::int32_t>{'t', 260, 261});
    CHECK(t.encode("<|im_end|>x") == std::vector<std::int32_t>{258, 'x'});
    CHECK(t.eos() == 258);
    for (const std::string& s : std::vector<std::string>{"", "Hello, world!", "naïve café 你好 👋🏽 x\t\ty\n\n  z", "def f(x):\n    return x**2\n",
                                std::string("\xff\xfe bad utf8 \xc3"), "1234567 it's 'S'"})
      CHECK(t.decode(t.encode(s)) == s);
  }

  TEST_CASE("bad tokenizer metadata is refused") {
    gguf::Writer w;
    w.set("tokenizer.ggml.model", gguf::Value::str("llama"));
    std::ostringstream os;
    w.write(os, nullptr);
    const std::string s = os.str();
    const std::vector<std::uint8_t> b(s.begin(), s.end());
    const auto f = gguf::File::parse(b, "tok.gguf");
    test::check_error([&] { Tokenizer::from_gguf(f); }, "tokenizer.ggml.model", "llama");
  }
}
