// The instruction census of a compiled kernel: its hot loop read back from the machine code
// (objdump on the running binary), every instruction classified, and the counts scaled to 64
// int8 multiply-accumulates, which for a gemv is 64 weights. "Stock unpacking costs 16 chores
// and 4 dot instructions per 64 weights" becomes a reading of the code, not a claim.
#pragma once

#include <array>
#include <functional>
#include <string>
#include <vector>

namespace ternlab::inspect {

enum class InsnClass { load, chore, dot, other };
inline constexpr std::array<InsnClass, 4> kInsnClasses = {InsnClass::load, InsnClass::chore, InsnClass::dot,
                                                          InsnClass::other};
const char* to_string(InsnClass c);

// One disassembled instruction of the loop.
struct Insn {
  unsigned long long address = 0;
  std::string mnemonic, operands;
  InsnClass cls = InsnClass::other;
  int macs = 0;  // int8 multiply-accumulates the instruction performs (dot instructions only)
};

// What an instruction is, from its mnemonic and operands (x86 AT&T syntax or AArch64 syntax).
//   dot:   int8 multiply-accumulate (vpdpbusd, vpmaddubsw, vpmaddwd, sdot, udot, smmla, smull, smlal, ...)
//   load:  a vector load or broadcast from memory
//   chore: any other vector-register instruction: masks, shifts, shuffles, adds, subtracts, converts
//   other: scalar work: loop control, addresses, prefetches
// and how many int8 multiply-accumulates a dot instruction does (vpdpbusd zmm: 64, sdot .16b: 16).
Insn classify(unsigned long long address, std::string mnemonic, std::string operands);

// Products an integer multiply instruction computes, one per destination lane (imul, mul: 1;
// vpmullw ymm: 16; vpmaddwd ymm: 16; mul v0.8h: 8), else 0. A loop whose code holds no int8
// multiply-accumulate instruction (a compiler-vectorised or scalar loop) is read by these.
int multiply_products(const std::string& mnemonic, const std::string& operands);

struct LoopCensus {
  std::string function;       // demangled name of the function the loop is in
  unsigned long long begin = 0, end = 0;  // loop addresses, end inclusive (the backward branch)
  std::vector<Insn> insns;    // the loop body in address order
  std::array<int, 4> count{};  // per InsnClass, per iteration
  int macs = 0;               // int8 multiply-accumulates per iteration
  // No int8 multiply-accumulate instruction anywhere: the loop is the one with the most integer
  // multiplies, each counted as a dot of multiply_products products (macs: products).
  bool by_multiplies = false;
  // The callees of the calls inside the loop ("ternlab::isa::Avx2::fp16(unsigned char const*)", "*%rax"
  // for an indirect one), in address order. Each is a defect of the kernel: a hot loop calls nothing.
  std::vector<std::string> calls;
  // Chosen among the loops seen running in a call of the kernel (census_of with a run), not from
  // the code alone.
  bool seen_running = false;
  // Instructions of a class per 64 multiply-accumulates.
  double per64(InsnClass c) const { return macs > 0 ? 64.0 * count[std::size_t(c)] / macs : 0.0; }
};

// The hot loop of the machine code at `fn` in the running binary: of the innermost loops that do
// int8 multiply-accumulates (in the function or, failing that, in the functions it calls, two
// calls deep), the one doing the most of them; where no loop has such an instruction, the same
// search by integer multiplies (by_multiplies). Throws ternlab::Error when objdump is missing or
// no such loop exists, saying which.
LoopCensus census_of(const void* fn);

// The hot loop of `fn` as `run` executes it on this thread: of the innermost multiply-accumulate
// loops of fn and of the functions it calls that ran, two calls deep, the loops that ran (a
// one-shot hardware breakpoint at each loop's head and each callee's entry, so a loop of a path the
// call does not take is never counted), the one doing the most multiply-accumulates an iteration
// (seen_running). run() is called several times. Where the system gives no hardware breakpoints
// (perf_event_open refused, an emulator), census_of(fn)'s choice from the code alone.
LoopCensus census_of(const void* fn, const std::function<void()>& run);

// Whether census_of(fn, run) can see which loops run here (hardware breakpoints available).
bool can_watch_loops();

// Every instruction inside a loop of the function at `fn` (not of the functions it calls), in
// address order: what the compiler made of a plain loop, e.g. whether its float arithmetic is
// packed. Throws ternlab::Error when objdump is missing or no function symbol starts at `fn`.
std::vector<Insn> loop_instructions(const void* fn);

// The disassembler used: $TERNLAB_OBJDUMP, else the target's cross objdump when cross-compiled
// (aarch64-linux-gnu-objdump), else objdump.
std::string objdump_command();

}  // namespace ternlab::inspect
