#!/usr/bin/env python3
"""Static cost of the x86 kernels' inner loops, from llvm-mca: cycles per block, per instantiation.

Timings on a shared 2-core VM move by 20% from one minute to the next; llvm-mca's cycle count for
a given loop does not move at all. This tool compiles one ISA translation unit to assembly with the
build's own flags, finds the innermost loop of each strategy instantiation (the shortest backward
branch whose body holds at least four int8 dot instructions and no call), and runs llvm-mca on it.
MAC/cycle counts the int8 products the loop's dot instructions perform (32 per vpmaddubsw ymm, 64
per vpdpbusd zmm): every kernel here spends exactly one such product per weight and token, so the
column compares kernels directly. The register-only vpmaddubsw loop (the int8 ceiling) is 64 on
Zen 3 (two a cycle); "stack" counts the loop's stack references (spills).

    python3 tools/mca/loop_cost.py                       # kernels/targets/avx2/kernels.cpp, -mcpu=znver3
    python3 tools/mca/loop_cost.py --mcpu skylake --filter SlotMask
    python3 tools/mca/loop_cost.py --show 'SlotMask<Avx2,2,2,4>::gemv'   # print the loop it measured

Needs llvm-mca (Debian: llvm) and a configured build folder (build/compile_commands.json). The
numbers are a model of one core, not a measurement: read them as "which variant issues fewer
cycles", and confirm with `ternlab bench` or `ternlab run`.
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOT = re.compile(r"\s(vpmaddubsw|vpdpbusd)\s")  # the int8 multiply: one per 4 (dpbusd) or 2 products a lane


def macs(line):
    """int8 multiply-accumulates one dot instruction performs: one per byte of its register."""
    if not DOT.search(line):
        return 0
    return 64 if "%zmm" in line else 32 if "%ymm" in line else 16


def compile_to_asm(build, source):
    db = os.path.join(build, "compile_commands.json")
    if not os.path.exists(db):
        sys.exit(f"loop_cost: {db} not found: configure a build first (scripts/build.sh)")
    for entry in json.load(open(db)):
        if os.path.abspath(entry["file"]) == os.path.abspath(source):
            args = shlex.split(entry["command"])
            break
    else:
        sys.exit(f"loop_cost: {source} is not in {db}")
    out = tempfile.NamedTemporaryFile(suffix=".s", delete=False).name
    i = args.index("-o")
    args[i + 1] = out
    args = [a for a in args if a != "-c"] + ["-S"]
    subprocess.run(args, check=True, cwd=entry["directory"])
    return open(out).read().split("\n")


def demangle(names):
    r = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True, check=True)
    return r.stdout.split("\n")


def short(name):
    """ternlab::strategies::SlotMask<ternlab::isa::Avx2, 2, 2, 4>::gemv(...) -> SlotMask<Avx2,2,2,4>::gemv"""
    # An enum template argument demangles as a cast, "(ternlab::strategies::Streaming)1": drop the
    # cast so that the first "(" left opens the parameter list.
    name = re.sub(r"\([\w:]+\)(?=-?\d)", "", name).split("(")[0]
    if " ternlab::" in name:  # a function template's demangled name starts with its return type
        name = name[name.index(" ternlab::") + 1:]
    for junk in ("ternlab::strategies::", "ternlab::isa::", "ternlab::detail::", "(anonymous namespace)::", " "):
        name = name.replace(junk, "")
    return name


def functions(asm):
    """(mangled name, body lines) of every function with a .cfi_startproc."""
    out, name, body = [], None, []
    for line in asm:
        m = re.match(r"^(_Z[\w.]+):$", line)  # clones carry suffixes: .constprop.0, .isra.0
        if m:
            name, body = m.group(1), []
            continue
        if name:
            body.append(line)
            if line.strip() == ".cfi_endproc":
                out.append((name, body))
                name = None
    return out


def innermost_dot_loops(body):
    """Every innermost backward-branch loop with at least 4 int8 dots (a kernel may have several:
    a main path and a remainder path), in code order."""
    labels = {l[:-1]: k for k, l in enumerate(body) if re.match(r"^\.L\w+:$", l)}
    spans = []
    for k, line in enumerate(body):
        m = re.match(r"\s+j\w+\s+(\.L\w+)", line)
        if not m or m.group(1) not in labels or labels[m.group(1)] >= k:
            continue
        seg = body[labels[m.group(1)] + 1:k]
        if sum(bool(DOT.search(x)) for x in seg) < 4 or any(re.search(r"\scall\s|\.cfi", x) for x in seg):
            continue
        spans.append((labels[m.group(1)], k))
    inner = [a for a in spans if not any(b != a and a[0] <= b[0] and b[1] <= a[1] for b in spans)]
    # Labels, the loop's branch, alignment and comments (inline asm brackets its text in "# ..."
    # lines) are not instructions.
    return [[x for x in body[s + 1:e]
             if not re.match(r"^\.L\w+:$", x) and not re.match(r"\s*#|\s+(j\w+|\.p2align)", x)]
            for s, e in sorted(inner)]


def mca_cycles(loop, mca, mcpu, iterations=200):
    r = subprocess.run([mca, f"-mcpu={mcpu}", f"-iterations={iterations}"], input="\n".join(loop) + "\n",
                       capture_output=True, text=True)
    m = re.search(r"Total Cycles:\s+(\d+)", r.stdout)
    if not m:
        sys.exit("loop_cost: llvm-mca failed:\n" + r.stderr[-2000:])
    return int(m.group(1)) / iterations


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--source", default=os.path.join(ROOT, "kernels", "x86_avx2.cpp"))
    ap.add_argument("--mcpu", default="znver3", help="llvm-mca CPU model (znver3, skylake, icelake-server, ...)")
    ap.add_argument("--filter", default="", help="only functions whose short name contains this")
    ap.add_argument("--show", default="", help="print the loop of the function with this short name")
    ap.add_argument("--mca", default="llvm-mca",
                    help="the llvm-mca to run: a newer one knows newer cores (llvm-mca-16: -mcpu=znver4, Debian's llvm-16)")
    a = ap.parse_args()
    if subprocess.run(["which", a.mca], capture_output=True).returncode != 0:
        sys.exit(f"loop_cost: {a.mca} not found (Debian: apt install llvm, or llvm-16 for llvm-mca-16)")

    fns = functions(compile_to_asm(a.build, a.source))
    names = demangle([n for n, _ in fns])
    print(f"{os.path.relpath(a.source, ROOT)}, {a.mca} -mcpu={a.mcpu}; one row per innermost loop with int8 dots")
    print(f"{'function (#k: its k-th loop)':48} {'instrs':>6} {'dots':>5} {'stack':>5} {'cycles/iter':>11} {'MAC/cycle':>9}")
    for (mangled, body), full in zip(fns, names):
        s = short(full)
        if a.filter not in s or not re.search(r"::(gemv|gemm|rows)", s):
            continue
        loops = innermost_dot_loops(body)
        for n, loop in enumerate(loops):
            label = s if len(loops) == 1 else f"{s} #{n + 1}"
            if a.show and a.show in (s, label):
                print("\n".join(loop))
            stack = sum(bool(re.search(r"\((%rsp|%rbp)\)|\(%r[sb]p,", x)) for x in loop)
            dots = sum(bool(DOT.search(x)) for x in loop)
            cycles = mca_cycles(loop, a.mca, a.mcpu)
            print(f"{label:48} {len(loop):6} {dots:5} {stack:5} {cycles:11.1f} {sum(map(macs, loop)) / cycles:9.1f}")


if __name__ == "__main__":
    main()
