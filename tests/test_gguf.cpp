// The GGUF container: every value type round-trips, offsets honour the alignment, both load modes
// agree, and every truncated, corrupt or inconsistent file is refused with an error naming the
// key or tensor at fault.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "model/config.hpp"
#include "model/gguf.hpp"
#include "model/synth.hpp"
#include "model/tokenizer.hpp"
#include "tests/support.hpp"

using namespace ternlab;
using namespace ternlab::gguf;
using test::check_error;

namespace {

std::vector<std::uint8_t> to_bytes(const Writer& w, std::uint8_t fill_byte = 0xab) {
  std::ostringstream os;
  w.write(os, [&](std::size_t i, const TensorInfo&, std::span<std::uint8_t> out) {
    for (std::size_t j = 0; j < out.size(); ++j) out[j] = std::uint8_t(fill_byte + i + j);
  });
  const std::string s = os.str();
  return {s.begin(), s.end()};
}

Writer every_type() {
  Writer w;
  w.set("u8", {ValueType::u8, ValueType::u8, std::uint64_t{200}});
  w.set("i8", {ValueType::i8, ValueType::i8, std::int64_t{-100}});
  w.set("u16", {ValueType::u16, ValueType::u16, std::uint64_t{60000}});
  w.set("i16", {ValueType::i16, ValueType::i16, std::int64_t{-30000}});
  w.set("u32", Value::u32(4000000000u));
  w.set("i32", Value::i32(-2000000000));
  w.set("u64", Value::u64(0xfedcba9876543210ull));
  w.set("i64", {ValueType::i64, ValueType::i64, std::int64_t{-5}});
  w.set("f32", Value::f32(1e-6f));
  w.set("f64", {ValueType::f64, ValueType::f64, 0.1});
  w.set("bool", Value::boolean(true));
  w.set("string", Value::str("héllo\n"));
  w.set("ints", Value::ints(ValueType::i32, {1, -1, 5120}));
  w.set("bools", Value::ints(ValueType::boolean, {1, 0, 1}));
  w.set("u8s", Value::ints(ValueType::u8, {0, 255}));
  w.set("floats", Value::floats(ValueType::f32, {0.5, -2.0}));
  w.set("doubles", Value::floats(ValueType::f64, {1e300}));
  w.set("strings", Value::strings({"a", "", "ĠĠ"}));
  w.set("empty", Value::strings({}));
  w.add_tensor("a", TensorType::f32, {3});
  w.add_tensor("b", TensorType::pq2_0, {256, 2});
  w.add_tensor("c", TensorType::bf16, {5, 1});
  w.add_tensor("d", TensorType::ptq1_0, {128});
  return w;
}

struct TempFile {
  std::string path;
  explicit TempFile(const std::string& name)
      : path((std::filesystem::temp_directory_path() / cat("ternlab-test-", getpid(), "-", name)).string()) {}
  ~TempFile() { std::filesystem::remove(path); }
};

void save(const std::string& path, const std::vector<std::uint8_t>& b) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}

// Offset of the first occurrence of `needle` in the file image.
std::size_t find(const std::vector<std::uint8_t>& b, const std::string& needle) {
  const auto it = std::search(b.begin(), b.end(), needle.begin(), needle.end());
  REQUIRE(it != b.end());
  return std::size_t(it - b.begin());
}

}  // namespace

TEST_SUITE("gguf") {
  TEST_CASE("every value type and tensor info round-trips") {
    const Writer w = every_type();
    const auto bytes = to_bytes(w);
    CHECK(bytes.size() == w.total_bytes());
    const File f = File::parse(bytes);
    CHECK(f.version == 3);
    CHECK(f.alignment == 32);
    CHECK(f.key_order.size() == 19);
    CHECK(f.key_order.front() == "u8");
    CHECK(f.get_uint("u8") == 200);
    CHECK(std::get<std::int64_t>(f.at("i8").v) == -100);
    CHECK(f.get_uint("u16") == 60000);
    CHECK(std::get<std::int64_t>(f.at("i16").v) == -30000);
    CHECK(f.get_uint("u32") == 4000000000u);
    CHECK(std::get<std::int64_t>(f.at("i32").v) == -2000000000);
    CHECK(f.get_uint("u64") == 0xfedcba9876543210ull);
    CHECK(f.at("f32").type == ValueType::f32);
    CHECK(float(f.get_float("f32")) == 1e-6f);
    CHECK(f.get_float("f64") == 0.1);
    CHECK(f.get_bool("bool", false));
    CHECK(f.get_string("string") == "héllo\n");
    CHECK(f.get_ints("ints") == std::vector<std::int64_t>{1, -1, 5120});
    CHECK(f.at("ints").elem == ValueType::i32);
    CHECK(f.get_ints("bools") == std::vector<std::int64_t>{1, 0, 1});
    CHECK(f.get_ints("u8s") == std::vector<std::int64_t>{0, 255});
    CHECK(std::get<std::vector<double>>(f.at("floats").v) == std::vector<double>{0.5, -2.0});
    CHECK(f.get_strings("strings") == std::vector<std::string>{"a", "", "ĠĠ"});
    CHECK(f.get_strings("empty").empty());
    // Each parsed value equals what was written, type included.
    const File again = File::parse(bytes);
    for (const auto& k : f.key_order) CHECK(f.at(k) == again.at(k));

    REQUIRE(f.tensors.size() == 4);
    CHECK(f.tensor("b").bytes == 2 * 2 * 34);
    CHECK(f.tensor("c").ne == std::vector<std::uint64_t>{5, 1});
    CHECK(f.tensor("d").bytes == 28);
    for (std::size_t i = 0; i < f.tensors.size(); ++i) {
      const auto& t = f.tensors[i];
      CHECK(t.offset % 32 == 0);
      CHECK((f.data_offset + t.offset) % 32 == 0);
      const auto d = f.data(t);
      for (std::size_t j = 0; j < d.size(); ++j) REQUIRE(d[j] == std::uint8_t(0xab + i + j));
    }
  }

  TEST_CASE("general.alignment is honoured") {
    Writer w = every_type();
    w.set("general.alignment", Value::u32(256));
    const File f = File::parse(to_bytes(w));
    CHECK(f.alignment == 256);
    CHECK(f.data_offset % 256 == 0);
    for (const auto& t : f.tensors) CHECK(t.offset % 256 == 0);
  }

  TEST_CASE("memory and mmap loads read the same file") {
    TempFile tmp("modes.gguf");
    const auto bytes = to_bytes(every_type());
    save(tmp.path, bytes);
    const File a = File::open(tmp.path, LoadMode::memory), b = File::open(tmp.path, LoadMode::mmap);
    CHECK(a.mode == LoadMode::memory);
    CHECK(b.mode == LoadMode::mmap);
    CHECK(a.data_offset == b.data_offset);
    for (const auto& t : a.tensors) {
      const auto x = a.data(t), y = b.data(*b.find(t.name));
      CHECK(std::equal(x.begin(), x.end(), y.begin(), y.end()));
    }
    check_error([] { File::open("/nonexistent/ternlab.gguf", LoadMode::mmap); }, "/nonexistent/ternlab.gguf");
  }

  TEST_CASE("every truncation is refused, never a crash") {
    const auto bytes = to_bytes(every_type());
    for (std::size_t n = 0; n < bytes.size(); ++n) {
      const std::vector<std::uint8_t> cut(bytes.begin(), bytes.begin() + std::ptrdiff_t(n));
      bool threw = false;
      try {
        File::parse(cut, "cut.gguf");
      } catch (const Error& e) {
        threw = true;
        REQUIRE(std::string(e.what()).find("cut.gguf") != std::string::npos);
      }
      REQUIRE(threw);
    }
  }

  TEST_CASE("corrupt headers name what is wrong") {
    const auto good = to_bytes(every_type());
    auto bad = good;
    bad[0] = 'X';
    check_error([&] { File::parse(bad, "m.gguf"); }, "m.gguf", "bad magic");
    bad = good;
    bad[4] = 2;
    check_error([&] { File::parse(bad, "m.gguf"); }, "version 2");
    bad = good;
    bad[16] = 0xff;  // kv_count
    bad[17] = 0xff;
    check_error([&] { File::parse(bad, "m.gguf"); }, "kv_count");
    bad = good;
    {
      // The value type after key "u32" (8-byte length + 3 bytes) becomes 99.
      const std::size_t at = find(bad, "u32") + 3;
      bad[at] = 99;
      check_error([&] { File::parse(bad, "m.gguf"); }, "'u32'", "unknown value type 99");
    }
    bad = good;
    {
      const std::size_t at = find(bad, "bool") + 4 + 4;
      bad[at] = 7;
      check_error([&] { File::parse(bad, "m.gguf"); }, "'bool'", "BOOL value 7");
    }
  }

  TEST_CASE("bad tensor infos name the tensor") {
    Writer w;
    w.add_tensor("blk.0.ffn_up.weight", TensorType::pq2_0, {256, 4});
    const auto good = to_bytes(w);
    const std::size_t info = find(good, "blk.0.ffn_up.weight") + 19;  // n_dims, ne[2], type, offset
    auto bad = good;
    bad[info + 4 + 16] = 77;  // type
    check_error([&] { File::parse(bad); }, "'blk.0.ffn_up.weight'", "unknown ggml tensor type 77");
    bad = good;
    bad[info + 4 + 16 + 4] = 32;  // offset 32: the data now runs past the end
    check_error([&] { File::parse(bad); }, "'blk.0.ffn_up.weight'", "past the end");
    bad = good;
    bad[info + 4 + 16 + 4] = 3;  // misaligned offset
    check_error([&] { File::parse(bad); }, "'blk.0.ffn_up.weight'", "alignment");
    bad = good;
    bad[info + 4] = 200;  // ne0 = 200, not whole blocks
    bad[info + 5] = 0;
    check_error([&] { File::parse(bad); }, "'blk.0.ffn_up.weight'", "ne0 = 200");
    bad = good;
    bad[info] = 9;  // nine dimensions
    check_error([&] { File::parse(bad); }, "'blk.0.ffn_up.weight'", "9 dimensions");
    bad = good;
    bad.resize(bad.size() - 1);
    check_error([&] { File::parse(bad); }, "'blk.0.ffn_up.weight'", "past the end");
  }

  TEST_CASE("model validation: missing keys and tensors, wrong shapes, bad Hadamard metadata") {
    using namespace ternlab::model;
    const SynthPreset& p = find_preset("tiny");
    const ModelConfig c = synth_config(p, {});
    // Rebuilds the tiny file's header with one edit; tensor data are zeros (validation only).
    const auto build = [&](const std::function<void(Writer&, std::vector<TensorSpec>&)>& edit) {
      Writer w;
      write_metadata(c, w, 141);
      write_tokenizer(synth_vocab(c.n_vocab), w);
      auto specs = tensor_specs(c);
      edit(w, specs);
      for (const auto& s : specs)
        w.add_tensor(s.name, s.kind == Kind::ternary ? TensorType::pq2_0
                             : s.kind == Kind::f32   ? TensorType::f32
                                                     : TensorType::bf16,
                     s.ne);
      return to_bytes(w, 0);
    };
    const auto config_of = [](const std::vector<std::uint8_t>& b) { return ModelConfig::from_gguf(File::parse(b, "t.gguf")); };
    CHECK_NOTHROW(config_of(build([](Writer&, auto&) {})));
    CHECK(config_of(build([](Writer&, auto&) {})).n_layer == 4);

    check_error([&] { config_of(build([](Writer& w, auto&) { w.set("qwen35.embedding_length", Value::str("x")); })); },
                "qwen35.embedding_length", "STRING");
    check_error([&] { config_of(build([](Writer& w, auto&) { w.set("general.architecture", Value::str("llama")); })); },
                "general.architecture", "llama");
    check_error([&] {
      config_of(build([](Writer&, std::vector<TensorSpec>& s) {
        s.erase(std::remove_if(s.begin(), s.end(), [](auto& t) { return t.name == "blk.2.ssm_out.weight"; }), s.end());
      }));
    }, "blk.2.ssm_out.weight");
    check_error([&] {
      config_of(build([](Writer&, std::vector<TensorSpec>& s) {
        for (auto& t : s)
          if (t.name == "blk.3.attn_k.weight") t.ne[1] = 256;
      }));
    }, "blk.3.attn_k.weight", "[256, 256]", "[256, 128]");
    check_error([&] {
      config_of(build([](Writer&, std::vector<TensorSpec>& s) {
        for (auto& t : s)
          if (t.name == "blk.0.ssm_a") t.kind = Kind::bf16;
      }));
    }, "blk.0.ssm_a", "BF16", "F32");
    check_error([&] { config_of(build([](Writer& w, auto&) { w.set("qwen35.ssm.inner_size", Value::u32(700)); })); },
                "qwen35.ssm.inner_size");
    check_error([&] {
      config_of(build([](Writer& w, auto&) { w.set("prism.hadamard.sign_values", Value::ints(ValueType::i32, {1, -1})); }));
    }, "sign_values");
    check_error([&] {
      config_of(build([](Writer& w, auto&) { w.set("prism.hadamard.sign_widths", Value::ints(ValueType::i32, {256, 768, 1000})); }));
    }, "sign_widths", "1000");
    check_error([&] {
      config_of(build([](Writer& w, auto&) { w.set("prism.hadamard.transform", Value::str("walsh-sequency")); }));
    }, "prism.hadamard.transform");
    check_error([&] {
      config_of(build([](Writer& w, auto&) { w.set("prism.hadamard.inverse_weight_names", Value::strings({"output.weight"})); }));
    }, "inverse_weight_names", "output.weight");
    check_error([&] {
      config_of(build([](Writer& w, auto&) {
        w.set("prism.hadamard.weight_names", Value::strings({"output.weight", "blk.9.ffn_up.weight"}));
      }));
    }, "prism.hadamard.weight_names");
  }

  TEST_CASE("the synthetic tiny file carries the spec's fixture-A inventory") {
    TempFile tmp("synth.gguf");
    model::write_synthetic(model::find_preset("tiny"), tmp.path);
    const File f = File::open(tmp.path, LoadMode::mmap);
    CHECK(f.tensors.size() == 56);
    CHECK(f.get_strings("prism.hadamard.weight_names").size() == 26);
    CHECK(f.get_ints("prism.hadamard.sign_widths") == std::vector<std::int64_t>{256, 768, 1280});
    CHECK(f.get_ints("prism.hadamard.sign_values").size() == 2304);
    CHECK(f.tensor("blk.0.attn_qkv.weight").ne == std::vector<std::uint64_t>{256, 1280});
    CHECK(f.tensor("blk.3.attn_q.weight").ne == std::vector<std::uint64_t>{256, 1536});
    CHECK(f.tensor("blk.0.ssm_alpha.weight").type == 30);
    CHECK(f.tensor("output.weight").type == 142);
    const auto c = model::ModelConfig::from_gguf(f);
    CHECK(c.is_gdn(0));
    CHECK_FALSE(c.is_gdn(3));
  }
}

TEST_SUITE("gguf") {
  TEST_CASE("the bonsai-27b preset has the real file's inventory and byte counts (spec §5)") {
    using namespace ternlab::model;
    const ModelConfig c = synth_config(find_preset("bonsai-27b"), {});
    Writer w;
    std::uint64_t ternary = 0, bf16 = 0, f32 = 0;
    for (const auto& s : tensor_specs(c)) {
      w.add_tensor(s.name, s.kind == Kind::ternary ? TensorType::pq2_0 : s.kind == Kind::f32 ? TensorType::f32 : TensorType::bf16, s.ne);
      (s.kind == Kind::ternary ? ternary : s.kind == Kind::f32 ? f32 : bf16) += w.tensors().back().bytes;
    }
    CHECK(w.tensors().size() == 851);
    CHECK(c.folded.size() == 401);
    CHECK(ternary == 7137280000ull);
    CHECK(bf16 == 47185920ull);
    CHECK(f32 == 10582016ull);
    CHECK(c.rotation.signs.size() == 3);  // widths 5120, 6144, 17408
    CHECK(c.rotation.signs.count(17408) == 1);
  }
}
