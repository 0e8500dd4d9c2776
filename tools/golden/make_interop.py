#!/usr/bin/env python3
"""gguf-py interop fixtures: a small GGUF written by gguf-py with every metadata value type (scalars and
arrays, edge values), a custom alignment, and tensors of every type ternlab reads (F32, F16, BF16 and
the Prism types 142/143 as raw blocks) in 1-4 dimensions; plus its manifest as gguf-py reads it back.
A second file holds a nested array, which ternlab refuses (its reader keeps arrays flat).

  make_interop.py OUT_DIR   writes interop.gguf, interop.manifest.toml, interop_nested.gguf, interop_nested.toml
"""
from __future__ import annotations

import math
import struct
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import prism  # noqa: E402
import read_gguf  # noqa: E402

prism.register_prism_types()
from gguf import GGMLQuantizationType as T  # noqa: E402
from gguf import GGUFValueType as V  # noqa: E402
from gguf import GGUFWriter  # noqa: E402

SEED = 1129

SCALARS = [
    ("interop.u8", 255, V.UINT8), ("interop.i8", -128, V.INT8),
    ("interop.u16", 65535, V.UINT16), ("interop.i16", -32768, V.INT16),
    ("interop.u32", 4294967295, V.UINT32), ("interop.i32", -2147483648, V.INT32),
    ("interop.u64", 18446744073709551615, V.UINT64), ("interop.i64", -9223372036854775808, V.INT64),
    ("interop.u64_small", 7, V.UINT64),
    ("interop.f32", 3.1415927410125732, V.FLOAT32), ("interop.f32_denormal", 1.401298464324817e-45, V.FLOAT32),
    ("interop.f32_neg_zero", -0.0, V.FLOAT32), ("interop.f32_inf", math.inf, V.FLOAT32),
    ("interop.f64", 2.718281828459045, V.FLOAT64), ("interop.f64_big", 1e300, V.FLOAT64),
    ("interop.f64_nan", math.nan, V.FLOAT64),
    ("interop.bool_true", True, V.BOOL), ("interop.bool_false", False, V.BOOL),
    ("interop.string", "hello", V.STRING), ("interop.string_empty", "", V.STRING),
    ("interop.string_utf8", "Grüße, 東京 🦀", V.STRING),
    ("interop.string_escapes", "tab\tnewline\nquote\"backslash\\", V.STRING),
]
ARRAYS = [
    ("interop.array.u8", [0, 1, 255], V.UINT8), ("interop.array.i8", [-128, 0, 127], V.INT8),
    ("interop.array.u16", [0, 65535], V.UINT16), ("interop.array.i16", [-32768, 32767], V.INT16),
    ("interop.array.u32", [0, 4294967295], V.UINT32), ("interop.array.i32", [-2147483648, 0, 2147483647], V.INT32),
    ("interop.array.u64", [0, 9223372036854775807], V.UINT64),
    ("interop.array.i64", [-9223372036854775808, 9223372036854775807], V.INT64),
    ("interop.array.f32", [1.5, -0.0, 1e-38, 3.4028234663852886e38], V.FLOAT32),
    ("interop.array.f64", [0.1, -1e-300, 12345.678], V.FLOAT64),
    ("interop.array.bool", [True, False, True], V.BOOL),
    ("interop.array.string", ["a", "", "東京", "x y"], V.STRING),
    ("interop.array.single", [42], V.INT32),
    ("interop.array.long", list(range(-500, 500)), V.INT32),
]


def tensors(rng: np.random.Generator) -> list[tuple[str, np.ndarray, T | None, dict]]:
    out = []
    out.append(("t.f32.1d", rng.standard_normal(7).astype(np.float32), None, {}))
    out.append(("t.f16.2d", rng.standard_normal((3, 5)).astype(np.float16), None, {}))
    bf = prism.to_bf16_bits(rng.standard_normal((3, 2, 4)))
    out.append(("t.bf16.3d", bf.view(np.uint8).reshape(3, 2, 8), T.BF16, {}))
    out.append(("t.f32.4d", rng.standard_normal((2, 1, 3, 2)).astype(np.float32), None, {}))
    trits = rng.integers(-1, 2, size=(3, 256))
    scales = prism.to_fp16(rng.uniform(0.01, 0.1, size=(3, 2)))
    pq = prism.encode_pq2_0(trits, scales)
    pq[2, 2] = 0xE4  # codes 0,1,2,3 in row 2 block 0: PQ2_0 decoders must map code 3 to +2d (spec 4.2)
    out.append(("t.pq2_0", pq, T.PQ2_0, {"decoded": prism.decode_pq2_0(pq, 256)}))
    trits = rng.integers(-1, 2, size=(5, 128))
    scales = prism.to_fp16(rng.uniform(0.01, 0.1, size=(5, 1)))
    ptq = prism.encode_ptq1_0(trits, scales)
    decoded = prism.decode_ptq1_0(ptq, 128)
    assert np.array_equal(decoded, trits * scales.astype(np.float64))
    out.append(("t.ptq1_0", ptq, T.PTQ1_0, {"decoded": decoded}))
    out.append(("blk.0.a_name_that_is_exactly_sixty_three_bytes_long_for_ggml_.w", np.arange(3, dtype=np.float32),
                None, {}))
    assert all(len(n) <= 63 for n, *_ in out) and len(out[-1][0]) == 63  # ggml names hold 63 bytes + NUL
    return out


def main(out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(SEED)
    path = out_dir / "interop.gguf"
    w = GGUFWriter(str(path), arch="interop")
    w.add_custom_alignment(64)
    for key, val, vt in SCALARS:
        w.add_key_value(key, val, vt)
    for key, val, vt in ARRAYS:
        w.add_key_value(key, val, V.ARRAY, sub_type=vt)
    specs = tensors(rng)
    for name, arr, raw, _ in specs:
        if raw is None:
            w.add_tensor(name, arr)
        else:
            w.add_tensor(name, arr, raw_shape=arr.shape, raw_dtype=raw)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    doc = read_gguf.describe(str(path))
    # gguf-py's reading must give back what was written, or the manifest would describe a gguf-py bug.
    got = {e["key"]: e for e in doc["kv"]}
    for key, val, vt in SCALARS + ARRAYS:
        e = got[key]
        vals = val if isinstance(val, list) else [val]
        read = e["value"] if isinstance(val, list) else [e["value"]]
        for want, have in zip(vals, read):
            if vt == V.FLOAT32:
                want = struct.unpack("<f", struct.pack("<f", want))[0]
            if isinstance(have, str) and vt in (V.UINT64,):
                have = int(have)
            assert (isinstance(want, float) and math.isnan(want) and math.isnan(have)) or want == have, (key, want, have)
    for t, (name, arr, raw, extra) in zip(doc["tensor"], specs):
        assert t["name"] == name
        assert t["fnv1a64"] == f"0x{prism.fnv1a64(np.ascontiguousarray(arr).tobytes()):016x}", name
        if "decoded" in extra:
            dec = extra["decoded"]
            t["decoded_sum"] = float(dec.sum())
            t["decoded_abs_sum"] = float(np.abs(dec).sum())
            t["decoded_row0_first8"] = [float(x) for x in dec[0, :8]]
            if name == "t.pq2_0":
                t["decoded_row2_first4"] = [float(x) for x in dec[2, :4]]
        if t["type_name"] in ("F32", "F16"):
            vals = np.asarray(arr, dtype=np.float64).reshape(-1)
            t["values"] = [float(x) for x in vals]
        if t["type_name"] == "BF16":
            t["values"] = [float(x) for x in prism.bf16_bits_to_f64(arr.view(np.uint16)).reshape(-1)]
    read_gguf.write_manifest(doc, str(out_dir / "interop.manifest.toml"))

    nested = out_dir / "interop_nested.gguf"
    w = GGUFWriter(str(nested), arch="interop")
    w.add_key_value("interop.flat", 1, V.UINT32)
    w.add_key_value("interop.nested", [[1, 2], [3]], V.ARRAY, sub_type=V.ARRAY)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    (out_dir / "interop_nested.toml").write_text(
        "# Written by tools/golden/make_interop.py. interop_nested.gguf is a valid GGUF (gguf-py wrote it) whose\n"
        "# key interop.nested is an ARRAY of ARRAY of INT32 ([[1, 2], [3]]). ternlab keeps arrays flat, so its\n"
        "# reader must refuse the file with a message naming that key.\n"
        + prism.toml_dumps({"file": "interop_nested.gguf", "refused_key": "interop.nested", "kv_count": 2,
                            "tensor_count": 0}), encoding="utf-8")
    print(f"interop: {path.stat().st_size} B, {doc['kv_count']} keys, {doc['tensor_count']} tensors, "
          f"data at {doc['data_offset']}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
