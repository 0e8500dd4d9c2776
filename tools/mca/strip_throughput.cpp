// Register-only throughput, in core cycles, of the AVX-512 instructions in t2r's and b3r's gemv
// strips, alone, in pairs, and as whole strips (a strip: one 64-byte weight vector of 16 rows; t2r's
// holds 256 weights, b3r's 320). llvm-mca's model of a core (loop_cost.py) says which pipes an
// instruction may use; this measures what the core does with them, so that a kernel's floor per 64
// weights rests on the machine rather than the model. The clock is core_clock.hpp's. Needs AVX-512
// VNNI and VBMI; not part of the build:
//
//   g++ -O2 -march=native -I. -o /tmp/strip_throughput tools/mca/strip_throughput.cpp && /tmp/strip_throughput
//
// (GCC 12 warns under -Wall inside its own vpermb header: a false "uninitialized" of an unused operand.)
//
// Each test keeps its values in registers (eight independent chains, so latency never binds) and
// runs 20 million trips; a row is cycles per instruction, per pair, or per strip.
#include <immintrin.h>
#include <cstdio>
#include <cstdint>
#include "tools/mca/core_clock.hpp"
// The lanes' sum, through memory: GCC 12's _mm512_reduce_add_epi32 warns of an uninitialised value.
static long long hsum(__m512i v) {
  alignas(64) int lanes[16];
  _mm512_store_si512(lanes, v);
  long long s = 0;
  for (int x : lanes) s += x;
  return s;
}
static double now() { return now_seconds(); }
constexpr long N = 20'000'000;
#define KEEP8 asm volatile("" : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5), "+v"(a6), "+v"(a7));
#define DECL8 __m512i a0 = _mm512_set1_epi32(1), a1 = _mm512_set1_epi32(2), a2 = _mm512_set1_epi32(3), a3 = _mm512_set1_epi32(4), \
  a4 = _mm512_set1_epi32(5), a5 = _mm512_set1_epi32(6), a6 = _mm512_set1_epi32(7), a7 = _mm512_set1_epi32(8); \
  __m512i w = _mm512_set1_epi8(0x5a), t0 = _mm512_set1_epi8(3), t1 = _mm512_set1_epi8(7), m = _mm512_set1_epi8(0x0c); \
  __mmask64 k = 0xf0f0f0f0f0f0f0f0ull; asm volatile("" : "+v"(w), "+v"(t0), "+v"(t1), "+v"(m), "+k"(k));
#define SUM8 hsum(_mm512_add_epi32(_mm512_add_epi32(_mm512_add_epi32(a0, a1), _mm512_add_epi32(a2, a3)), _mm512_add_epi32(_mm512_add_epi32(a4, a5), _mm512_add_epi32(a6, a7))))
#define TEST(fname, OP) __attribute__((noinline)) double fname(long long& sink) { DECL8 double t = now(); \
  for (long n = 0; n < N; ++n) { a0 = OP(a0); a1 = OP(a1); a2 = OP(a2); a3 = OP(a3); a4 = OP(a4); a5 = OP(a5); a6 = OP(a6); a7 = OP(a7); KEEP8 } \
  t = now() - t; sink += SUM8; (void)k; (void)m; (void)w; return t / (8.0 * N); }
#define DP(x) _mm512_dpbusd_epi32(x, w, t0)
#define PB(x) _mm512_permutexvar_epi8(x, t0)
#define P2(x) _mm512_permutex2var_epi8(t0, x, t1)
#define P2K(x) _mm512_mask2_permutex2var_epi8(t0, x, k, t1)
#define AN(x) _mm512_and_si512(x, m)
#define SR(x) _mm512_srli_epi16(x, 2)
TEST(dp, DP) TEST(pb, PB) TEST(p2, P2) TEST(p2k, P2K) TEST(an, AN) TEST(sr, SR)
// Pairs: chains 0-3 one instruction, 4-7 the other; per pair.
#define PAIR(fname, OPA, OPB) __attribute__((noinline)) double fname(long long& sink) { DECL8 double t = now(); \
  for (long n = 0; n < N; ++n) { a0 = OPA(a0); a1 = OPA(a1); a2 = OPA(a2); a3 = OPA(a3); a4 = OPB(a4); a5 = OPB(a5); a6 = OPB(a6); a7 = OPB(a7); KEEP8 } \
  t = now() - t; sink += SUM8; (void)k; (void)m; (void)w; return t / (4.0 * N); }
PAIR(dp_pb, DP, PB) PAIR(dp_p2, DP, P2) PAIR(dp_sr, DP, SR) PAIR(dp_an, DP, AN) PAIR(pb_sr, PB, SR)
// t2r's strip: 4 ands + 4 dots; two strips a trip, each from its own weight vector.
__attribute__((noinline)) double t2r_strip(long long& sink) { DECL8 __m512i x0 = w, x1 = t1; double t = now();
  for (long n = 0; n < N; ++n) {
    a0 = _mm512_dpbusd_epi32(a0, _mm512_and_si512(x0, _mm512_set1_epi8(3)), t0);
    a1 = _mm512_dpbusd_epi32(a1, _mm512_and_si512(x0, _mm512_set1_epi8(12)), t0);
    a2 = _mm512_dpbusd_epi32(a2, _mm512_and_si512(x0, _mm512_set1_epi8(48)), t0);
    a3 = _mm512_dpbusd_epi32(a3, _mm512_and_si512(x0, _mm512_set1_epi8((char)192)), t0);
    a4 = _mm512_dpbusd_epi32(a4, _mm512_and_si512(x1, _mm512_set1_epi8(3)), t0);
    a5 = _mm512_dpbusd_epi32(a5, _mm512_and_si512(x1, _mm512_set1_epi8(12)), t0);
    a6 = _mm512_dpbusd_epi32(a6, _mm512_and_si512(x1, _mm512_set1_epi8(48)), t0);
    a7 = _mm512_dpbusd_epi32(a7, _mm512_and_si512(x1, _mm512_set1_epi8((char)192)), t0);
    asm volatile("" : "+v"(x0), "+v"(x1)); KEEP8 }
  t = now() - t; sink += SUM8; (void)k; (void)m; return t / (2.0 * N); }
// A b3r strip's five dots: digit 0 (`top`, whole codes) and digits 1-4, the four 2-bit slots of `low`.
[[gnu::always_inline]] inline void b3r_dots(__m512i& c, __m512i& b0, __m512i& b1, __m512i& b2, __m512i& b3, __m512i top,
                                            __m512i low, __m512i x) {
  c = _mm512_dpbusd_epi32(c, top, x);
  b0 = _mm512_dpbusd_epi32(b0, _mm512_and_si512(low, _mm512_set1_epi8(3)), x);
  b1 = _mm512_dpbusd_epi32(b1, _mm512_and_si512(low, _mm512_set1_epi8(12)), x);
  b2 = _mm512_dpbusd_epi32(b2, _mm512_and_si512(low, _mm512_set1_epi8(48)), x);
  b3 = _mm512_dpbusd_epi32(b3, _mm512_and_si512(low, _mm512_set1_epi8((char)192)), x);
}
// Digits 1-4 as the kernel reads them: a byte above 127 first sent below 128 by a lookup merged
// under its top bit, then one 128-entry lookup.
[[gnu::always_inline]] inline __m512i b3r_low(__m512i x, __m512i t0, __m512i t1) {
  const __m512i below = _mm512_mask2_permutex2var_epi8(t0, x, _mm512_movepi8_mask(x), t1);
  return _mm512_permutex2var_epi8(t1, below, t0);
}
// The kernel's decode: digit 0 by vpermb of byte >> 2.
struct TableDecode {
  static void run(__m512i x, __m512i t0, __m512i t1, __m512i& top, __m512i& low) {
    top = _mm512_permutexvar_epi8(_mm512_srli_epi16(x, 2), t0);
    low = b3r_low(x, t0, t1);
  }
};
// The banded byte split by compares: digit 0 = [x >= 84] + [x >= 168], r = x - 84 digit 0, digits
// 1-4 = one 128-entry lookup of r (r < 84).
struct CompareDecode {
  static void run(__m512i x, __m512i t0, __m512i t1, __m512i& top, __m512i& low) {
    const __m512i c84 = _mm512_set1_epi8(84);
    const __mmask64 k1 = _mm512_cmpge_epu8_mask(x, c84), k2 = _mm512_cmpge_epu8_mask(x, _mm512_set1_epi8((char)168));
    top = _mm512_mask_mov_epi8(_mm512_maskz_mov_epi8(k1, _mm512_set1_epi8(1)), k2, _mm512_set1_epi8(2));
    const __m512i r1 = _mm512_mask_sub_epi8(x, k1, x, c84);
    low = _mm512_permutex2var_epi8(t1, _mm512_mask_sub_epi8(r1, k2, r1, c84), t0);
  }
};
// Digit 0 by saturating byte arithmetic, no lookup: min(x -sat 83, 1) + min(x -sat 167, 1).
struct SaturatingDecode {
  static void run(__m512i x, __m512i t0, __m512i t1, __m512i& top, __m512i& low) {
    const __m512i one = _mm512_set1_epi8(1);
    top = _mm512_add_epi8(_mm512_min_epu8(_mm512_subs_epu8(x, _mm512_set1_epi8(83)), one),
                          _mm512_min_epu8(_mm512_subs_epu8(x, _mm512_set1_epi8((char)167)), one));
    low = b3r_low(x, t0, t1);
  }
};
// Two b3r strips a trip (each from its own weight vector, ten accumulators), decoded by Decode.
template <class Decode>
__attribute__((noinline)) double b3r_strip(long long& sink) { DECL8 __m512i x0 = w, x1 = t1, c0 = a0, c1 = a1; double t = now();
  for (long n = 0; n < N; ++n) {
    __m512i top, low;
    Decode::run(x0, t0, t1, top, low);
    b3r_dots(c0, a0, a1, a2, a3, top, low, t0);
    Decode::run(x1, t0, t1, top, low);
    b3r_dots(c1, a4, a5, a6, a7, top, low, t0);
    asm volatile("" : "+v"(x0), "+v"(x1), "+v"(c0), "+v"(c1)); KEEP8 }
  t = now() - t; sink += SUM8 + hsum(_mm512_add_epi32(c0, c1)); (void)k; (void)m; return t / (2.0 * N); }
#define SUBS(x) _mm512_subs_epu8(x, m)
#define MINU(x) _mm512_min_epu8(x, m)
#define ADDB(x) _mm512_add_epi8(x, m)
PAIR(dp_subs, DP, SUBS) PAIR(dp_min, DP, MINU) PAIR(dp_addb, DP, ADDB)
int main() {
  long long sink = 0;
  for (int rep = 0; rep < 2; ++rep) {
    const double cyc = seconds_per_cycle();
    std::printf("core clock %.2f GHz\n", 1e-9 / cyc);
    struct { const char* name; double (*f)(long long&); } tests[] = {
        {"vpdpbusd zmm", dp}, {"vpermb zmm", pb}, {"vpermi2b zmm", p2}, {"vpermi2b zmm {k}", p2k}, {"vpandd zmm", an},
        {"vpsrlw zmm", sr}, {"pair vpdpbusd + vpermb", dp_pb}, {"pair vpdpbusd + vpermi2b", dp_p2}, {"pair vpdpbusd + vpsrlw", dp_sr}, {"pair vpdpbusd + vpandd", dp_an}, {"pair vpermb + vpsrlw", pb_sr}, {"t2r strip (4 and, 4 dots; 256 weights)", t2r_strip}, {"b3r strip (decode, 4 and, 5 dots; 320 weights)", b3r_strip<TableDecode>}, {"b3r strip, compare split (320 weights)", b3r_strip<CompareDecode>}, {"b3r strip, saturating digit 0 (320 weights)", b3r_strip<SaturatingDecode>}, {"pair vpdpbusd + vpsubusb", dp_subs}, {"pair vpdpbusd + vpminub", dp_min}, {"pair vpdpbusd + vpaddb", dp_addb}};
    for (auto& t : tests) std::printf("  %-48s %.2f cycles\n", t.name, t.f(sink) / cyc);
  }
  std::printf("(sink %lld)\n", sink);
}
