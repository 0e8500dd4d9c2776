#include "inspect/census.hpp"

#include <elf.h>
#include <link.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>

#include "common/error.hpp"

namespace ternlab::inspect {

namespace {

bool starts_with_any(const std::string& s, std::initializer_list<const char*> prefixes) {
  for (const char* p : prefixes)
    if (s.rfind(p, 0) == 0) return true;
  return false;
}

bool is_one_of(const std::string& s, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (s == n) return true;
  return false;
}

// Bytes of the widest x86 vector register named in the operands (0 when none).
int x86_vector_bytes(const std::string& ops) {
  if (ops.find("%zmm") != std::string::npos) return 64;
  if (ops.find("%ymm") != std::string::npos) return 32;
  if (ops.find("%xmm") != std::string::npos) return 16;
  return 0;
}

bool is_word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// A SIMD&FP register as an operand: "v3.16b", "q0", "d7" (not "x1", "w2", nor "ld1" inside a name).
bool mentions_aarch64_vector(const std::string& ops) {
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const char c = ops[i];
    if ((c != 'v' && c != 'q' && c != 'd') || (i > 0 && is_word_char(ops[i - 1]))) continue;
    std::size_t j = i + 1;
    while (j < ops.size() && std::isdigit(static_cast<unsigned char>(ops[j]))) ++j;
    if (j == i + 1) continue;
    if (c == 'v' ? j < ops.size() && ops[j] == '.' : j == ops.size() || !is_word_char(ops[j])) return true;
  }
  return false;
}

// AT&T syntax: the destination is the last operand, a source with "(" is memory.
std::string last_operand(const std::string& ops) {
  int depth = 0;
  for (std::size_t i = ops.size(); i-- > 0;) {
    if (ops[i] == ')') ++depth;
    if (ops[i] == '(') --depth;
    if (ops[i] == ',' && depth == 0) return ops.substr(i + 1);
  }
  return ops;
}

Insn classify_x86(Insn in) {
  const std::string& m = in.mnemonic;
  const int width = x86_vector_bytes(in.operands);
  if (starts_with_any(m, {"vpdpbusd", "vpdpbssd", "vpdpbuud"})) {
    in.cls = InsnClass::dot;
    in.macs = width;
  } else if (is_one_of(m, {"tdpbsud", "tdpbssd", "tdpbusd", "tdpbuud"})) {
    in.cls = InsnClass::dot;
    in.macs = 16 * 16 * 64;  // AMX: 16 x 64 int8 by 64 x 16 into a 16 x 16 int32 tile (every tile full)
  } else if (is_one_of(m, {"vpmaddubsw", "pmaddubsw"})) {
    in.cls = InsnClass::dot;
    in.macs = width;
  } else if (starts_with_any(m, {"prefetch", "vzeroupper", "vzeroall"})) {
    in.cls = InsnClass::other;
  } else if (width == 0 && in.operands.find("%k") == std::string::npos) {
    in.cls = InsnClass::other;
  } else if (m.size() > 2 && (m.ends_with("ss") || m.ends_with("sd")) && m.find("ps") == std::string::npos &&
             width == 16 && !starts_with_any(m, {"vmovs", "movs"})) {
    // Scalar float arithmetic in an xmm register (the per-block fma of the scale): not vector work.
    in.cls = InsnClass::other;
  } else {
    const std::string dst = last_operand(in.operands);
    const bool memory_source = in.operands.find('(') != std::string::npos && dst.find('(') == std::string::npos;
    const bool is_move = starts_with_any(m, {"vmov", "mov", "vpbroadcast", "vbroadcast", "vinsert", "vpinsr", "lddqu",
                                             "vlddqu", "vpmovzx", "vpmovsx"});
    if (dst.find('(') != std::string::npos)
      in.cls = InsnClass::other;  // a store
    else if (memory_source && is_move)
      in.cls = InsnClass::load;
    else
      in.cls = InsnClass::chore;
  }
  return in;
}

Insn classify_aarch64(Insn in) {
  const std::string& m = in.mnemonic;
  const std::string& ops = in.operands;
  if (is_one_of(m, {"sdot", "udot", "usdot", "sudot"})) {
    in.cls = InsnClass::dot;
    in.macs = ops.find(".16b") != std::string::npos || ops.find(".4s") != std::string::npos ? 16 : 8;
  } else if (is_one_of(m, {"smmla", "ummla", "usmmla"})) {
    in.cls = InsnClass::dot;
    in.macs = 32;  // a 2x8 by 8x2 int8 product into a 2x2 int32 tile
  } else if (is_one_of(m, {"smull", "smull2", "umull", "umull2", "smlal", "smlal2", "umlal", "umlal2"}) &&
             ops.find(".8h") != std::string::npos) {
    in.cls = InsnClass::dot;
    in.macs = 8;
  } else if (starts_with_any(m, {"prfm", "prfum"})) {
    in.cls = InsnClass::other;
  } else if (starts_with_any(m, {"ld1", "ld2", "ld3", "ld4", "ldr", "ldp", "ldur", "ldnp"})) {
    in.cls = mentions_aarch64_vector(ops) ? InsnClass::load : InsnClass::other;
  } else if (starts_with_any(m, {"st1", "st2", "str", "stp", "stur"})) {
    in.cls = InsnClass::other;
  } else {
    in.cls = mentions_aarch64_vector(ops) ? InsnClass::chore : InsnClass::other;
  }
  return in;
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string run_capture(const std::string& command) {
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) fail("cannot run: ", command);
  std::string out;
  char buf[65536];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) out.append(buf, n);
  const int status = ::pclose(pipe);
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    fail("the disassembler failed (", command, "); install binutils",
         "(and binutils-aarch64-linux-gnu for the aarch64 build) or point $TERNLAB_OBJDUMP at an objdump");
  return out;
}

// Where the code at `fn` comes from: the file and the address objdump knows it by.
struct CodeAddress {
  std::string file;
  unsigned long long address = 0;
  std::uintptr_t load_base = 0;  // run-time address = load_base + address
};

CodeAddress locate(const void* fn) {
  struct Search {
    std::uintptr_t at;
    CodeAddress found;
    bool ok = false;
  } search{reinterpret_cast<std::uintptr_t>(fn), {}, false};
  ::dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        auto* s = static_cast<Search*>(data);
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const auto& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD) continue;
          const std::uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
          if (s->at < lo || s->at >= lo + ph.p_memsz) continue;
          s->found.address = s->at - info->dlpi_addr;
          s->found.load_base = info->dlpi_addr;
          // The main program has no name here; its file is /proc/self/exe, resolved now, since
          // objdump's own /proc/self/exe would be objdump (and qemu-user maps it to the guest file).
          s->found.file = info->dlpi_name && *info->dlpi_name ? std::string(info->dlpi_name)
                                                              : std::filesystem::read_symlink("/proc/self/exe").string();
          s->ok = true;
          return 1;
        }
        return 0;
      },
      &search);
  if (!search.ok) fail("no loaded file holds the code at ", fn);
  return search.found;
}

struct Function {
  std::string name;
  std::vector<Insn> insns;
  std::vector<std::pair<unsigned long long, unsigned long long>> loops;  // (target, branch address)
  std::vector<unsigned long long> calls;  // targets of direct calls and of jumps out of the function
  std::vector<std::pair<unsigned long long, std::string>> call_sites;  // every call: address, callee
};

// The hex address before the trailing "<symbol>" of a branch or call's operands ("12340 <f+0x20>",
// "x1, 12340 <f>").
bool branch_target(const std::string& ops, unsigned long long& target) {
  if (ops.empty() || ops.back() != '>') return false;
  const std::size_t open = ops.find(" <");
  if (open == std::string::npos || open == 0) return false;
  std::size_t begin = open;
  while (begin > 0 && std::isxdigit(static_cast<unsigned char>(ops[begin - 1]))) --begin;
  if (begin == open || (begin > 0 && ops[begin - 1] != ' ' && ops[begin - 1] != ',')) return false;
  target = std::stoull(ops.substr(begin, open - begin), nullptr, 16);
  return true;
}

bool is_branch(const std::string& m, bool x86) {
  if (x86) return m[0] == 'j';
  return m == "b" || m.rfind("b.", 0) == 0 || is_one_of(m, {"cbz", "cbnz", "tbz", "tbnz"});
}

bool is_call(const std::string& m, bool x86) { return x86 ? m.rfind("call", 0) == 0 : m == "bl" || m == "blr"; }

// A call's callee as objdump names it: the symbol in "12340 <name>", else the operand ("*%rax", "x3").
std::string callee_name(const std::string& ops) {
  const std::size_t open = ops.find(" <");
  if (open != std::string::npos && ops.back() == '>') return ops.substr(open + 2, ops.size() - open - 3);
  return ops;
}

// Sizes of the function symbols of an ELF file by address, from its symbol table (local functions,
// such as the kernels' template instantiations, are there but not in the dynamic table). Read once
// per file.
const std::unordered_map<unsigned long long, unsigned long long>& function_sizes(const std::string& file) {
  static std::map<std::string, std::unordered_map<unsigned long long, unsigned long long>> cache;
  if (const auto it = cache.find(file); it != cache.end()) return it->second;
  std::ifstream f(file, std::ios::binary);
  if (!f) fail("cannot read ", file, " for its symbol table");
  const std::string elf((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (elf.size() < sizeof(Elf64_Ehdr) || elf.compare(0, 4, ELFMAG) != 0 || elf[EI_CLASS] != ELFCLASS64)
    fail(file, " is not a 64-bit ELF file");
  Elf64_Ehdr eh;
  std::memcpy(&eh, elf.data(), sizeof eh);
  auto& sizes = cache[file];
  for (int i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh;
    const std::size_t at = eh.e_shoff + std::size_t(i) * eh.e_shentsize;
    if (at + sizeof sh > elf.size()) break;
    std::memcpy(&sh, elf.data() + at, sizeof sh);
    if (sh.sh_type != SHT_SYMTAB || sh.sh_entsize != sizeof(Elf64_Sym)) continue;
    const std::size_t end = std::min<std::size_t>(sh.sh_offset + sh.sh_size, elf.size());
    for (std::size_t off = sh.sh_offset; off + sizeof(Elf64_Sym) <= end; off += sizeof(Elf64_Sym)) {
      Elf64_Sym sym;
      std::memcpy(&sym, elf.data() + off, sizeof sym);
      if (ELF64_ST_TYPE(sym.st_info) == STT_FUNC && sym.st_size > 0) sizes[sym.st_value] = sym.st_size;
    }
  }
  if (sizes.empty()) fail(file, " has no symbol table (is it stripped?): the census needs one");
  return sizes;
}

// The function at `at`; empty when no function symbol starts there (a PLT stub, say).
Function disassemble_uncached(const CodeAddress& at, bool x86) {
  const auto& sizes = function_sizes(at.file);
  const auto found = sizes.find(at.address);
  if (found == sizes.end()) return {};
  const unsigned long long size = found->second;
  std::ostringstream cmd;
  cmd << objdump_command() << " -d -C -w --no-show-raw-insn --start-address=0x" << std::hex << at.address
      << " --stop-address=0x" << at.address + size << " " << shell_quote(at.file)
      << " 2>&1";
  const std::string text = run_capture(cmd.str());
  Function f;
  std::istringstream in(text);
  int headers = 0;
  for (std::string l; std::getline(in, l);) {
    // "0000000000012340 <name>:" opens a function; "   12340:\tmnemonic operands" is an instruction.
    if (!l.empty() && std::isxdigit(static_cast<unsigned char>(l[0])) && l.ends_with(">:")) {
      const std::size_t open = l.find(" <");
      if (open == std::string::npos) continue;
      if (++headers > 1) break;
      f.name = l.substr(open + 2, l.size() - open - 4);
      continue;
    }
    if (headers != 1) continue;
    std::istringstream words(l);
    std::string address, mnemonic;
    if (!(words >> address >> mnemonic) || address.size() < 2 || address.back() != ':') continue;
    address.pop_back();
    if (address.find_first_not_of("0123456789abcdef") != std::string::npos) continue;
    std::string ops;
    std::getline(words, ops);
    const auto trim = [](std::string& t) {
      t.erase(0, t.find_first_not_of(" \t"));
      while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.pop_back();
    };
    trim(ops);
    if (is_one_of(mnemonic, {"bnd", "notrack", "rep", "repz", "repe", "repnz", "repne", "lock", "data16", "cs", "ds"})) {
      std::istringstream rest(ops);
      rest >> mnemonic;
      std::getline(rest, ops);
      trim(ops);
    }
    if (mnemonic == "(bad)" || mnemonic.empty()) continue;
    // objdump's comments: "# 1234 <sym>" in AT&T syntax, "// b.any" in AArch64's (where " #" is an immediate).
    const auto cut = ops.find(x86 ? " #" : " //");
    if (cut != std::string::npos) ops = ops.substr(0, cut);
    trim(ops);
    f.insns.push_back(classify(std::stoull(address, nullptr, 16), mnemonic, ops));
  }
  if (f.insns.empty()) fail("objdump showed no code at 0x", std::hex, at.address, " in ", at.file);
  const unsigned long long lo = f.insns.front().address, hi = f.insns.back().address;
  for (const Insn& i : f.insns) {
    if (is_call(i.mnemonic, x86)) f.call_sites.emplace_back(i.address, callee_name(i.operands));
    unsigned long long target = 0;
    if (!branch_target(i.operands, target)) continue;
    if (is_branch(i.mnemonic, x86) && target >= lo && target <= i.address)
      f.loops.emplace_back(target, i.address);
    else if (is_call(i.mnemonic, x86) || (is_branch(i.mnemonic, x86) && (target < lo || target > hi)))
      f.calls.push_back(target);
  }
  return f;
}

// Read once per process: kernels share their helpers, and objdump is most of a census's time.
Function disassemble(const CodeAddress& at, bool x86) {
  static std::map<std::pair<std::string, unsigned long long>, Function> cache;
  const auto key = std::make_pair(at.file, at.address);
  if (const auto it = cache.find(key); it != cache.end()) return it->second;
  return cache[key] = disassemble_uncached(at, x86);
}

LoopCensus loop_census(const Function& f, unsigned long long begin, unsigned long long end) {
  LoopCensus c;
  c.function = f.name;
  c.begin = begin;
  c.end = end;
  for (const Insn& i : f.insns)
    if (i.address >= begin && i.address <= end) {
      c.insns.push_back(i);
      ++c.count[std::size_t(i.cls)];
      c.macs += i.macs;
    }
  for (const auto& [at, callee] : f.call_sites)
    if (at >= begin && at <= end) c.calls.push_back(callee);
  return c;
}

// The loops of one function that multiply-accumulate and hold no smaller loop that does.
std::vector<LoopCensus> innermost_mac_loops(const Function& f) {
  std::vector<LoopCensus> out;
  for (const auto& [b, e] : f.loops) {
    LoopCensus c = loop_census(f, b, e);
    if (c.macs == 0) continue;
    bool holds_smaller = false;
    for (const auto& [b2, e2] : f.loops)
      if (b <= b2 && e2 <= e && (b2 != b || e2 != e) && loop_census(f, b2, e2).macs > 0) holds_smaller = true;
    if (!holds_smaller && std::none_of(out.begin(), out.end(), [&](const LoopCensus& o) { return o.begin == b && o.end == e; }))
      out.push_back(std::move(c));
  }
  return out;
}

// The hot loop of one function from its code alone: of its innermost multiply-accumulate loops,
// the one with the most multiply-accumulates.
bool hot_loop(const Function& f, LoopCensus& best) {
  bool found = false;
  for (LoopCensus& c : innermost_mac_loops(f))
    if (!found || c.macs > best.macs) best = std::move(c), found = true;
  return found;
}

bool is_x86_file() {
#if defined(__x86_64__)
  return true;
#else
  return false;
#endif
}

}  // namespace

const char* to_string(InsnClass c) {
  switch (c) {
    case InsnClass::load: return "load";
    case InsnClass::chore: return "chore";
    case InsnClass::dot: return "dot";
    case InsnClass::other: return "other";
  }
  return "?";
}

Insn classify(unsigned long long address, std::string mnemonic, std::string operands) {
  Insn in{address, std::move(mnemonic), std::move(operands), InsnClass::other, 0};
  return is_x86_file() ? classify_x86(std::move(in)) : classify_aarch64(std::move(in));
}

std::string objdump_command() {
  if (const char* e = std::getenv("TERNLAB_OBJDUMP"); e && *e) return e;
#if defined(__aarch64__) && defined(TERNLAB_CROSS_OBJDUMP)
  return TERNLAB_CROSS_OBJDUMP;
#else
  return "objdump";
#endif
}

int multiply_products(const std::string& m, const std::string& ops) {
  if (is_x86_file()) {
    const int width = x86_vector_bytes(ops);
    if (width == 0) return m.rfind("imul", 0) == 0 ? 1 : 0;
    if (is_one_of(m, {"vpmullw", "pmullw", "vpmulhw", "pmulhw", "vpmaddwd", "pmaddwd"})) return width / 2;
    if (is_one_of(m, {"vpmulld", "pmulld", "vpmuldq", "pmuldq", "vpmuludq", "pmuludq"})) return width / 4;
    return 0;
  }
  if (!is_one_of(m, {"mul", "mla", "mls", "madd", "msub", "smull", "smull2", "umull", "umull2", "smlal", "smlal2",
                     "umlal", "umlal2", "smaddl", "umaddl"}))
    return 0;
  // The destination's arrangement ("v0.8h, ..."): lanes = the number before the element size.
  const std::size_t dot = ops.find('.');
  const std::size_t comma = ops.find(',');
  if (dot == std::string::npos || (comma != std::string::npos && dot > comma)) return 1;  // w/x registers
  return std::max(1, std::atoi(ops.c_str() + dot + 1));
}

namespace {
// The multiply-read of a function: its multiplies become its dots (LoopCensus::by_multiplies).
Function by_multiplies(Function f) {
  for (Insn& i : f.insns)
    if (const int p = multiply_products(i.mnemonic, i.operands); p > 0) i.cls = InsnClass::dot, i.macs = p;
  return f;
}
}  // namespace

LoopCensus census_of(const void* fn) {
  const bool x86 = is_x86_file();
  const CodeAddress at = locate(fn);
  std::string first_name;
  for (const bool multiplies : {false, true}) {
    std::vector<unsigned long long> frontier = {at.address}, seen;
    for (int depth = 0; depth < 3 && !frontier.empty(); ++depth) {
      std::vector<unsigned long long> next;
      LoopCensus best;
      bool found = false;
      for (unsigned long long a : frontier) {
        if (std::find(seen.begin(), seen.end(), a) != seen.end()) continue;
        seen.push_back(a);
        Function f = disassemble({at.file, a}, x86);
        if (multiplies) f = by_multiplies(std::move(f));
        if (depth == 0 && f.insns.empty())
          fail("no function symbol starts at 0x", std::hex, a, " in ", at.file, ": nothing to take a census of");
        if (first_name.empty()) first_name = f.name;
        LoopCensus c;
        if (hot_loop(f, c) && (!found || c.macs > best.macs)) best = c, found = true;
        next.insert(next.end(), f.calls.begin(), f.calls.end());
      }
      if (found) {
        best.by_multiplies = multiplies;
        return best;
      }
      frontier = next;
    }
  }
  fail("no loop in ", first_name, " (or the functions it calls, two calls deep) does int8 multiply-accumulates ",
       "or integer multiplies: nothing to take a census of");
}

namespace {

// A one-shot hardware execution breakpoint on this thread (perf_event_open): it counts its first
// execution and then disables itself, so a hot loop costs one debug exception, not one an
// iteration (about 50 us each in a KVM guest). -1 where the system refuses one.
int one_shot_breakpoint(std::uintptr_t address) {
  perf_event_attr a{};
  a.type = PERF_TYPE_BREAKPOINT;
  a.size = sizeof a;
  a.bp_type = HW_BREAKPOINT_X;
  a.bp_addr = address;
#if defined(__x86_64__)
  a.bp_len = sizeof(long);
#else
  a.bp_len = HW_BREAKPOINT_LEN_4;
#endif
  a.sample_period = 1;
  a.disabled = 1;
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  const int fd = int(::syscall(SYS_perf_event_open, &a, 0, -1, -1, 0));
  if (fd < 0) return -1;
  if (::ioctl(fd, PERF_EVENT_IOC_REFRESH, 1) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Which of `addresses` (run-time) execute while run() runs on this thread, a few breakpoints (the
// CPU's debug registers) per run; nullopt where the system gives none.
std::optional<std::vector<bool>> executed(const std::vector<std::uintptr_t>& addresses, const std::function<void()>& run) {
  std::vector<bool> out(addresses.size(), false);
  for (std::size_t next = 0; next < addresses.size();) {
    std::vector<std::pair<std::size_t, int>> open;
    for (; next < addresses.size() && open.size() < 4; ++next) {
      const int fd = one_shot_breakpoint(addresses[next]);
      if (fd < 0) break;
      open.emplace_back(next, fd);
    }
    if (open.empty()) return std::nullopt;
    run();
    for (const auto& [i, fd] : open) {
      std::uint64_t count = 0;
      out[i] = ::read(fd, &count, sizeof count) == sizeof count && count > 0;
      ::close(fd);
    }
  }
  return out;
}

}  // namespace

bool can_watch_loops() {
  static const bool can = [] {
    const int fd = one_shot_breakpoint(reinterpret_cast<std::uintptr_t>(&can_watch_loops));
    if (fd >= 0) ::close(fd);
    return fd >= 0;
  }();
  return can;
}

LoopCensus census_of(const void* fn, const std::function<void()>& run) {
  if (!can_watch_loops()) return census_of(fn);
  const bool x86 = is_x86_file();
  const CodeAddress at = locate(fn);
  const auto& sizes = function_sizes(at.file);
  for (const bool multiplies : {false, true}) {
    std::vector<LoopCensus> candidates;
    std::vector<unsigned long long> frontier = {at.address};
    std::set<unsigned long long> seen = {at.address};
    for (int depth = 0; depth < 3 && !frontier.empty(); ++depth) {
      std::vector<unsigned long long> callees;
      for (unsigned long long a : frontier) {
        Function f = disassemble({at.file, a, at.load_base}, x86);
        if (multiplies) f = by_multiplies(std::move(f));
        for (LoopCensus& c : innermost_mac_loops(f)) candidates.push_back(std::move(c));
        for (unsigned long long t : f.calls)
          if (sizes.contains(t) && seen.insert(t).second) callees.push_back(t);
      }
      // Only the callees the call reaches are read: the others (error paths, paths of other plans)
      // cost objdump's time and hold no loop that runs.
      std::vector<std::uintptr_t> entries;
      for (unsigned long long t : callees) entries.push_back(at.load_base + t);
      const auto ran = executed(entries, run);
      if (!ran) return census_of(fn);
      frontier.clear();
      for (std::size_t i = 0; i < callees.size(); ++i)
        if ((*ran)[i]) frontier.push_back(callees[i]);
    }
    std::vector<std::uintptr_t> heads;
    for (const LoopCensus& c : candidates) heads.push_back(at.load_base + c.begin);
    const auto ran = executed(heads, run);
    if (!ran) return census_of(fn);
    std::optional<std::size_t> best;
    for (std::size_t i = 0; i < candidates.size(); ++i)
      if ((*ran)[i] && (!best || candidates[i].macs > candidates[*best].macs)) best = i;
    if (best) {
      LoopCensus c = std::move(candidates[*best]);
      c.by_multiplies = multiplies;
      c.seen_running = true;
      return c;
    }
  }
  return census_of(fn);
}

std::vector<Insn> loop_instructions(const void* fn) {
  const CodeAddress at = locate(fn);
  const Function f = disassemble(at, is_x86_file());
  if (f.insns.empty()) fail("no function symbol starts at 0x", std::hex, at.address, " in ", at.file);
  std::vector<Insn> out;
  for (const Insn& i : f.insns)
    if (std::any_of(f.loops.begin(), f.loops.end(),
                    [&](const auto& l) { return l.first <= i.address && i.address <= l.second; }))
      out.push_back(i);
  return out;
}

}  // namespace ternlab::inspect
