#include "kernels/cpu.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <optional>
#include <unistd.h>
#if defined(__linux__)
#include <sys/syscall.h>
#endif

#include "common/error.hpp"
#include "common/strings.hpp"

#include <range/v3/view/map.hpp>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif

namespace ternlab {

namespace {

constexpr std::pair<Isa, std::string_view> kNames[] = {
    {Isa::scalar, "scalar"}, {Isa::neon, "neon"}, {Isa::dotprod, "dotprod"},
    {Isa::i8mm, "i8mm"},     {Isa::sse41, "sse41"}, {Isa::avx2, "avx2"}, {Isa::avx512vnni, "avx512vnni"},
};

std::string cpu_model_name() {
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
#if defined(__aarch64__)
  return "aarch64";
#else
  return "unknown";
#endif
}

#if defined(__x86_64__) || defined(__i386__)
// Asks Linux for the tile data state (XFEATURE_XTILEDATA, 18), without which the first tile
// instruction faults: arch_prctl(ARCH_REQ_XCOMP_PERM = 0x1023). Once granted, it holds for every
// thread of the process.
#if defined(__linux__)
bool amx_permitted() { return syscall(SYS_arch_prctl, 0x1023, 18) == 0; }
#else
bool amx_permitted() { return false; }
#endif
#endif

CpuFeatures detect() {
  CpuFeatures f;
  f.model = cpu_model_name();
#if defined(__x86_64__) || defined(__i386__)
  unsigned a, b, c, d;
  if (__get_cpuid(0, &a, &b, &c, &d)) {
    char id[12];
    std::memcpy(id, &b, 4);
    std::memcpy(id + 4, &d, 4);
    std::memcpy(id + 8, &c, 4);
    f.vendor.assign(id, 12);
  }
  if (__get_cpuid(1, &a, &b, &c, &d)) {
    const int base_family = (a >> 8) & 0xf, base_model = (a >> 4) & 0xf;
    f.family = base_family == 0xf ? base_family + int((a >> 20) & 0xff) : base_family;
    f.model_number = base_family == 0xf || base_family == 0x6 ? base_model | int((a >> 16) & 0xf) << 4 : base_model;
    const bool osxsave = c & (1u << 27);
    f.ssse3 = c & (1u << 9);
    f.sse41 = c & (1u << 19);
    f.fma = c & (1u << 12);
    f.f16c = c & (1u << 29);
    unsigned long long xcr0 = 0;
    if (osxsave) {
      unsigned lo, hi;
      __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
      xcr0 = (static_cast<unsigned long long>(hi) << 32) | lo;
    }
    const bool os_avx = (xcr0 & 0x6) == 0x6;        // XMM and YMM state
    const bool os_avx512 = (xcr0 & 0xe6) == 0xe6;   // plus opmask and ZMM state
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
      f.avx2 = os_avx && (b & (1u << 5));
      f.avx512f = os_avx512 && (b & (1u << 16));
      f.avx512bw = os_avx512 && (b & (1u << 30));
      f.avx512vl = os_avx512 && (b & (1u << 31));
      f.avx512vnni = os_avx512 && (c & (1u << 11));
      f.gfni = os_avx && (c & (1u << 8));
      f.avx512vbmi = os_avx512 && (c & (1u << 1));
      // AMX-TILE and AMX-INT8, with the OS saving tile state (XCR0 bits 17 and 18).
      const bool os_amx = (xcr0 & (3ull << 17)) == (3ull << 17);
      f.amx_int8 = os_amx && f.avx512vnni && (d & (1u << 24)) && (d & (1u << 25)) && amx_permitted();
    }
    f.fma = f.fma && os_avx;
    f.f16c = f.f16c && os_avx;
  }
  // Family 25 is Zen 3 and Zen 4, and only Zen 4 has AVX-512.
  f.prefers_hardware_prefetch = f.vendor == "AuthenticAMD" && (f.family > 25 || (f.family == 25 && f.avx512f));
  f.prefers_gfni_slots = f.gfni && f.vendor != "AuthenticAMD";
  f.splits_512bit_ops = f.prefers_hardware_prefetch;  // the same cores: Zen 4 and later
#elif defined(__aarch64__)
  f.neon = true;  // Advanced SIMD is mandatory on AArch64
#if defined(__linux__)
  const unsigned long hw = getauxval(AT_HWCAP);
  const unsigned long hw2 = getauxval(AT_HWCAP2);
  f.dotprod = hw & (1ul << 20);  // HWCAP_ASIMDDP
  f.i8mm = hw2 & (1ul << 13);    // HWCAP2_I8MM
#endif
#endif
  return f;
}

std::optional<Isa>& ceiling() {
  static std::optional<Isa> c;
  return c;
}

}  // namespace

IsaFamily isa_family(Isa isa) {
  switch (isa) {
    case Isa::scalar: return IsaFamily::any;
    case Isa::neon:
    case Isa::dotprod:
    case Isa::i8mm: return IsaFamily::arm;
    case Isa::sse41:
    case Isa::avx2:
    case Isa::avx512vnni: return IsaFamily::x86;
  }
  return IsaFamily::any;
}

std::string_view isa_name(Isa isa) {
  for (const auto& [i, n] : kNames)
    if (i == isa) return n;
  return "?";
}

Isa parse_isa(std::string_view name) {
  for (const auto& [i, n] : kNames)
    if (n == name) return i;
  fail("unknown ISA '", name, "' (known: ", isa_names(), ")");
}

std::string isa_names() { return join(kNames | ranges::views::values); }

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = detect();
  return f;
}

std::int64_t choose_last_level_cache(std::int64_t kernel_bytes, std::int64_t libc_bytes, bool per_complex_l3) {
  if (per_complex_l3 && kernel_bytes > 0) return kernel_bytes;
  return std::max<std::int64_t>({kernel_bytes, libc_bytes, 0});
}

std::int64_t last_level_cache_bytes() {
  // The kernel's description: the largest data or unified cache of cpu0 (sizes such as "2048K").
  std::int64_t kernel_bytes = 0;
  for (int i = 0; i < 8; ++i) {
    const std::string dir = cat("/sys/devices/system/cpu/cpu0/cache/index", i, "/");
    std::ifstream type_in(dir + "type"), size_in(dir + "size");
    std::string type, unit;
    std::int64_t v = 0;
    if (!(type_in >> type) || type == "Instruction" || !(size_in >> v)) continue;
    size_in >> unit;
    if (unit == "K") v <<= 10;
    if (unit == "M") v <<= 20;
    kernel_bytes = std::max(kernel_bytes, v);
  }
  std::int64_t libc_bytes = 0;  // aarch64 glibc answers 0
#if defined(_SC_LEVEL3_CACHE_SIZE)
  for (const int name : {_SC_LEVEL2_CACHE_SIZE, _SC_LEVEL3_CACHE_SIZE, _SC_LEVEL4_CACHE_SIZE})
    libc_bytes = std::max<std::int64_t>(libc_bytes, sysconf(name));
#endif
  return choose_last_level_cache(kernel_bytes, libc_bytes, cpu_features().vendor == "AuthenticAMD");
}

namespace {
std::vector<Isa> detect_isas() {
  const CpuFeatures& f = cpu_features();
  std::vector<Isa> v{Isa::scalar};
#if defined(__aarch64__)
  v.push_back(Isa::neon);
  if (f.dotprod) v.push_back(Isa::dotprod);
  if (f.dotprod && f.i8mm) v.push_back(Isa::i8mm);
#elif defined(__x86_64__)
  if (f.ssse3 && f.sse41) v.push_back(Isa::sse41);
  if (f.avx2 && f.fma && f.f16c) v.push_back(Isa::avx2);
  if (f.avx2 && f.fma && f.f16c && f.avx512f && f.avx512bw && f.avx512vl && f.avx512vnni) v.push_back(Isa::avx512vnni);
#else
  (void)f;
#endif
  return v;
}
}  // namespace

// Detected once, like the features: the kernels' and vector ops' choices ask per call.
const std::vector<Isa>& supported_isas() {
  static const std::vector<Isa> v = detect_isas();
  return v;
}

bool isa_supported(Isa isa) {
  const auto& v = supported_isas();
  return std::find(v.begin(), v.end(), isa) != v.end();
}

Isa best_isa() {
  const auto& v = supported_isas();
  if (!ceiling()) return v.back();
  Isa best = Isa::scalar;
  for (Isa i : v)
    if (int(i) <= int(*ceiling())) best = i;
  return best;
}

void set_isa_ceiling(Isa c) {
  if (!isa_supported(c)) fail("ISA '", isa_name(c), "' is not supported on this CPU (", cpu_features().model, ")");
  ceiling() = c;
}

void clear_isa_ceiling() { ceiling().reset(); }

std::string cpu_description() {
  const CpuFeatures& f = cpu_features();
  return f.vendor.empty() ? f.model : cat(f.model, ", family ", f.family, " model ", f.model_number);
}

std::string feature_string() {
  const CpuFeatures& f = cpu_features();
  std::vector<std::string_view> s;
  const auto add = [&](bool on, std::string_view n) {
    if (on) s.push_back(n);
  };
  add(f.avx2, "avx2");
  add(f.fma, "fma");
  add(f.f16c, "f16c");
  add(f.avx512f, "avx512f");
  add(f.avx512bw, "avx512bw");
  add(f.avx512vl, "avx512vl");
  add(f.avx512vnni, "avx512vnni");
  add(f.gfni, "gfni");
  add(f.avx512vbmi, "avx512vbmi");
  add(f.amx_int8, "amx-int8");
  add(f.neon, "neon");
  add(f.dotprod, "dotprod");
  add(f.i8mm, "i8mm");
  return s.empty() ? "none" : join(s, " ");
}

}  // namespace ternlab
