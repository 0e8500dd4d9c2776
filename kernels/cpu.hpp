// CPU features and the ISA ladder kernels dispatch on. Detection runs once (cpuid/xgetbv on x86,
// HWCAP/HWCAP2 on aarch64); a ceiling (API or CLI `--isa`) forces a lower path for A/B runs.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ternlab {

// Ordered within each architecture from the plainest to the richest.
enum class Isa { scalar, neon, dotprod, i8mm, sse41, avx2, avx512vnni };

std::string_view isa_name(Isa isa);
// The architecture whose ladder an ISA is on; scalar is on every one.
enum class IsaFamily { any, arm, x86 };
IsaFamily isa_family(Isa isa);
Isa parse_isa(std::string_view name);  // throws ternlab::Error listing the valid names
std::string isa_names();               // "scalar, neon, ...": every rung, for help texts

struct CpuFeatures {
  std::string model;  // e.g. "AMD EPYC 7B13" or "aarch64"
  bool ssse3 = false, sse41 = false;  // the sse41 rung: x86-64 without AVX2
  bool avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512vnni = false;
  bool gfni = false;  // gf2p8affineqb: not an ISA rung, one lane program of the AVX-512 gemm uses it
  bool avx512vbmi = false;  // vpermi2b: not an ISA rung, the base-3 broadcast kernels' byte tables use it
  // AMX tiles with int8 products (tdpbsud), granted to this process: not an ISA rung, the broadcast
  // strategy's tile gemm uses them. Linux hands a process the tile state only on request
  // (arch_prctl ARCH_REQ_XCOMP_PERM), which detection makes; refused, the flag stays false.
  bool amx_int8 = false;
  bool neon = false, dotprod = false, i8mm = false;
  // x86 identity from cpuid: "AuthenticAMD" or "GenuineIntel", and the display family and model
  // (the Zen 3 guest: family 25 model 1; the Zen 4 one: family 25 model 17); empty and 0 elsewhere.
  std::string vendor;
  int family = 0, model_number = 0;
  // The estimate's guess that streaming weights reads faster without the kernels' software
  // prefetches (the broadcast gemvs' "+hw-prefetch" builds). Measured on Zen 4
  // (docs/notebook/2026-12-04-zen4-kernels.md); later AMD families are assumed alike; `--plan
  // measure` settles it per machine.
  bool prefers_hardware_prefetch = false;
  // The estimate's guess that the broadcast gemm takes its slots faster with gf2p8affineqb than
  // with a shift and an AND (the "+gfni" builds): so on the Sapphire Rapids-class guest, the
  // reverse on Zen 4, whose gf2p8affineqb shares the pipes of vpdpbusd (measured:
  // docs/notebook/2026-12-02-sapphire-rapids-kernels.md, 2026-12-04-zen4-kernels.md). True where
  // GFNI runs, except on AMD.
  bool prefers_gfni_slots = false;
  // Zen 4 runs a 512-bit op as two 256-bit halves, so the AVX-512 builds that spend more a weight
  // than they gain from the width (slot-mask's plans that gather rows across lanes, unpack) gain nothing
  // (measured: docs/notebook/2026-12-05-zen4-estimate.md). The estimate then ranks their AVX2 builds
  // above them (dispatch.cpp). True on AMD family 25 with AVX-512, and later families.
  bool splits_512bit_ops = false;
};

const CpuFeatures& cpu_features();

// The ISAs this build and this CPU can run, plainest first (always starts with scalar).
const std::vector<Isa>& supported_isas();

// The richest supported ISA not above the ceiling (default: no ceiling).
Isa best_isa();
void set_isa_ceiling(Isa ceiling);  // throws if `ceiling` is not supported here
void clear_isa_ceiling();
bool isa_supported(Isa isa);

// The model name and, on x86, the cpuid family and model, which tell apart machines that share a
// name ("AMD EPYC" is the Zen 3 and the Zen 4 guest alike): "AMD EPYC, family 25 model 17".
std::string cpu_description();

// Features as a short string for result records, e.g. "avx2 fma f16c".
std::string feature_string();

// The largest data cache this CPU reports (bytes), 0 when nothing says: what a benchmark's
// working set must exceed to be read from memory. Of the kernel's figure (/sys's cache folders)
// and glibc's (sysconf) the larger, so that a working set errs towards memory; except where each
// core complex has its own L3 (AMD), which no core can fill beyond its own: there glibc counted
// them all (320 MiB on the Zen 4 guest, 256 on the Zen 3 one, whose kernels list 32 MiB; on the
// Zen 4 guest a 48 MiB buffer read as slowly as a 200 MiB one: docs/notebook/2026-12-04-zen4-kernels.md).
std::int64_t last_level_cache_bytes();
std::int64_t choose_last_level_cache(std::int64_t kernel_bytes, std::int64_t libc_bytes, bool per_complex_l3);

}  // namespace ternlab
