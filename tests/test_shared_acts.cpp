// run_gemv's two-phase path: the activations prepared once by the calling thread and read by every
// thread of the pool. Built into the ThreadSanitizer run as well (scripts/build.sh tsan), where
// the pool's hand-off of that buffer must show no race.
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/catalog.hpp"
#include "kernels/dispatch.hpp"
#include "kernels/testdata.hpp"
#include "tests/support.hpp"

using namespace ternlab;

TEST_SUITE("shared-acts") {
  TEST_CASE("the shared activations give every thread count the one-thread bits, on every two-phase kernel") {
    int checked = 0;
    for (const LayoutInfo* L : all_layouts())
      for (const KernelVariant& k : kernels_for(*L)) {
        if (!k.phases) continue;
        CAPTURE(k.name());
        CAPTURE(L->name);
        const std::int64_t rows = test::whole_rows(*L, 64), cols = 1024;
        const PackedMatrix w = pack(make_weights(rows, cols, 5), *L);
        const Q8KBatch x = quantize_batch(make_float_activations(1, cols, 6).data(), 1, cols);
        std::vector<float> one(std::size_t(rows), NAN);
        k.gemv(w, x.row(0), one.data(), 0, w.row_groups());  // the one-phase form, on this thread
        for (int threads : {1, 2, 3}) {
          ThreadPool pool(threads);
          for (int call = 0; call < 3; ++call) {  // the buffer is reused across calls
            std::vector<float> y(std::size_t(rows), NAN);
            run_gemv(pool, k, w, x, y);
            CHECK(std::memcmp(y.data(), one.data(), y.size() * sizeof(float)) == 0);
          }
        }
        check_against_reference(w, k, one, x, rows);
        ++checked;
      }
    MESSAGE("two-phase kernels checked: ", checked);
#if defined(__x86_64__)
    if (isa_supported(Isa::avx2)) CHECK(checked >= 3);  // slot-mask, broadcast and unpack at least
#endif
  }

  TEST_CASE("a bound kernel handed another layout's matrix refuses it, naming both layouts") {
    const LayoutInfo& t2p = find_layout("t2p");
    const LayoutInfo& t2x4 = find_layout("t2x4");
    for (const KernelVariant& k : kernels_for(t2p)) {
      if (!k.phases || k.strategy != Strategy::slot_mask) continue;
      CAPTURE(k.name());
      const PackedMatrix w = pack(make_weights(8, 256, 1), t2x4);
      const Q8KBatch x = quantize_batch(make_float_activations(1, 256, 1).data(), 1, 256);
      std::vector<float> y(8);
      ThreadPool pool(2);
      test::check_error([&] { run_gemv(pool, k, w, x, y); }, "t2p", "t2x4");
    }
  }
}
