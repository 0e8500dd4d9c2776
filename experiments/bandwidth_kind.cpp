// The bandwidth kind: streaming reads over a buffer per thread count, the memory read ceiling
// itself as arms.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <ranges>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

#include "common/strings.hpp"
#include "common/table.hpp"
#include "experiments/arms.hpp"
#include "experiments/gemv_arms.hpp"
#include "experiments/kinds.hpp"
#include "experiments/matrix_kinds.hpp"
#include "experiments/matrix_kinds.hpp"
#include "experiments/measure.hpp"
#include "experiments/memory.hpp"
#include "experiments/run_context.hpp"
#include "kernels/catalog.hpp"
#include "kernels/cpu.hpp"
#include "kernels/dispatch.hpp"
#include "kernels/oracle.hpp"
#include "kernels/peers/i2s.hpp"
#include "kernels/peers/peers.hpp"
#include "kernels/peers/tq1.hpp"
#include "kernels/peers/tq2.hpp"
#include "kernels/testdata.hpp"
#include "layouts/registry.hpp"

namespace ternlab::experiments {

namespace {

using namespace kernel_kind;

constexpr IntegerKey buffer_mib{"buffer_mib", 64, 1, 1 << 20};  // the buffer the arms stream over

std::vector<KeySpec> bandwidth_keys() {
  std::vector<KeySpec> k = common_keys();
  for (const KeySpec& m : matrix_keys())
    if (m.path.rfind("shape.", 0) != 0 && m.path != "arm.layout" && m.path != "arm.kernel" && m.path != "control" &&
        m.path != "weights" && m.path != "weight_copies")
      k.push_back(m);
  k.push_back(buffer_mib.spec("buffer the arms stream over", " MiB"));
  return k;
}

void validate_bandwidth(const RunSpec& run) {
  check_common(run);
  buffer_mib(run);
}

RunReport run_bandwidth(const RunSpec& run, RunContext& ctx) {
  const std::int64_t bytes = buffer_mib(run) << 20;
  auto buffer = std::make_shared<MemoryCeiling>(bytes);
  std::vector<ArmSetup> arms;
  for (const ArmSpec& a : run.arms) {
    const int threads = arm_threads(run, a);
    const bool spawn = arm_spawn(a);
    ArmSetup s;
    s.name = a.name;
    s.kernel = "streaming sum";
    s.threads = threads;
    s.options = spawn ? "spawn" : "";
    s.bytes = double(buffer->bytes());
    if (!spawn) {
      ThreadPool* pool = &ctx.pools.get(threads);
      s.call = [=] { buffer->sum(*pool); };
      s.verify = [=] {
        const std::uint64_t got = buffer->sum(*pool);
        return got == buffer->expected_sum() ? std::string() : cat("sum ", got, " != ", buffer->expected_sum());
      };
    } else {
      // A fresh pool per call: thread creation and teardown are inside the timed call.
      s.call = [=] {
        ThreadPool fresh(threads);
        buffer->sum(fresh);
      };
      s.verify = [=] {
        ThreadPool fresh(threads);
        const std::uint64_t got = buffer->sum(fresh);
        return got == buffer->expected_sum() ? std::string() : cat("sum ", got, " != ", buffer->expected_sum());
      };
    }
    arms.push_back(std::move(s));
  }
  const MeasureOptions opt = measure_options(run);
  const TimingResult r = measure_arms(std::move(arms), opt, ctx.pools, ctx.progress);
  RunReport rep = report_timing(run, r);
  return rep;
}

std::int64_t bandwidth_units(const RunSpec& run) {
  MeasureOptions o;
  o.rounds = int(key::rounds(5)(run));
  o.warmup = int(key::warmup(1)(run));
  return measure_units(run.arms.size(), o);
}

}  // namespace

void register_bandwidth_kind() {
  KindInfo bandwidth{"bandwidth", "streaming reads over a buffer per thread count: the memory read ceiling as arms", bandwidth_keys(), {},
                     validate_bandwidth, run_bandwidth, bandwidth_units};
  bandwidth.small_overrides = timed_small_overrides({"buffer_mib=1"});
  register_kind(std::move(bandwidth));
}

}  // namespace ternlab::experiments
