// GGUF v3 container: metadata (every value type, arrays included), tensor infos, alignment and the
// data section, read from memory or through mmap, and written streaming (tensor data is produced one
// tensor at a time, so a 7 GB file never sits in memory). Every malformed input throws ternlab::Error
// naming the offset, key or tensor at fault.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <span>
#include <string>
#include <variant>
#include <vector>

namespace ternlab::gguf {

enum class ValueType : std::uint32_t {
  u8 = 0, i8 = 1, u16 = 2, i16 = 3, u32 = 4, i32 = 5, f32 = 6, boolean = 7, string = 8, array = 9,
  u64 = 10, i64 = 11, f64 = 12,
};
const char* type_name(ValueType t);

// ggml tensor types ternlab reads. Anything else in a file is refused with the tensor's name.
enum class TensorType : std::uint32_t {
  f32 = 0, f16 = 1, tq1_0 = 34, tq2_0 = 35, bf16 = 30, pq2_0 = 142, ptq1_0 = 143,
};
struct TypeTraits {
  int block_elems;
  int block_bytes;
  const char* name;
};
// Throws for an unknown id; `what` names the tensor.
TypeTraits traits_of(std::uint32_t type, const std::string& what);
bool is_ternary(TensorType t);
// The ternary block formats by GGUF type id: PrismML's PQ2_0 / PTQ1_0 (128 weights a block) and
// ggml's TQ2_0 / TQ1_0 (256 weights, what upstream llama.cpp runs). Throws for another type.
const char* ternary_layout_name(std::uint32_t type, const std::string& what);
// The inverse: the type id of a ternary block format's name (pq2_0, ptq1_0, tq2_0, tq1_0); throws
// naming `what` and listing the names.
std::uint32_t ternary_type_id(const std::string& name, const std::string& what);

inline constexpr std::uint32_t kMagic = 0x46554747;  // "GGUF" little-endian
inline constexpr std::uint32_t kVersion = 3;
inline constexpr std::uint32_t kDefaultAlignment = 32;

// A metadata value. Integer scalars keep their exact bits in u/i (by signedness), floats widen to
// double; arrays keep the element type and hold ints, floats or strings. Nested arrays are refused.
struct Value {
  ValueType type = ValueType::u32;
  ValueType elem = ValueType::u32;  // arrays only
  std::variant<std::uint64_t, std::int64_t, double, bool, std::string, std::vector<std::int64_t>,
               std::vector<double>, std::vector<std::string>>
      v = std::uint64_t{0};

  static Value u32(std::uint32_t x) { return {ValueType::u32, ValueType::u32, std::uint64_t{x}}; }
  static Value i32(std::int32_t x) { return {ValueType::i32, ValueType::i32, std::int64_t{x}}; }
  static Value u64(std::uint64_t x) { return {ValueType::u64, ValueType::u64, x}; }
  static Value f32(float x) { return {ValueType::f32, ValueType::f32, double(x)}; }
  static Value boolean(bool x) { return {ValueType::boolean, ValueType::boolean, x}; }
  static Value str(std::string s) { return {ValueType::string, ValueType::string, std::move(s)}; }
  static Value ints(ValueType elem, std::vector<std::int64_t> xs) { return {ValueType::array, elem, std::move(xs)}; }
  static Value floats(ValueType elem, std::vector<double> xs) { return {ValueType::array, elem, std::move(xs)}; }
  static Value strings(std::vector<std::string> xs) {
    return {ValueType::array, ValueType::string, std::move(xs)};
  }
  bool operator==(const Value&) const = default;
};

struct TensorInfo {
  std::string name;
  std::vector<std::uint64_t> ne;  // ggml order, ne[0] fastest
  std::uint32_t type = 0;
  std::uint64_t offset = 0;  // relative to the data section
  std::uint64_t bytes = 0;   // derived from ne and type
  std::int64_t elements() const;
  TensorType tensor_type() const { return TensorType(type); }
};

enum class LoadMode { memory, mmap };
const char* mode_name(LoadMode m);
LoadMode parse_mode(const std::string& s);

// A parsed file. The bytes stay alive (heap copy or mapping) as long as the File does.
class File {
 public:
  // Parses a whole file image. `source` names it in messages. The bytes must outlive the File.
  static File parse(std::span<const std::uint8_t> bytes, const std::string& source = "gguf");
  static File open(const std::string& path, LoadMode mode);

  std::uint32_t version = kVersion;
  std::uint32_t alignment = kDefaultAlignment;
  std::uint64_t data_offset = 0;  // start of the data section in the file
  std::vector<std::string> key_order;  // as in the file
  std::map<std::string, Value> kv;
  std::vector<TensorInfo> tensors;  // as in the file
  std::string source;
  LoadMode mode = LoadMode::memory;

  bool has(const std::string& key) const { return kv.count(key) != 0; }
  const Value& at(const std::string& key) const;  // throws "missing metadata key"
  // Typed access; integer getters accept every integer width (and check the range), float getters
  // accept f32 and f64. Each throws naming the key on a missing key or wrong type.
  std::uint64_t get_uint(const std::string& key) const;
  std::uint64_t get_uint(const std::string& key, std::uint64_t fallback) const;
  double get_float(const std::string& key) const;
  bool get_bool(const std::string& key, bool fallback) const;
  std::string get_string(const std::string& key) const;
  std::vector<std::int64_t> get_ints(const std::string& key) const;
  std::vector<std::string> get_strings(const std::string& key) const;

  const TensorInfo* find(const std::string& name) const;
  const TensorInfo& tensor(const std::string& name) const;  // throws "missing tensor"
  std::span<const std::uint8_t> data(const TensorInfo& t) const;
  // Tells the kernel a tensor's pages are no longer needed (mmap mode; a no-op otherwise), so a
  // streaming repack never holds the source and the repacked copy of the whole model at once.
  void release(const TensorInfo& t) const;
  std::uint64_t file_size() const { return bytes_.size(); }

 private:
  std::span<const std::uint8_t> bytes_;
  std::shared_ptr<void> storage_;
  std::map<std::string, std::size_t> by_name_;
  friend class Parser;
};

// Writes a GGUF v3 file: metadata in insertion order, tensor infos with offsets laid out at the
// alignment, then each tensor's bytes produced by `fill` (called once per tensor, in order, with a
// buffer of exactly its size), so only one tensor is in memory at a time.
class Writer {
 public:
  void set(const std::string& key, Value v);
  void add_tensor(const std::string& name, TensorType type, std::vector<std::uint64_t> ne);
  using Fill = std::function<void(std::size_t index, const TensorInfo& info, std::span<std::uint8_t> out)>;
  void write(std::ostream& out, const Fill& fill) const;
  void write(const std::string& path, const Fill& fill) const;
  std::uint64_t total_bytes() const;
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  std::uint32_t alignment() const;

 private:
  std::vector<std::pair<std::string, Value>> kv_;
  std::vector<TensorInfo> tensors_;
  std::uint64_t data_bytes_ = 0;
};

}  // namespace ternlab::gguf
