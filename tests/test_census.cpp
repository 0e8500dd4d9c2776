// The instruction census reads loops back from machine code: on a probe loop written in assembly,
// whose instructions are known by construction, it must find exactly that loop and count each class;
// on every SIMD kernel of every layout it must find a multiply-accumulate loop; in the elementwise
// float ops of every vector-ops build, packed arithmetic. Of the loops that run: no call in any
// kernel's hot loop, and the walkthroughs' comparisons (docs/walkthroughs/02, 05, 09, docs/kernels.md)
// on every ISA this machine runs.
#include <doctest/doctest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "inspect/census.hpp"
#include "inspect/kernel_census.hpp"
#include "kernels/catalog.hpp"
#include "kernels/cpu.hpp"
#include "kernels/dispatch.hpp"
#include "kernels/targets/portable/portable.hpp"
#include "kernels/vector/vector_ops.hpp"
#include "layouts/registry.hpp"

using namespace ternlab;
using inspect::InsnClass;
using inspect::KernelOp;

namespace {

// Per 64 weights of the loop: every instruction.
double all_per64(const inspect::LoopCensus& c) {
  double sum = 0;
  for (InsnClass cls : inspect::kInsnClasses) sum += c.per64(cls);
  return sum;
}

// The gemv loop of the kernel named `kernel` ("slot-mask/avx2") of layout `layout`; nullopt where
// this machine does not list it.
std::optional<inspect::LoopCensus> gemv_loop(const char* layout, const std::string& kernel) {
  const LayoutInfo& L = find_layout(layout);
  for (const KernelVariant& k : kernels_for(L))
    if (k.name() == kernel) return inspect::kernel_census(L, k, KernelOp::gemv);
  return std::nullopt;
}

// The ISAs with a native slot-mask kernel for t2p here (avx2, avx512vnni; neon, dotprod, ...).
std::vector<std::string> slot_mask_isas() {
  std::vector<std::string> out;
  for (const KernelVariant& k : kernels_for(find_layout("t2p")))
    if (k.strategy == Strategy::slot_mask && !k.emulated && !k.gfni) out.emplace_back(isa_name(k.isa));
  return out;
}

}  // namespace

// Never called: only disassembled. Per iteration: 1 load, 3 chores, 2 dots, 3 other.
#if defined(__x86_64__)
asm(R"(
  .text
  .globl ternlab_census_probe
  .type ternlab_census_probe, @function
ternlab_census_probe:
  vpxord %zmm5, %zmm5, %zmm5
1:
  vmovdqu64 (%rdi), %zmm0
  vpandd %zmm1, %zmm0, %zmm2
  vpsrlw $2, %zmm0, %zmm3
  vpandd %zmm1, %zmm3, %zmm3
  vpdpbusd %zmm2, %zmm4, %zmm5
  vpdpbusd %zmm3, %zmm4, %zmm6
  add $64, %rdi
  dec %esi
  jnz 1b
  vzeroupper
  ret
  .size ternlab_census_probe, .-ternlab_census_probe
)");
constexpr int kProbeMacs = 128;  // two 512-bit vpdpbusd
#elif defined(__aarch64__)
asm(R"(
  .text
  .arch armv8.2-a+dotprod
  .globl ternlab_census_probe
  .type ternlab_census_probe, %function
ternlab_census_probe:
  movi v5.4s, #0
1:
  ldr q0, [x0], #16
  and v2.16b, v0.16b, v1.16b
  ushr v3.16b, v0.16b, #2
  and v3.16b, v3.16b, v1.16b
  sdot v5.4s, v2.16b, v4.16b
  sdot v6.4s, v3.16b, v4.16b
  add x2, x2, #1
  subs w1, w1, #1
  b.ne 1b
  ret
  .size ternlab_census_probe, .-ternlab_census_probe
)");
constexpr int kProbeMacs = 32;  // two 128-bit sdot
#endif
extern "C" void ternlab_census_probe();

TEST_SUITE("census") {
  TEST_CASE("a probe loop of known instructions is found and counted class by class") {
    const inspect::LoopCensus c = inspect::census_of(reinterpret_cast<const void*>(&ternlab_census_probe));
    INFO("loop in ", c.function);
    CHECK(c.function == "ternlab_census_probe");
    CHECK(c.insns.size() == 9);  // the loop only: not the zeroing before it, not the return after it
    CHECK(c.count[std::size_t(InsnClass::load)] == 1);
    CHECK(c.count[std::size_t(InsnClass::chore)] == 3);
    CHECK(c.count[std::size_t(InsnClass::dot)] == 2);
    CHECK(c.count[std::size_t(InsnClass::other)] == 3);
    CHECK(c.macs == kProbeMacs);
    CHECK(c.per64(InsnClass::dot) == doctest::Approx(2.0 * 64 / kProbeMacs));
  }

  TEST_CASE("classification of single instructions") {
#if defined(__x86_64__)
    CHECK(inspect::classify(0, "vpdpbusd", "%ymm2,%ymm4,%ymm5").macs == 32);
    CHECK(inspect::classify(0, "vpdpbusd", "0x40(%rax),%zmm4,%zmm5").cls == InsnClass::dot);
    CHECK(inspect::classify(0, "vpmaddubsw", "%ymm2,%ymm4,%ymm5").cls == InsnClass::dot);
    CHECK(inspect::classify(0, "vpmaddwd", "%ymm2,%ymm4,%ymm5").cls == InsnClass::chore);  // widening, no new products
    CHECK(inspect::classify(0, "vpbroadcastd", "0x4(%rsi),%zmm1").cls == InsnClass::load);
    CHECK(inspect::classify(0, "vmovdqu", "%ymm1,(%rdi)").cls == InsnClass::other);  // a store
    CHECK(inspect::classify(0, "vfmadd231ss", "%xmm1,%xmm2,%xmm0").cls == InsnClass::other);  // scalar float
    CHECK(inspect::classify(0, "prefetcht0", "0x800(%rax)").cls == InsnClass::other);
    CHECK(inspect::classify(0, "kmovw", "%eax,%k1").cls == InsnClass::chore);
#else
    CHECK(inspect::classify(0, "smmla", "v0.4s, v1.16b, v2.16b").macs == 32);
    CHECK(inspect::classify(0, "sdot", "v0.4s, v1.16b, v2.4b[1]").macs == 16);
    CHECK(inspect::classify(0, "smull", "v0.8h, v1.8b, v2.8b").macs == 8);
    CHECK(inspect::classify(0, "ld1", "{v0.16b, v1.16b}, [x0], #32").cls == InsnClass::load);
    CHECK(inspect::classify(0, "ldr", "x1, [x0]").cls == InsnClass::other);
    CHECK(inspect::classify(0, "tbl", "v0.16b, {v1.16b}, v2.16b").cls == InsnClass::chore);
    CHECK(inspect::classify(0, "prfm", "pldl1keep, [x0, #2048]").cls == InsnClass::other);
#endif
  }

  TEST_CASE("the portable kernel's two compiles: vector multiplies in one loop, scalar ones only in the other") {
    int builds = 0;
    for (const KernelVariant& k : kernels_for(find_layout("t2p"))) {
      if (k.strategy != Strategy::portable) continue;
      CAPTURE(k.name());
      const inspect::LoopCensus c = inspect::census_of(reinterpret_cast<const void*>(k.phases.rows));
      INFO("loop in ", c.function);
      int vector_products = 0, scalar_products = 0;
      for (const inspect::Insn& i : c.insns)
        if (i.cls == InsnClass::dot) (i.macs > 1 ? vector_products : scalar_products) += i.macs;
      if (k.isa == Isa::scalar) {  // built with -fno-tree-vectorize
        CHECK(c.by_multiplies);
        CHECK(scalar_products > 0);
        CHECK(vector_products == 0);
      } else {  // built with -O3 -ftree-vectorize
        CHECK(vector_products > 0);
      }
      ++builds;
    }
    CHECK(builds == (isa_supported(detail::kPortableAutovecIsa) ? 2 : 1));
  }

  TEST_CASE("the elementwise float ops run packed divisions in every vector-ops build") {
    // SiLU and the sigmoid gate divide once an element: a vectorised loop divides whole registers
    // (under -ftrapping-math GCC keeps the exponential's clamps as branches and the loops scalar,
    // so these units build without it). A scalar remainder loop may divide one float at a time.
    const auto packed_division = [](const inspect::Insn& i) {
#if defined(__x86_64__)
      return i.mnemonic == "divps" || i.mnemonic == "vdivps";
#else
      return i.mnemonic == "fdiv" && i.operands.find(".4s") != std::string::npos;
#endif
    };
    for (const VectorOps* o : vector_ops_variants()) {
      CAPTURE(o->name);
      const std::pair<const char*, const void*> ops[] = {{"silu", reinterpret_cast<const void*>(o->silu)},
                                                         {"silu_mul", reinterpret_cast<const void*>(o->silu_mul)},
                                                         {"sigmoid_mul", reinterpret_cast<const void*>(o->sigmoid_mul)}};
      for (const auto& [name, fn] : ops) {
        CAPTURE(name);
        const std::vector<inspect::Insn> loop = inspect::loop_instructions(fn);
        CHECK(!loop.empty());
        CHECK(std::any_of(loop.begin(), loop.end(), packed_division));
      }
    }
  }

  TEST_CASE("multiply_products counts one product per destination lane") {
#if defined(__x86_64__)
    CHECK(inspect::multiply_products("imul", "%ecx,%eax") == 1);
    CHECK(inspect::multiply_products("vpmullw", "%ymm1,%ymm2,%ymm3") == 16);
    CHECK(inspect::multiply_products("vpmulld", "%xmm1,%xmm2,%xmm3") == 4);
    CHECK(inspect::multiply_products("vpaddd", "%ymm1,%ymm2,%ymm3") == 0);
#else
    CHECK(inspect::multiply_products("mul", "w0, w1, w2") == 1);
    CHECK(inspect::multiply_products("mul", "v0.8h, v1.8h, v2.8h") == 8);
    CHECK(inspect::multiply_products("smlal2", "v0.4s, v1.8h, v2.8h") == 4);
    CHECK(inspect::multiply_products("add", "v0.4s, v1.4s, v2.4s") == 0);
#endif
  }

  TEST_CASE("every SIMD kernel of every layout has a multiply-accumulate loop to count") {
    int counted = 0;
    for (const LayoutInfo* L : all_layouts())
      for (const KernelVariant& k : kernels_for(*L)) {
        if (k.isa == Isa::scalar) continue;
        CAPTURE(L->name);
        CAPTURE(k.name());
        const void* fn = k.phases.rows ? reinterpret_cast<const void*>(k.phases.rows)
                                       : reinterpret_cast<const void*>(k.gemv);
        const inspect::LoopCensus c = inspect::census_of(fn);
        CHECK(c.macs > 0);
        CHECK(c.count[std::size_t(InsnClass::dot)] > 0);
        ++counted;
      }
    CHECK(counted > 0);
  }

  TEST_CASE("the census counts the loop that runs: for t2p, not the per-row path that t2p-g64 takes") {
    if (!inspect::can_watch_loops()) return;  // no hardware breakpoints: the choice is the code's
    for (const std::string& isa : slot_mask_isas()) {
      CAPTURE(isa);
      const auto t2p = gemv_loop("t2p", "slot-mask/" + isa);
      const auto g64 = gemv_loop("t2p-g64", "slot-mask/" + isa);
      REQUIRE(t2p);
      CHECK(t2p->seen_running);
      // One instantiation, two plans: t2p keeps its rows in registers, t2p-g64's two scale groups
      // go through memory, so when both are counted from one function the loops must differ. Not
      // on SSE4.1, whose policy has no row vector (Rows8 is AVX2's): both take the per-row path.
      if (g64 && g64->function == t2p->function && isa != "sse41") CHECK(g64->begin != t2p->begin);
    }
  }

  TEST_CASE("no hot loop of any kernel listed here calls a function") {
    // Expected skip where no hardware breakpoint can be set (qemu-user, a container that refuses
    // perf_event_open): the loop is then chosen from the code alone, which may be one the kernel
    // does not run (under qemu aarch64 it took a loop of the i8mm gemm through an exception path's
    // delete, and permute's edge-block copy). The native runs, which can watch, assert this.
    if (!inspect::can_watch_loops()) {
      MESSAGE("expected skip: no hardware breakpoints here, so the census cannot tell which loop runs");
      return;
    }
    int counted = 0;
    for (const LayoutInfo* L : all_layouts())
      for (const KernelVariant& k : kernels_for(*L)) {
        if (k.strategy == Strategy::reference) continue;  // decodes through tables: no kernel loop
        for (const KernelOp op : {KernelOp::gemv, KernelOp::gemm}) {
          if (!inspect::kernel_entry(k, op)) continue;
          CAPTURE(L->name);
          CAPTURE(k.name());
          const std::string op_name = inspect::to_string(op);
          CAPTURE(op_name);
          const inspect::LoopCensus c = inspect::kernel_census(*L, k, op);
          std::string callees;
          for (const std::string& callee : c.calls) callees += callee + "; ";
          INFO("loop in ", c.function, " calls: ", callees);
          CHECK(c.calls.empty());
          CHECK(c.seen_running == inspect::can_watch_loops());
          ++counted;
        }
      }
    CHECK(counted > 0);
  }

  TEST_CASE("the walkthroughs' comparisons hold on every ISA this machine runs") {
    // Expected skip where no hardware breakpoint can be set (qemu-user, a container that refuses
    // perf_event_open): the loop is then chosen from the code alone, which may be one the kernel
    // does not run (under qemu aarch64 it took a loop of the i8mm gemm through an exception path's
    // delete, and permute's edge-block copy). The native runs, which can watch, assert this.
    if (!inspect::can_watch_loops()) {
      MESSAGE("expected skip: no hardware breakpoints here, so the census cannot tell which loop runs");
      return;
    }
    for (const std::string& isa : slot_mask_isas()) {
      CAPTURE(isa);
      const auto slot_mask = gemv_loop("t2p", "slot-mask/" + isa);
      const auto unpack = gemv_loop("pq2_0", "unpack/" + isa);
      REQUIRE(slot_mask);
      if (!unpack) continue;  // no stock kernel on this ISA
      // Chapters 2 and 5: t2p's slot-mask loop spends fewer chores per 64 weights than the stock
      // unpacking loop on the same ISA, and fewer instructions in all.
      CHECK(slot_mask->per64(InsnClass::chore) < unpack->per64(InsnClass::chore));
      // (Not on SSE4.1: without a row vector t2p's blocks end in the per-row path, more
      // instructions a block than the stock loop's one reduction.)
      if (isa != "sse41") CHECK(all_per64(*slot_mask) < all_per64(*unpack));
      // Chapter 2: the stock loop spends more than one chore per dot.
      CHECK(unpack->per64(InsnClass::chore) > unpack->per64(InsnClass::dot));
      // Same multiplies: the two loops differ in their chores, not in their dots.
      CHECK(slot_mask->per64(InsnClass::dot) == doctest::Approx(unpack->per64(InsnClass::dot)));
    }
#if defined(__x86_64__)
    // docs/kernels.md: a vpmaddubsw ymm is 32 multiply-accumulates and a vpdpbusd zmm 64, so the
    // dot column is 2 on AVX2 and 1 on AVX-512 where NEON's sdot gives the blog's 4.
    if (const auto avx2 = gemv_loop("t2p", "slot-mask/avx2")) CHECK(avx2->per64(InsnClass::dot) == 2.0);
    if (const auto avx512 = gemv_loop("t2p", "slot-mask/avx512vnni")) {
      CHECK(avx512->per64(InsnClass::dot) == 1.0);
      // Chapter 5: AVX-512 VNNI extracts plain codes and needs no recombination: fewer chores than AVX2's.
      if (const auto avx2 = gemv_loop("t2p", "slot-mask/avx2"))
        CHECK(avx512->per64(InsnClass::chore) < avx2->per64(InsnClass::chore));
    }
    // Chapter 5: shifting every slot down and widening each slot's dot costs more chores than the
    // masks in place and the one widening a group.
    if (const auto widen = gemv_loop("t2p", "slot-mask-widen/avx2"))
      CHECK(widen->per64(InsnClass::chore) > gemv_loop("t2p", "slot-mask/avx2")->per64(InsnClass::chore));
#endif
    // Chapter 9: the portable kernel's vectorised compile multiplies in vector registers, far fewer
    // instructions per 64 weights than the scalar compile's one imul a weight, and the intrinsics
    // kernel fewer still.
    const auto scalar = gemv_loop("t2p", "portable/scalar");
    REQUIRE(scalar);
    CHECK(scalar->by_multiplies);
    CHECK(scalar->per64(InsnClass::dot) == 64.0);
    for (const KernelVariant& k : kernels_for(find_layout("t2p"))) {
      if (k.strategy != Strategy::portable || k.isa == Isa::scalar) continue;
      const auto vectorised = gemv_loop("t2p", k.name());
      CAPTURE(k.name());
      CHECK(vectorised->per64(InsnClass::dot) < scalar->per64(InsnClass::dot));
      CHECK(all_per64(*vectorised) < all_per64(*scalar));
      const auto intrinsics = gemv_loop("t2p", "slot-mask/" + std::string(isa_name(k.isa)));
      if (intrinsics) CHECK(all_per64(*intrinsics) < all_per64(*vectorised));
    }
  }

  TEST_CASE("the kernel the dispatcher picks for t2p is one the census lists, and its loop calls nothing") {
    const LayoutInfo& L = find_layout("t2p");
    const KernelVariant k = best_kernel(L).variant;
    CAPTURE(k.name());
    const inspect::LoopCensus c = inspect::kernel_census(L, k, KernelOp::gemv);
    CHECK(c.macs > 0);
    CHECK(c.calls.empty());
  }
}

