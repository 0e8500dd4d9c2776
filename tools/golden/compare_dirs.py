#!/usr/bin/env python3
"""Compares freshly generated fixtures with the committed ones (used by regen.sh --check).

GGUF, JSON and tokenizer files must be byte-identical. Logits (*.f64) may differ by 1e-10 absolute:
float64 BLAS reductions can differ in the last bits between CPUs; the q8_K-simulated logits (*_q8k.f32) by
the fixture's tight_max_abs. TOML files are compared value by
value: strings, ints and bools exactly, floats to 1e-9 relative, except measurements of rounding noise
(keys starting with noise_ or q8k_, and the [simulation] and [q8k_reference] tables: a q8_K value can round
the other way on another CPU), which need only agree within a factor of 10.
"""
from __future__ import annotations

import math
import sys
import tomllib
from pathlib import Path

import numpy as np


def close_noise(a: float, b: float) -> bool:
    if a == b or (abs(a) < 1e-9 and abs(b) < 1e-9):
        return True
    return a > 0 and b > 0 and 0.1 <= a / b <= 10


def same(a, b, path: str, loose: bool, errors: list[str]) -> None:
    loose = loose or path.rsplit(".", 1)[-1].startswith(("noise_", "q8k_"))
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            errors.append(f"{path}: keys differ {sorted(set(a) ^ set(b))}")
        for k in a.keys() & b.keys():
            same(a[k], b[k], f"{path}.{k}", loose or k in ("simulation", "q8k_reference"), errors)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            errors.append(f"{path}: length {len(a)} vs {len(b)}")
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{path}[{i}]", loose, errors)
    elif isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) and math.isnan(b):
            return
        ok = close_noise(a, b) if loose else math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
        if not ok:
            errors.append(f"{path}: {a!r} vs {b!r}")
    elif loose and isinstance(a, int) and isinstance(b, int):
        return  # counts derived from noise (e.g. simulated greedy flips)
    elif a != b:
        errors.append(f"{path}: {a!r:.60} vs {b!r:.60}")


def main(fresh: str, committed: str) -> int:
    f, c = Path(fresh), Path(committed)
    names = sorted({p.name for p in f.iterdir()} | {p.name for p in c.iterdir() if p.name != ".gitignore"})
    errors: list[str] = []
    for name in names:
        a, b = f / name, c / name
        if not a.exists() or not b.exists():
            errors.append(f"{name}: only in {'committed' if b.exists() else 'fresh'} fixtures")
            continue
        if name.endswith(".toml"):
            same(tomllib.loads(a.read_text(encoding="utf-8")), tomllib.loads(b.read_text(encoding="utf-8")),
                 name, False, errors)
        elif name.endswith(".f64"):
            x, y = np.fromfile(a, dtype="<f8"), np.fromfile(b, dtype="<f8")
            if x.shape != y.shape or not np.allclose(x, y, rtol=0, atol=1e-10):
                errors.append(f"{name}: differs (max {np.abs(x - y).max() if x.shape == y.shape else 'shape'})")
        elif name.endswith("_q8k.f32"):
            # The q8_K-simulated reference: float64 BLAS order can move a q8_K value across a rounding
            # boundary on another CPU, which the fixture's own tight bound covers.
            x, y = np.fromfile(a, dtype="<f4"), np.fromfile(b, dtype="<f4")
            bound = tomllib.loads((c / name.replace("_q8k.f32", "_golden.toml")).read_text(encoding="utf-8"))[
                "q8k_reference"]["tight_max_abs"]
            if x.shape != y.shape or not np.allclose(x, y, rtol=0, atol=bound):
                errors.append(f"{name}: differs (max {np.abs(x - y).max() if x.shape == y.shape else 'shape'})")
        elif a.read_bytes() != b.read_bytes():
            errors.append(f"{name}: bytes differ")
    for e in errors:
        print(f"golden check: {e}")
    print(f"golden check: {len(names)} files, {'identical' if not errors else f'{len(errors)} differences'}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
