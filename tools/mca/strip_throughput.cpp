// Register-only throughput, in core cycles, of the AVX-512 instructions in t2r's and b3r's gemv
// strips, alone, in pairs, and as whole strips (a strip: one 64-byte weight vector of 16 rows; t2r's
// holds 256 weights, b3r's 320). llvm-mca's model of a core (loop_cost.py) says which pipes an
// instruction may use; this measures what the core does with them, so that a kernel's floor per 64
// weights rests on the machine rather than the model. The clock is calibrated by a chain of
// dependent one-cycle adds. Needs AVX-512 VNNI and VBMI; not part of the build:
//
//   g++ -O2 -march=native -o /tmp/strip_throughput tools/mca/strip_throughput.cpp && /tmp/strip_throughput
//
// (GCC 12 warns under -Wall inside its own vpermb header: a false "uninitialized" of an unused operand.)
//
// Each test keeps its values in registers (eight independent chains, so latency never binds) and
// runs 20 million trips; a row is cycles per instruction, per pair, or per strip.
#include <immintrin.h>
#include <cstdio>
#include <cstdint>
#include <chrono>
// The lanes' sum, through memory: GCC 12's _mm512_reduce_add_epi32 warns of an uninitialised value.
static long long hsum(__m512i v) {
  alignas(64) int lanes[16];
  _mm512_store_si512(lanes, v);
  long long s = 0;
  for (int x : lanes) s += x;
  return s;
}
static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
constexpr long N = 20'000'000;
__attribute__((noinline)) double add_chain() {
  uint64_t x = 1; double t = now();
  for (long i = 0; i < N; ++i) asm volatile("add $1, %0\n add $1, %0\n add $1, %0\n add $1, %0\n add $1, %0\n add $1, %0\n add $1, %0\n add $1, %0" : "+r"(x));
  return (now() - t) / (N * 8.0);
}
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
// b3r's strip: shift, vpermb (digit 0), movb2m, masked vpermi2b, vpermi2b (digits 1-4), 4 ands, 5 dots.
__attribute__((noinline)) double b3r_strip(long long& sink) { DECL8 __m512i x0 = w, x1 = t1, c0 = a0, c1 = a1; double t = now();
  for (long n = 0; n < N; ++n) {
    { const __m512i top = _mm512_permutexvar_epi8(_mm512_srli_epi16(x0, 2), t0);
      const __m512i below = _mm512_mask2_permutex2var_epi8(t0, x0, _mm512_movepi8_mask(x0), t1);
      const __m512i low = _mm512_permutex2var_epi8(t1, below, t0);
      c0 = _mm512_dpbusd_epi32(c0, top, t0);
      a0 = _mm512_dpbusd_epi32(a0, _mm512_and_si512(low, _mm512_set1_epi8(3)), t0);
      a1 = _mm512_dpbusd_epi32(a1, _mm512_and_si512(low, _mm512_set1_epi8(12)), t0);
      a2 = _mm512_dpbusd_epi32(a2, _mm512_and_si512(low, _mm512_set1_epi8(48)), t0);
      a3 = _mm512_dpbusd_epi32(a3, _mm512_and_si512(low, _mm512_set1_epi8((char)192)), t0); }
    { const __m512i top = _mm512_permutexvar_epi8(_mm512_srli_epi16(x1, 2), t0);
      const __m512i below = _mm512_mask2_permutex2var_epi8(t0, x1, _mm512_movepi8_mask(x1), t1);
      const __m512i low = _mm512_permutex2var_epi8(t1, below, t0);
      c1 = _mm512_dpbusd_epi32(c1, top, t0);
      a4 = _mm512_dpbusd_epi32(a4, _mm512_and_si512(low, _mm512_set1_epi8(3)), t0);
      a5 = _mm512_dpbusd_epi32(a5, _mm512_and_si512(low, _mm512_set1_epi8(12)), t0);
      a6 = _mm512_dpbusd_epi32(a6, _mm512_and_si512(low, _mm512_set1_epi8(48)), t0);
      a7 = _mm512_dpbusd_epi32(a7, _mm512_and_si512(low, _mm512_set1_epi8((char)192)), t0); }
    asm volatile("" : "+v"(x0), "+v"(x1), "+v"(c0), "+v"(c1)); KEEP8 }
  t = now() - t; sink += SUM8 + hsum(_mm512_add_epi32(c0, c1)); (void)k; (void)m; return t / (2.0 * N); }

// b3r's strip with the banded byte split by compares: t0 = [x >= 84] + [x >= 168], r = x - 84 t0,
// digits 1-4 = one 128-entry lookup of r (r < 84).
__attribute__((noinline)) double b3r_cmp_strip(long long& sink) { DECL8 __m512i x0 = w, x1 = t1, c0 = a0, c1 = a1; double t = now();
  const __m512i c84 = _mm512_set1_epi8(84), c168 = _mm512_set1_epi8((char)168), one = _mm512_set1_epi8(1), two = _mm512_set1_epi8(2);
  for (long n = 0; n < N; ++n) {
#define CMP_STRIP(x, c, b0, b1, b2, b3) { const __mmask64 k1 = _mm512_cmpge_epu8_mask(x, c84), k2 = _mm512_cmpge_epu8_mask(x, c168); \
      const __m512i top = _mm512_mask_mov_epi8(_mm512_maskz_mov_epi8(k1, one), k2, two); \
      const __m512i r = _mm512_mask_sub_epi8(_mm512_mask_sub_epi8(x, k1, x, c84), k2, _mm512_mask_sub_epi8(x, k1, x, c84), c84); \
      const __m512i low = _mm512_permutex2var_epi8(t1, r, t0); \
      c = _mm512_dpbusd_epi32(c, top, t0); \
      b0 = _mm512_dpbusd_epi32(b0, _mm512_and_si512(low, _mm512_set1_epi8(3)), t0); \
      b1 = _mm512_dpbusd_epi32(b1, _mm512_and_si512(low, _mm512_set1_epi8(12)), t0); \
      b2 = _mm512_dpbusd_epi32(b2, _mm512_and_si512(low, _mm512_set1_epi8(48)), t0); \
      b3 = _mm512_dpbusd_epi32(b3, _mm512_and_si512(low, _mm512_set1_epi8((char)192)), t0); }
    CMP_STRIP(x0, c0, a0, a1, a2, a3) CMP_STRIP(x1, c1, a4, a5, a6, a7)
    asm volatile("" : "+v"(x0), "+v"(x1), "+v"(c0), "+v"(c1)); KEEP8 }
  t = now() - t; sink += SUM8 + hsum(_mm512_add_epi32(c0, c1)); (void)k; (void)m; return t / (2.0 * N); }

// b3r's strip with digit 0 from saturating byte arithmetic (no lookup): t0 = min(x -sat 83, 1) + min(x -sat 167, 1).
__attribute__((noinline)) double b3r_sat_strip(long long& sink) { DECL8 __m512i x0 = w, x1 = t1, c0 = a0, c1 = a1; double t = now();
  const __m512i c83 = _mm512_set1_epi8(83), c167 = _mm512_set1_epi8((char)167), one = _mm512_set1_epi8(1);
  for (long n = 0; n < N; ++n) {
#define SAT_STRIP(x, c, b0, b1, b2, b3) { \
      const __m512i top = _mm512_add_epi8(_mm512_min_epu8(_mm512_subs_epu8(x, c83), one), _mm512_min_epu8(_mm512_subs_epu8(x, c167), one)); \
      const __m512i below = _mm512_mask2_permutex2var_epi8(t0, x, _mm512_movepi8_mask(x), t1); \
      const __m512i low = _mm512_permutex2var_epi8(t1, below, t0); \
      c = _mm512_dpbusd_epi32(c, top, t0); \
      b0 = _mm512_dpbusd_epi32(b0, _mm512_and_si512(low, _mm512_set1_epi8(3)), t0); \
      b1 = _mm512_dpbusd_epi32(b1, _mm512_and_si512(low, _mm512_set1_epi8(12)), t0); \
      b2 = _mm512_dpbusd_epi32(b2, _mm512_and_si512(low, _mm512_set1_epi8(48)), t0); \
      b3 = _mm512_dpbusd_epi32(b3, _mm512_and_si512(low, _mm512_set1_epi8((char)192)), t0); }
    SAT_STRIP(x0, c0, a0, a1, a2, a3) SAT_STRIP(x1, c1, a4, a5, a6, a7)
    asm volatile("" : "+v"(x0), "+v"(x1), "+v"(c0), "+v"(c1)); KEEP8 }
  t = now() - t; sink += SUM8 + hsum(_mm512_add_epi32(c0, c1)); (void)k; (void)m; return t / (2.0 * N); }
#define SUBS(x) _mm512_subs_epu8(x, m)
#define MINU(x) _mm512_min_epu8(x, m)
#define ADDB(x) _mm512_add_epi8(x, m)
PAIR(dp_subs, DP, SUBS) PAIR(dp_min, DP, MINU) PAIR(dp_addb, DP, ADDB)
int main() {
  long long sink = 0;
  for (int rep = 0; rep < 2; ++rep) {
    const double cyc = add_chain();
    std::printf("core clock %.2f GHz\n", 1e-9 / cyc);
    struct { const char* name; double (*f)(long long&); } tests[] = {
        {"vpdpbusd zmm", dp}, {"vpermb zmm", pb}, {"vpermi2b zmm", p2}, {"vpermi2b zmm {k}", p2k}, {"vpandd zmm", an},
        {"vpsrlw zmm", sr}, {"pair vpdpbusd + vpermb", dp_pb}, {"pair vpdpbusd + vpermi2b", dp_p2}, {"pair vpdpbusd + vpsrlw", dp_sr}, {"pair vpdpbusd + vpandd", dp_an}, {"pair vpermb + vpsrlw", pb_sr}, {"t2r strip (4 and, 4 dots; 256 weights)", t2r_strip}, {"b3r strip (decode, 4 and, 5 dots; 320 weights)", b3r_strip}, {"b3r strip, compare split (320 weights)", b3r_cmp_strip}, {"b3r strip, saturating digit 0 (320 weights)", b3r_sat_strip}, {"pair vpdpbusd + vpsubusb", dp_subs}, {"pair vpdpbusd + vpminub", dp_min}, {"pair vpdpbusd + vpaddb", dp_addb}};
    for (auto& t : tests) std::printf("  %-48s %.2f cycles\n", t.name, t.f(sink) / cyc);
  }
  std::printf("(sink %lld)\n", sink);
}
