// The trained model's matmuls on other weight codes (model/weight_codes.hpp, docs/lattice.md): the
// committed latent float weights ternarise back to the committed ternary file; the model on Λ24
// records (the committed encoding cache) gives the logits of the same model on the decoded floats,
// in every record layout; bad float files and non-finite weights fail naming file, tensor and shape
// or block and field.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "common/fp16.hpp"
#include "lattice/quantise.hpp"
#include "layouts/records/all.hpp"
#include "model/gguf.hpp"
#include "model/model.hpp"
#include "model/tokenizer.hpp"
#include "model/weight_codes.hpp"
#include "tests/support.hpp"

using namespace ternlab;
using namespace ternlab::model;

namespace {

std::string trained(const std::string& name) { return std::string(TERNLAB_MODELS_DIR) + "/bonsai-kjv-py/" + name; }
const std::string kModel = trained("bonsai-kjv-py.gguf");
const std::string kFloat = trained("bonsai-kjv-py-float.gguf");
constexpr char kScratch[] = "ternlab-weight-codes";

// Writes F32 tensors (name, rows, cols, values) as a GGUF file.
void write_floats(const std::string& path, const std::vector<std::tuple<std::string, std::int64_t, std::int64_t,
                                                                        std::vector<float>>>& ts) {
  gguf::Writer w;
  w.set("general.name", gguf::Value::str("test"));
  for (const auto& [name, rows, cols, v] : ts) w.add_tensor(name, gguf::TensorType::f32, {std::uint64_t(cols), std::uint64_t(rows)});
  w.write(path, [&](std::size_t i, const gguf::TensorInfo&, std::span<std::uint8_t> out) {
    std::memcpy(out.data(), std::get<3>(ts[i]).data(), out.size());
  });
}

std::vector<float> logits_of(const std::string& model, const LoadOptions& o, const std::vector<std::int32_t>& ids) {
  auto m = Model::load(model, o);
  Session s = m->new_session();
  return m->forward(s, ids, true);
}

}  // namespace

TEST_SUITE("weight-codes") {
  TEST_CASE("the latent float weights ternarise to the committed ternary weights, trit for trit and scale for scale") {
    // The trainer's quantiser (tools/train/train.py quantise_export): per 128 weights the absmean,
    // clamped to 1e-5 and rounded to fp16; trits round(clamp(w / scale, -1, 1)), halves to even.
    const auto tern = gguf::File::open(kModel, gguf::LoadMode::mmap);
    const auto flt = gguf::File::open(kFloat, gguf::LoadMode::mmap);
    const LayoutInfo& pq2 = find_layout("pq2_0");
    int matrices = 0;
    std::int64_t rounding_ties = 0;
    for (const gguf::TensorInfo& t : tern.tensors) {
      if (t.tensor_type() != gguf::TensorType::pq2_0) continue;
      ++matrices;
      const auto rows = std::int64_t(t.ne[1]), cols = std::int64_t(t.ne[0]);
      const auto w = read_float_matrix(flt, kFloat, t.name, rows, cols);
      const auto bytes = tern.data(t);
      const PackedMatrix p = adopt_bytes(pq2, rows, cols, bytes.data(), bytes.size(), t.name);
      std::int64_t trits_differ = 0, scales_differ = 0;
      std::uint8_t codes[kBlockK];
      std::uint16_t stored;
      for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t b = 0; b < cols / kBlockK; ++b) {
          decode_block(pq2, p.block(r, b), codes, &stored);
          const float* x = w.data() + r * cols + b * kBlockK;
          double sum = 0;
          for (int j = 0; j < kBlockK; ++j) sum += std::fabs(x[j]);
          const double mean = std::max(sum / kBlockK, 1e-5);
          const std::uint16_t h = float_to_fp16(float(mean));
          if (h != stored) {
            // The trainer sums in f32 in torch's order; where the mean lies within f32 rounding of
            // the midpoint between two fp16 values, that order picks the neighbour. Anything else
            // is a real difference.
            const double mid = 0.5 * (double(fp16_to_float(h)) + double(fp16_to_float(stored)));
            const bool neighbours = std::abs(int(h) - int(stored)) == 1;
            if (neighbours && std::fabs(mean - mid) <= 1e-6 * mean)
              ++rounding_ties;
            else
              ++scales_differ;
          }
          const float s = fp16_to_float(stored);
          for (int j = 0; j < kBlockK; ++j)
            trits_differ += int(std::nearbyint(std::clamp(x[j] / s, -1.0f, 1.0f))) != int(codes[j]) - 1;
        }
      INFO(t.name);
      CHECK(trits_differ == 0);
      CHECK(scales_differ == 0);
    }
    INFO("scales at an fp16 rounding tie: ", rounding_ties);
    CHECK(rounding_ties <= 4);  // of 21,504 scales; one here
    CHECK(matrices == 15);  // 14 matmuls and the embedding table
  }

  TEST_CASE("Λ24 records give the decoded floats' logits, and every record layout the same logits") {
    const auto cache = read_lattice_cache(default_lattice_cache(kFloat));
    REQUIRE(cache.source_hash == file_fnv1a64(kFloat));  // the committed cache is this float file's encoding
    REQUIRE(cache.matrices.size() == 15);
    // The reference: every matrix decoded to f32 (lattice::decode_matrix) and run by the float path.
    std::vector<std::tuple<std::string, std::int64_t, std::int64_t, std::vector<float>>> decoded;
    for (const auto& [name, m] : cache.matrices) decoded.emplace_back(name, m.rows, m.cols, lattice::decode_matrix(m));
    const std::string ref = (test::scratch_folder<kScratch>() / "decoded.gguf").string();
    write_floats(ref, decoded);

    const auto tern = gguf::File::open(kModel, gguf::LoadMode::mmap);
    const auto ids = Tokenizer::from_gguf(tern).encode("In the beginning God created");
    LoadOptions fo;
    fo.weights = WeightCode::float32, fo.float_weights = ref;
    const auto want = logits_of(kModel, fo, ids);
    double scale = 0;
    for (float v : want) scale = std::max(scale, double(std::fabs(v)));
    REQUIRE(scale > 1);

    std::vector<float> first;
    for (const records::RecordSpec* spec : records::kRecordLayouts) {
      LoadOptions lo;
      lo.weights = WeightCode::lattice, lo.float_weights = kFloat, lo.record = std::string(spec->name);
      lo.encode_progress = [](const std::string& name, std::int64_t, std::int64_t) {
        FAIL("matrix ", name, " was encoded: the committed cache should hold it");
      };
      auto m = Model::load(kModel, lo);
      CHECK(m->lattice_weights().from_cache == 15);
      Session s = m->new_session();
      const auto got = m->forward(s, ids, true);
      REQUIRE(got.size() == want.size());
      // Tolerance: the record kernel multiplies f32 row scale x (centroid x unit value, premultiplied
      // in f32) where the reference rounds their product once, and sums in another order; each
      // logit is therefore off by a few f32 ulps of the partial sums, carried through two layers.
      // Measured: 2e-5 of 24 (8e-7 relative); 1e-5 of the largest logit leaves 10x for other CPUs'
      // kernels. Both paths round every matmul's input to q8_K, so an activation within that
      // difference of a rounding boundary goes one quantum apart, and moves its position's logits
      // (a flip late in the pass, only its own) by up to a few hundredths: at most half of the
      // positions, never the first, may go that far, and none past 0.5% of the largest logit. One
      // wrong block moves every position after it.
      // Every layout decodes to the same lattice points; Planes12x and Golay70 add their exception
      // blocks after the main stream, so only the summation order differs between layouts.
      if (first.empty()) first = got;
      const std::size_t V = got.size() / ids.size();
      double worst = 0, apart = 0;
      std::size_t worst_far = 0, apart_far = 0;
      for (std::size_t t = 0; t < ids.size(); ++t) {
        double w = 0, a = 0;
        for (std::size_t v = t * V; v < (t + 1) * V; ++v) {
          w = std::max(w, double(std::fabs(got[v] - want[v])));
          a = std::max(a, double(std::fabs(got[v] - first[v])));
        }
        worst = std::max(worst, w), apart = std::max(apart, a);
        worst_far += w > 1e-5 * scale, apart_far += a > 1e-5 * scale;
        if (t == 0) CHECK(std::max(w, a) <= 1e-5 * scale);
      }
      INFO(spec->name, ": max |logit difference| ", worst, " from the decoded floats (", worst_far, " of ", ids.size(),
           " positions past 1e-5 of the largest), ", apart, " from slot32 (", apart_far, "); max |logit| ", scale);
      CHECK(worst <= 5e-3 * scale);
      CHECK(apart <= 5e-3 * scale);
      CHECK(2 * worst_far <= ids.size());
      CHECK(2 * apart_far <= ids.size());
    }
  }

  TEST_CASE("the encoder gives the same encoding on the thread pool as on one thread") {
    std::vector<float> w(3 * 29);
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = float(std::sin(0.7 * double(i) + 0.3));
    ThreadPool pool(2);
    const auto one = lattice::encode_matrix(w, 3, 29, 5, "w");
    std::int64_t last = 0;
    const auto par = encode_matrix_parallel(w, 3, 29, "w", pool, [&](std::int64_t done, std::int64_t) { last = done; });
    CHECK(last == 3);
    CHECK(par.index == one.index);
    CHECK(par.gain == one.gain);
    CHECK(par.row_scale == one.row_scale);
    CHECK(par.centroid == one.centroid);
    CHECK(par.tail_values == one.tail_values);
  }

  TEST_CASE("bad float files: the file, the tensor and both shapes; non-finite weights: tensor, block and field") {
    const auto dir = test::scratch_folder<kScratch>();
    const std::string wrong = (dir / "wrong-shape.gguf").string();
    write_floats(wrong, {{"token_embd.weight", 1024, 255, std::vector<float>(1024 * 255, 0.5f)}});
    for (WeightCode code : {WeightCode::float32, WeightCode::lattice}) {
      LoadOptions o;
      o.weights = code, o.float_weights = wrong, o.lattice_cache = "none";
      test::check_error([&] { Model::load(kModel, o); }, wrong, "token_embd.weight", "1024 x 255", "1024 x 256");
    }
    const std::string missing = (dir / "missing.gguf").string();
    write_floats(missing, {{"token_embd.weight", 1024, 256, std::vector<float>(1024 * 256, 0.5f)}});
    LoadOptions o;
    o.weights = WeightCode::float32, o.float_weights = missing;
    test::check_error([&] { Model::load(kModel, o); }, missing, "output.weight", "missing", "1024 x 256");

    std::vector<float> nan(1024 * 256, 0.5f);
    nan[std::size_t(2 * 256 + 30)] = std::numeric_limits<float>::quiet_NaN();  // row 2, block 1
    const std::string bad = (dir / "nan.gguf").string();
    write_floats(bad, {{"token_embd.weight", 1024, 256, nan}});
    o.weights = WeightCode::lattice, o.float_weights = bad, o.lattice_cache = "none";
    test::check_error([&] { Model::load(kModel, o); }, "token_embd.weight", "row 2", "block 21", "field weight");
    o.record = "planes15";
    test::check_error([&] { Model::load(kModel, o); }, "planes15", "planes14");
  }
}
