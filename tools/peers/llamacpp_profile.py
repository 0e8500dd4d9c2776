#!/usr/bin/env python3
"""Where llama.cpp's time goes on a model, in ternlab's op categories: `perf record` over llama-bench
(the build tools/peers/setup.sh made), samples grouped by symbol into the rows of ternlab's per-op
profile (configs/model-profile.toml, model::OpProfile), so the two engines' profiles sit side by side.

    tools/peers/.venv/bin/python tools/peers/llamacpp_profile.py MODEL.gguf [--decode 64 | --prefill 64]
        [-t 1] [-r 3] [--json OUT.json]

Samples taken while the model loads and warms up are excluded by symbol where they can be (llama.cpp's
loader, the page-fault and page-zeroing kernel paths) and shown as `load and kernel`; what is left is
the per-token work. Needs perf (linux-perf) and kernel.perf_event_paranoid <= 2.
"""
import argparse
import json
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
BENCH = HERE / ".llamacpp" / "build" / "bin" / "llama-bench"

# ternlab's OpProfile rows (model/model.cpp OpProfile::name), then llama.cpp's own extras. First match wins.
CATEGORIES = [
    ("load and kernel", r"llama_model_loader|llama_vocab|gguf_|^\[k\]|page|clear_page|exc_|irq|softirq|"
                        r"^(__|_)?(rcu|raw_spin|list_)"),
    ("ternary matmul", r"^ggml_vec_dot_(tq1_0|tq2_0|q\d|iq|pq|ptq)|^ggml_compute_forward_mul_mat|^ggml_gem[mv]_"),
    ("q8_K quantize", r"^quantize_row_q8|^ggml_quantize|^quantize_q8"),
    ("Hadamard", r"fwht|hadamard"),
    ("Gated DeltaNet", r"gated_delta_net|ssm_conv|ssm_scan|l2_norm"),
    ("attention", r"flash_attn|soft_max|rope|ggml_vec_dot_f16"),
    ("norms", r"rms_norm|group_norm|forward_norm"),
    ("float matmuls (BF16/F32 weights)", r"^ggml_vec_dot_(bf16|f32)"),
    ("state and KV copies", r"get_rows|set_rows|^ggml_compute_forward_(cpy|dup|concat)|memmove|memcpy|memset"),
    ("element-wise", r"^ggml_compute_forward_(add|mul|sub|div|scale|silu|swiglu|glu|sigmoid|unary|exp|softplus|"
                     r"neg|sum|mean|clamp|fill|cumsum|tri)|expf|^ggml_vec_(silu|swiglu|mul|add|scale|exp)"),
    ("threads and scheduling", r"ggml_graph_compute|ggml_barrier|thread|sched|futex|pthread|sync"),
    # Host code that builds and checks the graph each token: std containers, string compares, llama_*.
    ("graph building (host code)", r"^std::|^llama_|^llm_|^ggml_(new|view|reshape|permute|cont|graph|build|hash|"
                                   r"visit|get_|set_|is_|nbytes|row_size|backend)|memcmp|strcmp|strlen|malloc|free"),
]


def short(symbol):
    """A symbol without its template arguments, at most 48 characters."""
    depth, out = 0, []
    for ch in symbol:
        depth += ch == "<"
        if depth == 0:
            out.append(ch)
        depth -= ch == ">" and depth > 0
    s = "".join(out)
    return s if len(s) <= 48 else s[:45] + "..."


def categorise(symbol, kernel):
    if kernel:
        return "load and kernel"
    for name, pattern in CATEGORIES:
        if re.search(pattern, symbol):
            return name
    return "other"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model", help="GGUF model llama.cpp loads (ternlab model export / synth --type tq2_0)")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--decode", type=int, default=None, metavar="N", help="tokens decoded (llama-bench -n N)")
    mode.add_argument("--prefill", type=int, default=None, metavar="N", help="prompt tokens (llama-bench -p N)")
    ap.add_argument("-t", "--threads", type=int, default=1)
    ap.add_argument("-r", "--repetitions", type=int, default=3)
    ap.add_argument("--frequency", type=int, default=2000, help="perf samples per second")
    ap.add_argument("--json", help="also write the table as JSON here")
    a = ap.parse_args()
    model = pathlib.Path(a.model)
    if not model.is_file():
        sys.exit(f"llamacpp_profile.py: no model file {model}")
    if not BENCH.is_file():
        sys.exit(f"llamacpp_profile.py: no {BENCH}; run tools/peers/setup.sh")
    if not shutil.which("perf"):
        sys.exit("llamacpp_profile.py: perf is not installed (apt-get install linux-perf)")
    if a.prefill is None and a.decode is None:
        a.decode = 64
    p, n = (a.prefill, 0) if a.prefill else (0, a.decode)
    with tempfile.TemporaryDirectory() as tmp:
        data = pathlib.Path(tmp) / "perf.data"
        cmd = ["perf", "record", "-q", "-F", str(a.frequency), "-o", str(data), "--", str(BENCH), "-m", str(model),
               "-p", str(p), "-n", str(n), "-t", str(a.threads), "-r", str(a.repetitions), "-o", "json"]
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"llamacpp_profile.py: {' '.join(cmd)} failed:\n{run.stderr[-2000:]}")
        bench = json.loads(run.stdout)
        rep = subprocess.run(["perf", "report", "-i", str(data), "--no-children", "--sort", "sym", "--stdio",
                              "--percent-limit", "0", "-F", "overhead,sym"], capture_output=True, text=True)
        if rep.returncode != 0:
            sys.exit(f"llamacpp_profile.py: perf report failed:\n{rep.stderr[-2000:]}")
    shares, symbols = {}, {}
    for line in rep.stdout.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+\[(.)\]\s+(.+?)\s*$", line)
        if not m:
            continue
        pct, where, sym = float(m.group(1)), m.group(2), m.group(3)
        cat = categorise(sym, where == "k")
        shares[cat] = shares.get(cat, 0.0) + pct
        symbols.setdefault(cat, []).append((pct, sym))
    load = shares.get("load and kernel", 0.0)
    work = 100.0 - load
    tok_s = bench[0]["avg_ts"] if bench else float("nan")
    what = f"pp{p}" if p else f"tg{n}"
    print(f"llama.cpp {what}, {a.threads} thread(s), {model.name}: {tok_s:.2f} tok/s "
          f"(llama-bench, {a.repetitions} repetitions); perf samples by ternlab op category, "
          f"load and kernel time ({load:.1f}% of samples) left out of the per-token shares")
    print()
    print("| op | share of per-token samples | ms per token | top symbols |")
    print("|---|---|---|---|")
    rows = []
    per_token_ms = 1000.0 / tok_s  # prefill too: llama-bench's pp rate is prompt tokens per second
    for cat, _ in CATEGORIES + [("other", "")]:
        if cat == "load and kernel" or cat not in shares:
            continue
        share = shares[cat] / work if work > 0 else 0.0
        top = ", ".join(short(s) for _, s in sorted(symbols[cat], reverse=True)[:3])
        rows.append({"op": cat, "share": share, "ms_per_token": share * per_token_ms, "symbols": top})
        print(f"| {cat} | {100 * share:.1f}% | {share * per_token_ms:.3f} | {top} |")
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps({"engine": "llama.cpp", "what": what, "threads": a.threads,
                                                    "model": str(model), "tok_s": tok_s, "load_share": load / 100,
                                                    "ops": rows, "llama_bench": bench}, indent=2))


if __name__ == "__main__":
    main()
