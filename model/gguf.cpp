#include "model/gguf.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <sstream>
#include <fstream>
#include <limits>
#include <map>

#include "common/error.hpp"

namespace ternlab::gguf {

const char* type_name(ValueType t) {
  switch (t) {
    case ValueType::u8: return "UINT8";
    case ValueType::i8: return "INT8";
    case ValueType::u16: return "UINT16";
    case ValueType::i16: return "INT16";
    case ValueType::u32: return "UINT32";
    case ValueType::i32: return "INT32";
    case ValueType::f32: return "FLOAT32";
    case ValueType::boolean: return "BOOL";
    case ValueType::string: return "STRING";
    case ValueType::array: return "ARRAY";
    case ValueType::u64: return "UINT64";
    case ValueType::i64: return "INT64";
    case ValueType::f64: return "FLOAT64";
  }
  return "?";
}

TypeTraits traits_of(std::uint32_t type, const std::string& what) {
  switch (TensorType(type)) {
    case TensorType::f32: return {1, 4, "F32"};
    case TensorType::f16: return {1, 2, "F16"};
    case TensorType::bf16: return {1, 2, "BF16"};
    case TensorType::pq2_0: return {128, 34, "PQ2_0"};
    case TensorType::ptq1_0: return {128, 28, "PTQ1_0"};
    case TensorType::tq2_0: return {256, 66, "TQ2_0"};
    case TensorType::tq1_0: return {256, 54, "TQ1_0"};
  }
  // ggml's names for the types ternlab does not read, so a refusal says what the file holds.
  static const std::map<std::uint32_t, const char*> ggml_names{
      {2, "Q4_0"},    {3, "Q4_1"},   {6, "Q5_0"},     {7, "Q5_1"},   {8, "Q8_0"},    {9, "Q8_1"},
      {10, "Q2_K"},   {11, "Q3_K"},  {12, "Q4_K"},    {13, "Q5_K"},  {14, "Q6_K"},   {15, "Q8_K"},
      {16, "IQ2_XXS"}, {17, "IQ2_XS"}, {18, "IQ3_XXS"}, {19, "IQ1_S"}, {20, "IQ4_NL"}, {21, "IQ3_S"},
      {22, "IQ2_S"},  {23, "IQ4_XS"}, {24, "I8"},      {25, "I16"},   {26, "I32"},    {27, "I64"},
      {28, "F64"},    {29, "IQ1_M"}, {39, "MXFP4"},   {40, "NVFP4"}, {41, "Q1_0"},   {42, "Q2_0"}};
  const auto known = ggml_names.find(type);
  fail(what, ": ", known == ggml_names.end() ? "unknown ggml tensor type " : "unsupported ggml tensor type ", type,
       known == ggml_names.end() ? "" : cat(" (", known->second, ")"),
       "; ternlab reads F32=0, F16=1, TQ1_0=34, TQ2_0=35, BF16=30, PQ2_0=142, PTQ1_0=143");
}

bool is_ternary(TensorType t) {
  return t == TensorType::pq2_0 || t == TensorType::ptq1_0 || t == TensorType::tq2_0 || t == TensorType::tq1_0;
}

const char* ternary_layout_name(std::uint32_t type, const std::string& what) {
  switch (TensorType(type)) {
    case TensorType::pq2_0: return "pq2_0";
    case TensorType::ptq1_0: return "ptq1_0";
    case TensorType::tq2_0: return "tq2_0";
    case TensorType::tq1_0: return "tq1_0";
    default: break;
  }
  fail(what, ": type ", traits_of(type, what).name, " is not a ternary block format (PQ2_0, PTQ1_0, TQ2_0, TQ1_0)");
}

std::uint32_t ternary_type_id(const std::string& name, const std::string& what) {
  for (TensorType t : {TensorType::pq2_0, TensorType::ptq1_0, TensorType::tq2_0, TensorType::tq1_0})
    if (name == ternary_layout_name(std::uint32_t(t), what)) return std::uint32_t(t);
  fail(what, ": '", name, "' is not a ternary GGUF type (pq2_0, ptq1_0, tq2_0, tq1_0)");
}

std::int64_t TensorInfo::elements() const {
  std::int64_t n = 1;
  for (auto d : ne) n *= std::int64_t(d);
  return n;
}

const char* mode_name(LoadMode m) { return m == LoadMode::mmap ? "mmap" : "memory"; }

LoadMode parse_mode(const std::string& s) {
  if (s == "mmap") return LoadMode::mmap;
  if (s == "memory") return LoadMode::memory;
  fail("unknown load mode '", s, "' (use memory or mmap)");
}

namespace {

bool is_int(ValueType t) {
  switch (t) {
    case ValueType::u8: case ValueType::i8: case ValueType::u16: case ValueType::i16: case ValueType::u32:
    case ValueType::i32: case ValueType::u64: case ValueType::i64: return true;
    default: return false;
  }
}
bool is_signed(ValueType t) {
  return t == ValueType::i8 || t == ValueType::i16 || t == ValueType::i32 || t == ValueType::i64;
}
int scalar_size(ValueType t) {
  switch (t) {
    case ValueType::u8: case ValueType::i8: case ValueType::boolean: return 1;
    case ValueType::u16: case ValueType::i16: return 2;
    case ValueType::u32: case ValueType::i32: case ValueType::f32: return 4;
    case ValueType::u64: case ValueType::i64: case ValueType::f64: return 8;
    default: return 0;
  }
}
bool known(std::uint32_t t) { return t <= 12; }

}  // namespace

// Bounds-checked little-endian cursor over the file image.
class Parser {
 public:
  Parser(std::span<const std::uint8_t> b, std::string source) : b_(b), source_(std::move(source)) {}

  template <class T>
  T read(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  void need(std::uint64_t n, const char* what) {
    if (n > b_.size() - pos_)
      fail(source_, ": truncated at byte ", pos_, " reading ", what, " (", n, " bytes needed, ", b_.size() - pos_,
           " left)");
  }
  std::string string(const char* what) {
    const auto n = read<std::uint64_t>(what);
    need(n, what);
    std::string s(reinterpret_cast<const char*>(b_.data() + pos_), n);
    pos_ += n;
    return s;
  }

  std::uint64_t int_bits(ValueType t, const std::string& key) {
    switch (t) {
      case ValueType::u8: return read<std::uint8_t>(key.c_str());
      case ValueType::i8: return std::uint64_t(std::int64_t(read<std::int8_t>(key.c_str())));
      case ValueType::u16: return read<std::uint16_t>(key.c_str());
      case ValueType::i16: return std::uint64_t(std::int64_t(read<std::int16_t>(key.c_str())));
      case ValueType::u32: return read<std::uint32_t>(key.c_str());
      case ValueType::i32: return std::uint64_t(std::int64_t(read<std::int32_t>(key.c_str())));
      case ValueType::u64: return read<std::uint64_t>(key.c_str());
      case ValueType::i64: return read<std::uint64_t>(key.c_str());
      default: fail("internal: not an integer type");
    }
  }
  double float_value(ValueType t, const std::string& key) {
    if (t == ValueType::f32) return read<float>(key.c_str());
    return read<double>(key.c_str());
  }
  bool bool_value(const std::string& key) {
    const auto v = read<std::uint8_t>(key.c_str());
    if (v > 1) fail(source_, ": metadata key '", key, "': BOOL value ", int(v), " is neither 0 nor 1");
    return v == 1;
  }

  Value value(std::uint32_t raw_type, const std::string& key) {
    if (!known(raw_type)) fail(source_, ": metadata key '", key, "' has unknown value type ", raw_type);
    const auto t = ValueType(raw_type);
    Value v;
    v.type = v.elem = t;
    if (is_int(t)) {
      const auto bits = int_bits(t, key);
      if (is_signed(t))
        v.v = std::int64_t(bits);
      else
        v.v = bits;
    } else if (t == ValueType::f32 || t == ValueType::f64) {
      v.v = float_value(t, key);
    } else if (t == ValueType::boolean) {
      v.v = bool_value(key);
    } else if (t == ValueType::string) {
      v.v = string(key.c_str());
    } else {  // array
      const auto raw_elem = read<std::uint32_t>(key.c_str());
      const auto n = read<std::uint64_t>(key.c_str());
      if (!known(raw_elem)) fail(source_, ": metadata array '", key, "' has unknown element type ", raw_elem);
      v.elem = ValueType(raw_elem);
      if (v.elem == ValueType::array) fail(source_, ": metadata array '", key, "' nests arrays (not supported)");
      // Every element takes at least one byte (strings eight): refuse counts the file cannot hold
      // before allocating anything.
      const std::uint64_t min_size = v.elem == ValueType::string ? 8 : std::uint64_t(scalar_size(v.elem));
      if (n > (b_.size() - pos_) / min_size)
        fail(source_, ": metadata array '", key, "' claims ", n, " elements, more than the file holds");
      if (is_int(v.elem) || v.elem == ValueType::boolean) {
        std::vector<std::int64_t> xs(n);
        for (auto& x : xs) x = v.elem == ValueType::boolean ? bool_value(key) : std::int64_t(int_bits(v.elem, key));
        v.v = std::move(xs);
      } else if (v.elem == ValueType::f32 || v.elem == ValueType::f64) {
        std::vector<double> xs(n);
        for (auto& x : xs) x = float_value(v.elem, key);
        v.v = std::move(xs);
      } else {
        std::vector<std::string> xs(n);
        for (auto& x : xs) x = string(key.c_str());
        v.v = std::move(xs);
      }
    }
    return v;
  }

  File run() {
    File f;
    f.source = source_;
    if (read<std::uint32_t>("magic") != kMagic) fail(source_, ": not a GGUF file (bad magic)");
    f.version = read<std::uint32_t>("version");
    if (f.version != kVersion) fail(source_, ": GGUF version ", f.version, " (ternlab reads version 3)");
    const auto n_tensors = read<std::uint64_t>("tensor_count");
    const auto n_kv = read<std::uint64_t>("kv_count");
    // A key/value pair takes at least 13 bytes and a tensor info at least 24.
    if (n_kv > b_.size() / 13) fail(source_, ": kv_count ", n_kv, " exceeds what the file can hold");
    if (n_tensors > b_.size() / 24) fail(source_, ": tensor_count ", n_tensors, " exceeds what the file can hold");
    for (std::uint64_t i = 0; i < n_kv; ++i) {
      std::string key = string("metadata key");
      const auto t = read<std::uint32_t>(key.c_str());
      Value v = value(t, key);
      if (!f.kv.emplace(key, std::move(v)).second) fail(source_, ": metadata key '", key, "' appears twice");
      f.key_order.push_back(std::move(key));
    }
    if (f.has("general.alignment")) {
      const auto a = f.get_uint("general.alignment");
      if (a == 0 || (a & (a - 1)) != 0 || a > (1u << 20))
        fail(source_, ": general.alignment = ", a, " is not a power of two up to 1 MiB");
      f.alignment = std::uint32_t(a);
    }
    f.tensors.reserve(n_tensors);
    for (std::uint64_t i = 0; i < n_tensors; ++i) {
      TensorInfo t;
      t.name = string("tensor name");
      const auto n_dims = read<std::uint32_t>(t.name.c_str());
      if (n_dims == 0 || n_dims > 4) fail(source_, ": tensor '", t.name, "' has ", n_dims, " dimensions (1 to 4)");
      for (std::uint32_t d = 0; d < n_dims; ++d) t.ne.push_back(read<std::uint64_t>(t.name.c_str()));
      t.type = read<std::uint32_t>(t.name.c_str());
      t.offset = read<std::uint64_t>(t.name.c_str());
      const TypeTraits tr = traits_of(t.type, cat(source_, ": tensor '", t.name, "'"));
      std::uint64_t count = 1;
      for (auto d : t.ne) {
        if (d == 0 || d > (std::uint64_t(1) << 40) || count > (std::uint64_t(1) << 42) / d)
          fail(source_, ": tensor '", t.name, "' has an impossible shape");
        count *= d;
      }
      if (t.ne[0] % std::uint64_t(tr.block_elems) != 0)
        fail(source_, ": tensor '", t.name, "' ne0 = ", t.ne[0], " is not a multiple of ", tr.name, "'s block of ",
             tr.block_elems);
      t.bytes = count / std::uint64_t(tr.block_elems) * std::uint64_t(tr.block_bytes);
      if (t.offset % f.alignment != 0)
        fail(source_, ": tensor '", t.name, "' offset ", t.offset, " is not a multiple of the alignment ", f.alignment);
      if (!f.by_name_.emplace(t.name, f.tensors.size()).second)
        fail(source_, ": tensor '", t.name, "' appears twice");
      f.tensors.push_back(std::move(t));
    }
    const std::uint64_t pad = (f.alignment - pos_ % f.alignment) % f.alignment;
    f.data_offset = pos_ + pad;
    if (f.data_offset > b_.size() && !f.tensors.empty())
      fail(source_, ": truncated before the data section");
    const std::uint64_t data_size = f.data_offset <= b_.size() ? b_.size() - f.data_offset : 0;
    for (const auto& t : f.tensors)
      if (t.offset > data_size || t.bytes > data_size - t.offset)
        fail(source_, ": tensor '", t.name, "' (", t.bytes, " bytes at data offset ", t.offset,
             ") runs past the end of the file (", data_size, " data bytes)");
    f.bytes_ = b_;
    return f;
  }

 private:
  std::span<const std::uint8_t> b_;
  std::string source_;
  std::uint64_t pos_ = 0;
};

File File::parse(std::span<const std::uint8_t> bytes, const std::string& source) {
  return Parser(bytes, source).run();
}

namespace {
struct Mapping {
  void* p = nullptr;
  std::size_t n = 0;
  ~Mapping() {
    if (p) munmap(p, n);
  }
};
}  // namespace

File File::open(const std::string& path, LoadMode mode) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) fail(path, ": cannot open (", std::strerror(errno), ")");
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    ::close(fd);
    fail(path, ": cannot stat");
  }
  const auto size = std::size_t(st.st_size);
  std::shared_ptr<void> storage;
  std::span<const std::uint8_t> bytes;
  if (mode == LoadMode::mmap && size > 0) {
    auto m = std::make_shared<Mapping>();
    m->p = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (m->p == MAP_FAILED) {
      m->p = nullptr;
      fail(path, ": mmap failed (", std::strerror(errno), ")");
    }
    m->n = size;
    bytes = {static_cast<const std::uint8_t*>(m->p), size};
    storage = m;
  } else {
    auto buf = std::make_shared<std::vector<std::uint8_t>>(size);
    std::size_t got = 0;
    while (got < size) {
      const auto r = ::read(fd, buf->data() + got, size - got);
      if (r <= 0) {
        ::close(fd);
        fail(path, ": read failed after ", got, " of ", size, " bytes");
      }
      got += std::size_t(r);
    }
    ::close(fd);
    bytes = {buf->data(), size};
    storage = buf;
  }
  File f = parse(bytes, path);
  f.storage_ = std::move(storage);
  f.mode = mode;
  return f;
}

const Value& File::at(const std::string& key) const {
  const auto it = kv.find(key);
  if (it == kv.end()) fail(source, ": missing metadata key '", key, "'");
  return it->second;
}

std::uint64_t File::get_uint(const std::string& key) const {
  const Value& v = at(key);
  if (const auto* u = std::get_if<std::uint64_t>(&v.v)) return *u;
  if (const auto* i = std::get_if<std::int64_t>(&v.v)) {
    if (*i < 0) fail(source, ": metadata key '", key, "' = ", *i, " must not be negative");
    return std::uint64_t(*i);
  }
  fail(source, ": metadata key '", key, "' is ", type_name(v.type), ", expected an integer");
}
std::uint64_t File::get_uint(const std::string& key, std::uint64_t fallback) const {
  return has(key) ? get_uint(key) : fallback;
}
double File::get_float(const std::string& key) const {
  const Value& v = at(key);
  if (const auto* d = std::get_if<double>(&v.v)) return *d;
  fail(source, ": metadata key '", key, "' is ", type_name(v.type), ", expected FLOAT32 or FLOAT64");
}
bool File::get_bool(const std::string& key, bool fallback) const {
  if (!has(key)) return fallback;
  const Value& v = at(key);
  if (const auto* b = std::get_if<bool>(&v.v)) return *b;
  if (v.type != ValueType::array) {
    if (const auto* u = std::get_if<std::uint64_t>(&v.v)) return *u != 0;
    if (const auto* i = std::get_if<std::int64_t>(&v.v)) return *i != 0;
  }
  fail(source, ": metadata key '", key, "' is ", type_name(v.type), ", expected BOOL");
}
std::string File::get_string(const std::string& key) const {
  const Value& v = at(key);
  if (const auto* s = std::get_if<std::string>(&v.v)) return *s;
  fail(source, ": metadata key '", key, "' is ", type_name(v.type), ", expected STRING");
}
std::vector<std::int64_t> File::get_ints(const std::string& key) const {
  const Value& v = at(key);
  if (const auto* xs = std::get_if<std::vector<std::int64_t>>(&v.v)) return *xs;
  fail(source, ": metadata key '", key, "' is ", type_name(v.type), ", expected an integer ARRAY");
}
std::vector<std::string> File::get_strings(const std::string& key) const {
  const Value& v = at(key);
  if (const auto* xs = std::get_if<std::vector<std::string>>(&v.v)) return *xs;
  fail(source, ": metadata key '", key, "' is ", type_name(v.type), ", expected a STRING ARRAY");
}

const TensorInfo* File::find(const std::string& name) const {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &tensors[it->second];
}
const TensorInfo& File::tensor(const std::string& name) const {
  const TensorInfo* t = find(name);
  if (!t) fail(source, ": missing tensor '", name, "'");
  return *t;
}
std::span<const std::uint8_t> File::data(const TensorInfo& t) const {
  return bytes_.subspan(data_offset + t.offset, t.bytes);
}
void File::release(const TensorInfo& t) const {
  if (mode != LoadMode::mmap) return;
  const auto page = std::uint64_t(sysconf(_SC_PAGESIZE));
  const std::uint64_t begin = (data_offset + t.offset + page - 1) / page * page;
  const std::uint64_t end = (data_offset + t.offset + t.bytes) / page * page;
  if (end > begin)
    madvise(const_cast<std::uint8_t*>(bytes_.data()) + begin, end - begin, MADV_DONTNEED);
}

// --- writer ---------------------------------------------------------------------------------------

void Writer::set(const std::string& key, Value v) {
  for (auto& [k, old] : kv_)
    if (k == key) {
      old = std::move(v);
      return;
    }
  kv_.emplace_back(key, std::move(v));
}

std::uint32_t Writer::alignment() const {
  for (const auto& [k, v] : kv_)
    if (k == "general.alignment") return std::uint32_t(std::get<std::uint64_t>(v.v));
  return kDefaultAlignment;
}

void Writer::add_tensor(const std::string& name, TensorType type, std::vector<std::uint64_t> ne) {
  TensorInfo t;
  t.name = name;
  t.type = std::uint32_t(type);
  const TypeTraits tr = traits_of(t.type, name);
  if (ne.empty() || ne.size() > 4) fail(name, ": a tensor has 1 to 4 dimensions");
  if (ne[0] % std::uint64_t(tr.block_elems) != 0)
    fail(name, ": ne0 = ", ne[0], " is not a multiple of ", tr.block_elems);
  t.ne = std::move(ne);
  t.bytes = std::uint64_t(t.elements()) / std::uint64_t(tr.block_elems) * std::uint64_t(tr.block_bytes);
  for (const auto& o : tensors_)
    if (o.name == name) fail(name, ": tensor added twice");
  tensors_.push_back(std::move(t));
}

namespace {

class Out {
 public:
  explicit Out(std::ostream& os) : os_(os) {}
  template <class T>
  void put(T v) {
    os_.write(reinterpret_cast<const char*>(&v), sizeof v);
    n_ += sizeof v;
  }
  void bytes(const void* p, std::size_t n) {
    os_.write(static_cast<const char*>(p), std::streamsize(n));
    n_ += n;
  }
  void str(const std::string& s) {
    put<std::uint64_t>(s.size());
    bytes(s.data(), s.size());
  }
  void pad(std::uint64_t align) {
    static const char zeros[64] = {};
    std::uint64_t p = (align - n_ % align) % align;
    while (p) {
      const auto k = std::min<std::uint64_t>(p, sizeof zeros);
      bytes(zeros, k);
      p -= k;
    }
  }
  std::uint64_t count() const { return n_; }

  void scalar(ValueType t, const Value& v, std::size_t i, const std::string& key) {
    auto int_at = [&]() -> std::uint64_t {
      if (const auto* xs = std::get_if<std::vector<std::int64_t>>(&v.v)) return std::uint64_t((*xs)[i]);
      if (const auto* u = std::get_if<std::uint64_t>(&v.v)) return *u;
      if (const auto* s = std::get_if<std::int64_t>(&v.v)) return std::uint64_t(*s);
      if (const auto* b = std::get_if<bool>(&v.v)) return *b ? 1 : 0;
      fail("metadata key '", key, "': value does not match its type ", type_name(t));
    };
    auto float_at = [&]() -> double {
      if (const auto* xs = std::get_if<std::vector<double>>(&v.v)) return (*xs)[i];
      if (const auto* d = std::get_if<double>(&v.v)) return *d;
      fail("metadata key '", key, "': value does not match its type ", type_name(t));
    };
    switch (t) {
      case ValueType::u8: case ValueType::i8: case ValueType::boolean: put<std::uint8_t>(std::uint8_t(int_at())); break;
      case ValueType::u16: case ValueType::i16: put<std::uint16_t>(std::uint16_t(int_at())); break;
      case ValueType::u32: case ValueType::i32: put<std::uint32_t>(std::uint32_t(int_at())); break;
      case ValueType::u64: case ValueType::i64: put<std::uint64_t>(int_at()); break;
      case ValueType::f32: put<float>(float(float_at())); break;
      case ValueType::f64: put<double>(float_at()); break;
      case ValueType::string:
        if (const auto* xs = std::get_if<std::vector<std::string>>(&v.v))
          str((*xs)[i]);
        else
          str(std::get<std::string>(v.v));
        break;
      case ValueType::array: fail("metadata key '", key, "': nested arrays are not supported");
    }
  }

 private:
  std::ostream& os_;
  std::uint64_t n_ = 0;
};

std::size_t array_size(const Value& v) {
  return std::visit(
      [](const auto& x) -> std::size_t {
        if constexpr (requires { x.size(); } && !std::is_same_v<std::decay_t<decltype(x)>, std::string>)
          return x.size();
        else
          return 0;
      },
      v.v);
}

}  // namespace

std::uint64_t Writer::total_bytes() const {
  std::ostringstream header;
  write(header, nullptr);
  const std::uint64_t align = alignment();
  std::uint64_t n = std::uint64_t(header.tellp());
  for (std::size_t i = 0; i < tensors_.size(); ++i)
    n += i + 1 < tensors_.size() ? (tensors_[i].bytes + align - 1) / align * align : tensors_[i].bytes;
  return n;
}

void Writer::write(std::ostream& os, const Fill& fill) const {
  const std::uint64_t align = alignment();
  Out out(os);
  out.put<std::uint32_t>(kMagic);
  out.put<std::uint32_t>(kVersion);
  out.put<std::uint64_t>(tensors_.size());
  out.put<std::uint64_t>(kv_.size());
  for (const auto& [key, v] : kv_) {
    out.str(key);
    out.put<std::uint32_t>(std::uint32_t(v.type));
    if (v.type == ValueType::array) {
      out.put<std::uint32_t>(std::uint32_t(v.elem));
      const std::size_t n = array_size(v);
      out.put<std::uint64_t>(n);
      for (std::size_t i = 0; i < n; ++i) out.scalar(v.elem, v, i, key);
    } else {
      out.scalar(v.type, v, 0, key);
    }
  }
  std::vector<std::uint64_t> offsets;
  std::uint64_t at = 0;
  for (const auto& t : tensors_) {
    offsets.push_back(at);
    at += (t.bytes + align - 1) / align * align;
  }
  for (std::size_t i = 0; i < tensors_.size(); ++i) {
    const auto& t = tensors_[i];
    out.str(t.name);
    out.put<std::uint32_t>(std::uint32_t(t.ne.size()));
    for (auto d : t.ne) out.put<std::uint64_t>(d);
    out.put<std::uint32_t>(t.type);
    out.put<std::uint64_t>(offsets[i]);
  }
  out.pad(align);
  std::vector<std::uint8_t> buf;
  for (std::size_t i = 0; i < tensors_.size(); ++i) {
    const auto& t = tensors_[i];
    if (!fill) return;  // header only (total_bytes)
    buf.assign(t.bytes, 0);
    TensorInfo info = t;
    info.offset = offsets[i];
    fill(i, info, buf);
    out.bytes(buf.data(), buf.size());
    if (i + 1 < tensors_.size()) out.pad(align);
  }
  if (!os) fail("GGUF write failed");
}

void Writer::write(const std::string& path, const Fill& fill) const {
  std::ofstream os(path, std::ios::binary | std::ios::trunc);
  if (!os) fail(path, ": cannot open for writing");
  write(os, fill);
  os.close();
  if (!os) fail(path, ": write failed (disk full?)");
}

}  // namespace ternlab::gguf
