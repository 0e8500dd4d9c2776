#!/usr/bin/env python3
"""Runs a built `ternlab` binary against the golden fixtures, through its command line only:

  1. tokenizer: `ternlab tokenize tokenizer.gguf TEXT` gives HF tokenizers' ids and decodes back;
  2. model: `ternlab model generate tiny_bonsai.gguf` reproduces HF's prompt ids and greedy tokens in every
     layout (until an end-of-generation token, where ternlab stops);
  3. logits: `ternlab model logits tiny_bonsai.gguf --tokens IDS --out F.npy` (every position, teacher forced),
     read with numpy, against HF's float64 logits, within what q8_K activation rounding can do: the fixture's
     [simulation] table measured that noise with ref_gguf.py (max |diff|, relative RMS, minimum cosine);
     the bounds are twice it, as in the C++ golden suite;
  4. writer: `ternlab model synth` files (PQ2_0 and PTQ1_0) read by gguf-py meet the Bonsai contract.

  check_ternlab.py PATH/TO/ternlab [--layouts pq2_0,ptq1_0,t2p,t2x4]

The C++ golden tests compare logits in-process; this is the end-to-end view of the same fixtures through
the command line only.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import read_gguf  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "golden"


def run(cmd: list[str]) -> str:
    # bytes, not text mode: universal newlines would turn a decoded "\r\n" into "\n"
    res = subprocess.run(cmd, capture_output=True)
    if res.returncode:
        raise RuntimeError(f"{' '.join(cmd[:4])}...: exit {res.returncode}: {res.stderr.decode(errors='replace')[:300]}")
    return res.stdout.decode("utf-8", errors="surrogateescape")


def check_tokenizer(exe: str) -> tuple[int, int, int]:
    doc = tomllib.loads((FIXTURES / "tokenizer_cases.toml").read_text(encoding="utf-8"))
    ok = bad = skipped = 0
    for case in doc["case"]:
        if case.get("decode_only") or "\0" in case["text"]:
            skipped += 1  # argv cannot carry NUL; decode-only cases need the C++ test
            continue
        out = run([exe, "tokenize", str(FIXTURES / "tokenizer.gguf"), case["text"]])
        head, _, rest = out.partition("\n")
        ids = [int(x) for x in head.split(":", 1)[1].split()] if ":" in head else []
        decoded = rest[len("decoded: "):] if rest.startswith("decoded: ") else None
        if decoded is not None and decoded.endswith("\n"):
            decoded = decoded[:-1]
        if ids == case["ids"] and decoded == case["decoded"]:
            ok += 1
        else:
            bad += 1
            print(f"tokenizer {case['name']}: ids {ids} vs {case['ids']}; decoded {decoded!r} vs {case['decoded']!r}")
    return ok, bad, skipped


def check_model(exe: str, layouts: list[str]) -> tuple[int, int]:
    golden = tomllib.loads((FIXTURES / "tiny_bonsai_golden.toml").read_text(encoding="utf-8"))
    stops = {507, 509}  # <|endoftext|>, <|im_end|>: ternlab stops generating there
    ok = bad = 0
    for layout in layouts:
        for p in golden["prompt"]:
            out = run([exe, "model", "generate", str(FIXTURES / golden["gguf"]), "-p", p["text"],
                       "-n", str(len(p["generated_ids"])), "--layout", layout])
            lines = {ln.split(":", 1)[0]: ln.split(":", 1)[1] for ln in out.splitlines() if ":" in ln}
            prompt = [int(x) for x in lines.get("prompt tokens", "").split()]
            gen = [int(x) for x in lines.get("output tokens", "").split()]
            want = []
            for t in p["generated_ids"]:
                want.append(t)
                if t in stops:
                    break
            if prompt == p["prompt_ids"] and gen == want:
                ok += 1
            else:
                bad += 1
                print(f"model {layout} {p['name']}: prompt {'same' if prompt == p['prompt_ids'] else 'DIFFERENT'}, "
                      f"greedy {gen} vs HF {want}")
    return ok, bad


def check_logits(exe: str, layouts: list[str]) -> tuple[int, int]:
    import numpy as np

    golden = tomllib.loads((FIXTURES / "tiny_bonsai_golden.toml").read_text(encoding="utf-8"))
    sim = golden["simulation"]
    # Twice the q8_K noise ref_gguf.py measured on this fixture (float32 + ggml L2 + q8_K activations):
    # a correct engine's rounding stays inside; a wrong convention gives cosine ~0.
    max_abs = 2 * sim["noise_q8k_f32_ggml_l2_max_abs"]
    max_rel_rms = 2 * sim["noise_q8k_f32_ggml_l2_max_rel_rms"]
    min_cos = 1 - 2 * (1 - sim["noise_q8k_f32_ggml_l2_min_cosine"])
    allv = np.fromfile(FIXTURES / golden["logits_file"], dtype="<f8")
    V = golden["vocab"]
    ok = bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for layout in layouts:
            for p in golden["prompt"]:
                out = Path(tmp) / f"{layout}-{p['name']}.npy"
                run([exe, "model", "logits", str(FIXTURES / golden["gguf"]), "--tokens",
                     ",".join(str(t) for t in p["sequence_ids"]), "--layout", layout, "--out", str(out)])
                got = np.load(out).astype(np.float64)
                n = p["positions"]
                ref = allv[p["logits_offset_bytes"] // 8: p["logits_offset_bytes"] // 8 + n * V].reshape(n, V)
                diff = float(np.abs(got - ref).max()) if got.shape == ref.shape else float("inf")
                rel = float(np.sqrt(np.sum((got - ref) ** 2) / np.sum(ref * ref))) if got.shape == ref.shape else 1.0
                cos = (float((np.sum(got * ref, axis=1) / np.sqrt(np.sum(got * got, axis=1) * np.sum(ref * ref, axis=1))).min())
                       if got.shape == ref.shape else 0.0)
                if diff <= max_abs and rel <= max_rel_rms and cos >= min_cos:
                    ok += 1
                else:
                    bad += 1
                    print(f"logits {layout} {p['name']}: shape {got.shape} vs {ref.shape}, max |diff| {diff:.3g} "
                          f"(bound {max_abs:.3g}), relative RMS {rel:.3g} ({max_rel_rms:.3g}), min cosine {cos:.5f} ({min_cos:.5f})")
    return ok, bad


def check_synth(exe: str) -> tuple[int, int]:
    ok = bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for typ in ("pq2_0", "ptq1_0"):
            path = str(Path(tmp) / f"synth_{typ}.gguf")
            run([exe, "model", "synth", "--preset", "tiny", "--type", typ, "-o", path])
            errors = read_gguf.check_bonsai(read_gguf.describe(path))
            for e in errors:
                print(f"synth {typ}: {e}")
            ok, bad = ok + (not errors), bad + bool(errors)
    return ok, bad


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("ternlab")
    ap.add_argument("--layouts", default="pq2_0,ptq1_0,t2p,t2x4")
    args = ap.parse_args()
    t_ok, t_bad, t_skip = check_tokenizer(args.ternlab)
    m_ok, m_bad = check_model(args.ternlab, args.layouts.split(","))
    l_ok, l_bad = check_logits(args.ternlab, args.layouts.split(","))
    s_ok, s_bad = check_synth(args.ternlab)
    print(f"tokenizer: {t_ok} cases identical, {t_bad} different, {t_skip} left to the C++ test")
    print(f"model: {m_ok} prompt x layout runs with HF's greedy tokens, {m_bad} different")
    print(f"logits: {l_ok} prompt x layout runs within twice the simulated q8_K noise of HF's, {l_bad} outside")
    print(f"synth: {s_ok} ternlab-written files pass gguf-py + Bonsai contract, {s_bad} fail")
    print(f"{t_ok + m_ok + l_ok + s_ok} passed, {t_bad + m_bad + l_bad + s_bad} failed")
    return 1 if t_bad + m_bad + l_bad + s_bad else 0


if __name__ == "__main__":
    sys.exit(main())
