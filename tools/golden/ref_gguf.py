#!/usr/bin/env python3
"""A second, deliberately plain forward pass that reads the Bonsai GGUF (through gguf-py) and follows the
spec's GGUF-side formulas literally (spec 6, 7): tiled V heads with key head e mod nk, ssm_out
permutation tiled -> grouped before the signs, norms used as stored, ssm_a used as stored, conv taps
oldest-first, token-by-token delta rule, per-head q | gate interleave, partial NeoX RoPE.

It shares no weights with the HF model (those were de-folded from the same trits by make_model.py), so
agreement with HF's logits checks the file's conventions, not just the arithmetic. Options model what a
C++ engine may do differently from HF, to size the golden test's tolerance:
  --l2 ggml       x / max(|x|, eps) instead of HF's x * rsqrt(|x|^2 + eps)
  --q8            quantize each ternary matmul's activation to ggml q8_K (256-blocks, scale max|x|/127)
  --f32           float32 arithmetic throughout instead of float64

  ref_gguf.py DIR [--l2 ggml] [--q8] [--f32]   compares with DIR/tiny_bonsai_golden.toml and prints diffs
"""
from __future__ import annotations

import argparse
import sys
import tomllib
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import prism  # noqa: E402

prism.register_prism_types()
from gguf import GGUFReader  # noqa: E402


class Model:
    def __init__(self, path: str, l2: str = "hf", q8: bool = False, dtype=np.float64, flip_seed: int = 0):
        r = GGUFReader(path)
        kv = {k: f.contents() for k, f in r.fields.items() if not k.startswith("GGUF.")}
        self.kv = kv
        self.dt = dtype
        self.l2, self.q8 = l2, q8
        self.calls, self.flip_at = 0, 0     # q8_K matmul calls in this forward; flip one value at call flip_at
        self.t = {}
        for t in r.tensors:
            ne = [int(x) for x in t.shape]
            if t.tensor_type == prism.PQ2_0:
                w = prism.decode_pq2_0(np.asarray(t.data).reshape(ne[1], -1), ne[0])
            elif t.tensor_type.name == "BF16":
                w = prism.bf16_bits_to_f64(np.asarray(t.data).view(np.uint16).reshape(list(reversed(ne))))
            else:
                w = np.asarray(t.data, dtype=np.float64).reshape(list(reversed(ne)))
            self.t[t.name] = w.astype(dtype)
        a = "qwen35."
        self.n_layer = kv[a + "block_count"]
        self.d = kv[a + "embedding_length"]
        self.eps = kv[a + "attention.layer_norm_rms_epsilon"]
        self.nh, self.nkv = kv[a + "attention.head_count"], kv[a + "attention.head_count_kv"]
        self.hd = kv[a + "attention.key_length"]
        self.rope_dim, self.theta = kv[a + "rope.dimension_count"], kv[a + "rope.freq_base"]
        self.sk, self.nk, self.nv = kv[a + "ssm.state_size"], kv[a + "ssm.group_count"], kv[a + "ssm.time_step_rank"]
        self.kc = kv[a + "ssm.conv_kernel"]
        self.interval = kv.get(a + "full_attention_interval", 4)
        self.B = kv["prism.hadamard.block_size"]
        widths, values = kv["prism.hadamard.sign_widths"], kv["prism.hadamard.sign_values"]
        self.signs, o = {}, 0
        for w in widths:
            self.signs[w] = np.array(values[o:o + w], dtype=dtype)
            o += w
        self.vocab = self.t["token_embd.weight"].shape[0]
        self.flips = np.random.default_rng(flip_seed)

    # ---- pieces
    def rot(self, x):
        return prism.fwht_blocks(x * self.signs[x.shape[-1]], self.B).astype(self.dt)

    def mm(self, name, x):
        """A folded ternary matmul: y = W' . R_K x, optionally through q8_K activations."""
        xr = self.rot(x)
        if self.q8:
            xr = q8k(xr)
            self.calls += 1
            if self.calls == self.flip_at:
                # One q8_K value one step off, as a last-bit difference upstream can push it across a
                # rounding boundary: sizes what such a rare flip does to the logits.
                i = int(self.flips.integers(0, xr.size))
                blk = np.abs(xr[i // 256 * 256:(i // 256 + 1) * 256]).max()
                xr = xr.copy()
                xr[i] += (1.0 if self.flips.random() < 0.5 else -1.0) * blk / 127.0
        return self.t[name] @ xr

    def rms(self, x, g):
        return x / np.sqrt(np.mean(x * x) + self.eps) * g

    def l2norm(self, x):
        n2 = np.sum(x * x, axis=-1, keepdims=True)
        if self.l2 == "ggml":
            return x / np.maximum(np.sqrt(n2), self.eps)
        return x / np.sqrt(n2 + self.eps)

    @staticmethod
    def silu(x):
        return x / (1.0 + np.exp(-x))

    # ---- layers
    def gdn(self, i, a, st):
        p = f"blk.{i}."
        sk, nk, nv = self.sk, self.nk, self.nv
        kd, rep = sk * nk, nv // nk
        mixed = self.mm(p + "attn_qkv.weight", a)
        z = self.mm(p + "attn_gate.weight", a).reshape(nv, sk)
        b_raw = self.t[p + "ssm_beta.weight"] @ a      # un-rotated input (spec 7.4.2)
        al_raw = self.t[p + "ssm_alpha.weight"] @ a
        conv = self.t[p + "ssm_conv1d.weight"]          # [ch, tap], tap 0 = oldest
        window = np.vstack([st["conv"], mixed[None, :]])
        c = np.einsum("tc,ct->c", window, conv)
        st["conv"] = window[1:]
        u = self.silu(c)
        qk_raw = u[:2 * kd].reshape(2 * nk, sk)
        self.qk_norm_min = min(self.qk_norm_min, float(np.sqrt(np.sum(qk_raw * qk_raw, axis=-1)).min()))
        q = self.l2norm(u[:kd].reshape(nk, sk)) / np.sqrt(sk)
        k = self.l2norm(u[kd:2 * kd].reshape(nk, sk))
        v = u[2 * kd:].reshape(nv, sk)                 # tiled value heads
        beta = 1.0 / (1.0 + np.exp(-b_raw))
        x = al_raw + self.t[p + "ssm_dt.bias"]
        g = self.t[p + "ssm_a"] * np.where(x > 20, x, np.log1p(np.exp(np.minimum(x, 20))))
        o = np.zeros((nv, sk), dtype=self.dt)
        for e in range(nv):
            kk, qq = k[e % nk], q[e % nk]               # tiled head e uses key head e mod nk
            S = st["S"][e] * np.exp(g[e])
            m = S.T @ kk
            delta = beta[e] * (v[e] - m)
            S = S + np.outer(kk, delta)
            st["S"][e] = S
            o[e] = S.T @ qq
        y = np.stack([self.rms(o[e], self.t[p + "ssm_norm.weight"]) * self.silu(z[e]) for e in range(nv)])
        tiled = y.reshape(-1)
        grouped = np.empty_like(tiled)
        for kh in range(nk):
            for r in range(rep):
                grouped[sk * (r + rep * kh): sk * (r + rep * kh + 1)] = tiled[sk * (kh + nk * r): sk * (kh + nk * r + 1)]
        return self.mm(p + "ssm_out.weight", grouped)

    def attn(self, i, a, pos, st):
        p = f"blk.{i}."
        nh, nkv, hd = self.nh, self.nkv, self.hd
        qg = self.mm(p + "attn_q.weight", a).reshape(nh, 2, hd)
        q, gate = qg[:, 0], qg[:, 1]
        k = self.mm(p + "attn_k.weight", a).reshape(nkv, hd)
        v = self.mm(p + "attn_v.weight", a).reshape(nkv, hd)
        q = np.stack([self.rms(x, self.t[p + "attn_q_norm.weight"]) for x in q])
        k = np.stack([self.rms(x, self.t[p + "attn_k_norm.weight"]) for x in k])
        half = self.rope_dim // 2
        theta = pos * self.theta ** (-2.0 * np.arange(half) / self.rope_dim)
        cos, sin = np.cos(theta), np.sin(theta)

        def rope(x):
            x = x.copy()
            x0, x1 = x[:, :half].copy(), x[:, half:2 * half].copy()
            x[:, :half] = x0 * cos - x1 * sin
            x[:, half:2 * half] = x0 * sin + x1 * cos
            return x

        q, k = rope(q), rope(k)
        st["k"].append(k)
        st["v"].append(v)
        K, Vv = np.stack(st["k"]), np.stack(st["v"])   # [pos, nkv, hd]
        out = np.zeros((nh, hd), dtype=self.dt)
        for h in range(nh):
            m = h // (nh // nkv)                        # grouped GQA
            s = K[:, m] @ q[h] / np.sqrt(hd)
            w = np.exp(s - s.max())
            out[h] = (w / w.sum()) @ Vv[:, m]
        o = out.reshape(-1) * (1.0 / (1.0 + np.exp(-gate.reshape(-1))))
        return self.mm(p + "attn_output.weight", o)

    def new_states(self):
        states = {}
        for i in range(self.n_layer):
            if (i + 1) % self.interval:
                states[i] = {"conv": np.zeros((self.kc - 1, 2 * self.sk * self.nk + self.sk * self.nv), dtype=self.dt),
                             "S": np.zeros((self.nv, self.sk, self.sk), dtype=self.dt)}
            else:
                states[i] = {"k": [], "v": []}
        return states

    def step(self, tok, pos, states):
        """Logits after one token at position pos; self.qk_norm_min is then the smallest GDN q/k norm
        (before L2 normalisation) this token produced in any layer and head."""
        self.qk_norm_min = float("inf")
        h = prism.fwht_blocks(self.t["token_embd.weight"][tok], self.B).astype(self.dt) * self.signs[self.d]
        for i in range(self.n_layer):
            p = f"blk.{i}."
            a = self.rms(h, self.t[p + "attn_norm.weight"])
            h = h + (self.gdn(i, a, states[i]) if (i + 1) % self.interval else self.attn(i, a, pos, states[i]))
            f = self.rms(h, self.t[p + "post_attention_norm.weight"])
            act = self.silu(self.mm(p + "ffn_gate.weight", f)) * self.mm(p + "ffn_up.weight", f)
            h = h + self.mm(p + "ffn_down.weight", act)
        return self.mm("output.weight", self.rms(h, self.t["output_norm.weight"])).astype(np.float64)

    def forward(self, ids):
        states = self.new_states()
        self.qk_norm_trace = []
        self.calls = 0
        logits = []
        for pos, tok in enumerate(ids):
            logits.append(self.step(tok, pos, states))
            self.qk_norm_trace.append(self.qk_norm_min)
        return np.stack(logits)

    def greedy(self, prompt, n):
        """Free-running greedy decode: (tokens, top-2 margin of each step's logits)."""
        states = self.new_states()
        for pos, tok in enumerate(prompt):
            last = self.step(tok, pos, states)
        tokens, margins = [], []
        for i in range(n):
            top2 = np.sort(last)[-2:]
            tokens.append(int(last.argmax()))
            margins.append(float(top2[1] - top2[0]))
            if i + 1 < n:
                last = self.step(tokens[-1], len(prompt) + i, states)
        return tokens, margins


def q8k(x):
    """ggml q8_K: per 256 values, the element of largest magnitude maps to -127 (scale max/-127)."""
    x = np.asarray(x, dtype=np.float32).reshape(-1, 256)
    out = np.zeros_like(x)
    for b in range(x.shape[0]):
        i = int(np.argmax(np.abs(x[b])))
        mx = x[b, i]
        if mx == 0:
            continue
        iscale = np.float32(-127.0) / mx
        q = np.minimum(127, np.rint(iscale * x[b]))
        out[b] = q * (np.float32(1.0) / iscale)
    return out.reshape(-1).astype(np.float64)


def compare(out_dir: Path, l2: str, q8: bool, dtype, golden_name: str = "tiny_bonsai_golden.toml") -> dict:
    golden = tomllib.loads((out_dir / golden_name).read_text(encoding="utf-8"))
    allv = np.fromfile(out_dir / golden["logits_file"], dtype="<f8")
    model = Model(str(out_dir / golden["gguf"]), l2=l2, q8=q8, dtype=dtype)
    V = golden["vocab"]
    worst, flips, rel, cos_min, rms_rel = 0.0, 0, 0.0, 1.0, 0.0
    for p in golden["prompt"]:
        n = p["positions"]
        ref = allv[p["logits_offset_bytes"] // 8: p["logits_offset_bytes"] // 8 + n * V].reshape(n, V)
        got = model.forward(p["sequence_ids"])
        diff = float(np.abs(got - ref).max())
        worst = max(worst, diff)
        rel = max(rel, diff / float(np.abs(ref).max()))
        cos = np.sum(got * ref, axis=1) / np.sqrt(np.sum(got * got, axis=1) * np.sum(ref * ref, axis=1))
        cos_min = min(cos_min, float(cos.min()))
        rms_rel = max(rms_rel, float(np.sqrt(np.sum((got - ref) ** 2) / np.sum(ref * ref))))
        start = len(p["prompt_ids"]) - 1
        greedy = list(got[start:-1].argmax(axis=1))
        flips += sum(int(a != b) for a, b in zip(greedy, p["generated_ids"]))
        print(f"  {p['name']:8s} positions {n:3d}  max|logit diff| {diff:.3e}  greedy "
              f"{'same' if greedy == p['generated_ids'] else 'DIFFERENT'}")
    return {"max_abs": worst, "max_rel_to_max_logit": rel, "greedy_flips": flips, "min_cosine": cos_min,
            "max_rel_rms": rms_rel}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir")
    ap.add_argument("--l2", choices=["hf", "ggml"], default="hf")
    ap.add_argument("--q8", action="store_true")
    ap.add_argument("--f32", action="store_true")
    ap.add_argument("--max-abs", type=float, help="fail if the max logit difference exceeds this")
    args = ap.parse_args()
    res = compare(Path(args.dir), args.l2, args.q8, np.float32 if args.f32 else np.float64)
    print(f"ref_gguf l2={args.l2} q8={args.q8} {'f32' if args.f32 else 'f64'}: max|diff| {res['max_abs']:.3e} "
          f"(relative to max|logit| {res['max_rel_to_max_logit']:.3e}), min cosine {res['min_cosine']:.6f}, "
          f"relative RMS {res['max_rel_rms']:.3e}, greedy flips {res['greedy_flips']}")
    if args.max_abs is not None and not res["max_abs"] <= args.max_abs:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
