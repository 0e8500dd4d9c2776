#!/usr/bin/env python3
"""Reads a GGUF file with gguf-py (an implementation nobody here wrote) and describes it as a TOML
manifest: header, every metadata key with its value type and value, every tensor with its ggml type,
ne, data offset, byte size and the FNV-1a 64 of its bytes.

  read_gguf.py FILE --manifest OUT.toml      write the manifest
  read_gguf.py FILE --compare MANIFEST.toml  compare FILE (read by gguf-py) with a manifest
  read_gguf.py FILE --bonsai                 check FILE against the Bonsai format contract (spec 3, 5)

Used both ways: on gguf-py-written fixtures (ternlab's C++ reader must match the manifest) and on
ternlab-written files (gguf-py must read them as the writer intended).
"""
from __future__ import annotations

import argparse
import math
import re
import struct
import sys
import tomllib
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import prism  # noqa: E402

prism.register_prism_types()
from gguf import GGUFReader, GGUFValueType  # noqa: E402

INT64_MAX = 2**63 - 1


def _scalar(vtype: GGUFValueType, raw: Any) -> dict[str, Any]:
    """One value in manifest form. Integers wider than int64 become decimal strings (TOML ints are
    int64); floats carry their exact bit pattern next to the decimal value."""
    if vtype in (GGUFValueType.FLOAT32, GGUFValueType.FLOAT64):
        if vtype == GGUFValueType.FLOAT32:
            bits = struct.unpack("<I", struct.pack("<f", raw))[0]
            return {"value": float(np.float32(raw)), "bits": f"0x{bits:08x}"}
        bits = struct.unpack("<Q", struct.pack("<d", raw))[0]
        return {"value": float(raw), "bits": f"0x{bits:016x}"}
    if vtype == GGUFValueType.BOOL:
        return {"value": bool(raw)}
    if vtype == GGUFValueType.STRING:
        return {"value": raw}
    v = int(raw)
    return {"value": v if v <= INT64_MAX else str(v)}


def describe(path: str) -> dict[str, Any]:
    reader = GGUFReader(path)
    kvs = []
    for name, field in reader.fields.items():
        if name.startswith("GGUF."):
            continue  # gguf-py's pseudo-fields for the header
        main = field.types[0]
        entry: dict[str, Any] = {"key": name, "type": main.name.lower()}
        if main == GGUFValueType.ARRAY:
            if len(field.types) > 2:
                raise ValueError(f"{path}: key {name}: nested arrays are not described")
            # parts[3] is the element type as stored: field.types omits it for an empty array.
            elem = GGUFValueType(int(field.parts[3][0]))
            entry["elem"] = elem.name.lower()
            items = field.contents()
            vals = [_scalar(elem, x) for x in items]
            entry["value"] = [v["value"] for v in vals]
            if elem in (GGUFValueType.FLOAT32, GGUFValueType.FLOAT64):
                entry["bits"] = [v["bits"] for v in vals]
            if elem in (GGUFValueType.UINT64,) and any(isinstance(v, str) for v in entry["value"]):
                entry["value"] = [str(int(x)) for x in items]
        else:
            entry.update(_scalar(main, field.contents()))
        kvs.append(entry)

    tensors = []
    for t in reader.tensors:
        raw = np.asarray(t.data).view(np.uint8).reshape(-1)
        tensors.append({
            "name": t.name,
            "type": int(t.tensor_type),
            "type_name": t.tensor_type.name,
            "ne": [int(x) for x in t.shape],
            "offset": int(t.data_offset - reader.data_offset),
            "bytes": int(t.n_bytes),
            "fnv1a64": f"0x{prism.fnv1a64(raw.tobytes()):016x}",
        })
    version = int(reader.fields["GGUF.version"].contents())
    return {
        "file": Path(path).name,
        "version": version,
        "alignment": int(reader.alignment),
        "data_offset": int(reader.data_offset),
        "file_size": Path(path).stat().st_size,
        "kv_count": len(kvs),
        "tensor_count": len(tensors),
        "kv": kvs,
        "tensor": tensors,
    }


def write_manifest(doc: dict[str, Any], out: str) -> None:
    header = ("# Written by tools/golden/read_gguf.py from gguf-py's reading of the file; regenerate with\n"
              "# tools/golden/regen.sh. Float values carry exact bits; ints wider than int64 are strings.\n")
    Path(out).write_text(header + prism.toml_dumps(doc), encoding="utf-8")


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def compare(doc: dict[str, Any], manifest: dict[str, Any]) -> list[str]:
    errors = []
    for k in ("version", "alignment", "data_offset", "kv_count", "tensor_count"):
        if doc[k] != manifest[k]:
            errors.append(f"{k}: file {doc[k]} vs manifest {manifest[k]}")
    mine = {e["key"]: e for e in doc["kv"]}
    for e in manifest["kv"]:
        got = mine.get(e["key"])
        if got is None:
            errors.append(f"key {e['key']}: missing")
            continue
        for field in ("type", "elem", "value", "bits"):
            if field in e and not _same(got.get(field), e[field]):
                errors.append(f"key {e['key']}: {field} {got.get(field)!r:.80} vs {e[field]!r:.80}")
    theirs = {t["name"]: t for t in doc["tensor"]}
    for t in manifest["tensor"]:
        got = theirs.get(t["name"])
        if got is None:
            errors.append(f"tensor {t['name']}: missing")
            continue
        for field in ("type", "ne", "offset", "bytes", "fnv1a64"):
            if got[field] != t[field]:
                errors.append(f"tensor {t['name']}: {field} {got[field]} vs {t[field]}")
    return errors


# ---------------------------------------------------------------- Bonsai contract (spec 3, 5)

_U32 = "uint32"
_REQUIRED_QWEN35 = {
    "block_count": _U32, "embedding_length": _U32, "feed_forward_length": _U32,
    "attention.head_count": _U32, "attention.head_count_kv": _U32, "attention.key_length": _U32,
    "attention.value_length": _U32, "attention.layer_norm_rms_epsilon": "float32",
    "rope.freq_base": "float32", "rope.dimension_count": _U32, "ssm.conv_kernel": _U32,
    "ssm.state_size": _U32, "ssm.group_count": _U32, "ssm.time_step_rank": _U32, "ssm.inner_size": _U32,
}


def check_bonsai(doc: dict[str, Any]) -> list[str]:
    errors: list[str] = []
    kv = {e["key"]: e for e in doc["kv"]}
    tensors = {t["name"]: t for t in doc["tensor"]}

    def need(key: str, typ: str, elem: str | None = None) -> Any:
        e = kv.get(key)
        if e is None:
            errors.append(f"missing key {key}")
            return None
        if e["type"] != typ or (elem is not None and e.get("elem") != elem):
            errors.append(f"key {key}: type {e['type']}/{e.get('elem')} expected {typ}/{elem}")
        return e["value"]

    if need("general.architecture", "string") != "qwen35":
        errors.append("general.architecture is not qwen35")
    hp = {k: need(f"qwen35.{k}", t) for k, t in _REQUIRED_QWEN35.items()}
    sections = need("qwen35.rope.dimension_sections", "array", "int32")
    if any(v is None for v in hp.values()):
        return errors
    n_layer = hp["block_count"] - (kv["qwen35.nextn_predict_layers"]["value"] if "qwen35.nextn_predict_layers" in kv else 0)
    interval = kv["qwen35.full_attention_interval"]["value"] if "qwen35.full_attention_interval" in kv else 4
    d, ff = hp["embedding_length"], hp["feed_forward_length"]
    nh, nkv, hd = hp["attention.head_count"], hp["attention.head_count_kv"], hp["attention.key_length"]
    sk, nk, nv, inner = hp["ssm.state_size"], hp["ssm.group_count"], hp["ssm.time_step_rank"], hp["ssm.inner_size"]
    if inner != sk * nv or nv % nk:
        errors.append("ssm.inner_size != state_size * time_step_rank or time_step_rank % group_count != 0")
    if sections is not None and len(sections) != 4:
        errors.append("rope.dimension_sections must have 4 entries")

    # prism.hadamard.* (spec 3.3)
    version = need("prism.hadamard.version", _U32)
    block = need("prism.hadamard.block_size", _U32)
    if need("prism.hadamard.transform", "string") != "normalized-sylvester-walsh-hadamard":
        errors.append("prism.hadamard.transform")
    if need("prism.hadamard.axis", "string") != "input-last-dimension":
        errors.append("prism.hadamard.axis")
    sign_mode = need("prism.hadamard.sign_mode", "string")
    widths = need("prism.hadamard.sign_widths", "array", "int32") or []
    values = need("prism.hadamard.sign_values", "array", "int32") or []
    folded = need("prism.hadamard.weight_names", "array", "string") or []
    inverse = need("prism.hadamard.inverse_weight_names", "array", "string") or []
    if need("prism.hadamard.gdn_v_grouped", "bool") is not True:
        errors.append("prism.hadamard.gdn_v_grouped must be true")
    if version != 1 or "output.weight" not in tensors:
        errors.append("prism.hadamard.version must be 1 with an untied output.weight")
    if block is None or block & (block - 1):
        errors.append("block_size must be a power of two")
    if sign_mode not in ("explicit", "identity"):
        errors.append(f"sign_mode {sign_mode}")
    if sum(widths) != len(values) or any(w % block for w in widths) or any(v not in (1, -1) for v in values):
        errors.append("sign_widths / sign_values inconsistent")
    if inverse != ["token_embd.weight"]:
        errors.append("inverse_weight_names must be [token_embd.weight]")

    # tensor inventory (spec 5, 10.3)
    f32, bf16, pq = "F32", "BF16", None
    ternary_types = {"PQ2_0", "PTQ1_0"}
    expect: dict[str, tuple[set[str] | str | None, list[int]]] = {
        "token_embd.weight": (ternary_types, [d, None]),
        "output.weight": (ternary_types, [d, None]),
        "output_norm.weight": (f32, [d]),
    }
    want_folded = {"output.weight"}
    kd, vd = sk * nk, inner
    for i in range(n_layer):
        p = f"blk.{i}."
        expect.update({p + "attn_norm.weight": (f32, [d]), p + "post_attention_norm.weight": (f32, [d]),
                       p + "ffn_gate.weight": (ternary_types, [d, ff]), p + "ffn_up.weight": (ternary_types, [d, ff]),
                       p + "ffn_down.weight": (ternary_types, [ff, d])})
        want_folded |= {p + "ffn_gate.weight", p + "ffn_up.weight", p + "ffn_down.weight"}
        if (i + 1) % interval:
            expect.update({
                p + "attn_qkv.weight": (ternary_types, [d, 2 * kd + vd]),
                p + "attn_gate.weight": (ternary_types, [d, vd]),
                p + "ssm_alpha.weight": (bf16, [d, nv]), p + "ssm_beta.weight": (bf16, [d, nv]),
                p + "ssm_conv1d.weight": (f32, [hp["ssm.conv_kernel"], 2 * kd + vd]),
                p + "ssm_a": (f32, [nv]), p + "ssm_dt.bias": (f32, [nv]), p + "ssm_norm.weight": (f32, [sk]),
                p + "ssm_out.weight": (ternary_types, [vd, d]),
            })
            want_folded |= {p + "attn_qkv.weight", p + "attn_gate.weight", p + "ssm_out.weight"}
        else:
            expect.update({
                p + "attn_q.weight": (ternary_types, [d, 2 * nh * hd]),
                p + "attn_k.weight": (ternary_types, [d, nkv * hd]), p + "attn_v.weight": (ternary_types, [d, nkv * hd]),
                p + "attn_output.weight": (ternary_types, [nh * hd, d]),
                p + "attn_q_norm.weight": (f32, [hd]), p + "attn_k_norm.weight": (f32, [hd]),
            })
            want_folded |= {p + f"attn_{x}.weight" for x in ("q", "k", "v", "output")}
    for name, (types, ne) in expect.items():
        t = tensors.get(name)
        if t is None:
            errors.append(f"missing tensor {name}")
            continue
        ok_type = t["type_name"] in types if isinstance(types, set) else t["type_name"] == types
        if not ok_type:
            errors.append(f"tensor {name}: type {t['type_name']} expected {types}")
        if len(t["ne"]) != len(ne) or any(e is not None and e != g for e, g in zip(ne, t["ne"])):
            errors.append(f"tensor {name}: ne {t['ne']} expected {ne}")
    extra = set(tensors) - set(expect)
    if extra:
        errors.append(f"unexpected tensors {sorted(extra)[:5]}")
    if set(folded) != want_folded:
        errors.append(f"weight_names differ from the folded set: missing {sorted(want_folded - set(folded))[:3]}, "
                      f"extra {sorted(set(folded) - want_folded)[:3]}")
    for name in list(folded) + list(inverse):
        t = tensors.get(name)
        if t is not None and (t["ne"][0] % block or t["ne"][0] not in widths):
            errors.append(f"folded tensor {name}: ne0 {t['ne'][0]} has no sign vector or is not a multiple of block_size")
    if tensors.get("token_embd.weight") and tensors.get("output.weight"):
        if tensors["token_embd.weight"]["ne"] != tensors["output.weight"]["ne"]:
            errors.append("token_embd and output shapes differ")
    return errors


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file")
    ap.add_argument("--manifest")
    ap.add_argument("--compare")
    ap.add_argument("--bonsai", action="store_true")
    args = ap.parse_args()
    doc = describe(args.file)
    status = 0
    if args.manifest:
        write_manifest(doc, args.manifest)
    if args.compare:
        errors = compare(doc, tomllib.loads(Path(args.compare).read_text(encoding="utf-8")))
        for e in errors:
            print(f"{args.file}: {e}")
        print(f"{args.file}: manifest comparison: {'OK' if not errors else f'{len(errors)} differences'}")
        status |= bool(errors)
    if args.bonsai:
        errors = check_bonsai(doc)
        for e in errors:
            print(f"{args.file}: {e}")
        print(f"{args.file}: Bonsai contract: {'OK' if not errors else f'{len(errors)} problems'}"
              f" ({doc['kv_count']} keys, {doc['tensor_count']} tensors)")
        status |= bool(errors)
    if not (args.manifest or args.compare or args.bonsai):
        print(prism.toml_dumps({k: v for k, v in doc.items() if k not in ("kv", "tensor")}))
        for e in doc["kv"]:
            v = repr(e["value"])
            print(f"  {e['key']}: {e['type']}{'<' + e['elem'] + '>' if 'elem' in e else ''} = {v[:100]}")
        for t in doc["tensor"]:
            print(f"  {t['name']}: {t['type_name']} ne={t['ne']} offset={t['offset']} bytes={t['bytes']}")
    return status


if __name__ == "__main__":
    sys.exit(main())
