// The one source of VectorOps (vector_ops.hpp). Include once per unit, after that unit's target
// pragma, with a Tag type of its own: each unit's instantiation is then a distinct symbol, so the
// linker never merges an AVX-512 build of a loop into a unit meant for a plainer CPU.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>

#include "kernels/q8k.hpp"
#include "kernels/vector/vector_ops.hpp"

namespace ternlab::vector_ops_detail {

template <class Tag>
struct Impl {
  static float from_bits(std::uint32_t b) {
    float f;
    std::memcpy(&f, &b, 4);
    return f;
  }
  static std::uint32_t to_bits(float f) {
    std::uint32_t b;
    std::memcpy(&b, &f, 4);
    return b;
  }
  static std::uint32_t magnitude_bits(float f) { return to_bits(f) & 0x7fffffffu; }

  // How far ahead the streaming loops (the head states, the beta/alpha tiles) prefetch.
  static constexpr int kPrefetchBytes = 2048;

  // The reference's divisor from two maxima of a block's raw bits: the signed one is the largest
  // positive float's (negative when no element is +0 or above), the unsigned one the largest
  // negative float's (sign bit set) if there is any. amax is the largest magnitude's bits; the
  // reference divides by the first element of that magnitude, +amax or -amax, searched for only
  // when both occur. NaN and infinities (amax >= 0x7f800000) are left to the caller.
  struct Largest {
    std::uint32_t amax;
    float value;
  };
  static Largest largest(std::int32_t top_positive, std::uint32_t top_raw, const float* x) {
    const std::uint32_t top_negative = top_raw >= 0x80000000u ? top_raw & 0x7fffffffu : 0;
    const std::uint32_t amax = std::max(top_positive < 0 ? 0u : std::uint32_t(top_positive), top_negative);
    const bool plus = top_positive == std::int32_t(amax), minus = top_negative == amax;
    if (!(plus && minus)) return {amax, from_bits(minus ? amax | 0x80000000u : amax)};
    int first = 0;
    while (magnitude_bits(x[first]) != amax) ++first;
    return {amax, x[first]};
  }

  // The blocks the vector forms leave alone, written here: one with a NaN or an infinity (the
  // reference's own path) and one of zeros. True when `out` is written.
  static bool written_whole(const Largest& top, const float* x, BlockQ8K& out) {
    if (top.amax >= 0x7f800000u) {
      quantize_row_q8k(x, &out, kQK);
      return true;
    }
    if (top.amax == 0) {
      std::memset(&out, 0, sizeof out);
      return true;
    }
    return false;
  }

  // quantize_row_q8k for one block in 16-lane vectors, for builds whose registers hold 16 floats
  // (split to narrower registers the shuffles below cost more than they save: measured in
  // docs/notebook/2026-12-06-xeon-float-end-bound.md), with the same float operations lane by
  // lane, so the same bytes:
  //  - the divisor from two maxima of the raw bits (largest); a NaN or an infinity takes the
  //    reference's own path.
  //  - nearest_int's (bits(f + 1.5 * 2^23) & 0x7fffff) - 0x400000 is bits(f + 1.5 * 2^23) -
  //    0x4b400000 for |f| < 2^22 (the sum's exponent is then 23): every f here (|f| <= 127) once
  //    the scale -127 / largest is finite; a block too small for that takes the reference's path.
  //  - the 16 group sums as a tree of half-sums (exact in int32), not one reduction a group.
  static void quantize_block_lanes16(const float* __restrict x, BlockQ8K& out) {
    typedef std::int32_t I16 __attribute__((vector_size(64)));
    typedef std::uint32_t U16 __attribute__((vector_size(64)));
    typedef float F16 __attribute__((vector_size(64)));
    typedef std::int16_t H16 __attribute__((vector_size(32)));
    typedef std::int8_t B16 __attribute__((vector_size(16)));
    constexpr int kGroups = kQK / 16;
    U16 v[kGroups];
    std::memcpy(v, x, sizeof v);
    U16 umax = v[0];
    I16 smax = I16(v[0]);
    for (int g = 1; g < kGroups; ++g) {
      umax = umax > v[g] ? umax : v[g];
      smax = smax > I16(v[g]) ? smax : I16(v[g]);
    }
    // Lane 0 of the largest of the 16 lanes (four halvings).
    const auto lane_max = [](auto& m) {
      const auto keep_larger = [&m](const auto& other) { m = m > other ? m : other; };
      keep_larger(__builtin_shufflevector(m, m, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7));
      keep_larger(__builtin_shufflevector(m, m, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11));
      keep_larger(__builtin_shufflevector(m, m, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13));
      keep_larger(__builtin_shufflevector(m, m, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14));
      return m[0];
    };
    const Largest top = largest(lane_max(smax), lane_max(umax), x);
    if (written_whole(top, x, out)) return;
    const float iscale = -127.0f / top.value;
    if ((to_bits(iscale) & 0x7f800000u) == 0x7f800000u) {  // a largest magnitude under 127 / FLT_MAX
      quantize_row_q8k(x, &out, kQK);
      return;
    }
    I16 q[kGroups];
    for (int g = 0; g < kGroups; ++g) {
      const F16 f = F16(v[g]) * iscale + 12582912.0f;
      q[g] = I16(f) - 0x4b400000;
      q[g] = q[g] < 127 ? q[g] : 127;
      const B16 bytes = __builtin_convertvector(q[g], B16);
      std::memcpy(out.qs + 16 * g, &bytes, sizeof bytes);
    }
    // Pairs of groups to one vector of half-sums (a's in lanes 0-7, b's in 8-15), four times.
    I16 l1[8], l2[4], l3[2];
    for (int p = 0; p < 8; ++p)
      l1[p] = __builtin_shufflevector(q[2 * p], q[2 * p + 1], 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23) +
              __builtin_shufflevector(q[2 * p], q[2 * p + 1], 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
    for (int p = 0; p < 4; ++p)
      l2[p] = __builtin_shufflevector(l1[2 * p], l1[2 * p + 1], 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27) +
              __builtin_shufflevector(l1[2 * p], l1[2 * p + 1], 4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31);
    for (int p = 0; p < 2; ++p)
      l3[p] = __builtin_shufflevector(l2[2 * p], l2[2 * p + 1], 0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24, 25, 28, 29) +
              __builtin_shufflevector(l2[2 * p], l2[2 * p + 1], 2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22, 23, 26, 27, 30, 31);
    const I16 sums = __builtin_shufflevector(l3[0], l3[1], 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30) +
                     __builtin_shufflevector(l3[0], l3[1], 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    const H16 bsums = __builtin_convertvector(sums, H16);
    std::memcpy(out.bsums, &bsums, sizeof bsums);
    out.d = 1.0f / iscale;
  }
  // quantize_row_q8k for one block as loops the compiler vectorises: the divisor from two maxima
  // of the raw bits (largest: for numbers that are not NaN integer order is float order, and a
  // max is exact in any order), then nearest_int itself a lane at a time.
  static void quantize_block(const float* __restrict x, BlockQ8K& out) {
    if constexpr (kRegisterFloats == 16) return quantize_block_lanes16(x, out);
    std::int32_t top_positive = std::numeric_limits<std::int32_t>::min();
    std::uint32_t top_raw = 0;
    for (int j = 0; j < kQK; ++j) {
      top_positive = std::max(top_positive, std::int32_t(to_bits(x[j])));
      top_raw = std::max(top_raw, to_bits(x[j]));
    }
    const Largest top = largest(top_positive, top_raw, x);
    if (written_whole(top, x, out)) return;
    const float iscale = -127.0f / top.value;
    std::int8_t* __restrict qs = out.qs;
    for (int j = 0; j < kQK; ++j) qs[j] = std::int8_t(std::min(127, nearest_int(iscale * x[j])));
    for (int g = 0; g < kQK / 16; ++g) {
      int s = 0;
      for (int i = 0; i < 16; ++i) s += qs[16 * g + i];
      out.bsums[g] = std::int16_t(s);
    }
    out.d = 1.0f / iscale;
  }
  static void quantize_q8k(const float* x, BlockQ8K* y, std::int64_t blocks) {
    for (std::int64_t b = 0; b < blocks; ++b) quantize_block(x + b * kQK, y[b]);
  }

  // One butterfly stage: h pairs (lo[j], hi[j]) -> (a + b, a - b). The halves never overlap.
  static void butterflies(float* __restrict lo, float* __restrict hi, int h) {
    for (int j = 0; j < h; ++j) {
      const float a = lo[j], b = hi[j];
      lo[j] = a + b;
      hi[j] = a - b;
    }
  }
  // Stages h and 2h in one pass over the four quarters of each 4h run, the products by `scale`
  // (1 where no scaling is due) folded in: the same additions in the same order as two passes of
  // `butterflies`, and the same product as a pass of its own, so the same floats in half the passes.
  static void butterflies2(float* __restrict x, int n, int h, float scale) {
    for (int i = 0; i < n; i += 4 * h)
      for (int j = i; j < i + h; ++j) {
        const float x0 = x[j], x1 = x[j + h], x2 = x[j + 2 * h], x3 = x[j + 3 * h];
        const float a0 = x0 + x1, a1 = x0 - x1, a2 = x2 + x3, a3 = x2 - x3;
        x[j] = (a0 + a2) * scale;
        x[j + h] = (a1 + a3) * scale;
        x[j + 2 * h] = (a0 - a2) * scale;
        x[j + 3 * h] = (a1 - a3) * scale;
      }
  }

  // The stages narrower than this build's register (Tag::kRegisterFloats floats) run inside it, in
  // the compiler's generic vectors: one shuffle, one multiply by +-1, one add a stage. Element j's
  // partner is j ^ H; the lower one keeps partner + x, the upper one partner + (-x) = partner - x:
  // fwht's additions exactly.
  static constexpr int kRegisterFloats = Tag::kRegisterFloats;
  typedef float Register __attribute__((vector_size(4 * kRegisterFloats)));
  template <int H, std::size_t... I>
  static Register register_stage(Register v, std::index_sequence<I...>) {
    constexpr Register sign = {((I & H) ? -1.0f : 1.0f)...};
    return __builtin_shufflevector(v, v, (I ^ H)...) + v * sign;
  }
  template <int H = 1>
  static Register register_stages(Register v) {
    if constexpr (H < kRegisterFloats)
      return register_stages<2 * H>(register_stage<H>(v, std::make_index_sequence<kRegisterFloats>()));
    else
      return v;
  }

  static void fwht(float* x, int n) {
    // 1/sqrt(n) is exact for n = 4^m (1/32 for 1024); other powers of two round once, here.
    const float scale = float(1.0 / __builtin_sqrt(double(n)));
    if (n <= kRegisterFloats) {
      for (int h = 1; h < n; h *= 2)
        for (int i = 0; i < n; i += 2 * h) butterflies(x + i, x + i + h, h);
      for (int i = 0; i < n; ++i) x[i] *= scale;
      return;
    }
    for (int i = 0; i < n; i += kRegisterFloats) {
      Register v;
      std::memcpy(&v, x + i, sizeof v);
      v = register_stages(v);
      std::memcpy(x + i, &v, sizeof v);
    }
    int h = kRegisterFloats;
    if (__builtin_ctz(unsigned(n / h)) % 2 == 1) {  // an odd count of stages left: the first alone
      for (int i = 0; i < n; i += 2 * h) butterflies(x + i, x + i + h, h);
      h *= 2;
    }
    if (h == n) {
      for (int i = 0; i < n; ++i) x[i] *= scale;
      return;
    }
    for (; 4 * h <= n; h *= 4) butterflies2(x, n, h, 4 * h == n ? scale : 1.0f);
  }
  static void multiply(float* __restrict x, const float* __restrict s, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) x[i] *= s[i];
  }

  // The two passes over one head's state S[i][j] (i = key dim, j = value dim), one row at a time.
  // Read: mem += (S * decay) * k, the decayed state read (recomputed by the update: the same
  // product, so the same float).
  static void gdn_read_row(const GdnHead& h, int i, int Dv) {
    const float ki = h.k[i];
    const float* __restrict Si = h.S + std::int64_t(i) * Dv;
    float* __restrict mem = h.mem;
    // The state streams in from memory (a thread's heads lie one after another): one prefetch a
    // line, kPrefetchBytes ahead.
    for (int j = 0; j < Dv; j += 64 / int(sizeof(float))) __builtin_prefetch(Si + kPrefetchBytes / int(sizeof(float)) + j);
    for (int j = 0; j < Dv; ++j) mem[j] += (Si[j] * h.decay) * ki;
  }
  // Decay, update, and read out after the update.
  static void gdn_update_row(const GdnHead& h, int i, int Dv) {
    const float ki = h.k[i], qi = h.q[i];
    float* __restrict Si = h.S + std::int64_t(i) * Dv;
    const float* __restrict mem = h.mem;
    float* __restrict o = h.o;
    for (int j = 0; j < Dv; ++j) {
      const float s = Si[j] * h.decay + ki * mem[j];
      Si[j] = s;
      o[j] += s * qi;
    }
  }
  static void gdn_start(const GdnHead& h, int Dv) {
    for (int j = 0; j < Dv; ++j) h.mem[j] = h.o[j] = 0.0f;
  }
  static void gdn_delta(const GdnHead& h, int Dv) {
    for (int j = 0; j < Dv; ++j) h.mem[j] = h.beta * (h.v[j] - h.mem[j]);
  }
  // Head e's update runs row by row beside head e + 1's read: the next state streams in from
  // memory while this one, read once already, is updated from cache.
  static void gdn_heads_any(const GdnHead* heads, int n, int Dk, int Dv) {
    gdn_start(heads[0], Dv);
    for (int i = 0; i < Dk; ++i) gdn_read_row(heads[0], i, Dv);
    gdn_delta(heads[0], Dv);
    for (int e = 0; e < n; ++e) {
      if (e + 1 < n) {
        gdn_start(heads[e + 1], Dv);
        for (int i = 0; i < Dk; ++i) {
          gdn_update_row(heads[e], i, Dv);
          gdn_read_row(heads[e + 1], i, Dv);
        }
        gdn_delta(heads[e + 1], Dv);
      } else {
        for (int i = 0; i < Dk; ++i) gdn_update_row(heads[e], i, Dv);
      }
    }
  }

  // The same steps with Dv fixed at compile time, in rows of this build's registers, where the
  // head's three rows of sums (mem, the next head's mem, o) take at most three quarters of the
  // register file (AVX-512 at Dv = 64 or 128: the full model's and every preset's but micro's):
  // the sums then stay in registers for the whole head instead of being loaded and stored every
  // row, and the read pass stores S * decay in place, so the update loads the product instead of
  // multiplying again (the same float). The state is prefetched 32 KB ahead into L2 rather than
  // 2 KB into L1: faster than the row loop on AVX-512 (measured: docs/notebook/2026-12-04-zen4-kernels.md).
  // Where the sums spill (AVX2's 16 registers) the arrays went through memory, slower than the row
  // loop, and the farther prefetch alone was no steadier gain there, so those builds keep the row loop.
  static constexpr int kStatePrefetchBytes = 32768;
  template <int Dv>
  static constexpr bool kSumsInRegisters =
      Dv % kRegisterFloats == 0 && 4 * 3 * (Dv / kRegisterFloats) <= 3 * Tag::kRegisters;
  template <int Dv>
  struct FixedHeads {
    static constexpr int V = Dv / kRegisterFloats;
    static void read_row(const GdnHead& h, int i, Register (&mem)[V]) {
      float* __restrict Si = h.S + std::int64_t(i) * Dv;
      for (int c = 0; c < Dv; c += 16) __builtin_prefetch(Si + kStatePrefetchBytes / 4 + c, 0, 2);  // a line each
      const float ki = h.k[i];
      for (int c = 0; c < V; ++c) {
        Register s;
        std::memcpy(&s, Si + kRegisterFloats * c, sizeof(Register));
        s = s * h.decay;
        std::memcpy(Si + kRegisterFloats * c, &s, sizeof(Register));
        mem[c] += s * ki;
      }
    }
    static void update_row(const GdnHead& h, int i, const Register (&mem)[V], Register (&o)[V]) {
      float* __restrict Si = h.S + std::int64_t(i) * Dv;
      const float ki = h.k[i], qi = h.q[i];
      for (int c = 0; c < V; ++c) {
        Register s;
        std::memcpy(&s, Si + kRegisterFloats * c, sizeof(Register));
        s = s + ki * mem[c];
        std::memcpy(Si + kRegisterFloats * c, &s, sizeof(Register));
        o[c] += s * qi;
      }
    }
    static void delta(const GdnHead& h, Register (&mem)[V]) {
      for (int c = 0; c < V; ++c) {
        Register v;
        std::memcpy(&v, h.v + kRegisterFloats * c, sizeof(Register));
        mem[c] = h.beta * (v - mem[c]);
      }
    }
    static void run(const GdnHead* heads, int n, int Dk) {
      Register mem[V] = {}, next[V] = {}, o[V];
      for (int i = 0; i < Dk; ++i) read_row(heads[0], i, mem);
      delta(heads[0], mem);
      for (int e = 0; e < n; ++e) {
        for (auto& x : o) x = Register{};
        if (e + 1 < n) {
          for (auto& x : next) x = Register{};
          for (int i = 0; i < Dk; ++i) {
            update_row(heads[e], i, mem, o);
            read_row(heads[e + 1], i, next);
          }
        } else {
          for (int i = 0; i < Dk; ++i) update_row(heads[e], i, mem, o);
        }
        std::memcpy(heads[e].o, o, sizeof o);
        if (e + 1 < n) {
          delta(heads[e + 1], next);
          for (int c = 0; c < V; ++c) mem[c] = next[c];
        }
      }
    }
  };
  static void gdn_heads(const GdnHead* heads, int n, int Dk, int Dv) {
    if (n <= 0) return;
    if constexpr (kSumsInRegisters<128>)
      if (Dv == 128) return FixedHeads<128>::run(heads, n, Dk);
    if constexpr (kSumsInRegisters<64>)
      if (Dv == 64) return FixedHeads<64>::run(heads, n, Dk);
    gdn_heads_any(heads, n, Dk, Dv);
  }

  // ---- The chunked form (gdn_chunk, spec §7.4.7) ----
  // a * b + c rounded once: the build's fused multiply-add (Tag::mul_add; the baseline's is
  // __builtin_fmaf a lane), so every build returns the same bits. The chunked form's products below
  // and the dense dots (rank1_sums, tiles_dot_group) fuse: a multiply and an add would each take
  // one of the two FMA ports of an AVX-512 core.
  // A Tag that has the instructions gives mul_add and broadcast; without them (the baseline, or a
  // compiler that ignores the unit's target pragma: the fuzz build's clang) they run a lane at a
  // time, with the same values and bits.
  static Register mul_add(Register a, Register b, Register c) {
    if constexpr (requires { Tag::mul_add(a, b, c); }) {
      return Tag::mul_add(a, b, c);
    } else {
      float x[kRegisterFloats], y[kRegisterFloats], z[kRegisterFloats];
      std::memcpy(x, &a, sizeof x);
      std::memcpy(y, &b, sizeof y);
      std::memcpy(z, &c, sizeof z);
      for (int i = 0; i < kRegisterFloats; ++i) x[i] = __builtin_fmaf(x[i], y[i], z[i]);
      Register r;
      std::memcpy(&r, x, sizeof r);
      return r;
    }
  }
  static Register broadcast(const float* p) {
    if constexpr (requires { Tag::template broadcast<Register>(p); })
      return Tag::template broadcast<Register>(p);
    else
      return Register{} + *p;
  }
  // Where a product's sums start: from c as it stands, from zero (c is only written), or from c
  // times a scale (c * scale rounded, as a pass that scaled c first would leave it).
  enum class Start { c, zero, scaled_c };
  struct From {
    Start start = Start::c;
    float scale = 1.0f;
  };
  // c[r][j] = (c[r][j] as `from` says) + the sum over k < inner of a[r][k] * b[k][j], in order of
  // k, each term fused, for R rows and W registers of columns: the R x W sums stay in registers
  // while each b row is loaded once for all R rows. Every element is the same sequential sum
  // whatever the blocking, so every build's blocks give the baseline's bits.
  template <int R, int W>
  static void rows_block(const float* __restrict a, std::int64_t as, const float* __restrict b, std::int64_t bs,
                         int inner, float* __restrict c, std::int64_t cs, From from) {
    // Fully unrolled, so that the sums live in registers rather than in a stack array.
    Register acc[R][W];
    const Register scale = from.scale - Register{};
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
      for (int w = 0; w < W; ++w)
        acc[r][w] = from.start == Start::zero       ? Register{}
                    : from.start == Start::scaled_c ? load(c + r * cs + w * kRegisterFloats) * scale
                                                    : load(c + r * cs + w * kRegisterFloats);
    for (int k = 0; k < inner; ++k) {
      Register bk[W];
#pragma GCC unroll 8
      for (int w = 0; w < W; ++w) bk[w] = load(b + k * bs + w * kRegisterFloats);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const Register ark = broadcast(a + r * as + k);
#pragma GCC unroll 8
        for (int w = 0; w < W; ++w) acc[r][w] = mul_add(ark, bk[w], acc[r][w]);
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
      for (int w = 0; w < W; ++w) std::memcpy(c + r * cs + w * kRegisterFloats, &acc[r][w], sizeof(Register));
  }

  // rows_block over `rows` rows of one column block, in blocks of R rows, the rest in one block of
  // its own size, so a remainder still shares its b loads (a 64-token chunk in blocks of 6 ends in
  // 4 rows: one block of 4 rather than one of 3 and one of 1).
  template <int R, int W>
  static void rows_column_block(const float* a, std::int64_t as, int rows, const float* b, std::int64_t bs, int inner,
                                float* c, std::int64_t cs, From from) {
    int r = 0;
    for (; r + R <= rows; r += R) rows_block<R, W>(a + r * as, as, b, bs, inner, c + r * cs, cs, from);
    if (r == rows) return;
    constexpr auto table = []<std::size_t... I>(std::index_sequence<I...>) {
      return std::array{&rows_block<int(I) + 1, W>...};
    }(std::make_index_sequence<R>());
    table[std::size_t(rows - r - 1)](a + r * as, as, b, bs, inner, c + r * cs, cs, from);
  }
  // c = (c as `from` says) + a b for a (rows x inner, row stride as), b (inner x cols, row stride
  // bs), c (rows x cols, row stride cs). Six rows of four registers where the register file holds
  // their sums (32 registers), two rows where it does not.
  static constexpr int kBlockRows = Tag::kRegisters >= 32 ? 6 : 2, kBlockRegisters = 4;
  static void rows_times(const float* a, std::int64_t as, int rows, const float* b, std::int64_t bs, int inner, float* c,
                         std::int64_t cs, int cols, From from = {}) {
    if (rows <= 0 || (inner <= 0 && from.start == Start::c)) return;
    constexpr int RF = kRegisterFloats, W = kBlockRegisters;
    int j = 0;
    for (; j + W * RF <= cols; j += W * RF) rows_column_block<kBlockRows, W>(a, as, rows, b + j, bs, inner, c + j, cs, from);
    for (; j + RF <= cols; j += RF) rows_column_block<kBlockRows, 1>(a, as, rows, b + j, bs, inner, c + j, cs, from);
    for (; j < cols; ++j)
      for (int r = 0; r < rows; ++r) {
        float* cj = c + r * cs + j;
        float sum = from.start == Start::zero ? 0.0f : from.start == Start::scaled_c ? *cj * from.scale : *cj;
        for (int k = 0; k < inner; ++k) sum = __builtin_fmaf(a[r * as + k], b[k * bs + j], sum);
        *cj = sum;
      }
  }
  // Rows [t0, t1) of x take the terms of the earlier rows of the same block in order:
  // x[t] = x[t] + w[t][s] * y[s] for s in [t0, t + diagonal) (the in-block part of a lower-
  // triangular product whose rows before t0 rows_times already added).
  static void triangle_rows(const float* __restrict w, std::int64_t ws, const float* y, float* x, std::int64_t xs,
                            int t0, int t1, int n, bool diagonal, std::int64_t ys) {
    for (int t = t0; t < t1; ++t)
      for (int s = t0; s < t + int(diagonal); ++s) {
        const float wts = w[t * ws + s];
        const float* __restrict ys_row = y + s * ys;
        float* __restrict xt = x + t * xs;
        for (int j = 0; j < n; ++j) xt[j] = __builtin_fmaf(wts, ys_row[j], xt[j]);  // fused, as rows_times
      }
  }
  // Rows a block of the triangular solve and read-out: one rows_block of the earlier rows' terms,
  // then the block's own triangle row by row.
  static constexpr int kSolveBlock = kBlockRows;
  static void gdn_chunk(const GdnChunkKeys& keys, const GdnChunkHead* heads, int n, int Dk, int Dv, float* scratch) {
    const int T = keys.tokens;
    if (T <= 0 || n <= 0) return;
    const std::int64_t Tp = gdn_chunk_columns(T), ks = keys.stride;
    // Shared by the key head's value heads: the keys transposed (Dk x Tp, zero past T), and the
    // T x Tp tables of key-key and query-key dot products.
    float* kt = scratch;
    float* gram = kt + Dk * Tp;
    float* qk = gram + Tp * Tp;
    // Per value head: the cumulative log decays, the solve's coefficients -A, the decayed
    // query-key table, K S (then the right-hand sides, then the deltas), Q S, the keys
    // transposed, each decayed to the chunk's end, and those decays.
    float* gamma = qk + Tp * Tp;
    float* neg_a = gamma + Tp;
    float* mask = neg_a + Tp * Tp;
    float* delta = mask + Tp * Tp;
    float* qs = delta + Tp * Dv;
    float* kw = qs + Tp * Dv;
    float* __restrict to_end = kw + Dk * Tp;
    // The chunk's keys and queries copied to rows gdn_chunk_key_stride apart: in the model their
    // rows are a multiple of 4 KiB apart, so the rows a product block broadcasts from all fell in
    // one set of the L1 cache and evicted one another and the rows of the state beside them.
    const std::int64_t ps = gdn_chunk_key_stride(Dk);
    float* kp = to_end + Tp;
    float* qp = kp + Tp * ps;
    for (int t = 0; t < T; ++t) {
      std::copy(keys.k + t * ks, keys.k + t * ks + Dk, kp + t * ps);
      std::copy(keys.q + t * ks, keys.q + t * ks + Dk, qp + t * ps);
    }
    for (int i = 0; i < Dk; ++i)
      for (std::int64_t t = 0; t < Tp; ++t) kt[i * Tp + t] = t < T ? kp[t * ps + i] : 0.0f;
    rows_times(kp, ps, T, kt, Tp, Dk, gram, Tp, int(Tp), {Start::zero});
    rows_times(qp, ps, T, kt, Tp, Dk, qk, Tp, int(Tp), {Start::zero});
    for (int h = 0; h < n; ++h) {
      const GdnChunkHead& hd = heads[h];
      float sum = 0.0f;
      for (int t = 0; t < T; ++t) gamma[t] = sum = sum + hd.g[t];
      // The products with the incoming state.
      rows_times(kp, ps, T, hd.S, Dv, Dk, delta, Dv, Dv, {Start::zero});
      rows_times(qp, ps, T, hd.S, Dv, Dk, qs, Dv, Dv, {Start::zero});
      // Right-hand sides beta_t (v_t - e^gamma_t k_t S) and the decayed tables. e^(gamma_t -
      // gamma_s) for s <= t is at most 1 (the decays are), so no term overflows.
      for (int t = 0; t < T; ++t) {
        const float beta = hd.beta[t], decay = exp_f32(gamma[t]);
        const float* __restrict v = hd.v + t * hd.stride;
        float* __restrict d = delta + t * Dv;
        for (int j = 0; j < Dv; ++j) d[j] = beta * (v[j] - decay * d[j]);
        // Restrict-qualified rows of distinct tables, so the loop (its exponential included) vectorises.
        const float* __restrict gram_t = gram + t * Tp;
        const float* __restrict qk_t = qk + t * Tp;
        const float* __restrict gam = gamma;
        float* __restrict neg_a_t = neg_a + t * Tp;
        float* __restrict mask_t = mask + t * Tp;
        const float gamma_t = gamma[t];
        for (int s = 0; s <= t; ++s) {
          const float between = exp_f32(gamma_t - gam[s]);
          neg_a_t[s] = -(beta * gram_t[s] * between);
          mask_t[s] = qk_t[s] * between;
        }
        float* __restrict o = hd.o + t * hd.o_stride;
        const float* __restrict qst = qs + t * Dv;
        for (int j = 0; j < Dv; ++j) o[j] = decay * qst[j];
      }
      // (I + A) deltas = right-hand sides, A strictly lower triangular: forward substitution, a
      // block of rows at a time (the earlier blocks' deltas as one product, then within the block).
      for (int t0 = 0; t0 < T; t0 += kSolveBlock) {
        const int t1 = std::min(T, t0 + kSolveBlock);
        rows_times(neg_a + t0 * Tp, Tp, t1 - t0, delta, Dv, t0, delta + t0 * Dv, Dv, Dv);
        triangle_rows(neg_a, Tp, delta, delta, Dv, t0, t1, Dv, false, Dv);
      }
      // Read-out: o_t = e^gamma_t q_t S + the sum over s <= t of mask[t][s] delta_s.
      for (int t0 = 0; t0 < T; t0 += kSolveBlock) {
        const int t1 = std::min(T, t0 + kSolveBlock);
        rows_times(mask + t0 * Tp, Tp, t1 - t0, delta, Dv, t0, hd.o + t0 * hd.o_stride, hd.o_stride, Dv);
        triangle_rows(mask, Tp, delta, hd.o, hd.o_stride, t0, t1, Dv, true, Dv);
      }
      // The state after the chunk: e^gamma_end S + the sum over s of e^(gamma_end - gamma_s) k_s delta_s.
      // The decays to the chunk's end first, then kw row by row (contiguous, vectorised).
      const float end = gamma[T - 1], end_decay = exp_f32(end);
      for (int s = 0; s < T; ++s) to_end[s] = exp_f32(end - gamma[s]);
      for (int i = 0; i < Dk; ++i) {
        const float* __restrict kt_i = kt + i * Tp;
        float* __restrict kw_i = kw + i * Tp;
        for (int s = 0; s < T; ++s) kw_i[s] = kt_i[s] * to_end[s];
      }
      rows_times(kw, Tp, Dk, delta, Dv, T, hd.S, Dv, Dv, {Start::scaled_c, end_decay});
    }
  }

  // Weights as floats, one or a register's worth: fp32 as they stand, BF16 widened exactly (its
  // bits are the float's top half).
  static float widen_one(float w) { return w; }
  static float widen_one(std::uint16_t w) { return from_bits(std::uint32_t(w) << 16); }
  static Register widen(const float* w) { return load(w); }
  static Register widen(const std::uint16_t* w) {
    std::uint32_t bits[kRegisterFloats];
#pragma GCC unroll 16
    for (int l = 0; l < kRegisterFloats; ++l) bits[l] = std::uint32_t(w[l]) << 16;
    Register r;
    std::memcpy(&r, bits, sizeof r);
    return r;
  }
  // R registers of weights from w on. With four-float registers BF16 is widened in one loop over
  // the row, which GCC vectorises whole: a register at a time it assembled the lanes one by one,
  // at half the speed.
  template <int R, class W>
  static void widen_row(const W* __restrict w, Register (&out)[R]) {
    if constexpr (kRegisterFloats == 4 && sizeof(W) == 2) {
      float row[R * kRegisterFloats];
      for (int l = 0; l < R * kRegisterFloats; ++l) row[l] = widen_one(w[l]);
#pragma GCC unroll 16
      for (int k = 0; k < R; ++k) out[k] = load(row + k * kRegisterFloats);
    } else {
#pragma GCC unroll 16
      for (int k = 0; k < R; ++k) out[k] = widen(w + k * kRegisterFloats);
    }
  }
  // NT tiles side by side: NT independent sums a lane, so the adds do not wait on one another.
  // The sums are registers, fully unrolled: as an array indexed in a loop GCC kept them in memory,
  // and every step waited on a store and its reload.
  template <int NT, class W>
  static void tiles_dot_group(const W* __restrict w, std::int64_t n, const float* __restrict x, float* __restrict out) {
    constexpr int T = VectorOps::kLaneTile, RT = T / kRegisterFloats;
    static_assert(T % kRegisterFloats == 0, "a tile is whole registers");
    Register acc[NT][RT];
#pragma GCC unroll 16
    for (int t = 0; t < NT; ++t)
#pragma GCC unroll 16
      for (int k = 0; k < RT; ++k) acc[t][k] = Register{};
    // Each tile is its own stream from memory (a layer's tiles are read once a token); prefetched
    // kPrefetchBytes ahead, one line a step.
    constexpr std::int64_t kAhead = kPrefetchBytes / sizeof(W);
    for (std::int64_t i = 0; i < n; ++i) {
      const Register xi = x[i] - Register{};  // x[i] in every lane (x - +0 is x, -0 included)
#pragma GCC unroll 16
      for (int t = 0; t < NT; ++t) {
        const W* __restrict wi = w + (t * n + i) * T;
        __builtin_prefetch(wi + kAhead);
        Register wv[RT];
        widen_row<RT>(wi, wv);
#pragma GCC unroll 16
        for (int k = 0; k < RT; ++k) acc[t][k] = mul_add(wv[k], xi, acc[t][k]);
      }
    }
#pragma GCC unroll 16
    for (int t = 0; t < NT; ++t)
#pragma GCC unroll 16
      for (int k = 0; k < RT; ++k) store(out + t * T + k * kRegisterFloats, acc[t][k]);
  }
  template <class W>
  static void tiles_dot(const W* w, int tiles, std::int64_t n, const float* x, float* out) {
    constexpr int T = VectorOps::kLaneTile;
    int j = 0;
    for (; j + 4 <= tiles; j += 4) tiles_dot_group<4>(w + j * n * T, n, x, out + j * T);
    const W* rest = w + j * n * T;
    float* rest_out = out + j * T;
    switch (tiles - j) {
      case 3: tiles_dot_group<3>(rest, n, x, rest_out); break;
      case 2: tiles_dot_group<2>(rest, n, x, rest_out); break;
      case 1: tiles_dot_group<1>(rest, n, x, rest_out); break;
      default: break;
    }
  }

  // Several queries against the same tiles (or rows), in groups whose sums take at most half the
  // register file: kQueryGroup at a time, then one call for the rest (functions for 1 ..
  // kQueryGroup - 1 queries in a table).
  static constexpr int kQueryGroup = std::min(8, Tag::kRegisters / 2 / (VectorOps::kLaneTile / kRegisterFloats));
  template <template <int> class Fixed, class... Args>
  static void by_query_groups(int queries, Args... args) {
    constexpr auto table = []<std::size_t... I>(std::index_sequence<I...>) {
      return std::array{&Fixed<int(I) + 1>::run...};
    }(std::make_index_sequence<kQueryGroup>());
    for (int r = 0; r < queries;) {
      const int q = std::min(kQueryGroup, queries - r);
      table[std::size_t(q - 1)](r, args...);
      r += q;
    }
  }
  // One register to memory, by value: a memcpy from the array of sums itself made GCC keep that
  // array in memory too, storing every sum at every step.
  static void store(float* to, Register v) { std::memcpy(to, &v, sizeof v); }
  static Register load(const float* from) {
    Register v;
    std::memcpy(&v, from, sizeof v);
    return v;
  }
  // Q sums of R registers each, continued from out (or from zero when `first`): sum q gains
  // a[q * a_stride + s] * (the R registers at v + s * v_stride, widened from W) for each step s <
  // steps in order, so each element is its own in-order sum; each step's registers are loaded once
  // for all Q. Each step also prefetches fetch_count elements from v + s * v_stride + fetch_offset.
  // The sums stay in this build's registers, written out one by one (a generic array of them, or a
  // memcpy from the array, left them in memory: GCC then stored every sum at every step).
  template <int Q, int R, class W>
  static void rank1_sums(const W* __restrict v, std::int64_t v_stride, std::int64_t steps,
                         const float* __restrict a, std::int64_t a_stride, float* __restrict out,
                         std::int64_t out_stride, bool first, std::int64_t fetch_offset, std::int64_t fetch_count) {
    Register acc[Q][R] = {};
    if (!first)
#pragma GCC unroll 16
      for (int q = 0; q < Q; ++q)
#pragma GCC unroll 16
        for (int k = 0; k < R; ++k) acc[q][k] = load(out + q * out_stride + k * kRegisterFloats);
    for (std::int64_t s = 0; s < steps; ++s) {
      const W* vs = v + s * v_stride;
      for (std::int64_t b = 0; b < fetch_count; b += 64 / int(sizeof(W))) __builtin_prefetch(vs + fetch_offset + b);
      Register vr[R];
      widen_row<R>(vs, vr);
#pragma GCC unroll 16
      for (int q = 0; q < Q; ++q) {
        const Register aq = broadcast(a + q * a_stride + s);
#pragma GCC unroll 16
        for (int k = 0; k < R; ++k) acc[q][k] = mul_add(aq, vr[k], acc[q][k]);
      }
    }
#pragma GCC unroll 16
    for (int q = 0; q < Q; ++q)
#pragma GCC unroll 16
      for (int k = 0; k < R; ++k) store(out + q * out_stride + k * kRegisterFloats, acc[q][k]);
  }

  // A tile's lanes are one step's registers; query q's x is its a. Each tile streams in once a
  // group of queries, a line a step prefetched kPrefetchBytes ahead.
  template <class W>
  struct TilesDotQueries {
    template <int Q>
    struct Fixed {
      static void run(int r0, const W* w, int tiles, std::int64_t n, const float* x, float* out, std::int64_t out_stride) {
        constexpr int T = VectorOps::kLaneTile;
        for (int j = 0; j < tiles; ++j)
          rank1_sums<Q, T / kRegisterFloats>(w + j * n * T, T, n, x + r0 * n, n, out + r0 * out_stride + j * T, out_stride,
                                             true, kPrefetchBytes / int(sizeof(W)), T);
      }
    };
  };
  template <class W>
  static void tiles_dot_queries(const W* w, int tiles, std::int64_t n, const float* x, int queries, float* out,
                                std::int64_t out_stride) {
    by_query_groups<TilesDotQueries<W>::template Fixed>(queries, w, tiles, n, x, out, out_stride);
  }

  // The rows in blocks, each block's runs of C elements in turn (a row's run is one step's
  // registers): a run reads only a line or two of every row, so over all the rows at once (a KV
  // head's values at a long context: megabytes, rows a KB apart) each run went back to memory for
  // its lines; a block's rows stay in L1 across its runs, and the first run fetches the next
  // block's rows whole.
  static constexpr int kRowBlock = 16;
  template <int Q>
  struct WeightedSums {
    // Up to eight registers of sums a query, together within half the register file.
    static constexpr int C = std::min(8, Tag::kRegisters / (2 * Q)) * kRegisterFloats;
    static void run(int q0, const float* x, std::int64_t stride, int rows, const float* w, std::int64_t w_stride,
                    float* out, std::int64_t n) {
      w += q0 * w_stride;
      out += q0 * n;
      for (int r0 = 0; r0 < rows; r0 += kRowBlock) {
        const int block = std::min(kRowBlock, rows - r0);
        const float* xb = x + r0 * stride;
        const float* wb = w + r0;
        const bool first = r0 == 0;
        const std::int64_t ahead = kRowBlock * stride;
        std::int64_t i = 0;
        for (; i + C <= n; i += C)
          rank1_sums<Q, C / kRegisterFloats>(xb + i, stride, block, wb, w_stride, out + i, n, first, ahead, i == 0 ? n : 0);
        for (; i + kRegisterFloats <= n; i += kRegisterFloats)
          rank1_sums<Q, 1>(xb + i, stride, block, wb, w_stride, out + i, n, first, ahead, i == 0 ? n : 0);
        for (; i < n; ++i)  // the last few elements, a float each
          for (int q = 0; q < Q; ++q) {
            float acc = first ? 0.0f : out[q * n + i];
            for (int r = 0; r < block; ++r) acc = __builtin_fmaf(wb[q * w_stride + r], xb[r * stride + i], acc);
            out[q * n + i] = acc;
          }
      }
    }
  };
  static void weighted_sums(const float* x, std::int64_t stride, int rows, const float* w, std::int64_t w_stride,
                            int queries, float* out, std::int64_t n) {
    by_query_groups<WeightedSums>(queries, x, stride, rows, w, w_stride, out, n);
  }

  // e^x for the SiLU and the sigmoid gate, branch-free so that it vectorises (its clamps are selects,
  // which GCC makes blends only without -ftrapping-math: see CMakeLists.txt): x = n ln2 + r with
  // |r| <= ln2 / 2 (ln2 in two parts, the first exact in 9 bits so n * kLn2Hi is exact), e^r by
  // Cephes expf's degree-7 polynomial, 2^n put in the exponent field. n comes from the
  // round-to-nearest add of 1.5 * 2^23 (the sum's low bits are n), so no float-to-int conversion
  // meets a NaN. Above 88, where 2^n would need n = 128, it returns +inf (e^88.72 is the float
  // limit); below -87.3 it returns 0 (no subnormals). Only 1 / (1 + e^-x) forms use it, where both
  // ends give the limit's value.
  static float exp_f32(float x) {
    constexpr float kMagic = 12582912.0f, kLog2e = 1.44269504088896341f;
    constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
    constexpr float kHigh = 88.0f, kLow = -87.3f;
    const float xc = x > kHigh ? kHigh : (x < kLow ? kLow : x);
    const float t = xc * kLog2e + kMagic;
    const float n = t - kMagic;
    const float r = (xc - n * kLn2Hi) - n * kLn2Lo;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * (r * r) + r + 1.0f;
    const std::uint32_t ni = to_bits(t) - to_bits(kMagic);  // n, two's complement
    const float y = p * from_bits((ni + 127u) << 23);
    // The ends as masks on the bits, not a select of floats: given a select, GCC divided through
    // it in 1 / (1 + e^x), two divisions a vector where one serves.
    const std::uint32_t above = 0u - std::uint32_t(x > kHigh), below = 0u - std::uint32_t(x < kLow);
    return from_bits((to_bits(y) & ~(above | below)) | (0x7f800000u & above));
  }
  // A register of elements at a time, its taps summed oldest first from zero in the register and
  // stored once. (Written as a pass a tap, GCC unrolled and jammed the taps in pairs and ran each
  // pair's pass scalar.)
  static void conv_taps(const float* const* x, const float* w, std::int64_t w_stride, int taps, float* __restrict y,
                        std::int64_t n) {
    std::int64_t j = 0;
    for (; j + kRegisterFloats <= n; j += kRegisterFloats) {
      Register sum = {};
      for (int t = 0; t < taps; ++t) sum += load(x[t] + j) * load(w + t * w_stride + j);
      store(y + j, sum);
    }
    for (; j < n; ++j) {
      float sum = 0.0f;
      for (int t = 0; t < taps; ++t) sum += x[t][j] * w[t * w_stride + j];
      y[j] = sum;
    }
  }
  static float silu_one(float x) { return x / (1.0f + exp_f32(-x)); }
  static void silu(const float* x, float* y, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) y[i] = silu_one(x[i]);
  }
  static void silu_mul(const float* a, const float* b, float* y, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) y[i] = silu_one(a[i]) * b[i];
  }
  static void sigmoid_mul(const float* g, float* y, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) y[i] *= 1.0f / (1.0f + exp_f32(-g[i]));
  }

  // Eight rows' sums of squares side by side: each step loads eight floats of each row, transposes
  // the 8 x 8 block so that a vector holds one element of every row, widens it to doubles and adds
  // its squares, so lane r is row r's chain of adds in element order. A float's square is exact in
  // double (24-bit significands), so the sums are the rows' own in-order sums, bit for bit.
  // A block of fewer rows (a decode token's norm is one) runs its chains side by side in scalars:
  // there a transposed vector would be mostly empty lanes.
  typedef float Floats8 __attribute__((vector_size(32)));
  typedef double Doubles8 __attribute__((vector_size(64)));
  static constexpr int kSquareRows = 8;
  template <int R>
  static void squares_sums_scalar(const float* x, std::int64_t stride, std::int64_t n, double* sums) {
    double s[R] = {};
    for (std::int64_t i = 0; i < n; ++i)
      for (int r = 0; r < R; ++r) {
        const double v = x[r * stride + i];
        s[r] += v * v;
      }
    for (int r = 0; r < R; ++r) sums[r] = s[r];
  }
  static void squares_sums(const float* x, std::int64_t stride, int rows, std::int64_t n, double* sums) {
    constexpr auto fewer = []<std::size_t... I>(std::index_sequence<I...>) {
      return std::array{&squares_sums_scalar<int(I) + 1>...};
    }(std::make_index_sequence<kSquareRows - 1>());
    for (int r0 = 0; r0 < rows; r0 += kSquareRows) {
      if (rows - r0 < kSquareRows) return fewer[std::size_t(rows - r0 - 1)](x + r0 * stride, stride, n, sums + r0);
      const float* row[kSquareRows];
      for (int r = 0; r < kSquareRows; ++r) row[r] = x + std::int64_t(r0 + r) * stride;
      Doubles8 acc = {};
      std::int64_t i = 0;
      for (; i + 8 <= n; i += 8) {
        Floats8 v[8];
        for (int r = 0; r < 8; ++r) std::memcpy(&v[r], row[r] + i, sizeof(Floats8));
        const Floats8 t0 = __builtin_shufflevector(v[0], v[1], 0, 8, 1, 9, 4, 12, 5, 13);
        const Floats8 t1 = __builtin_shufflevector(v[0], v[1], 2, 10, 3, 11, 6, 14, 7, 15);
        const Floats8 t2 = __builtin_shufflevector(v[2], v[3], 0, 8, 1, 9, 4, 12, 5, 13);
        const Floats8 t3 = __builtin_shufflevector(v[2], v[3], 2, 10, 3, 11, 6, 14, 7, 15);
        const Floats8 t4 = __builtin_shufflevector(v[4], v[5], 0, 8, 1, 9, 4, 12, 5, 13);
        const Floats8 t5 = __builtin_shufflevector(v[4], v[5], 2, 10, 3, 11, 6, 14, 7, 15);
        const Floats8 t6 = __builtin_shufflevector(v[6], v[7], 0, 8, 1, 9, 4, 12, 5, 13);
        const Floats8 t7 = __builtin_shufflevector(v[6], v[7], 2, 10, 3, 11, 6, 14, 7, 15);
        const Floats8 u0 = __builtin_shufflevector(t0, t2, 0, 1, 8, 9, 4, 5, 12, 13);
        const Floats8 u1 = __builtin_shufflevector(t0, t2, 2, 3, 10, 11, 6, 7, 14, 15);
        const Floats8 u2 = __builtin_shufflevector(t1, t3, 0, 1, 8, 9, 4, 5, 12, 13);
        const Floats8 u3 = __builtin_shufflevector(t1, t3, 2, 3, 10, 11, 6, 7, 14, 15);
        const Floats8 u4 = __builtin_shufflevector(t4, t6, 0, 1, 8, 9, 4, 5, 12, 13);
        const Floats8 u5 = __builtin_shufflevector(t4, t6, 2, 3, 10, 11, 6, 7, 14, 15);
        const Floats8 u6 = __builtin_shufflevector(t5, t7, 0, 1, 8, 9, 4, 5, 12, 13);
        const Floats8 u7 = __builtin_shufflevector(t5, t7, 2, 3, 10, 11, 6, 7, 14, 15);
        // Column j (element i + j of every row): the low halves give j = 0..3, the high ones 4..7.
        const Floats8 c[8] = {
            __builtin_shufflevector(u0, u4, 0, 1, 2, 3, 8, 9, 10, 11),   __builtin_shufflevector(u1, u5, 0, 1, 2, 3, 8, 9, 10, 11),
            __builtin_shufflevector(u2, u6, 0, 1, 2, 3, 8, 9, 10, 11),   __builtin_shufflevector(u3, u7, 0, 1, 2, 3, 8, 9, 10, 11),
            __builtin_shufflevector(u0, u4, 4, 5, 6, 7, 12, 13, 14, 15), __builtin_shufflevector(u1, u5, 4, 5, 6, 7, 12, 13, 14, 15),
            __builtin_shufflevector(u2, u6, 4, 5, 6, 7, 12, 13, 14, 15), __builtin_shufflevector(u3, u7, 4, 5, 6, 7, 12, 13, 14, 15)};
        for (int j = 0; j < 8; ++j) {
          const Doubles8 d = __builtin_convertvector(c[j], Doubles8);
          acc += d * d;
        }
      }
      double lanes[kSquareRows];
      std::memcpy(lanes, &acc, sizeof lanes);
      for (int r = 0; r < kSquareRows; ++r) {
        double sum = lanes[r];
        for (std::int64_t k = i; k < n; ++k) {
          const double v = row[r][k];
          sum += v * v;
        }
        sums[r0 + r] = sum;
      }
    }
  }

  // The softmax's running sums: kSoftmaxSums interleaved in-order sums, one register's worth or
  // several in every build, then added in one fixed tree, so every build returns the same bits.
  static constexpr int kSoftmaxSums = 16;
  static_assert(kSoftmaxSums % kRegisterFloats == 0, "the sums are whole registers");
  static void softmax(float* __restrict x, std::int64_t n, float scale) {
    if (n <= 0) return;
    constexpr int RS = kSoftmaxSums / kRegisterFloats;
    // Scale, and the largest scaled score (exact in any order; NaN aside, a max is a max).
    for (std::int64_t i = 0; i < n; ++i) x[i] *= scale;
    float largest = x[0];
    std::int64_t i = 0;
    if (n >= kRegisterFloats) {
      Register m = load(x);
      for (i = kRegisterFloats; i + kRegisterFloats <= n; i += kRegisterFloats) {
        const Register v = load(x + i);
        m = v > m ? v : m;
      }
      float lanes[kRegisterFloats];
      std::memcpy(lanes, &m, sizeof lanes);
      for (const float l : lanes) largest = l > largest ? l : largest;
    }
    for (; i < n; ++i) largest = x[i] > largest ? x[i] : largest;
    for (std::int64_t j = 0; j < n; ++j) x[j] = exp_f32(x[j] - largest);
    Register acc[RS] = {};
    std::int64_t j = 0;
    for (; j + kSoftmaxSums <= n; j += kSoftmaxSums)
#pragma GCC unroll 4
      for (int k = 0; k < RS; ++k) acc[k] += load(x + j + k * kRegisterFloats);
    float sums[kSoftmaxSums];
    for (int k = 0; k < RS; ++k) store(sums + k * kRegisterFloats, acc[k]);
    for (; j < n; ++j) sums[j % kSoftmaxSums] += x[j];
    for (int h = kSoftmaxSums / 2; h >= 1; h /= 2)
      for (int l = 0; l < h; ++l) sums[l] += sums[l + h];
    const float total = sums[0];
    for (std::int64_t k = 0; k < n; ++k) x[k] /= total;
  }

  static constexpr VectorOps ops(const char* name) {
    return {name,  &quantize_q8k, &fwht,     &multiply,   &gdn_heads, &gdn_chunk, &tiles_dot<float>, &tiles_dot<std::uint16_t>,
            &tiles_dot_queries<float>, &tiles_dot_queries<std::uint16_t>, &weighted_sums, &conv_taps, &silu, &silu_mul,     &sigmoid_mul, &softmax, &squares_sums};
  }
};

}  // namespace ternlab::vector_ops_detail
