#include "layouts/matrix.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/error.hpp"
#include "common/fp16.hpp"

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

void encode_block(const LayoutInfo& L, const std::uint8_t* codes, const std::uint16_t* scales, std::uint8_t* out) {
  const int nb = L.block_bytes();
  std::memset(out, 0, std::size_t(nb));
  for (int r = 0; r < L.rows; ++r) {
    if (L.scale_format() == ScaleFormat::fp16) {
      std::memcpy(out + L.scale_offset(r), &scales[r], 2);
      continue;
    }
    const EncodedScale e = encode_scale_nearest(L.scale_format(), fp16_to_float(scales[r]));
    std::memcpy(out + L.scale_offset(r), e.bytes, std::size_t(L.scale_bytes()));
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
    if (count[b]) out[b] = encode_trits(digits[b], 5);
}

void decode_block(const LayoutInfo& L, const std::uint8_t* in, std::uint8_t* codes, std::uint16_t* scales) {
  for (int r = 0; r < L.rows; ++r) {
    if (L.scale_format() == ScaleFormat::fp16)
      std::memcpy(&scales[r], in + L.scale_offset(r), 2);
    else
      scales[r] = float_to_fp16(L.scale(in, r));
  }
  const int cells = L.rows * L.k;
  if (L.code == Code::two_bit) {
    for (int i = 0; i < cells; ++i) codes[i] = (in[L.placement[i].byte] >> (2 * L.placement[i].slot)) & 3;
  } else {
    for (int i = 0; i < cells; ++i) codes[i] = std::uint8_t(decode_trit(in[L.placement[i].byte], L.placement[i].slot));
  }
}

namespace {

// Checks a row group's content before it is written into `L`, naming the first bad weight/scale.
void check_block(const LayoutInfo& L, const std::uint8_t* codes, const std::uint16_t* scales, std::int64_t row0,
                 std::int64_t block, const std::string& what) {
  for (int r = 0; r < L.rows; ++r)
    if (!fp16_is_finite(scales[r]))
      fail(what, ": row ", row0 + r, " block ", block, " (weights ", block * kBlockK, "..", block * kBlockK + 127,
           ") has a non-finite scale (fp16 bits 0x", std::hex, scales[r], ")");
  if (L.scale_format() != ScaleFormat::fp16)
    for (int r = 0; r < L.rows; ++r) {
      const float v = fp16_to_float(scales[r]);
      if (!scale_representable(L.scale_format(), v))
        fail(what, ": row ", row0 + r, " block ", block, " has scale ", v, ", which ", L.name, "'s ",
             scale_format_name(L.scale_format()), " scales cannot represent",
             L.scale_format() == ScaleFormat::e8m0 && !(v > 0) ? " (e8m0 holds positive powers of two only)" : "",
             "; an exact transcode refuses to round it (requantise rounds it, lossily, to ",
             encode_scale_nearest(L.scale_format(), v).value, ")");
    }
  for (int i = 0; i < L.rows * L.k; ++i) {
    if (codes[i] > 3) fail(what, ": code ", int(codes[i]), " at row ", row0 + i / L.k, " is not a 2-bit code");
    if (codes[i] == 3 && L.code == Code::base3)
      fail(what, ": row ", row0 + i / L.k, " weight ", block * kBlockK + i % L.k,
           " holds 2-bit code 3 (+2 d), which the base-3 layout ", L.name, " cannot represent");
  }
}

}  // namespace

PackedMatrix pack(const TernaryMatrix& m, const LayoutInfo& L, const std::string& what) {
  check_shape(L, m.rows, m.cols, what);
  if (m.codes.size() != std::size_t(m.rows * m.cols) || m.scales.size() != std::size_t(m.rows * m.blocks_per_row()))
    fail(what, ": code/scale arrays do not match the shape ", m.rows, " x ", m.cols);
  PackedMatrix p{&L, m.rows, m.cols, {}};
  p.bytes.resize(std::size_t(p.row_groups() * p.blocks_per_row() * L.block_bytes()));
  std::vector<std::uint8_t> codes(std::size_t(L.rows * L.k));
  std::vector<std::uint16_t> scales(std::size_t(L.rows));
  for (std::int64_t g = 0; g < p.row_groups(); ++g)
    for (std::int64_t i = 0; i < p.blocks_per_row(); ++i) {
      for (int r = 0; r < L.rows; ++r) {
        const std::int64_t row = g * L.rows + r;
        std::memcpy(&codes[std::size_t(r * L.k)], &m.codes[std::size_t(row * m.cols + i * kBlockK)], std::size_t(L.k));
        scales[std::size_t(r)] = m.scale_bits(row, i);
      }
      check_block(L, codes.data(), scales.data(), g * L.rows, i, what);
      encode_block(L, codes.data(), scales.data(), p.block(g, i));
    }
  return p;
}

TernaryMatrix unpack(const PackedMatrix& p) {
  const LayoutInfo& L = *p.layout;
  // Scales in another format than fp16 must come back exactly (e8m0 and bf16 reach beyond fp16).
  if (L.scale_format() != ScaleFormat::fp16)
    for (std::int64_t g = 0; g < p.row_groups(); ++g)
      for (std::int64_t i = 0; i < p.blocks_per_row(); ++i)
        for (int r = 0; r < L.rows; ++r) {
          const float v = L.scale(p.block(g, i), r);
          if (!std::isfinite(v) || fp16_to_float(float_to_fp16(v)) != v)
            fail(L.name, " matrix: row ", g * L.rows + r, " block ", i, " has ", scale_format_name(L.scale_format()),
                 " scale ", v, ", which the layout-free form's fp16 scales cannot hold");
        }
  TernaryMatrix m(p.rows, p.cols);
  std::vector<std::uint8_t> codes(std::size_t(L.rows * L.k));
  std::vector<std::uint16_t> scales(std::size_t(L.rows));
  for (std::int64_t g = 0; g < p.row_groups(); ++g)
    for (std::int64_t i = 0; i < p.blocks_per_row(); ++i) {
      decode_block(L, p.block(g, i), codes.data(), scales.data());
      for (int r = 0; r < L.rows; ++r) {
        const std::int64_t row = g * L.rows + r;
        std::memcpy(&m.codes[std::size_t(row * m.cols + i * kBlockK)], &codes[std::size_t(r * L.k)], std::size_t(L.k));
        m.scales[std::size_t(row * m.blocks_per_row() + i)] = scales[std::size_t(r)];
      }
    }
  return m;
}

PackedMatrix transcode(const PackedMatrix& p, const LayoutInfo& to, const std::string& what) {
  return pack(unpack(p), to, what);
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

PackedMatrix requantise(const PackedMatrix& p, const LayoutInfo& to, const std::string& what,
                        ScaleRequantisation* report) {
  return pack(requantise_scales(unpack(p), to.scale_format(), what, report), to, what);
}

PackedMatrix adopt_bytes(const LayoutInfo& L, std::int64_t rows, std::int64_t cols, const std::uint8_t* data,
                         std::size_t size, const std::string& what) {
  check_shape(L, rows, cols, what);
  PackedMatrix p{&L, rows, cols, {}};
  const std::size_t want = std::size_t(p.row_groups() * p.blocks_per_row() * L.block_bytes());
  if (size != want)
    fail(what, ": ", size, " bytes given, but ", rows, " x ", cols, " in ", L.name, " takes ", want, " bytes");
  p.bytes.assign(data, data + size);
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
