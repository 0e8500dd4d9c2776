#!/usr/bin/env python3
"""llama.cpp as an end-to-end arm beside ternlab's layouts.

Runs upstream llama.cpp's own `llama-bench -o json` (built by tools/peers/setup.sh) on a TQ2_0/TQ1_0
model that ternlab wrote (`ternlab model synth --type tq2_0 --scale-group 256`, or `ternlab model
export --type tq2_0`), with the prompt length, decode length, thread counts, rounds and warm-up rounds
of a ternlab model config (kind prefill, decode or speed), and writes a results folder in ternlab's
own format (summary.json with results_version 1, summary.md, rounds.csv, plots, plan.txt,
experiment.toml, index.html), so that

    build/ternlab report results/<ternlab run> results/<this run> --out /tmp/compare

shows llama.cpp beside ternlab's layouts on one page, in the same machine section.

Method, as close to `ternlab run` as a second process allows (docs/experiments.md, "The method"):
every round first measures the memory read ceiling on every thread count in use, with ternlab's
own MemoryCeiling (a one-round `ternlab run` of kind bandwidth over `ceiling_mib`), then runs one
`llama-bench` process over every test and thread count (its own untimed warm-up run per test, then
`--reps` timed repetitions, whose mean is the round's sample). The first `warmup` rounds are
discarded. Decode bandwidth fraction = ternary weight bytes per token (every TQ2_0/TQ1_0 tensor but
token_embd.weight, from the GGUF's tensor sizes) / time per token / that round's ceiling on the
arm's thread count. Prefill reads the weights once per llama.cpp micro-batch (n_ubatch).

Bad input is refused with exit status 2 and a message naming the file: a model that is not a GGUF,
not qwen35, holds tensors other than TQ2_0/TQ1_0 and float ones (or no ternary tensor at all), or
whose block_count / embedding_length / feed_forward_length / vocabulary differ from the model the
ternlab config runs (its `model`, its `preset`, or --source).

    tools/peers/.venv/bin/python tools/peers/llamacpp_bench.py MODEL.gguf --config configs/llamacpp-compare.toml
    tools/peers/.venv/bin/python tools/peers/llamacpp_bench.py MODEL.gguf --config C.toml -t 1,2 -n 32 -p 0 -r 5
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import io
import itertools
import json
import math
import os
import re
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import gguf

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
RESULTS_VERSION = 1  # experiments/results.hpp's kResultsVersion: what `ternlab report` reads
CEILING_DRIFT_SHARE = 0.10  # experiments/report.hpp's kCeilingDriftShare
FRACTION_LIMIT = 1.0  # kFractionLimit
CACHE_WEIGHTS_FACTOR = 2.0  # kCacheWeightsFactor

# ggml types (ggml/include/ggml.h)
GGML_F32, GGML_F16, GGML_BF16, GGML_TQ1_0, GGML_TQ2_0 = 0, 1, 30, 34, 35
FLOAT_TYPES = {GGML_F32: "F32", GGML_F16: "F16", GGML_BF16: "BF16"}
TERNARY_TYPES = {GGML_TQ1_0: ("TQ1_0", 256, 54), GGML_TQ2_0: ("TQ2_0", 256, 66)}  # name, block weights, block bytes
GGML_TYPE_NAMES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 9: "Q8_1", 10: "Q2_K",
                   11: "Q3_K", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 15: "Q8_K", 16: "IQ2_XXS", 17: "IQ2_XS",
                   18: "IQ3_XXS", 19: "IQ1_S", 20: "IQ4_NL", 21: "IQ3_S", 22: "IQ2_S", 23: "IQ4_XS", 24: "I8",
                   25: "I16", 26: "I32", 27: "I64", 28: "F64", 29: "IQ1_M", 30: "BF16", 34: "TQ1_0", 35: "TQ2_0",
                   39: "MXFP4"}
SHAPE_KEYS = ("block_count", "embedding_length", "feed_forward_length", "vocab")


class Refused(Exception):
    """Bad input: exit status 2, the message names the file and the reason."""


# ---------------------------------------------------------------------------------------------
# GGUF header through gguf-py (the `gguf` package llama.cpp itself ships): metadata and tensor infos.

class Gguf:
    def __init__(self, path: Path):
        self.path = path
        if not path.is_file():
            raise Refused(f"{path}: no such file")
        try:
            reader = gguf.GGUFReader(str(path))
        except (ValueError, OSError, struct.error) as e:
            # gguf-py refuses tensor types ggml does not have, such as PrismML's PQ2_0 (142) / PTQ1_0 (143).
            unknown = re.search(r"(\d+)\)? is not a valid GGMLQuantizationType", str(e))
            if unknown:
                t = int(unknown.group(1))
                name = {142: "PrismML's PQ2_0", 143: "PrismML's PTQ1_0"}.get(t, f"GGUF tensor type {t}")
                raise Refused(f"{path}: holds {name} tensors, which upstream llama.cpp cannot load; export it with "
                              "`ternlab model export --type tq2_0`")
            raise Refused(f"{path}: not a readable GGUF file ({e})")
        self.meta: dict[str, object] = {}
        self.array_len: dict[str, int] = {}
        for key, field in reader.fields.items():
            if field.types and field.types[0] == gguf.GGUFValueType.ARRAY:
                self.array_len[key] = len(field.data)
            else:
                self.meta[key] = field.contents()
        # name, dims (ne0 first), ggml type
        self.tensors: list[tuple[str, list[int], int]] = [
            (t.name, [int(d) for d in t.shape], int(t.tensor_type)) for t in reader.tensors]

    @property
    def arch(self) -> str:
        return str(self.meta.get("general.architecture", ""))

    def shape(self) -> dict[str, int | None]:
        a = self.arch
        vocab = self.array_len.get("tokenizer.ggml.tokens")
        if vocab is None:
            for name, dims, _ in self.tensors:
                if name == "token_embd.weight" and len(dims) == 2:
                    vocab = dims[1]
        return {"block_count": self.meta.get(f"{a}.block_count"),
                "embedding_length": self.meta.get(f"{a}.embedding_length"),
                "feed_forward_length": self.meta.get(f"{a}.feed_forward_length"),
                "vocab": vocab}


def validate_model(g: Gguf) -> tuple[str, int]:
    """The ternary type's name and the ternary bytes a decoded token streams (embedding excluded)."""
    if g.arch != "qwen35":
        raise Refused(f"{g.path}: architecture '{g.arch or '(none)'}', not qwen35 (a Bonsai 2 model that ternlab writes)")
    others = [(n, t) for n, _, t in g.tensors if t not in FLOAT_TYPES and t not in TERNARY_TYPES]
    if others:
        listed = ", ".join(f"{n} ({GGML_TYPE_NAMES.get(t, f'type {t}')})" for n, t in others[:4])
        raise Refused(f"{g.path}: {len(others)} tensors are neither TQ2_0/TQ1_0 nor float: {listed}"
                      f"{', ...' if len(others) > 4 else ''}; export it with `ternlab model export --type tq2_0`")
    kinds = sorted({TERNARY_TYPES[t][0] for _, _, t in g.tensors if t in TERNARY_TYPES})
    if not kinds:
        raise Refused(f"{g.path}: no TQ2_0 or TQ1_0 tensor: not a ternary model ternlab exported "
                      "(`ternlab model export --type tq2_0`)")
    per_token = 0
    for name, dims, t in g.tensors:
        if t in TERNARY_TYPES and name != "token_embd.weight":
            _, block, block_bytes = TERNARY_TYPES[t]
            n = math.prod(dims)
            if n % block:
                raise Refused(f"{g.path}: tensor {name} holds {n} weights, not whole {block}-weight blocks")
            per_token += n // block * block_bytes
    return "+".join(kinds), per_token


def check_shape(model: Gguf, source: Gguf, source_what: str):
    ms, ss = model.shape(), source.shape()
    if source.arch != "qwen35":
        raise Refused(f"{source.path} ({source_what}): architecture '{source.arch}', not qwen35")
    diffs = [f"{k} {ms[k]} != {ss[k]}" for k in SHAPE_KEYS if ms[k] != ss[k]]
    if diffs:
        raise Refused(f"{model.path}: its shape differs from the model the config runs ({source_what}, {source.path}): "
                      + ", ".join(diffs) + "; export that model (`ternlab model export ... --type tq2_0`) or give --source")


# ---------------------------------------------------------------------------------------------
# The ternlab config

class Config:
    def __init__(self, path: Path):
        self.path = path
        try:
            self.text = path.read_text()
            self.data = tomllib.loads(self.text)
        except FileNotFoundError:
            raise Refused(f"{path}: no such config file")
        except tomllib.TOMLDecodeError as e:
            raise Refused(f"{path}: not valid TOML: {e}")
        d = self.data
        self.kind = d.get("kind")
        if self.kind not in ("prefill", "decode", "speed"):
            raise Refused(f"{path}: kind '{self.kind}'; llama-bench measures the model kinds prefill, decode and speed")
        self.name = d.get("name", path.stem)
        self.output = d.get("output", "results")
        self.seed = d.get("seed", 2026)
        self.rounds = d.get("rounds", 5)
        self.warmup = d.get("warmup", 1)
        self.ceiling_mib = d.get("ceiling_mib", 1024)
        self.model = d.get("model")
        self.preset = d.get("preset")
        # How `ternlab run` writes a preset (experiments/model_arms.cpp model_source), and the file it caches it in.
        self.synth_type = d.get("synth_type", "pq2_0")
        self.synth_scale_group = d.get("synth_scale_group", 128)
        self.synth_unfolded = bool(d.get("synth_unfolded", False))
        self.synth_layers = d.get("synth_layers", 0)

        def as_list(v, key):
            vals = v if isinstance(v, list) else [v]
            if not vals or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 1 for x in vals):
                raise Refused(f"{path}: key '{key}': {v!r} is not a positive integer or a list of them")
            return vals

        if self.kind == "prefill":
            self.prompt = as_list(d.get("tokens", 64), "tokens")
            self.gen = [0]
        elif self.kind == "decode":
            self.prompt = [0]
            self.gen = as_list(d.get("tokens", 32), "tokens")
        else:
            self.prompt = as_list(d.get("prefill_tokens", 64), "prefill_tokens")
            self.gen = as_list(d.get("decode_tokens", 32), "decode_tokens")
        top = as_list(d.get("threads", 1), "threads")
        threads = []
        for i, arm in enumerate(d.get("arm", [])):
            threads += as_list(arm["threads"], f"arm[{i}].threads") if "threads" in arm else top
        self.threads = sorted(set(threads or top))


def preset_file(cfg: Config, output: str | None) -> Path:
    """Where `ternlab run` caches the config's preset: <output>/models/<preset>-seed<seed>[-type][-gN][-unfolded][-LN].gguf."""
    variant = "" if cfg.synth_type == "pq2_0" else f"-{cfg.synth_type}"
    variant += "" if cfg.synth_scale_group == 128 else f"-g{cfg.synth_scale_group}"
    variant += "-unfolded" if cfg.synth_unfolded else ""
    variant += f"-L{cfg.synth_layers}" if cfg.synth_layers else ""
    return Path(output or cfg.output) / "models" / f"{cfg.preset}-seed{cfg.seed}{variant}.gguf"


def ensure_preset(cfg: Config, output: str | None, ternlab: Path, log) -> Path:
    """The config's preset file, synthesized as `ternlab run` would when it is not there yet."""
    cached = preset_file(cfg, output)
    if not cached.is_file():
        log(f"synthesizing preset {cfg.preset} (seed {cfg.seed}, {cfg.synth_type}) into {cached}, as `ternlab run` does")
        cached.parent.mkdir(parents=True, exist_ok=True)
        cmd = [str(ternlab), "model", "synth", "--preset", cfg.preset, "--seed", str(cfg.seed), "--type", cfg.synth_type,
               "--scale-group", str(cfg.synth_scale_group)] + (["--unfolded"] if cfg.synth_unfolded else []) \
            + (["--layers", str(cfg.synth_layers)] if cfg.synth_layers else [])
        run_checked(cmd + ["-o", str(cached)])
    return cached


def source_model(cfg: Config, source: str | None, output: str | None, ternlab: Path, log) -> tuple[Path, str]:
    """The GGUF whose shape the llama.cpp model must have: --source, the config's model, or its preset."""
    if source:
        return Path(source), "--source"
    if cfg.model:
        return Path(cfg.model), f"model of {cfg.path}"
    if cfg.preset:
        return ensure_preset(cfg, output, ternlab, log), f"preset {cfg.preset} of {cfg.path}"
    raise Refused(f"{cfg.path}: names neither model nor preset; give --source MODEL.gguf")


# ---------------------------------------------------------------------------------------------
# Running the tools

def run_checked(cmd: list[str]) -> subprocess.CompletedProcess:
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        tail = (p.stderr or p.stdout).strip().splitlines()[-8:]
        raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}:\n" + "\n".join(tail))
    return p


class Ceiling:
    """ternlab's memory read ceiling, one round at a time: a one-round run of kind bandwidth."""

    def __init__(self, ternlab: Path, threads: list[int], mib: int, work: Path):
        self.ternlab, self.work = ternlab, work
        self.config = work / "ceiling.toml"
        lines = ["# written by tools/peers/llamacpp_bench.py: one round of ternlab's memory read ceiling",
                 'kind = "bandwidth"', 'name = "ceiling"', f'output = "{(work / "out").as_posix()}"',
                 "rounds = 1", "warmup = 0", f"ceiling_mib = {mib}", f"buffer_mib = {mib}", "sample_ms = 5", "",
                 "[[arm]]", "threads = [" + ", ".join(str(t) for t in threads) + "]", ""]
        self.config.write_text("\n".join(lines))
        self.machine: dict | None = None

    def measure(self) -> tuple[dict[int, float], dict[int, str]]:
        out = self.work / "out"
        shutil.rmtree(out, ignore_errors=True)
        run_checked([str(self.ternlab), "run", str(self.config), "--no-progress"])
        summary = json.loads(next(out.glob("ceiling-*/summary.json")).read_text())
        if self.machine is None:
            self.machine = summary["machine"]
        run = summary["runs"][0]
        gbps = {int(t): s["median"] for t, s in run["ceiling_gbps"].items()}
        loops = {int(t): v[0] for t, v in run["ceiling_loops"].items()}
        return gbps, loops


def llama_bench(binary: Path, model: Path, prompt: list[int], gen: list[int], threads: list[int], reps: int) -> list[dict]:
    cmd = [str(binary), "-m", str(model), "-p", ",".join(map(str, prompt)), "-n", ",".join(map(str, gen)),
           "-t", ",".join(map(str, threads)), "-r", str(reps), "-o", "json"]
    p = run_checked(cmd)
    try:
        return json.loads(p.stdout)
    except json.JSONDecodeError as e:
        raise RuntimeError(f"{' '.join(cmd)}: its -o json output is not JSON ({e})")


def llama_build_record(binary: Path) -> dict[str, str]:
    build = binary.parent.parent
    cache = {}
    try:
        for line in (build / "CMakeCache.txt").read_text().splitlines():
            if ":" in line and "=" in line and not line.startswith(("#", "//")):
                k, v = line.split("=", 1)
                cache[k.split(":", 1)[0]] = v
    except OSError:
        pass
    compiler = "unknown"
    for f in sorted(build.glob("CMakeFiles/*/CMakeCXXCompiler.cmake")):
        ident = version = ""
        for line in f.read_text().splitlines():
            if line.startswith("set(CMAKE_CXX_COMPILER_ID "):
                ident = line.split('"')[1]
            if line.startswith("set(CMAKE_CXX_COMPILER_VERSION "):
                version = line.split('"')[1]
        compiler = f"{ident} {version}".strip() or compiler
    build_type = cache.get("CMAKE_BUILD_TYPE", "unknown")
    flags = cache.get(f"CMAKE_CXX_FLAGS_{build_type.upper()}", "")
    if cache.get("GGML_NATIVE", "").upper() in ("ON", "TRUE", "1"):
        flags += " (GGML_NATIVE=ON: -march=native)"
    return {"compiler": compiler, "flags": flags, "build_type": build_type}


# ---------------------------------------------------------------------------------------------
# Statistics and results, as experiments/measure.hpp and speed_kinds.cpp write them

def stat(values: list[float]) -> dict | None:
    v = [x for x in values if x is not None and math.isfinite(x)]
    if not v:
        return None
    return {"median": statistics.median(v), "min": min(v), "max": max(v)}


def spread(values: list[float]) -> float | None:
    if len(values) < 2:
        return None
    return statistics.stdev(values) / statistics.fmean(values)


def sig(x: float, digits: int = 3) -> str:
    if x is None or not math.isfinite(x):
        return "—"
    if x == 0:
        return "0"
    mag = math.floor(math.log10(abs(x)))
    decimals = max(0, digits - 1 - mag)
    return f"{x:.{decimals}f}" if mag < digits else f"{x:.0f}"


def with_range(s: dict | None, suffix: str = "", scale: float = 1.0) -> str:
    if not s:
        return "—"
    return f"{sig(s['median'] * scale)}{suffix} [{sig(s['min'] * scale)}–{sig(s['max'] * scale)}]"


def last_level_cache_bytes() -> int:
    best = 0
    for idx in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        try:
            size = (idx / "size").read_text().strip()
            level = int((idx / "level").read_text())
        except (OSError, ValueError):
            continue
        mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(size[-1:], 1)
        n = int(size.rstrip("KMG")) * mult
        if level >= 3 or best == 0:
            best = max(best, n) if level >= 3 else n
    if best == 0:
        try:
            best = os.sysconf("SC_LEVEL3_CACHE_SIZE")
        except (ValueError, OSError):
            best = 0
    return best


def svg_bars(title: str, bars: list[dict], caption: str) -> str:
    """tok/s bars (median, whisker min–max, note), a red tick at the tok/s the paired ceiling allows."""
    label_w, plot_w, row_h = 230, 560, 30
    h = 80 + row_h * len(bars)
    top = max([b["max"] for b in bars] + [b.get("limit") or 0 for b in bars] + [1e-9]) * 1.05
    svg = ET.Element("svg", xmlns="http://www.w3.org/2000/svg", width=str(label_w + plot_w + 420), height=str(h),
                     viewBox=f"0 0 {label_w + plot_w + 420} {h}", **{"font-family": "DejaVu Sans, Helvetica, Arial, sans-serif",
                                                                       "font-size": "12"})
    ET.SubElement(svg, "rect", width="100%", height="100%", fill="white")
    t = ET.SubElement(svg, "text", x=str((label_w + plot_w + 420) // 2), y="22", **{"text-anchor": "middle", "font-size": "15",
                                                                                      "font-weight": "bold"})
    t.text = title
    x = lambda v: label_w + plot_w * v / top
    for i, b in enumerate(bars):
        y = 40 + row_h * i
        lab = ET.SubElement(svg, "text", x=str(label_w - 8), y=str(y + 14), **{"text-anchor": "end"})
        lab.text = b["name"]
        ET.SubElement(svg, "rect", x=str(label_w), y=str(y), width=f"{x(b['median']) - label_w:.1f}", height="20", fill="#e15759")
        ET.SubElement(svg, "line", x1=f"{x(b['min']):.1f}", y1=str(y + 10), x2=f"{x(b['max']):.1f}", y2=str(y + 10),
                      stroke="black", **{"stroke-width": "1.5"})
        if b.get("limit"):
            ET.SubElement(svg, "line", x1=f"{x(b['limit']):.1f}", y1=str(y - 4), x2=f"{x(b['limit']):.1f}", y2=str(y + 24),
                          stroke="#d62728", **{"stroke-width": "3"})
        note = ET.SubElement(svg, "text", x=str(label_w + plot_w + 10), y=str(y + 14))
        note.text = f"{sig(b['median'])} tok/s" + (f" · {b['note']}" if b.get("note") else "")
    cap = ET.SubElement(svg, "text", x=str(label_w + plot_w // 2), y=str(h - 12), **{"text-anchor": "middle"})
    cap.text = caption
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(svg, encoding="unicode") + "\n"


def csv_text(columns: list[str], rows: list[list]) -> str:
    def cell(v):
        if v is None:
            return ""
        if isinstance(v, float):
            return f"{v:.9g}" if math.isfinite(v) else ""
        return v
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\r\n")  # RFC 4180, as experiments/results.cpp writes
    w.writerow(columns)
    for r in rows:
        w.writerow([cell(v) for v in r])
    return buf.getvalue()


# ---------------------------------------------------------------------------------------------

def parse_list(text: str, what: str, allow_zero: bool) -> list[int]:
    try:
        vals = [int(x) for x in text.split(",") if x.strip() != ""]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{what}: '{text}' is not a comma-separated list of integers")
    if not vals or any(v < (0 if allow_zero else 1) for v in vals):
        raise argparse.ArgumentTypeError(f"{what}: '{text}': values must be {'>= 0' if allow_zero else '>= 1'}")
    return vals


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(
        description="llama.cpp's llama-bench (pp/tg tok/s) on a model ternlab exported, with a ternlab config's "
                    "prompt/decode lengths, threads and rounds, written as a ternlab results folder.",
        epilog="Example: tools/peers/.venv/bin/python tools/peers/llamacpp_bench.py results/models/mid-tq2_0.gguf "
               "--config configs/llamacpp-compare.toml")
    ap.add_argument("model", nargs="?", help="a TQ2_0/TQ1_0 qwen35 GGUF ternlab wrote (model synth --type tq2_0 --scale-group 256, or "
                                          "model export --type tq2_0); default: the config's model, or its preset's file as `ternlab run` writes it")
    ap.add_argument("--config", required=True, help="the ternlab config (kind prefill, decode or speed) whose lengths, threads and rounds to use")
    ap.add_argument("--source", help="the GGUF whose shape the model must match (default: the config's model, or its preset's cached file)")
    ap.add_argument("-p", "--n-prompt", help="prompt lengths, comma-separated (default: the config's prefill tokens; 0: no pp test)")
    ap.add_argument("-n", "--n-gen", help="decode lengths, comma-separated (default: the config's decode tokens; 0: no tg test)")
    ap.add_argument("-t", "--threads", help="thread counts, comma-separated (default: every thread count of the config's arms)")
    ap.add_argument("-r", "--rounds", type=int, help="kept rounds (default: the config's rounds)")
    ap.add_argument("--warmup", type=int, help="discarded rounds before them (default: the config's warmup)")
    ap.add_argument("--reps", type=int, default=1, help="llama-bench repetitions per round, their mean the round's sample (default 1)")
    ap.add_argument("--ceiling-mib", type=int, help="memory read ceiling buffer in MiB (default: the config's ceiling_mib)")
    ap.add_argument("-o", "--output", help="output folder (default: the config's output); results go to <output>/<name>-<UTC time>/")
    ap.add_argument("--name", help="experiment name (default: <config name>-llamacpp)")
    ap.add_argument("--arm", help="arm name (default: 'llama.cpp TQ2_0', after the model's ternary type)")
    ap.add_argument("--llama-bench", default=str(HERE / ".llamacpp/build/bin/llama-bench"), help="llama-bench binary (default: tools/peers' build)")
    ap.add_argument("--ternlab", default=str(REPO / "build/ternlab"), help="ternlab binary, for the read ceiling and the machine record")
    ap.add_argument("--dry-run", action="store_true", help="check the inputs, print the plan and stop")
    args = ap.parse_args(argv)
    prog = "llamacpp_bench.py"
    log = lambda s: print(s, file=sys.stderr, flush=True)

    try:
        cfg = Config(Path(args.config))
        prompt = parse_list(args.n_prompt, "-p", True) if args.n_prompt is not None else cfg.prompt
        gen = parse_list(args.n_gen, "-n", True) if args.n_gen is not None else cfg.gen
        threads = sorted(set(parse_list(args.threads, "-t", False))) if args.threads else cfg.threads
        prompt, gen = [p for p in prompt if p > 0], [n for n in gen if n > 0]
        if not prompt and not gen:
            raise Refused(f"{cfg.path}: no test left: every prompt and decode length is 0")
        rounds = args.rounds if args.rounds is not None else cfg.rounds
        warmup = args.warmup if args.warmup is not None else cfg.warmup
        ceiling_mib = args.ceiling_mib if args.ceiling_mib is not None else cfg.ceiling_mib
        if rounds < 1 or warmup < 0 or args.reps < 1 or ceiling_mib < 1:
            raise Refused("rounds and --reps must be >= 1, --warmup >= 0, --ceiling-mib >= 1")
        kind = "speed" if prompt and gen else ("prefill" if prompt else "decode")
        ternlab, bench = Path(args.ternlab), Path(args.llama_bench)
        for exe, what in ((ternlab, "ternlab (build it: scripts/build.sh)"), (bench, "llama-bench (build it: tools/peers/setup.sh)")):
            if not os.access(exe, os.X_OK):
                raise Refused(f"{exe}: no executable {what}")

        if args.model:
            model_path = Path(args.model)
        elif cfg.model:
            model_path = Path(cfg.model)
        elif cfg.preset:
            model_path = ensure_preset(cfg, args.output, ternlab, log)
        else:
            raise Refused(f"{cfg.path}: names neither model nor preset; name the model file")
        model = Gguf(model_path)
        ttype, bytes_per_token = validate_model(model)
        src_path, src_what = source_model(cfg, args.source, args.output, ternlab, log)
        check_shape(model, Gguf(src_path), src_what)
    except argparse.ArgumentTypeError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    except Refused as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2

    shape = model.shape()
    arm_base = args.arm or f"llama.cpp {ttype}"
    arm_name = {t: arm_base if len(threads) == 1 else f"{arm_base} threads={t}" for t in threads}
    name = args.name or f"{cfg.name}-llamacpp"
    out_root = Path(args.output or cfg.output)
    points = list(itertools.product(prompt or [0], gen or [0]))  # one run per sweep point, as ternlab's arrays
    overrides = []
    for flag, key, val in (("-p", "prompt", args.n_prompt), ("-n", "gen", args.n_gen), ("-t", "threads", args.threads),
                           ("-r", "rounds", args.rounds), ("--warmup", "warmup", args.warmup),
                           ("--ceiling-mib", "ceiling_mib", args.ceiling_mib), ("--reps", "reps", args.reps if args.reps != 1 else None)):
        if val is not None:
            overrides.append(f"{flag} {val}")
    plan = [f"{cfg.path}: llama.cpp arm ({prog}), kind {kind}, {len(points)} run{'s' if len(points) > 1 else ''}",
            f"  model {model.path}: qwen35, {shape['block_count']} layers, hidden {shape['embedding_length']}, ffn "
            f"{shape['feed_forward_length']}, vocab {shape['vocab']}, {ttype}; {bytes_per_token} ternary bytes a decoded token "
            f"(embedding excluded); shape matches {src_what} ({src_path})",
            f"  tests: {', '.join(f'pp{p}' for p in prompt)}{', ' if prompt and gen else ''}{', '.join(f'tg{n}' for n in gen)}; "
            f"threads {threads}; {rounds} rounds kept after {warmup} warm-up; llama-bench -r {args.reps} per round",
            f"  each round: the memory read ceiling ({ceiling_mib} MiB, ternlab kind bandwidth, threads {threads}), then one llama-bench process",
            f"  arms: {', '.join(repr(arm_name[t]) for t in threads)}"]
    print("\n".join(plan), flush=True)
    if args.dry_run:
        return 0

    started = dt.datetime.now(dt.timezone.utc)
    stamp = started.strftime("%Y%m%d-%H%M%S")
    out_root.mkdir(parents=True, exist_ok=True)
    partial = out_root / f".{name}-{stamp}.partial"
    final = out_root / f"{name}-{stamp}"
    partial.mkdir()
    (partial / "owner").write_text(f"{socket.gethostname()} {os.getpid()}\n")
    try:
        with tempfile.TemporaryDirectory(prefix="llamacpp-bench-") as work:
            ceiling = Ceiling(ternlab, threads, ceiling_mib, Path(work))
            # samples[(test, n, threads)] = per kept round seconds per call; ceilings[t] = per kept round GB/s
            samples: dict[tuple, list[float]] = {}
            ceil_gbps: dict[int, list[float]] = {t: [] for t in threads}
            ceil_loops: dict[int, list[str]] = {t: [] for t in threads}
            record: dict | None = None
            for rnd in range(warmup + rounds):
                keep = rnd >= warmup
                gbps, loops = ceiling.measure()
                entries = llama_bench(bench, model.path, prompt or [0], gen or [0], threads, args.reps)
                record = record or entries[0]
                log(f"round {rnd + 1}/{warmup + rounds}{'' if keep else ' (warm-up)'}: ceiling "
                    + ", ".join(f"{t} thr {gbps[t]:.1f} GB/s" for t in threads) + "; "
                    + ", ".join(f"{'pp' if e['n_prompt'] else 'tg'}{e['n_prompt'] or e['n_gen']} t{e['n_threads']} {e['avg_ts']:.2f} tok/s"
                                for e in entries))
                if not keep:
                    continue
                for t in threads:
                    ceil_gbps[t].append(gbps[t])
                    ceil_loops[t].append(loops[t])
                for e in entries:
                    test = "pp" if e["n_prompt"] else "tg"
                    key = (test, e["n_prompt"] or e["n_gen"], e["n_threads"])
                    samples.setdefault(key, []).append(statistics.fmean(e["samples_ns"]) / 1e9)
            machine = dict(ceiling.machine or {})
        write_results(partial, args, cfg, kind, name, started, machine, record, model, ttype, bytes_per_token, shape, points,
                      threads, arm_name, rounds, warmup, ceiling_mib, samples, ceil_gbps, ceil_loops, overrides, plan, bench,
                      ternlab)
        os.rename(partial, final)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    # index.html: ternlab's own page of this one folder
    try:
        with tempfile.TemporaryDirectory(prefix="llamacpp-bench-page-") as page:
            run_checked([str(ternlab), "report", str(final), "--out", str(Path(page) / "p")])
            shutil.copy(Path(page) / "p" / "index.html", final / "index.html")
    except RuntimeError as e:
        log(f"{prog}: warning: no index.html ({e})")
    print(f"results: {final}/ (summary.md, summary.json, rounds.csv, plots{', index.html' if (final / 'index.html').exists() else ''})")
    return 0


def write_results(folder, args, cfg, kind, name, started, machine, record, model, ttype, bytes_per_token, shape, points, threads,
                  arm_name, rounds, warmup, ceiling_mib, samples, ceil_gbps, ceil_loops, overrides, plan, bench, ternlab):
    build = llama_build_record(bench)
    ceiling_git = machine.get("git", "unknown")
    commit = record.get("build_commit", "unknown") if record else "unknown"
    # The machine record: CPU, features, cores, memory and host as ternlab records them (so `ternlab report` files
    # this folder under the same machine); compiler, flags and commit are llama.cpp's build.
    machine.update({"compiler": build["compiler"], "flags": build["flags"], "build_type": build["build_type"],
                    "git": f"llama.cpp {commit} (llama-cpp-python 0.3.36 sdist)", "started_utc": started.strftime("%Y-%m-%dT%H:%M:%SZ")})
    machine["engine"] = f"llama.cpp llama-bench {commit}, backends {record.get('backends', '?') if record else '?'}, cpu_info {record.get('cpu_info', '?') if record else '?'}"
    machine["ceiling_from"] = f"ternlab {ceiling_git} (kind bandwidth, MemoryCeiling, {ceiling_mib} MiB), measured each round before llama-bench"
    llc = last_level_cache_bytes()
    ub = record.get("n_ubatch", 512) if record else 512

    runs_json, all_warnings, md_runs, csv_rows = [], [], [], []
    multi = len(points) > 1
    for ri, (p, n) in enumerate(points):
        prefix = f"run{ri + 1:02d}-" if multi else ""
        sweep = {}
        if multi:
            if len(set(q for q, _ in points)) > 1:
                sweep["prefill_tokens" if kind == "speed" else "tokens"] = str(p)
            if len(set(g for _, g in points)) > 1:
                sweep["decode_tokens" if kind == "speed" else "tokens"] = str(n)
        tests = ([("pp", p)] if p else []) + ([("tg", n)] if n else [])
        objs, plots, warns, md = {}, [], [], []
        for test, count in tests:
            decode = test == "tg"
            label = f"{test}{count}"
            run_title = name + "".join(f" {k}={v}" for k, v in sweep.items())
            title = f"{run_title} {label}" if kind == "speed" else run_title
            wbytes = bytes_per_token * count if decode else bytes_per_token * math.ceil(count / ub)
            js = {"index": ri, "name": title, "kind": kind, "model": str(model.path), "preset": "", "seed": cfg.seed,
                  "baseline": arm_name[threads[0]], "ternary_bytes_per_token": bytes_per_token, "interleaved": True,
                  "arm_order": "interleaved", "ratios": "same rounds", "sweep": sweep, "test": label, "tokens": count,
                  "rounds": rounds, "warmup": warmup,
                  "ceiling_gbps": {str(t): stat(ceil_gbps[t]) for t in threads},
                  "ceiling_loops": {str(t): ceil_loops[t] for t in threads}, "arms": []}
            rows_md = []
            bars = []
            for t in threads:
                secs = samples.get((test, count, t), [])
                tok = [count / s for s in secs]
                gb = [wbytes / s / 1e9 for s in secs]
                frac = [g / c for g, c in zip(gb, ceil_gbps[t])]
                s_secs, s_tok, s_gb, s_frac = stat(secs), stat(tok), stat(gb), stat(frac)
                one = stat([1.0] * len(secs))
                arm = {"name": arm_name[t], "layout": ttype.lower(), "kernel": f"llama.cpp ggml-cpu ({commit})", "threads": t,
                       "oversubscribed": t > (machine.get("cores") or os.cpu_count() or t), "baseline": arm_name[t],
                       "load": "mmap", "model": str(model.path), "verified": False,
                       "failure": "", "check": "not checked: llama.cpp's tokens are not compared with ternlab's",
                       "max_logit_diff": None, "calls_per_sample": args.reps, "seconds_per_call": s_secs,
                       "spread": spread(secs), "tok_s": s_tok, "weight_bytes_per_call": float(wbytes), "gbps": s_gb,
                       "fraction_of_read_ceiling": s_frac, "speedup_vs_baseline": one}
                js["arms"].append(arm)
                for i, s in enumerate(secs):
                    csv_rows.append([ri, label, i, arm_name[t], ttype.lower(), arm["kernel"], t, "mmap", count, s, count / s,
                                     wbytes, wbytes / s / 1e9, ceil_gbps[t][i], frac[i], 1.0])
                rows_md.append(f"| {arm_name[t]} | {ttype.lower()} | {arm['kernel']} | {t} | mmap | not checked | "
                               f"{with_range(s_secs, '', 1e3)} | {sig(spread(secs) * 100) + '%' if spread(secs) is not None else '—'} | "
                               f"{with_range(s_tok)} | {sig(s_gb['median']) if s_gb else '—'} | {with_range(s_frac, '%', 100)} | "
                               f"{with_range(one, '×')} |")
                if s_tok:
                    limit = None
                    if decode and ceil_gbps[t]:
                        limit = statistics.median(ceil_gbps[t]) * 1e9 / bytes_per_token
                    bars.append({"name": arm_name[t], "median": s_tok["median"], "min": s_tok["min"], "max": s_tok["max"],
                                 "note": f"{sig(s_frac['median'] * 100)}% of read ceiling" if s_frac else "", "limit": limit})
                # noise checks, as experiments/report.cpp words them
                if s_frac and s_frac["max"] > FRACTION_LIMIT:
                    what = "its decode bandwidth fraction" if decode else "its fraction of the read ceiling"
                    warns.append(("fraction_over_100", arm_name[t],
                                  f"arm '{arm_name[t]}': {what} reached {sig(s_frac['max'] * 100)}% (median "
                                  f"{sig(s_frac['median'] * 100)}%), above 100%: the ceiling was not an upper bound for this arm "
                                  "(its bytes came partly from cache, or the ceiling measured low), so this is no fraction of it"))
            if decode and llc and bytes_per_token < CACHE_WEIGHTS_FACTOR * llc:
                warns.append(("weights_fit_cache", arm_name[threads[0]],
                              f"arm '{arm_name[threads[0]]}' reads {sig(bytes_per_token / 1e6)} MB of weights a token, under 2x the "
                              f"{sig(llc / 2**20)} MiB last-level cache: part of them can stay cached from token to token, so its "
                              "fraction of the memory read ceiling measures the cache too and depends on what ran before it; a "
                              "larger model (preset bonsai-27b) measures the memory"))
            svg_name = f"{prefix}{'decode' if decode else 'prefill'}_tok_s.svg"
            if bars:
                (folder / svg_name).write_text(svg_bars(
                    f"{title}: {label} tokens/s", bars,
                    "tok/s (bar: median over kept rounds; whisker: min–max" + ("; red tick: the tok/s at the arm's paired memory read ceiling)" if decode else ")")))
                plots.append(svg_name)
            objs[test] = js
            ceil_text = "; ".join(f"{t} thr {with_range(stat(ceil_gbps[t]))} GB/s (set by " + ", ".join(
                f"{lp} in {ceil_loops[t].count(lp)} of {len(ceil_loops[t])} rounds" if i == 0 else f"{lp} in {ceil_loops[t].count(lp)}"
                for i, lp in enumerate(dict.fromkeys(ceil_loops[t]))) + ")" for t in threads)
            md += [f"### {title}", "",
                   f"model {model.path}: {shape['block_count']} layers, hidden {shape['embedding_length']}, vocab {shape['vocab']}; "
                   f"{sig(bytes_per_token / 1e6)} MB of ternary weights ({ttype}, every ternary tensor but token_embd.weight) "
                   "streamed per decoded token.", "",
                   f"kind {kind}, engine llama.cpp (llama-bench {commit}, its own process): {label} = "
                   + (f"{count} single-token decode steps from an empty context (llama-bench's tg test)" if decode else
                      f"one {count}-token prompt from an empty context (llama-bench's pp test, n_ubatch {ub}: the weights read "
                      f"{math.ceil(count / ub)} time{'s' if math.ceil(count / ub) > 1 else ''})")
                   + f"; {rounds} rounds kept after {warmup} warm-up; each round one llama-bench process (its own untimed warm-up "
                   f"run, then {args.reps} timed repetition{'s' if args.reps > 1 else ''}, their mean the round's sample), after the "
                   "memory read ceiling of that round; llama.cpp's output is not checked against ternlab's (the ratio column is "
                   "each arm against itself: compare tok/s with ternlab's folders, which are separate passes).", "",
                   f"memory read ceiling (streaming sum over {sig(ceiling_mib)} MiB, ternlab {ceiling_git}, each round before "
                   f"llama-bench): {ceil_text}", "",
                   f"| arm | layout | kernel | thr | load | greedy check | ms/{label} | spread | tok/s | weight GB/s | "
                   f"{'decode bandwidth fraction' if decode else 'of read ceiling'} | vs baseline |",
                   "|---|---|---|--:|---|---|--:|--:|--:|--:|--:|--:|", *rows_md, "",
                   "ms and tok/s: median over kept rounds [min–max]; spread = coefficient of variation of the per-round times "
                   "(standard deviation / mean); weight GB/s = ternary weight bytes streamed per call / time; "
                   + ("decode bandwidth fraction = ternary weight bytes per token / time per token / that round's memory read "
                      "ceiling on the arm's thread count (above 100% the ceiling was no upper bound for the arm: warned, not explained)"
                      if decode else "of read ceiling = the same against that round's ceiling (llama.cpp reads each weight once "
                      "per micro-batch)") + "; vs baseline = median of per-round time ratios (> 1 is faster).", ""]
            # ceiling drift, per thread count
        for t in threads:
            c = stat(ceil_gbps[t])
            if c and c["median"] > 0 and (c["max"] - c["min"]) / c["median"] > CEILING_DRIFT_SHARE:
                warns.append(("ceiling_drift", "",
                              f"the memory read ceiling on {t} thread{'s' if t > 1 else ''} moved by "
                              f"{sig((c['max'] - c['min']) / c['median'] * 100)}% within the run ({sig(c['min'])}–{sig(c['max'])} GB/s, "
                              f"median {sig(c['median'])}; the limit is 10.0%): the machine changed under the arms, so their "
                              "fractions are not steady; repeat on a quieter machine"))
        warn_json = [{"check": c, "arm": a, "text": txt} for c, a, txt in warns]
        if warns:
            md += [f"**noise warnings ({len(warns)}):**", ""] + [f"- warning: {txt}" for _, _, txt in warns] + [""]
        md += [f"![{p_}]({p_})" for p_ in plots] + [""]
        if kind == "speed":
            run_js = {"index": ri, "name": name + "".join(f" {k}={v}" for k, v in sweep.items()), "kind": "speed",
                      "prefill": objs["pp"], "decode": objs["tg"], "plots": plots, "warnings": warn_json}
        else:
            run_js = dict(objs["pp" if kind == "prefill" else "tg"])
            run_js["plots"] = plots
            run_js["warnings"] = warn_json
        runs_json.append(run_js)
        all_warnings += [{"run": ri, **w} for w in warn_json]
        md_runs.append("\n".join(md))

    command = " ".join([Path(sys.executable).name, *sys.argv])
    summary = {"results_version": RESULTS_VERSION, "name": name, "file": str(cfg.path), "overrides": overrides,
               "machine": machine, "command": command, "runs": runs_json, "plots": [], "warnings": all_warnings}
    (folder / "summary.json").write_text(json.dumps(summary, indent=2, ensure_ascii=False, allow_nan=False) + "\n")
    head = [f"# {name}", "",
            f"machine: {machine.get('cpu')} ({machine.get('cores')} logical cores; {machine.get('features')}), {machine['compiler']} "
            f"{machine['build_type']} [{machine['flags']}], git {machine['git']}, started {machine['started_utc']}", "",
            f"experiment: `{cfg.path}` (llama.cpp arm: `{command}`)" + "".join(f" `{o}`" for o in overrides), ""]
    tail = []
    if all_warnings:
        tail = ["## Noise warnings", "", f"{len(all_warnings)} warnings (thresholds in docs/experiments.md, \"Noise\"):", ""] + \
               [f"- warning: {w['text']}" for w in all_warnings] + [""]
    (folder / "summary.md").write_text("\n".join(head) + "\n" + "\n".join(md_runs) + "\n" + "\n".join(tail))
    columns = ["run", "test", "round", "arm", "layout", "kernel", "threads", "load", "tokens", "seconds", "tok_s", "weight_bytes",
               "gbps", "ceiling_gbps", "fraction_of_ceiling", "speedup_vs_baseline"]
    (folder / "rounds.csv").write_text(csv_text(columns, csv_rows), newline="")
    (folder / "plan.txt").write_text("\n".join(plan) + "\n")
    shutil.copy(cfg.path, folder / "experiment.toml")


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except RuntimeError as e:
        print(f"llamacpp_bench.py: error: {e}", file=sys.stderr)
        sys.exit(1)
