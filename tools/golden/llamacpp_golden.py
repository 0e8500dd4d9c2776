#!/usr/bin/env python3
"""llama.cpp as an independent golden: runs ternlab-exported models through upstream llama.cpp (the
sources llama-cpp-python 0.3.36 vendors, built by tools/peers/setup.sh) and writes its logits and greedy
tokens as fixtures for the C++ suite `llamacpp-golden` (tests/test_llamacpp_golden.cpp).

    tools/peers/setup.sh                                        # once: llama.cpp + the venv
    tools/peers/.venv/bin/python tools/golden/llamacpp_golden.py [--ternlab build/ternlab] [--check]

Cases (tests/fixtures/llamacpp/llamacpp_golden.toml lists them):
  kjv          the trained model (models/bonsai-kjv-py), exported `--type f32 --unfold`: upstream llama.cpp
               has no Hadamard fold, so it gets the fold undone into float weights (exact here) and runs
               the model's own function with f32 matmuls; ternlab runs the committed ternary file.
  plain_tq2_0  a synthetic unfolded model (no fold: upstream's convention) in TQ2_0, and the same
  plain_tq1_0  weights in TQ1_0: llama.cpp's own ternary kernels (q8_K activations, as ternlab's).
  folded_tq2_0 a folded synthetic model exported to TQ2_0 with the fold kept: llama.cpp ignores
               prism.hadamard, so its logits are NOT the model's; the C++ test requires the bound to
               reject them (the comparison can fail).
  quantized    llama.cpp's own llama-quantize writes plain_tq2_0's weights from F32 (committed GGUF):
               ternlab must load a file llama.cpp's tools wrote and find the same weights.

The C++ build and tests never need Python: everything the test reads is committed.
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
PEERS = ROOT / "tools" / "peers"
LIB = PEERS / ".llamacpp" / "build" / "bin"
FIXTURES = ROOT / "tests" / "fixtures" / "llamacpp"
os.environ.setdefault("LLAMA_CPP_LIB_PATH", str(LIB))

try:
    import llama_cpp  # noqa: E402
except Exception as e:  # pragma: no cover - a setup error, said plainly
    sys.exit(f"llamacpp_golden.py: cannot import llama_cpp ({e}); run tools/peers/setup.sh and use "
             f"tools/peers/.venv/bin/python")

SEED = 2026
GREEDY_STEPS = 12
KJV = ROOT / "models" / "bonsai-kjv-py" / "bonsai-kjv-py.gguf"


def fnv1a64(path):
    h = 0xcbf29ce484222325
    data = pathlib.Path(path).read_bytes()
    # numpy-free but fast enough for a few MB: process in a loop over bytes
    for b in data:
        h ^= b
        h = (h * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def run(cmd):
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"llamacpp_golden.py: {' '.join(map(str, cmd))} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return r.stdout


def llama(path, n_ctx=512):
    return llama_cpp.Llama(model_path=str(path), n_ctx=n_ctx, n_batch=n_ctx, n_ubatch=n_ctx, logits_all=True,
                           n_threads=1, n_threads_batch=1, seed=SEED, verbose=False,
                           type_k=llama_cpp.GGML_TYPE_F32, type_v=llama_cpp.GGML_TYPE_F32, flash_attn=False)


def greedy(llm, prompt, steps):
    """llama.cpp's greedy continuation (cached decode, one token at a time) and each step's top-2 margin."""
    llm.reset()
    llm.eval(prompt)
    out, margins = [], []
    for _ in range(steps):
        row = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float64)
        order = np.argsort(row)
        tok = int(order[-1])
        out.append(tok)
        margins.append(float(row[order[-1]] - row[order[-2]]))
        llm.eval([tok])
    return out, margins


def teacher_forced(llm, tokens):
    """Logits at every position of one uncached prefill over `tokens` (row t scores the token after t)."""
    llm.reset()
    llm.eval(tokens)
    return np.array(llm.scores[:len(tokens)], dtype=np.float32)


def toml_str(s):
    """A TOML basic string: JSON's escapes (\\n, \\", \\uXXXX) are TOML's."""
    return json.dumps(str(s), ensure_ascii=False)


def toml_list(xs, fmt=str):
    return "[" + ", ".join(fmt(x) for x in xs) + "]"


def case(llm, name, prompt, out_dir, extra):
    cont, margins = greedy(llm, prompt, GREEDY_STEPS)
    seq = list(prompt) + cont
    logits = teacher_forced(llm, seq)
    (out_dir / f"{name}.f32").write_bytes(logits.astype("<f4").tobytes())
    lines = [f"[{name}]"] + extra + [
        f"prompt = {toml_list(prompt)}",
        f"greedy = {toml_list(cont)}",
        f"greedy_margins = {toml_list(margins, lambda m: repr(round(m, 6)))}",
        f"positions = {len(seq)}",
        f"vocab = {logits.shape[1]}",
        f'logits = "{name}.f32"',
        "",
    ]
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ternlab", default=str(ROOT / "build" / "ternlab"), help="ternlab binary")
    ap.add_argument("--check", action="store_true", help="write to a temp dir and compare with the committed fixtures")
    a = ap.parse_args()
    ternlab = pathlib.Path(a.ternlab)
    if not ternlab.is_file():
        sys.exit(f"llamacpp_golden.py: no ternlab binary at {ternlab} (scripts/build.sh native, or --ternlab PATH)")
    quantize = LIB / "llama-quantize"
    if not quantize.is_file():
        sys.exit(f"llamacpp_golden.py: no {quantize}; run tools/peers/setup.sh")

    out_dir = pathlib.Path(tempfile.mkdtemp(prefix="llamacpp-golden-")) if a.check else FIXTURES
    out_dir.mkdir(parents=True, exist_ok=True)
    work = pathlib.Path(tempfile.mkdtemp(prefix="llamacpp-work-"))
    toml = ["# llama.cpp's logits and greedy tokens on ternlab-exported models (tools/golden/llamacpp_golden.py).",
            f"# llama.cpp: the sources vendored by llama-cpp-python {llama_cpp.__version__}, CPU, 1 thread, F32 KV cache.",
            "# Logits files: float32 little-endian [positions][vocab], teacher forced over prompt + greedy.",
            ""]

    # kjv: the trained model, fold undone into F32 for an engine without it.
    kjv_f32 = work / "kjv-f32-unfolded.gguf"
    run([ternlab, "model", "export", KJV, "--type", "f32", "--unfold", "-o", kjv_f32])
    llm = llama(kjv_f32)
    prose = (ROOT / "models" / "bonsai-kjv-py" / "heldout-prose.txt").read_text()
    code = (ROOT / "models" / "bonsai-kjv-py" / "heldout-code.txt").read_text()
    texts = {"kjv_prose": prose[:160], "kjv_code": code[:160], "kjv_short": "And the LORD said unto"}
    for name, text in texts.items():
        ids = llm.tokenize(text.encode(), add_bos=False, special=False)
        toml += case(llm, name, ids, out_dir, [
            'model = "models/bonsai-kjv-py/bonsai-kjv-py.gguf"',
            'exported = "model export --type f32 --unfold"',
            f"text = {toml_str(text)}",
        ])
    del llm

    # plain: unfolded synthetic models in ggml's ternary types.
    prompt = [72, 101, 108, 108, 111, 32, 119, 111, 114, 108, 100, 33, 32, 84, 101, 114, 110, 97, 114, 121]
    synth = {}
    for t in ("tq2_0", "tq1_0"):
        path = work / f"plain-{t}.gguf"
        args = ["model", "synth", "--preset", "tiny", "--type", t, "--scale-group", "256", "--unfolded",
                "--seed", str(SEED), "-o", path]
        run([ternlab] + args)
        synth[t] = path
        llm = llama(path)
        toml += case(llm, f"plain_{t}", prompt, out_dir, [
            f'synth = {toml_list(args[1:-1], toml_str)}',
            f"fnv1a64 = \"{fnv1a64(path):016x}\"",
        ])
        del llm

    # folded_tq2_0: the fold kept; llama.cpp ignores it, so these logits are another function's.
    folded = work / "folded-pq2_0.gguf"
    fargs = ["model", "synth", "--preset", "tiny", "--type", "pq2_0", "--scale-group", "256", "--seed", str(SEED),
             "-o", folded]
    run([ternlab] + fargs)
    folded_tq = work / "folded-tq2_0.gguf"
    run([ternlab, "model", "export", folded, "--type", "tq2_0", "-o", folded_tq])
    llm = llama(folded_tq)
    toml += case(llm, "folded_tq2_0", prompt, out_dir, [
        f'synth = {toml_list(fargs[1:-1], toml_str)}',
        'exported = "model export --type tq2_0 (fold kept: llama.cpp ignores prism.hadamard)"',
        f"fnv1a64 = \"{fnv1a64(folded):016x}\"",
    ])
    del llm

    # quantized: llama.cpp's llama-quantize writes TQ2_0 from the plain model's F32 weights.
    plain_f32 = work / "plain-f32.gguf"
    run([ternlab, "model", "export", synth["tq2_0"], "--type", "f32", "-o", plain_f32])
    quantized = out_dir / "plain_tq2_0.llama-quantize.gguf"
    qargs = ["--pure", "--token-embedding-type", "tq2_0", "--output-tensor-type", "tq2_0",
             "--tensor-type", "ssm_alpha=f32", "--tensor-type", "ssm_beta=f32"]
    run([quantize] + qargs + [plain_f32, quantized, "TQ2_0", "1"])
    toml += ["[quantized]",
             'file = "plain_tq2_0.llama-quantize.gguf"',
             f"llama_quantize = {toml_list(qargs + ['PLAIN_F32.gguf', 'OUT.gguf', 'TQ2_0', '1'], toml_str)}",
             'source = "plain_tq2_0 exported --type f32"',
             f"fnv1a64 = \"{fnv1a64(quantized):016x}\"",
             ""]

    (out_dir / "llamacpp_golden.toml").write_text("\n".join(toml))
    if a.check:
        bad = 0
        for f in sorted(out_dir.iterdir()):
            ref = FIXTURES / f.name
            if not ref.exists():
                print(f"missing in fixtures: {f.name}")
                bad += 1
            elif f.suffix == ".f32":
                x = np.fromfile(f, "<f4")
                y = np.fromfile(ref, "<f4")
                d = float(np.abs(x - y).max()) if x.shape == y.shape else float("inf")
                print(f"{f.name}: max |diff| {d:.3g}")
                bad += d > 1e-4
            elif f.read_bytes() != ref.read_bytes():
                print(f"{f.name}: differs")
                bad += f.suffix != ".toml"
        sys.exit(1 if bad else 0)
    print(f"wrote {out_dir}")


if __name__ == "__main__":
    main()
