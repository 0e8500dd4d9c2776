// `ternlab kernels census`: each kernel's hot loop read back from this binary's machine code, its
// instructions classified and counted per 64 int8 multiply-accumulates (per 64 weights for a gemv).
#include <iomanip>
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "common/error.hpp"
#include "inspect/census.hpp"
#include "inspect/kernel_census.hpp"
#include "kernels/catalog.hpp"
#include "kernels/cpu.hpp"
#include "kernels/dispatch.hpp"
#include "layouts/registry.hpp"

namespace ternlab::cli {

namespace {

struct CensusOptions {
  std::vector<std::string> layouts;
  std::string isa;
  bool show = false, json = false;
};

// One kernel loop's counts as JSON: per 64 MACs (per 64 weights for a gemv) by instruction class.
nlohmann::ordered_json census_json(const std::string& layout, const std::string& kernel, bool dispatched,
                                   const char* op, const inspect::LoopCensus& c) {
  nlohmann::ordered_json per64;
  for (inspect::InsnClass cls : inspect::kInsnClasses) per64[inspect::to_string(cls)] = c.per64(cls);
  return {{"layout", layout},
          {"kernel", kernel},
          {"dispatched", dispatched},
          {"op", op},
          {"function", c.function},
          {"seen_running", c.seen_running},
          {"instructions", c.insns.size()},
          {"macs", c.macs},
          {"by_multiplies", c.by_multiplies},
          {"per_64", per64},
          {"calls", c.calls}};
}

void print_census_row(const std::string& layout, const std::string& kernel, bool dispatched, const char* op,
                      const inspect::LoopCensus& c) {
  using inspect::InsnClass;
  std::cout << std::left << std::setw(16) << layout << std::setw(40) << kernel << std::setw(6) << op << std::setw(5)
            << (dispatched ? "yes" : "") << std::right << std::setw(7) << c.insns.size() << std::setw(8) << c.macs
            << std::fixed << std::setprecision(1);
  for (InsnClass cls : inspect::kInsnClasses) std::cout << std::setw(8) << c.per64(cls);
  std::cout << std::setw(7) << c.calls.size() << "\n";
  // A call in a hot loop spills the loop's registers around it every iteration: a defect of the
  // kernel, named so it can be fixed (inlined).
  for (const std::string& callee : c.calls) std::cout << "    DEFECT: the hot loop calls " << callee << "\n";
}

void show_loop(const inspect::LoopCensus& c) {
  std::cout << "    in " << c.function << "\n";
  for (const inspect::Insn& i : c.insns)
    std::cout << "    " << std::hex << std::setw(8) << i.address << std::dec << "  " << std::left << std::setw(6)
              << inspect::to_string(i.cls) << " " << std::setw(14) << i.mnemonic << i.operands << std::right
              << (i.macs ? "    ; " + std::to_string(i.macs) + " MACs" : "") << "\n";
}

void census(const CensusOptions& o) {
  if (!o.isa.empty()) set_isa_ceiling(parse_isa(o.isa));
  std::vector<const LayoutInfo*> layouts;
  if (o.layouts.empty())
    for (const LayoutInfo* L : all_layouts()) layouts.push_back(L);
  else
    for (const std::string& n : o.layouts) layouts.push_back(&find_layout(n));

  const char* chosen_by = inspect::can_watch_loops()
                              ? "the loop that runs, seen by hardware breakpoints on a small matrix of the layout"
                              : "chosen from the code alone (this system gives no hardware breakpoints)";
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  if (!o.json) {
    std::cout << "hot loop of each kernel (" << chosen_by << "), read from this binary's machine code ("
              << inspect::objdump_command()
              << "); counts are instructions per 64 int8 multiply-accumulates (for a gemv, per 64 weights); "
                 "disp: the kernel the dispatcher picks for the layout; calls: calls inside the loop (defects)\n";
    std::cout << std::left << std::setw(16) << "layout" << std::setw(40) << "kernel" << std::setw(6) << "op"
              << std::setw(5) << "disp" << std::right << std::setw(7) << "insns" << std::setw(8) << "MACs";
    for (inspect::InsnClass cls : inspect::kInsnClasses) std::cout << std::setw(8) << inspect::to_string(cls);
    std::cout << std::setw(7) << "calls" << "\n";
  }
  bool by_multiplies = false;
  for (const LayoutInfo* L : layouts) {
    const std::string dispatched = best_kernel(*L).variant.name();
    for (const KernelVariant& k : kernels_for(*L)) {
      if (k.strategy == Strategy::reference) continue;  // decodes through tables: no kernel loop to count
      if (!isa_at_or_below(k.isa, best_isa())) continue;  // above --isa's ceiling: not a kernel that would run
      for (const inspect::KernelOp op : {inspect::KernelOp::gemv, inspect::KernelOp::gemm}) {
        if (!inspect::kernel_entry(k, op)) continue;
        const inspect::LoopCensus c = inspect::kernel_census(*L, k, op);
        const bool is_dispatched = k.name() == dispatched;
        if (o.json) {
          rows.push_back(census_json(std::string(L->name), k.name(), is_dispatched, inspect::to_string(op), c));
          continue;
        }
        print_census_row(std::string(L->name), k.name() + (c.by_multiplies ? " *" : ""), is_dispatched,
                         inspect::to_string(op), c);
        by_multiplies |= c.by_multiplies;
        if (o.show) show_loop(c);
      }
    }
  }
  if (o.json) {
    std::cout << nlohmann::ordered_json{{"objdump", inspect::objdump_command()},
                                        {"loops_seen_running", inspect::can_watch_loops()},
                                        {"unit", "instructions per 64 int8 multiply-accumulates (gemv: per 64 weights)"},
                                        {"loops", rows}}
                     .dump(1)
              << "\n";
    return;
  }
  if (by_multiplies)
    std::cout << "* no int8 multiply-accumulate instruction in the code: the loop with the most integer multiplies, "
                 "each counted as a dot of one product per lane (MACs: products)\n";
}

}  // namespace

void add_census_command(CLI::App& kernels) {
  auto* c = kernels.add_subcommand(
      "census", "Count each kernel's hot-loop instructions per 64 weights from the compiled machine code");
  static CensusOptions o;
  c->add_option("--layouts", o.layouts, "Only these layouts")->delimiter(',')->check(known_layouts());
  c->add_option("--isa", o.isa, "ISA ceiling (" + isa_names() + ")");
  c->add_flag("--show", o.show, "Print each loop's instructions with their class");
  c->add_flag("--json", o.json, "Print the counts as JSON");
  c->callback([] { census(o); });
}

}  // namespace ternlab::cli
