"""Bonsai/Prism format pieces shared by the golden generators, written from the spec
(../shared/docs/bonsai-2-27b-spec.md), not from any Prism code.

- ggml types 142 (PQ2_0) and 143 (PTQ1_0), registered with gguf-py so its writer and reader accept them;
- the blockwise natural-order Hadamard rotation R_K = blockdiag(H/sqrt(B)) . diag(s_K) (spec 6.1);
- PQ2_0 / PTQ1_0 block encoders (spec 4.2, 4.3), fp16 / bf16 helpers, FNV-1a 64 for byte checks;
- a small TOML emitter (the C++ tests read manifests with toml++, which the project already links).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

PQ2_0 = 142
PTQ1_0 = 143
QK = 128  # weights per ternary block


def register_prism_types() -> None:
    """Adds PQ2_0/PTQ1_0 to gguf-py's type enum and size table (upstream gguf-py stops at 41)."""
    from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

    for name, value, size in (("PQ2_0", PQ2_0, (QK, 34)), ("PTQ1_0", PTQ1_0, (QK, 28))):
        if value in GGMLQuantizationType._value2member_map_:
            continue
        member = int.__new__(GGMLQuantizationType, value)
        member._name_ = name
        member._value_ = value
        GGMLQuantizationType._value2member_map_[value] = member
        GGMLQuantizationType._member_map_[name] = member
        GGMLQuantizationType._member_names_.append(name)
        GGML_QUANT_SIZES[member] = size


# ---------------------------------------------------------------- Hadamard fold (spec 6)

def fwht_blocks(x: np.ndarray, block: int) -> np.ndarray:
    """Normalized natural-order (Sylvester) Walsh-Hadamard transform of each `block`-wide slice of
    the last axis, in float64. H/sqrt(B) is symmetric and its own inverse."""
    x = np.array(x, dtype=np.float64, copy=True)
    k = x.shape[-1]
    assert k % block == 0 and block & (block - 1) == 0
    v = x.reshape(*x.shape[:-1], k // block, block)
    h = 1
    while h < block:
        v = v.reshape(*x.shape[:-1], k // block, block // (2 * h), 2, h)
        a = v[..., 0, :].copy()
        b = v[..., 1, :].copy()
        v[..., 0, :] = a + b
        v[..., 1, :] = a - b
        h *= 2
    return v.reshape(x.shape) / math.sqrt(block)


def rotate(x: np.ndarray, signs: np.ndarray, block: int) -> np.ndarray:
    """R_K x: signs first, then the blockwise transform (forward site, spec 6.2)."""
    return fwht_blocks(x * signs, block)


def rotate_transpose(z: np.ndarray, signs: np.ndarray, block: int) -> np.ndarray:
    """R_K^T z: transform first, then signs (embedding inverse site, spec 6.3)."""
    return fwht_blocks(z, block) * signs


def hadamard_matrix(block: int) -> np.ndarray:
    i = np.arange(block)
    parity = np.vectorize(lambda v: bin(v).count("1") & 1)(i[:, None] & i[None, :])
    return np.where(parity == 0, 1.0, -1.0) / math.sqrt(block)


# ---------------------------------------------------------------- scalar helpers

def to_fp16(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.float64).astype(np.float16)


def to_bf16_bits(x: np.ndarray) -> np.ndarray:
    """Round-to-nearest-even float32 -> bf16 bit patterns (uint16)."""
    f = np.asarray(x, dtype=np.float32)
    u = f.view(np.uint32).astype(np.uint64)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


def bf16_bits_to_f64(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def fnv1a64(data: bytes) -> int:
    h = 0xCBF29CE484222325
    for byte in data:
        h ^= byte
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def fnv1a64_np(data: np.ndarray) -> int:
    """FNV-1a 64 of a byte array, vectorised over nothing but fast enough for a few MB."""
    h = np.uint64(0xCBF29CE484222325)
    prime = np.uint64(0x100000001B3)
    with np.errstate(over="ignore"):
        for byte in np.asarray(data, dtype=np.uint8).reshape(-1):
            h = (h ^ np.uint64(byte)) * prime
    return int(h)


# ---------------------------------------------------------------- block codecs (spec 4)

def encode_pq2_0(trits: np.ndarray, scales_f16: np.ndarray) -> np.ndarray:
    """trits [N, K] in {-1,0,1}, scales [N, K/128] float16 -> bytes [N, K/128*34].
    Block: fp16 d, then 32 bytes; element j sits at bits 2*(j%4) of byte j/4 as code t+1."""
    n, k = trits.shape
    nb = k // QK
    codes = (trits.astype(np.int64) + 1).reshape(n, nb, 32, 4)
    qs = (codes[..., 0] | (codes[..., 1] << 2) | (codes[..., 2] << 4) | (codes[..., 3] << 6)).astype(np.uint8)
    d = np.asarray(scales_f16, dtype=np.float16).reshape(n, nb, 1).view(np.uint8)  # 2 bytes LE
    assert d.shape == (n, nb, 2)
    return np.concatenate([d, qs], axis=2).reshape(n, nb * 34)


def decode_pq2_0(raw: np.ndarray, k: int) -> np.ndarray:
    n = raw.shape[0]
    nb = k // QK
    blocks = raw.reshape(n, nb, 34)
    d = blocks[..., :2].copy().view(np.float16).astype(np.float64)  # [n, nb, 1]
    qs = blocks[..., 2:].astype(np.int64)
    codes = np.stack([(qs >> (2 * i)) & 3 for i in range(4)], axis=-1).reshape(n, nb, QK)
    return ((codes - 1) * d).reshape(n, k)


def _ptq_byte(digits: list[int], qh: bool) -> int:
    q = 0
    for t in digits:
        q = q * 3 + t
    if qh:
        q *= 3
    return (q * 256 + 242) // 243


def encode_ptq1_0(trits: np.ndarray, scales_f16: np.ndarray) -> np.ndarray:
    """trits [N, K] -> bytes [N, K/128*28]: qs[24] (5 trits/byte), qh[2] (4 trits/byte), fp16 d last.
    Element order (spec 4.3): e<80 -> qs[e%16] trit e/16; e<120 -> qs[16+u%8] trit u/8; else qh[u%2] trit u/2.
    Trit n is the n-th most significant base-3 digit of the byte's value."""
    n, k = trits.shape
    nb = k // QK
    out = np.zeros((n, nb, 28), dtype=np.uint8)
    t = (trits.astype(np.int64) + 1).reshape(n, nb, QK)
    d = np.asarray(scales_f16, dtype=np.float16).reshape(n, nb, 1).view(np.uint8)
    for r in range(n):
        for b in range(nb):
            digits_qs = [[0] * 5 for _ in range(24)]
            digits_qh = [[0] * 4 for _ in range(2)]
            for e in range(QK):
                v = int(t[r, b, e])
                if e < 80:
                    digits_qs[e % 16][e // 16] = v
                elif e < 120:
                    u = e - 80
                    digits_qs[16 + u % 8][u // 8] = v
                else:
                    u = e - 120
                    digits_qh[u % 2][u // 2] = v
            out[r, b, :24] = [_ptq_byte(dg, False) for dg in digits_qs]
            out[r, b, 24:26] = [_ptq_byte(dg, True) for dg in digits_qh]
            out[r, b, 26:28] = d[r, b]
    return out.reshape(n, nb * 28)


def decode_ptq1_0(raw: np.ndarray, k: int) -> np.ndarray:
    n = raw.shape[0]
    nb = k // QK
    blocks = raw.reshape(n, nb, 28)
    out = np.zeros((n, nb, QK))
    for r in range(n):
        for b in range(nb):
            d = float(blocks[r, b, 26:28].copy().view(np.float16)[0])
            def trit(byte: int, idx: int) -> int:
                u = (byte * 3 ** idx) & 0xFF
                return (3 * u) >> 8
            for e in range(QK):
                if e < 80:
                    t = trit(int(blocks[r, b, e % 16]), e // 16)
                elif e < 120:
                    u = e - 80
                    t = trit(int(blocks[r, b, 16 + u % 8]), u // 8)
                else:
                    u = e - 120
                    t = trit(int(blocks[r, b, 24 + u % 2]), u // 2)
                out[r, b, e] = (t - 1) * d
    return out.reshape(n, k)


# ---------------------------------------------------------------- TOML emitter

def _toml_str(s: str) -> str:
    out = ['"']
    for ch in s:
        c = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif c < 0x20 or c == 0x7F:
            out.append(f"\\u{c:04X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _toml_float(x: float) -> str:
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    r = repr(float(x))
    if "e" in r and "." not in r.split("e")[0]:
        mant, exp = r.split("e")
        r = f"{mant}.0e{exp}"
    return r


def toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, np.integer)):
        v = int(v)
        assert -(2**63) <= v < 2**63, "TOML integers are int64; store wider values as strings"
        return str(v)
    if isinstance(v, (float, np.floating)):
        return _toml_float(float(v))
    if isinstance(v, str):
        return _toml_str(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_toml_key(k)} = {toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"no TOML form for {type(v)}")


def _toml_key(k: str) -> str:
    return k if k.replace("_", "").replace("-", "").isalnum() and k.isascii() else _toml_str(k)


def toml_dumps(doc: dict[str, Any]) -> str:
    """Top level: scalars/arrays first, then tables (dict) and arrays of tables (list of dict)."""
    lines: list[str] = []
    tables = []
    for k, v in doc.items():
        if isinstance(v, dict) or (isinstance(v, list) and v and all(isinstance(x, dict) for x in v)):
            tables.append((k, v))
        else:
            lines.append(f"{_toml_key(k)} = {toml_value(v)}")
    for k, v in tables:
        if isinstance(v, dict):
            lines.append("")
            lines.append(f"[{_toml_key(k)}]")
            for kk, vv in v.items():
                lines.append(f"{_toml_key(kk)} = {toml_value(vv)}")
        else:
            for item in v:
                lines.append("")
                lines.append(f"[[{_toml_key(k)}]]")
                for kk, vv in item.items():
                    lines.append(f"{_toml_key(kk)} = {toml_value(vv)}")
    return "\n".join(lines) + "\n"
