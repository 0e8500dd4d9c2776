#include "layouts/matrix.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/error.hpp"
#include "common/fp16.hpp"
#include "common/strings.hpp"

namespace ternlab {

TernaryMatrix::TernaryMatrix(std::int64_t r, std::int64_t c)
    : rows(r), cols(c), codes(std::size_t(r * c), 0), scales(std::size_t(r * (c / kBlockK)), 0) {}

std::vector<std::int8_t> TernaryMatrix::weights_int8() const {
  std::vector<std::int8_t> w(codes.size());
  std::transform(codes.begin(), codes.end(), w.begin(), [](std::uint8_t u) { return std::int8_t(int(u) - 1); });
  return w;
}

std::vector<float> TernaryMatrix::scales_f32() const {
  std::vector<float> s(scales.size());
  std::transform(scales.begin(), scales.end(), s.begin(), fp16_to_float);
  return s;
}

void check_shape(const LayoutInfo& layout, std::int64_t rows, std::int64_t cols, const std::string& what) {
  if (rows <= 0 || cols <= 0) fail(what, ": shape ", rows, " x ", cols, " is empty or negative");
  if (cols % layout.k != 0)
    fail(what, ": ", cols, " columns is not a whole number of ", layout.k, "-weight blocks (layout ", layout.name,
         ")");
  if (rows % layout.rows != 0)
    fail(what, ": ", rows, " rows cannot be packed as ", layout.name, ", whose blocks hold ", layout.rows,
         " rows; the row count must be a multiple of ", layout.rows);
}

std::uint8_t encode_trits(const std::uint8_t* digits, int n_digits) {
  int q = 0;
  for (int n = 0; n < 5; ++n) q = q * 3 + (n < n_digits ? digits[n] : 0);
  return std::uint8_t((256 * q + 242) / 243);
}

int decode_trit(std::uint8_t byte, int n) {
  static constexpr int pow3[5] = {1, 3, 9, 27, 81};
  const std::uint8_t v = std::uint8_t(byte * pow3[n]);
  return (v * 3) >> 8;
}

std::uint8_t encode_digits(Code code, const std::uint8_t* digits) {
  if (code == Code::base3) return encode_trits(digits, 5);
  if (code != Code::base3_banded) fail("encode_digits: not a base-3 code");
  return std::uint8_t(84 * digits[0] + ((digits[1] * 3 + digits[2]) * 3 + digits[3]) * 3 + digits[4]);
}

int decode_digit(Code code, std::uint8_t byte, int n) {
  if (code == Code::base3) return decode_trit(byte, n);
  if (code != Code::base3_banded) fail("decode_digit: not a base-3 code");
  const int top = byte / 84;
  if (n == 0) return top;
  static constexpr int pow3[5] = {0, 27, 9, 3, 1};
  return (byte - 84 * top) / pow3[n] % 3;
}

const std::array<std::uint8_t, 256>& banded_to_base3() {
  static const std::array<std::uint8_t, 256> table = [] {
    std::array<std::uint8_t, 256> t{};
    for (int b = 0; b < 256; ++b) {
      if (!banded_writes(b)) continue;
      std::uint8_t d[5];
      for (int n = 0; n < 5; ++n) d[n] = std::uint8_t(decode_digit(Code::base3_banded, std::uint8_t(b), n));
      t[std::size_t(b)] = encode_trits(d, 5);
    }
    return t;
  }();
  return table;
}

void encode_block(const LayoutInfo& L, const std::uint8_t* codes, const std::uint16_t* scales, std::uint8_t* out) {
  const int nb = L.block_bytes();
  std::memset(out, 0, std::size_t(nb));
  for (int j = 0; j < L.rows * L.scales_per_row(); ++j) {
    std::uint8_t* at = out + L.scale_offset(j / L.scales_per_row(), j % L.scales_per_row());
    if (L.scale_format() == ScaleFormat::fp16) {
      std::memcpy(at, &scales[j], 2);
      continue;
    }
    const EncodedScale e = encode_scale_nearest(L.scale_format(), fp16_to_float(scales[j]));
    std::memcpy(at, e.bytes, std::size_t(L.scale_bytes()));
  }
  const int cells = L.rows * L.k;
  if (L.code == Code::two_bit) {
    for (int i = 0; i < cells; ++i) {
      const Loc l = L.placement[i];
      out[l.byte] = std::uint8_t(out[l.byte] | (codes[i] & 3) << (2 * l.slot));
    }
    return;
  }
  // Base-3: gather each byte's digits first, then encode the byte once.
  std::uint8_t digits[kMaxBlockBytes][5] = {};
  std::uint8_t count[kMaxBlockBytes] = {};
  for (int i = 0; i < cells; ++i) {
    const Loc l = L.placement[i];
    digits[l.byte][l.slot] = codes[i];
    count[l.byte] = std::uint8_t(std::max<int>(count[l.byte], l.slot + 1));
  }
  for (int b = 0; b < nb; ++b)
    if (count[b]) out[b] = encode_digits(L.code, digits[b]);
}

void decode_block(const LayoutInfo& L, const std::uint8_t* in, std::uint8_t* codes, std::uint16_t* scales) {
  for (int j = 0; j < L.rows * L.scales_per_row(); ++j) {
    const int r = j / L.scales_per_row(), g = j % L.scales_per_row();
    if (L.scale_format() == ScaleFormat::fp16)
      std::memcpy(&scales[j], in + L.scale_offset(r, g), 2);
    else
      scales[j] = float_to_fp16(L.scale(in, r, g));
  }
  const int cells = L.rows * L.k;
  if (L.code == Code::two_bit) {
    for (int i = 0; i < cells; ++i) codes[i] = (in[L.placement[i].byte] >> (2 * L.placement[i].slot)) & 3;
  } else {
    for (int i = 0; i < cells; ++i)
      codes[i] = std::uint8_t(decode_digit(L.code, in[L.placement[i].byte], L.placement[i].slot));
  }
}

namespace {

// Throws unless the fp16 scale `bits` is finite and exactly a value of L's scale format; `where()`
// names the scale, and is only called to say so in the error (a model's pack checks every scale).
template <class Where>
void check_scale(const LayoutInfo& L, std::uint16_t bits, const std::string& what, const Where& where) {
  if (!fp16_is_finite(bits))
    fail(what, ": ", where(), " has a non-finite scale (fp16 bits 0x", std::hex, bits, ")");
  if (L.scale_format() == ScaleFormat::fp16) return;
  const float v = fp16_to_float(bits);
  if (!scale_representable(L.scale_format(), v))
    fail(what, ": ", where(), " has scale ", v, ", which ", L.name, "'s ", scale_format_name(L.scale_format()),
         " scales cannot represent",
         L.scale_format() == ScaleFormat::e8m0 && !(v > 0) ? " (e8m0 holds positive powers of two only)" : "",
         "; an exact transcode refuses to round it (requantise rounds it, lossily, to ",
         encode_scale_nearest(L.scale_format(), v).value, ")");
}

// Checks a row group's codes before they are written into `L`, naming the first bad weight.
void check_codes(const LayoutInfo& L, const std::uint8_t* codes, std::int64_t row0, std::int64_t block,
                 const std::string& what) {
  for (int i = 0; i < L.rows * L.k; ++i) {
    if (codes[i] > 3) fail(what, ": code ", int(codes[i]), " at row ", row0 + i / L.k, " is not a 2-bit code");
    if (codes[i] == 3 && is_base3(L.code))
      fail(what, ": row ", row0 + i / L.k, " weight ", block * L.k + i % L.k,
           " holds 2-bit code 3 (+2 d), which the base-3 layout ", L.name, " cannot represent");
  }
}

// "row R block B" of a layout's block, with the scale's weights where a block holds several.
std::string where(const LayoutInfo& L, std::int64_t row, std::int64_t block, std::int64_t k0) {
  return cat("row ", row, " block ", block,
             L.scale_group() == L.k ? std::string() : cat(" (weights ", k0, "..", k0 + L.scale_group() - 1, ")"));
}

// The one fp16 scale of row `row`'s weights [k0, k0 + n) in the layout-free form: the 128-weight
// scales it spans must all be equal (an exact pack never merges two scales into one).
std::uint16_t merged_scale(const TernaryMatrix& m, const LayoutInfo& L, std::int64_t row, std::int64_t k0,
                           std::int64_t n, const std::string& what) {
  const std::uint16_t s = m.scale_bits(row, k0 / kBlockK);
  for (std::int64_t b = k0 / kBlockK + 1; b <= (k0 + n - 1) / kBlockK; ++b)
    if (m.scale_bits(row, b) != s)
      fail(what, ": row ", row, " weights ", k0, "..", k0 + n - 1, " share one scale in ", L.name, " (",
           L.scale_group(), "-weight groups), but their 128-weight blocks ", k0 / kBlockK, " and ", b,
           " have different scales ", fp16_to_float(s), " and ", fp16_to_float(m.scale_bits(row, b)),
           "; an exact transcode refuses to merge them (requantise merges them, lossily)");
  return s;
}

}  // namespace

PackedMatrix pack(const TernaryMatrix& m, const LayoutInfo& L, const std::string& what) {
  check_shape(L, m.rows, m.cols, what);
  if (m.cols % kBlockK != 0 || m.codes.size() != std::size_t(m.rows * m.cols) ||
      m.scales.size() != std::size_t(m.rows * m.blocks_per_row()))
    fail(what, ": code/scale arrays do not match the shape ", m.rows, " x ", m.cols);
  PackedMatrix p{&L, m.rows, m.cols, {}};
  p.bytes.resize(p.blocks_bytes() + std::size_t(L.facts.tail_bytes));
  if (L.per_tensor_scale()) {
    const std::uint16_t s = m.scales[0];
    for (std::size_t j = 1; j < m.scales.size(); ++j)
      if (m.scales[j] != s)
        fail(what, ": ", L.name, " holds one scale for the whole tensor, but row ", std::int64_t(j) / m.blocks_per_row(),
             " block ", std::int64_t(j) % m.blocks_per_row(), " has scale ", fp16_to_float(m.scales[j]),
             " where row 0 block 0 has ", fp16_to_float(s),
             "; an exact transcode refuses to merge them (requantise merges them, lossily)");
    check_scale(L, s, what, [] { return std::string("the per-tensor scale"); });
    const EncodedScale e = encode_scale_nearest(L.scale_format(), fp16_to_float(s));
    std::memcpy(p.bytes.data() + p.blocks_bytes() + L.scale_offset(0), e.bytes, std::size_t(L.scale_bytes()));
  }
  const int spr = L.scales_per_row(), group = L.scale_group();
  std::vector<std::uint8_t> codes(std::size_t(L.rows * L.k));
  std::vector<std::uint16_t> scales(std::size_t(L.rows * spr));
  for (std::int64_t g = 0; g < p.row_groups(); ++g)
    for (std::int64_t i = 0; i < p.blocks_per_row(); ++i) {
      for (int r = 0; r < L.rows; ++r) {
        const std::int64_t row = g * L.rows + r;
        std::memcpy(&codes[std::size_t(r * L.k)], &m.codes[std::size_t(row * m.cols + i * L.k)], std::size_t(L.k));
        for (int j = 0; j < spr; ++j) {
          const std::int64_t k0 = i * L.k + j * group;
          scales[std::size_t(r * spr + j)] = merged_scale(m, L, row, k0, group, what);
          check_scale(L, scales[std::size_t(r * spr + j)], what, [&] { return where(L, row, i, k0); });
        }
      }
      check_codes(L, codes.data(), g * L.rows, i, what);
      encode_block(L, codes.data(), scales.data(), p.block(g, i));
    }
  return p;
}

TernaryMatrix unpack(const PackedMatrix& p) {
  const LayoutInfo& L = *p.layout;
  const int spr = L.scales_per_row(), group = L.scale_group();
  if (p.bytes.size() != p.blocks_bytes() + std::size_t(L.facts.tail_bytes))
    fail(L.name, " matrix: ", p.bytes.size(), " bytes, but ", p.rows, " x ", p.cols, " takes ",
         p.blocks_bytes() + std::size_t(L.facts.tail_bytes));
  // Scales in another format than fp16 must come back exactly (e8m0, bf16 and fp32 reach beyond fp16).
  const auto to_fp16 = [&](float v, std::int64_t row, std::int64_t block, std::int64_t k0) {
    const std::uint16_t h = float_to_fp16(v);
    if (!std::isfinite(v) || fp16_to_float(h) != v)
      fail(L.name, " matrix: ", L.per_tensor_scale() ? std::string("the per-tensor scale") : where(L, row, block, k0), " has ",
           scale_format_name(L.scale_format()), " scale ", v, ", which the layout-free form's fp16 scales cannot hold");
    return h;
  };
  TernaryMatrix m(p.rows, p.cols);
  if (L.per_tensor_scale()) std::fill(m.scales.begin(), m.scales.end(), to_fp16(p.scale(0, 0, 0), 0, 0, 0));
  std::vector<std::uint8_t> codes(std::size_t(L.rows * L.k));
  std::vector<std::uint16_t> scales(std::size_t(L.rows * spr));
  for (std::int64_t g = 0; g < p.row_groups(); ++g)
    for (std::int64_t i = 0; i < p.blocks_per_row(); ++i) {
      decode_block(L, p.block(g, i), codes.data(), scales.data());
      for (int r = 0; r < L.rows; ++r) {
        const std::int64_t row = g * L.rows + r;
        std::memcpy(&m.codes[std::size_t(row * m.cols + i * L.k)], &codes[std::size_t(r * L.k)], std::size_t(L.k));
        for (int j = 0; j < spr; ++j) {
          const std::int64_t k0 = i * L.k + j * group;
          const std::uint16_t h = L.scale_format() == ScaleFormat::fp16
                                      ? scales[std::size_t(r * spr + j)]
                                      : to_fp16(L.scale(p.block(g, i), r, j), row, i, k0);
          std::uint16_t& dst = m.scales[std::size_t(row * m.blocks_per_row() + k0 / kBlockK)];
          // Groups narrower than 128 weights: the layout-free form holds one scale per 128.
          if (group < kBlockK && k0 % kBlockK != 0 && dst != h)
            fail(L.name, " matrix: row ", row, " weights ", k0 - group, "..", k0 + group - 1, " have the ", group,
                 "-weight scales ", fp16_to_float(dst), " and ", fp16_to_float(h),
                 ", which the layout-free form's one scale per 128 weights cannot hold");
          for (std::int64_t b = k0 / kBlockK; b <= (k0 + group - 1) / kBlockK; ++b)
            m.scales[std::size_t(row * m.blocks_per_row() + b)] = h;
        }
      }
    }
  return m;
}

PackedMatrix transcode(const PackedMatrix& p, const LayoutInfo& to, const std::string& what) {
  return pack(unpack(p), to, what);
}

void accumulate(ScaleRequantisation& all, const ScaleRequantisation& one, const std::string& name) {
  const double mean_sum = all.mean_rel_error * double(all.scales) + one.mean_rel_error * double(one.scales);
  if (one.max_rel_error > all.max_rel_error) {
    all.max_rel_error = one.max_rel_error;
    all.worst = cat(name, " ", one.worst);
  }
  all.scales += one.scales;
  all.changed += one.changed;
  all.weights += one.weights;
  all.weights_changed += one.weights_changed;
  all.max_abs_weight_error = std::max(all.max_abs_weight_error, one.max_abs_weight_error);
  all.mean_rel_error = all.scales ? mean_sum / double(all.scales) : 0.0;
}

TernaryMatrix requantise_scales(const TernaryMatrix& m, ScaleFormat f, const std::string& what,
                                ScaleRequantisation* report) {
  TernaryMatrix out = m;
  ScaleRequantisation rep;
  double sum = 0;
  for (std::size_t j = 0; j < m.scales.size(); ++j) {
    const std::int64_t row = std::int64_t(j) / m.blocks_per_row(), block = std::int64_t(j) % m.blocks_per_row();
    const float v = fp16_to_float(m.scales[j]);
    if (!std::isfinite(v)) fail(what, ": row ", row, " block ", block, " has a non-finite scale");
    if (f == ScaleFormat::e8m0 && v < 0)
      fail(what, ": row ", row, " block ", block, " has negative scale ", v, ", which e8m0 (no sign) cannot hold");
    const float q = encode_scale_nearest(f, v).value;
    const std::uint16_t h = float_to_fp16(q);
    if (fp16_to_float(h) != q)
      fail(what, ": row ", row, " block ", block, " scale ", v, " rounds to ", scale_format_name(f), " value ", q,
           ", outside the fp16 range of the layout-free form");
    out.scales[j] = h;
    ++rep.scales;
    if (q == v) continue;
    ++rep.changed;
    const double rel = std::fabs(double(q) - double(v)) / std::fabs(double(v));
    sum += rel;
    if (rel > rep.max_rel_error) {
      rep.max_rel_error = rel;
      rep.worst = cat("row ", row, " block ", block, ": ", v, " -> ", q);
    }
  }
  rep.mean_rel_error = rep.scales ? sum / double(rep.scales) : 0.0;
  if (report) *report = rep;
  return out;
}

namespace {

// The scales under each of `to`'s scales merged into the largest in magnitude, and the weights
// re-ternarised against it (see requantise).
TernaryMatrix merge_scale_groups(const TernaryMatrix& m, const LayoutInfo& to, ScaleRequantisation& rep) {
  const std::int64_t span = to.per_tensor_scale() ? m.rows * m.blocks_per_row() : to.scale_group() / kBlockK;
  if (span <= 1) return m;
  TernaryMatrix out = m;
  const std::int64_t n = std::int64_t(m.scales.size());
  for (std::int64_t j0 = 0; j0 < n; j0 += span) {
    float big = 0;
    std::uint16_t big_bits = m.scales[std::size_t(j0)];
    for (std::int64_t j = j0; j < j0 + span; ++j)
      if (std::fabs(fp16_to_float(m.scales[std::size_t(j)])) > std::fabs(big))
        big = fp16_to_float(m.scales[std::size_t(j)]), big_bits = m.scales[std::size_t(j)];
    for (std::int64_t j = j0; j < j0 + span; ++j) {
      const std::int64_t row = j / m.blocks_per_row(), b = j % m.blocks_per_row();
      const float old = fp16_to_float(m.scales[std::size_t(j)]);
      out.scales[std::size_t(j)] = big_bits;
      for (std::int64_t k = b * kBlockK; k < b * kBlockK + kBlockK; ++k) {
        const std::size_t at = std::size_t(row * m.cols + k);
        const int w = int(m.codes[at]) - 1;
        const int w2 = big == 0 ? 0 : std::clamp(int(std::lround(double(w) * old / big)), -1, w > 1 ? 2 : 1);
        out.codes[at] = std::uint8_t(w2 + 1);
        ++rep.weights;
        rep.weights_changed += w2 != w;
        rep.max_abs_weight_error = std::max(rep.max_abs_weight_error, std::fabs(double(w2) * big - double(w) * old));
      }
    }
  }
  return out;
}

// Every 128-weight scale of `before` against `after`: how many moved, by how much (relative), the worst.
ScaleRequantisation scale_changes(const TernaryMatrix& before, const TernaryMatrix& after) {
  ScaleRequantisation rep;
  double sum = 0;
  for (std::size_t j = 0; j < before.scales.size(); ++j) {
    ++rep.scales;
    const float v = fp16_to_float(before.scales[j]), q = fp16_to_float(after.scales[j]);
    if (q == v) continue;
    ++rep.changed;
    const double rel = v == 0 ? 1.0 : std::fabs(double(q) - double(v)) / std::fabs(double(v));
    sum += rel;
    if (rel > rep.max_rel_error) {
      rep.max_rel_error = rel;
      rep.worst = cat("row ", std::int64_t(j) / before.blocks_per_row(), " block ", std::int64_t(j) % before.blocks_per_row(),
                      ": ", v, " -> ", q);
    }
  }
  rep.mean_rel_error = rep.scales ? sum / double(rep.scales) : 0.0;
  return rep;
}

}  // namespace

PackedMatrix requantise(const PackedMatrix& p, const LayoutInfo& to, const std::string& what,
                        ScaleRequantisation* report) {
  ScaleRequantisation merged;
  const TernaryMatrix source = unpack(p);
  const TernaryMatrix m = merge_scale_groups(source, to, merged);
  const TernaryMatrix final_form = requantise_scales(m, to.scale_format(), what);
  PackedMatrix out = pack(final_form, to, what);
  // Scales moved by the merge and by the format's rounding alike, each against the file's own.
  ScaleRequantisation rep = scale_changes(source, final_form);
  rep.weights = merged.weights;
  rep.weights_changed = merged.weights_changed;
  rep.max_abs_weight_error = merged.max_abs_weight_error;
  if (report) *report = rep;
  return out;
}

PackedMatrix adopt_bytes(const LayoutInfo& L, std::int64_t rows, std::int64_t cols, const std::uint8_t* data,
                         std::size_t size, const std::string& what) {
  check_shape(L, rows, cols, what);
  PackedMatrix p{&L, rows, cols, {}};
  const std::size_t want = p.blocks_bytes() + std::size_t(L.facts.tail_bytes);
  if (size != want)
    fail(what, ": ", size, " bytes given, but ", rows, " x ", cols, " in ", L.name, " takes ", want, " bytes",
         L.per_tensor_scale() ? cat(" (", p.blocks_bytes(), " of blocks, then the ", L.facts.tail_bytes, "-byte tail holding the per-tensor scale)") : "");
  p.bytes.assign(data, data + size);
  if (L.per_tensor_scale() && !std::isfinite(p.scale(0, 0, 0)))
    fail(what, ": the per-tensor ", scale_format_name(L.scale_format()), " scale of ", L.name, " is not finite (", p.scale(0, 0, 0), ")");
  return p;
}

TernaryMatrix quantize_ternary(const float* x, std::int64_t rows, std::int64_t cols, const std::string& what) {
  if (cols % kBlockK != 0) fail(what, ": ", cols, " columns is not a whole number of 128-weight blocks");
  TernaryMatrix m(rows, cols);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t b = 0; b < m.blocks_per_row(); ++b) {
      const float* xb = x + r * cols + b * kBlockK;
      float amax = 0.0f;
      for (int j = 0; j < kBlockK; ++j) {
        if (!std::isfinite(xb[j])) fail(what, ": non-finite value at row ", r, " column ", b * kBlockK + j);
        amax = std::max(amax, std::fabs(xb[j]));
      }
      const float id = amax > 0 ? 1.0f / amax : 0.0f;
      m.scales[std::size_t(r * m.blocks_per_row() + b)] = float_to_fp16(amax);
      for (int j = 0; j < kBlockK; ++j) {
        const int q = int(std::round(xb[j] * id)) + 1;
        m.codes[std::size_t(r * cols + b * kBlockK + j)] = std::uint8_t(std::clamp(q, 0, 3));
      }
    }
  return m;
}

}  // namespace ternlab
