#!/usr/bin/env python3
"""Trains a small ternary model of the Bonsai 2 (qwen35 hybrid) architecture and exports it as a Bonsai GGUF.

The network is written in the file's own coordinates (spec 6, 7; the formulas of tools/golden/ref_gguf.py):
every ternary matmul is y = W' . R_K x with R_K = blockwise normalised Hadamard after the per-width signs,
and W' = trits x one fp16 scale per 128 weights, learned through straight-through quantisation (absmean
scale, round-to-nearest trit). The rotation is therefore folded exactly as the format stores it: the
exported trits and scales are the ones the forward pass used, bit for bit. The embedding stores rotated
rows z_t and the model reads R^T z_t; norms are stored as the multipliers they are; ssm_alpha/ssm_beta
are rounded to BF16 in the forward pass, as stored.

  train.py --out DIR [--steps N] [--seed S] [--threads T] [--export-float FILE]

writes DIR/bonsai-kjv-py.gguf, DIR/heldout-prose.txt, DIR/heldout-code.txt, DIR/words.txt and DIR/bonsai-kjv-py.eval.toml
(the trainer's evaluation of the exported file: tools/golden/ref_gguf.py reads the GGUF back through gguf-py
and computes perplexity on the held-out texts in float64, and with simulated q8_K activations).
Corpora (Debian packages): bible-kjv-text (the King James Version, public domain; the package's code is
GPL-2+), and the Python 3.11 standard library sources of libpython3.11-stdlib (PSF License 2).
"""
from __future__ import annotations

import argparse
import collections
import json
import math
import os
import re
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("RAYON_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
sys.path.insert(0, str(GOLDEN))
import make_tokenizer  # noqa: E402
import prism  # noqa: E402

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers  # noqa: E402

NAME = "bonsai-kjv-py"

# The model: 2 layers (a Gated DeltaNet layer, then a gated attention layer), sized for 2 CPU cores; three
# distinct sign widths (hidden 256, heads 512, FFN 768), Hadamard block 256. --config scales it up.
CFG: dict[str, Any] = dict(
    vocab=1024, hidden=256, ffn=768, layers=2, interval=2,
    heads=8, kv_heads=2, head_dim=64, rope_dim=16, rope_sections=[3, 3, 2, 0], rope_theta=1.0e7,
    ssm_state=64, ssm_groups=2, ssm_rank=8, conv_kernel=4, eps=1e-6, block=256, context=4096,
)
QK = prism.QK

# Held out of training: Python modules and Bible books whose text is never seen by the tokenizer or the model.
HELDOUT_CODE = ["textwrap.py"]
HELDOUT_PROSE = ["Ruth"]
TRAIN_CHARS = 1_500_000  # per corpus: more than a 2-core run can see, and the tokenizer trains in seconds
EVAL_CHARS = 2400     # a slice of each held-out text: ~600 tokens, fast enough under ASan and qemu
WORDS_PER_CORPUS = 2000  # words.txt: this many most frequent words of each training corpus
EVAL_CHUNK = 64       # perplexity chunk (fresh state per chunk), = the training sequence length


def validate(cfg: dict[str, Any], source: str) -> None:
    """A config that does not describe a valid Bonsai model is refused naming the file and the field."""
    def need(ok: bool, field: str, why: str) -> None:
        if not ok:
            raise SystemExit(f"train.py: {source}: field '{field}' = {cfg.get(field)!r}: {why}")
    B = cfg["block"]
    need(B > 0 and B & (B - 1) == 0, "block", "the Hadamard block must be a power of two")
    for f in ("hidden", "ffn"):
        need(cfg[f] % B == 0 and cfg[f] % QK == 0, f, f"must be a multiple of the Hadamard block {B} and of {QK}")
    need(cfg["heads"] * cfg["head_dim"] == cfg["ssm_rank"] * cfg["ssm_state"], "heads",
         "heads x head_dim must equal ssm_rank x ssm_state (ssm_out and attn_output share a sign width)")
    need((cfg["heads"] * cfg["head_dim"]) % B == 0, "head_dim", f"heads x head_dim must be a multiple of {B}")
    need(len({cfg["hidden"], cfg["heads"] * cfg["head_dim"], cfg["ffn"]}) == 3, "ffn",
         "hidden, heads x head_dim and ffn must differ (one sign vector per width)")
    need(cfg["heads"] % cfg["kv_heads"] == 0, "kv_heads", "must divide heads")
    need(cfg["ssm_rank"] % cfg["ssm_groups"] == 0, "ssm_groups", "must divide ssm_rank")
    need(cfg["rope_dim"] % 2 == 0 and cfg["rope_dim"] <= cfg["head_dim"], "rope_dim", "even and at most head_dim")
    need(cfg["layers"] >= cfg["interval"] >= 1, "interval", "at least one attention layer")
    need(cfg["vocab"] % 8 == 0 and cfg["vocab"] > 5, "vocab", "positive multiple of 8")


# ---------------------------------------------------------------- corpora

def prose_corpus() -> tuple[str, str]:
    """(training text, held-out text) of the KJV through Debian's `bible` (package bible-kjv)."""
    try:
        raw = subprocess.run(["bible", "-f", "ge1:1-re22:21"], check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise SystemExit(f"train.py: the prose corpus needs Debian's bible-kjv (apt-get install bible-kjv): {e}")
    train, held, chapter, cur = [], [], None, []
    for line in raw.splitlines():
        m = re.match(r"^(\d?[A-Za-z]+)(\d+):(\d+) (.*)$", line)
        if not m:
            continue
        book, ch, text = m.group(1), m.group(2), m.group(4)
        if (book, ch) != chapter and cur:
            (held if chapter[0] in HELDOUT_PROSE else train).append(" ".join(cur) + "\n")
            cur = []
        chapter = (book, ch)
        cur.append(text)
    if cur:
        (held if chapter[0] in HELDOUT_PROSE else train).append(" ".join(cur) + "\n")
    if not held:
        raise SystemExit(f"train.py: no held-out book {HELDOUT_PROSE} found in the bible output")
    return "\n".join(train)[:TRAIN_CHARS], "\n".join(held)


def code_corpus() -> tuple[str, str]:
    root = Path("/usr/lib/python3.11")
    files = sorted(p for p in root.glob("*.py"))
    if len(files) < 50:
        raise SystemExit(f"train.py: the code corpus needs Debian's libpython3.11-stdlib ({root} has {len(files)} .py files)")
    train, held = [], []
    for p in files:
        (held if p.name in HELDOUT_CODE else train).append(p.read_text(encoding="utf-8", errors="replace"))
    # Files in a fixed shuffled order, so the slice spans many modules rather than the alphabet's start.
    order = np.random.default_rng(0).permutation(len(train))
    return "\n".join(train[i] for i in order)[:TRAIN_CHARS], "\n".join(held)


def eval_slice(text: str) -> str:
    """The first EVAL_CHARS characters of a held-out text, cut after a line end or else a sentence."""
    s = text[:EVAL_CHARS]
    cut = s.rfind("\n") + 1
    if cut < EVAL_CHARS // 2:
        cut = s.rfind(". ") + 2
    return s[:cut].rstrip(" ") + ("" if s[:cut].endswith("\n") else "\n")


# ---------------------------------------------------------------- tokenizer

def build_tokenizer(texts: list[str], vocab: int) -> Tokenizer:
    """Byte-level BPE with the Qwen pre-tokenizer (the settings of tools/golden/make_tokenizer.py)."""
    n_merge = vocab - len(make_tokenizer.CONTROL_TOKENS) - len(make_tokenizer.USER_TOKENS)
    tok = Tokenizer(models.BPE(unk_token=None, fuse_unk=False, byte_fallback=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(make_tokenizer.QWEN35_SPLIT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=n_merge, min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=[])
    tok.train_from_iterator(texts, trainer=trainer)
    assert tok.get_vocab_size() == n_merge, tok.get_vocab_size()
    tok.add_special_tokens(make_tokenizer.CONTROL_TOKENS)
    tok.add_tokens(make_tokenizer.USER_TOKENS)
    assert tok.get_vocab_size() == vocab
    return tok


# ---------------------------------------------------------------- model (file coordinates)

def hadamard(B: int) -> torch.Tensor:
    return torch.from_numpy(prism.hadamard_matrix(B)).float()


def ste_ternary(w: torch.Tensor) -> torch.Tensor:
    """trits x fp16 absmean scale per 128 along the input; gradients pass straight through."""
    n, k = w.shape
    blocks = w.view(n, k // QK, QK)
    scale = blocks.abs().mean(dim=2, keepdim=True).clamp_min(1e-5).half().float()
    q = (torch.round((blocks / scale).clamp(-1, 1)) * scale).view(n, k)
    return w + (q - w).detach()


def quantise_export(w: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """The same quantisation as ste_ternary, as (trits int8 [n,k], fp16 scales [n,k/128])."""
    n, k = w.shape
    blocks = w.detach().view(n, k // QK, QK)
    scale = blocks.abs().mean(dim=2, keepdim=True).clamp_min(1e-5).half().float()
    trits = torch.round((blocks / scale).clamp(-1, 1)).view(n, k).to(torch.int8).numpy()
    return trits, scale.squeeze(2).half().numpy()


def ste_bf16(w: torch.Tensor) -> torch.Tensor:
    return w + (w.to(torch.bfloat16).float() - w).detach()


class Bonsai(torch.nn.Module):
    def __init__(self, cfg: dict[str, Any], gen: torch.Generator):
        super().__init__()
        self.cfg = c = cfg
        d, ff, hd = c["hidden"], c["ffn"], c["head_dim"]
        sk, nk, nv = c["ssm_state"], c["ssm_groups"], c["ssm_rank"]
        self.kd, self.vd = sk * nk, sk * nv
        self.widths = [d, c["heads"] * hd, ff]
        signs = {w: torch.randint(0, 2, (w,), generator=gen).float() * 2 - 1 for w in self.widths}
        for w, s in signs.items():
            self.register_buffer(f"signs_{w}", s)
        self.register_buffer("H", hadamard(c["block"]))
        P = torch.nn.Parameter

        def lin(n: int, k: int) -> torch.nn.Parameter:
            return P(torch.randn(n, k, generator=gen) / math.sqrt(k))

        self.w: dict[str, torch.nn.Parameter] = {}
        self.ternary_names: list[str] = []
        self.p = torch.nn.ParameterDict()

        def add(name: str, t: torch.Tensor, ternary: bool = False) -> None:
            self.p[name.replace(".", "__")] = t if isinstance(t, P) else P(t)
            if ternary:
                self.ternary_names.append(name)

        add("token_embd.weight", P(torch.randn(c["vocab"], d, generator=gen)), True)
        for i in range(c["layers"]):
            p = f"blk.{i}."
            add(p + "attn_norm.weight", torch.ones(d))
            add(p + "post_attention_norm.weight", torch.ones(d))
            if self.is_gdn(i):
                add(p + "attn_qkv.weight", lin(2 * self.kd + self.vd, d), True)
                add(p + "attn_gate.weight", lin(self.vd, d), True)
                add(p + "ssm_beta.weight", lin(nv, d))
                add(p + "ssm_alpha.weight", lin(nv, d) * 0.1)
                add(p + "ssm_conv1d.weight", torch.randn(2 * self.kd + self.vd, c["conv_kernel"], generator=gen) * 0.3)
                add(p + "ssm_a_log", torch.log(torch.linspace(0.5, 4.0, nv)))
                add(p + "ssm_dt.bias", torch.full((nv,), -2.0))
                add(p + "ssm_norm.weight", torch.ones(sk))
                add(p + "ssm_out.weight", lin(d, self.vd), True)
            else:
                add(p + "attn_q.weight", lin(2 * c["heads"] * hd, d), True)
                add(p + "attn_k.weight", lin(c["kv_heads"] * hd, d), True)
                add(p + "attn_v.weight", lin(c["kv_heads"] * hd, d), True)
                add(p + "attn_output.weight", lin(d, c["heads"] * hd), True)
                add(p + "attn_q_norm.weight", torch.ones(hd))
                add(p + "attn_k_norm.weight", torch.ones(hd))
            add(p + "ffn_gate.weight", lin(ff, d), True)
            add(p + "ffn_up.weight", lin(ff, d), True)
            add(p + "ffn_down.weight", lin(d, ff), True)
        add("output_norm.weight", torch.ones(d))
        add("output.weight", lin(c["vocab"], d), True)

    def is_gdn(self, i: int) -> bool:
        return (i + 1) % self.cfg["interval"] != 0

    def t(self, name: str) -> torch.Tensor:
        return self.p[name.replace(".", "__")]

    def signs(self, w: int) -> torch.Tensor:
        return getattr(self, f"signs_{w}")

    def fwht(self, x: torch.Tensor) -> torch.Tensor:
        B = self.cfg["block"]
        sh = x.shape
        return (x.reshape(*sh[:-1], sh[-1] // B, B) @ self.H).reshape(sh)

    def mm(self, name: str, x: torch.Tensor, q8: bool = False) -> torch.Tensor:
        xr = self.fwht(x * self.signs(x.shape[-1]))
        if q8:
            xr = q8k_torch(xr)
        return xr @ ste_ternary(self.t(name)).t()

    def rms(self, x: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + self.cfg["eps"]) * g

    @staticmethod
    def l2(x: torch.Tensor, eps: float) -> torch.Tensor:
        return x / x.norm(dim=-1, keepdim=True).clamp_min(eps)   # the ggml form (ternlab's)

    def ssm_a(self, p: str) -> torch.Tensor:
        return -torch.exp(self.t(p + "ssm_a_log"))

    def gdn(self, i: int, a: torch.Tensor, q8: bool) -> torch.Tensor:
        c, p = self.cfg, f"blk.{i}."
        Bt, T, _ = a.shape
        sk, nk, nv = c["ssm_state"], c["ssm_groups"], c["ssm_rank"]
        kd, rep = self.kd, nv // nk
        mixed = self.mm(p + "attn_qkv.weight", a, q8)                                  # [B,T,ch]
        z = self.mm(p + "attn_gate.weight", a, q8).view(Bt, T, nv, sk)
        b_raw = a @ ste_bf16(self.t(p + "ssm_beta.weight")).t()
        al_raw = a @ ste_bf16(self.t(p + "ssm_alpha.weight")).t()
        conv = self.t(p + "ssm_conv1d.weight")                                         # [ch, tap], tap 0 oldest
        xc = F.pad(mixed.transpose(1, 2), (c["conv_kernel"] - 1, 0))
        u = F.silu(F.conv1d(xc, conv.unsqueeze(1), groups=conv.shape[0]).transpose(1, 2))
        q = self.l2(u[..., :kd].reshape(Bt, T, nk, sk), c["eps"]) / math.sqrt(sk)
        k = self.l2(u[..., kd:2 * kd].reshape(Bt, T, nk, sk), c["eps"])
        v = u[..., 2 * kd:].reshape(Bt, T, nv, sk)                                     # tiled value heads
        head_key = torch.arange(nv) % nk                                               # tiled head e: key head e mod nk
        q, k = q[:, :, head_key], k[:, :, head_key]                                    # [B,T,nv,sk]
        beta = torch.sigmoid(b_raw)
        g = self.ssm_a(p) * F.softplus(al_raw + self.t(p + "ssm_dt.bias"), threshold=20.0)
        decay = torch.exp(g)
        S = a.new_zeros(Bt, nv, sk, sk)
        outs = []
        for t in range(T):
            S = S * decay[:, t, :, None, None]
            kk = k[:, t]
            m = torch.einsum("bekv,bek->bev", S, kk)
            delta = beta[:, t, :, None] * (v[:, t] - m)
            S = S + kk[..., :, None] * delta[..., None, :]
            outs.append(torch.einsum("bekv,bek->bev", S, q[:, t]))
        o = torch.stack(outs, dim=1)                                                   # [B,T,nv,sk]
        y = self.rms(o, self.t(p + "ssm_norm.weight")) * F.silu(z)
        # tiled -> grouped before ssm_out: grouped head kh*rep + r holds tiled head kh + nk*r
        order = torch.tensor([kh + nk * r for kh in range(nk) for r in range(rep)])
        y = y[:, :, order].reshape(Bt, T, nv * sk)
        return self.mm(p + "ssm_out.weight", y, q8)

    def attn(self, i: int, a: torch.Tensor, q8: bool) -> torch.Tensor:
        c, p = self.cfg, f"blk.{i}."
        Bt, T, _ = a.shape
        nh, nkv, hd = c["heads"], c["kv_heads"], c["head_dim"]
        qg = self.mm(p + "attn_q.weight", a, q8).view(Bt, T, nh, 2, hd)
        q, gate = qg[..., 0, :], qg[..., 1, :]
        k = self.mm(p + "attn_k.weight", a, q8).view(Bt, T, nkv, hd)
        v = self.mm(p + "attn_v.weight", a, q8).view(Bt, T, nkv, hd)
        q = self.rms(q, self.t(p + "attn_q_norm.weight"))
        k = self.rms(k, self.t(p + "attn_k_norm.weight"))
        half, rd = c["rope_dim"] // 2, c["rope_dim"]
        inv = c["rope_theta"] ** (-2.0 * torch.arange(half, dtype=torch.float64) / rd)
        ang = torch.arange(T, dtype=torch.float64)[:, None] * inv[None, :]
        cos, sin = torch.cos(ang).to(a.dtype)[:, None, :], torch.sin(ang).to(a.dtype)[:, None, :]

        def rope(x: torch.Tensor) -> torch.Tensor:
            x0, x1 = x[..., :half], x[..., half:rd]
            return torch.cat([x0 * cos - x1 * sin, x0 * sin + x1 * cos, x[..., rd:]], dim=-1)

        q, k = rope(q), rope(k)
        rep = nh // nkv
        k = k.repeat_interleave(rep, dim=2)                                            # grouped GQA: head h uses h // rep
        v = v.repeat_interleave(rep, dim=2)
        s = torch.einsum("bthd,bshd->bhts", q, k) / math.sqrt(hd)
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        s = s.masked_fill(~mask, float("-inf"))
        out = torch.einsum("bhts,bshd->bthd", torch.softmax(s, dim=-1), v).reshape(Bt, T, nh * hd)
        o = out * torch.sigmoid(gate.reshape(Bt, T, nh * hd))
        return self.mm(p + "attn_output.weight", o, q8)

    def forward(self, ids: torch.Tensor, q8: bool = False) -> torch.Tensor:
        c = self.cfg
        z = ste_ternary(self.t("token_embd.weight"))[ids]
        h = self.fwht(z) * self.signs(c["hidden"])                                     # R^T z_t
        for i in range(c["layers"]):
            p = f"blk.{i}."
            a = self.rms(h, self.t(p + "attn_norm.weight"))
            h = h + (self.gdn(i, a, q8) if self.is_gdn(i) else self.attn(i, a, q8))
            f = self.rms(h, self.t(p + "post_attention_norm.weight"))
            h = h + self.mm(p + "ffn_down.weight", F.silu(self.mm(p + "ffn_gate.weight", f, q8)) * self.mm(p + "ffn_up.weight", f, q8), q8)
        return self.mm("output.weight", self.rms(h, self.t("output_norm.weight")), q8)


def q8k_torch(x: torch.Tensor) -> torch.Tensor:
    """ggml q8_K per 256 values (scale = the largest-magnitude element / -127), as ref_gguf.q8k."""
    sh = x.shape
    b = x.float().reshape(-1, 256)
    idx = b.abs().argmax(dim=1, keepdim=True)
    mx = torch.gather(b, 1, idx)
    iscale = torch.where(mx == 0, torch.zeros_like(mx), -127.0 / mx)
    q = torch.clamp(torch.round(iscale * b), max=127)
    out = torch.where(mx == 0, torch.zeros_like(b), q * (1.0 / iscale))
    return out.reshape(sh).to(x.dtype)


# ---------------------------------------------------------------- export

def export_gguf(path: Path, model: Bonsai, tok: Tokenizer, seed: int) -> None:
    prism.register_prism_types()
    from gguf import GGMLQuantizationType as T
    from gguf import GGUFValueType as V
    from gguf import GGUFWriter

    c = model.cfg
    tmp = path.with_suffix(".gguf.tmp")
    w = GGUFWriter(str(tmp), arch="qwen35")
    kv = w.add_key_value
    kv("general.name", NAME, V.STRING)
    kv("general.description", f"tools/train/train.py --seed {seed}: KJV (bible-kjv-text) + Python 3.11 stdlib sources",
       V.STRING)
    kv("general.file_type", 141, V.UINT32)
    kv("general.quantization_version", 2, V.UINT32)
    for key, val in (("block_count", c["layers"]), ("context_length", c["context"]), ("embedding_length", c["hidden"]),
                     ("feed_forward_length", c["ffn"]), ("attention.head_count", c["heads"]),
                     ("attention.head_count_kv", c["kv_heads"]), ("attention.key_length", c["head_dim"]),
                     ("attention.value_length", c["head_dim"]), ("rope.dimension_count", c["rope_dim"]),
                     ("ssm.conv_kernel", c["conv_kernel"]), ("ssm.state_size", c["ssm_state"]),
                     ("ssm.group_count", c["ssm_groups"]), ("ssm.time_step_rank", c["ssm_rank"]),
                     ("ssm.inner_size", c["ssm_state"] * c["ssm_rank"]),
                     ("full_attention_interval", c["interval"])):
        kv(f"qwen35.{key}", val, V.UINT32)
    kv("qwen35.attention.layer_norm_rms_epsilon", c["eps"], V.FLOAT32)
    kv("qwen35.rope.freq_base", c["rope_theta"], V.FLOAT32)
    kv("qwen35.rope.dimension_sections", c["rope_sections"], V.ARRAY, sub_type=V.INT32)
    kv("prism.hadamard.version", 1, V.UINT32)
    kv("prism.hadamard.block_size", c["block"], V.UINT32)
    kv("prism.hadamard.transform", "normalized-sylvester-walsh-hadamard", V.STRING)
    kv("prism.hadamard.axis", "input-last-dimension", V.STRING)
    kv("prism.hadamard.sign_mode", "explicit", V.STRING)
    kv("prism.hadamard.sign_widths", model.widths, V.ARRAY, sub_type=V.INT32)
    kv("prism.hadamard.sign_values", [int(s) for wd in model.widths for s in model.signs(wd).tolist()], V.ARRAY,
       sub_type=V.INT32)
    folded = [n for n in model.ternary_names if n != "token_embd.weight"]
    kv("prism.hadamard.weight_names", folded, V.ARRAY, sub_type=V.STRING)
    kv("prism.hadamard.inverse_weight_names", ["token_embd.weight"], V.ARRAY, sub_type=V.STRING)
    kv("prism.hadamard.gdn_v_grouped", True, V.BOOL)
    make_tokenizer.add_tokenizer_kv(w, tok, c["vocab"])

    for key in model.p.keys():
        name = key.replace("__", ".")
        t = model.p[key].detach()
        if name in model.ternary_names:
            trits, scales = quantise_export(t)
            raw = prism.encode_pq2_0(trits, scales)
            w.add_tensor(name, raw, raw_shape=raw.shape, raw_dtype=T.PQ2_0)
        elif name.endswith("ssm_alpha.weight") or name.endswith("ssm_beta.weight"):
            bits = prism.to_bf16_bits(t.numpy())
            w.add_tensor(name, bits.view(np.uint8).reshape(bits.shape[0], -1), raw_shape=None, raw_dtype=T.BF16)
        elif name.endswith("ssm_a_log"):
            w.add_tensor(name.replace("ssm_a_log", "ssm_a"), (-torch.exp(t)).numpy().astype(np.float32))
        else:
            w.add_tensor(name, t.numpy().astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    os.replace(tmp, path)


def export_float_gguf(path: Path, model: Bonsai, source: str) -> None:
    """The latent float weights of every ternary matrix, as F32 tensors under the ternary file's names.

    The network is trained in the file's coordinates, so each latent matrix is already the one the
    rotation was folded into: ternarising it (quantise_export) gives the exported trits and scales.
    F32, not F16: rounding to F16 moves some absmean scales and trits across a rounding boundary
    (tens per matrix), and the check below refuses a file that would not ternarise back exactly.
    """
    from gguf import GGUFValueType as V
    from gguf import GGUFWriter

    tmp = path.with_name(path.name + ".tmp")
    w = GGUFWriter(str(tmp), arch="qwen35")
    w.add_key_value("general.name", NAME + "-float", V.STRING)
    w.add_key_value("general.description", f"latent float weights of the ternary matrices of {source}", V.STRING)
    for name in model.ternary_names:
        t = model.t(name).detach()
        h = t.numpy().astype(np.float32)
        back = quantise_export(torch.from_numpy(h))
        want = quantise_export(t)
        if not (np.array_equal(back[0], want[0]) and np.array_equal(back[1].view(np.uint16), want[1].view(np.uint16))):
            raise SystemExit(f"train.py: {name}: the F32 float weights do not ternarise to the exported trits and scales")
        w.add_tensor(name, h)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    os.replace(tmp, path)


def perplexity_ref(gguf: Path, ids: list[int], chunk: int, q8: bool) -> float:
    """tools/golden/ref_gguf.py over the exported file, chunked exactly as ternlab's model::perplexity."""
    import ref_gguf

    m = ref_gguf.Model(str(gguf), l2="ggml", q8=q8, dtype=np.float32 if q8 else np.float64)
    nll, n = 0.0, 0
    for s in range(0, len(ids) - 1, chunk):
        part = ids[s:s + chunk]
        if len(part) < 2:
            break
        lg = m.forward(part)
        for t in range(len(part) - 1):
            row = lg[t]
            mx = row.max()
            nll += math.log(np.exp(row - mx).sum()) + mx - row[part[t + 1]]
            n += 1
    return math.exp(nll / n)


# ---------------------------------------------------------------- main

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--steps", type=int, default=800)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--config", type=Path, help="a TOML file overriding model fields (vocab, hidden, ffn, ...)")
    ap.add_argument("--minutes", type=float, default=0, help="stop early after this many minutes (0: no limit)")
    ap.add_argument("--export-only", type=Path, help="skip training: export and evaluate this checkpoint (DIR/checkpoint.pt)")
    ap.add_argument("--export-float", type=Path,
                    help="also write the latent float weights of every ternary matrix to this GGUF (F32, same names)")
    args = ap.parse_args()

    cfg = dict(CFG)
    if args.config:
        try:
            over = tomllib.loads(args.config.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as e:
            raise SystemExit(f"train.py: {args.config}: {e}")
        for k, v in over.items():
            if k not in cfg:
                raise SystemExit(f"train.py: {args.config}: unknown field '{k}' (known: {', '.join(cfg)})")
            if type(v) is not type(cfg[k]):
                raise SystemExit(f"train.py: {args.config}: field '{k}' must be {type(cfg[k]).__name__}")
            cfg[k] = v
    validate(cfg, str(args.config) if args.config else "the built-in config")

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    torch.use_deterministic_algorithms(True)
    gen = torch.Generator().manual_seed(args.seed)
    args.out.mkdir(parents=True, exist_ok=True)

    prose_train, prose_held = prose_corpus()
    code_train, code_held = code_corpus()
    tok = build_tokenizer([prose_train, code_train], cfg["vocab"])
    enc = lambda s: tok.encode(s, add_special_tokens=False).ids  # noqa: E731
    prose_ids = np.array(enc(prose_train), dtype=np.int64)
    code_ids = np.array(enc(code_train), dtype=np.int64)
    print(f"corpus: prose {len(prose_ids)} tokens, code {len(code_ids)} tokens; vocab {tok.get_vocab_size()}", flush=True)

    model = Bonsai(cfg, gen)
    if args.export_only:
        ck = torch.load(args.export_only)
        model.load_state_dict(ck["model"])
        args.steps = ck["steps"]
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.0)
    T, Bsz = EVAL_CHUNK, args.batch
    rng = np.random.default_rng(args.seed)
    t0 = time.time()
    step = 0
    for step in range(0 if args.export_only else args.steps):
        lr = args.lr * min(1.0, (step + 1) / 50) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * step / args.steps)))
        for gparam in opt.param_groups:
            gparam["lr"] = lr
        rows = []
        for b in range(Bsz):
            src = prose_ids if b % 2 == 0 else code_ids
            s = int(rng.integers(0, len(src) - T - 1))
            rows.append(src[s:s + T + 1])
        batch = torch.from_numpy(np.stack(rows))
        logits = model(batch[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, cfg["vocab"]), batch[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 20 == 0 or step == args.steps - 1:
            print(f"step {step} loss {loss.item():.3f} ppl {math.exp(loss.item()):.1f} lr {lr:.2e} "
                  f"{time.time() - t0:.0f}s", flush=True)
        if args.minutes and time.time() - t0 > args.minutes * 60:
            print(f"stopping at step {step}: --minutes {args.minutes} reached", flush=True)
            break
    steps_done = ck["steps"] if args.export_only else step + 1
    train_s = ck["seconds"] if args.export_only else time.time() - t0
    if not args.export_only:
        torch.save({"model": model.state_dict(), "steps": steps_done, "seconds": train_s}, args.out / "checkpoint.pt")

    gguf = args.out / f"{NAME}.gguf"
    export_gguf(gguf, model, tok, args.seed)
    if args.export_float:
        export_float_gguf(args.export_float, model, gguf.name)
        print(f"wrote {args.export_float} ({args.export_float.stat().st_size} B)", flush=True)
    import read_gguf

    errors = read_gguf.check_bonsai(read_gguf.describe(str(gguf)))
    if errors:
        raise SystemExit(f"train.py: the export {gguf} would not load as a Bonsai model: {errors}")

    evals: list[dict[str, Any]] = []
    for label, text in (("prose", eval_slice(prose_held)), ("code", eval_slice(code_held))):
        fname = f"heldout-{label}.txt"
        (args.out / fname).write_text(text, encoding="utf-8")
        ids = enc(text)
        with torch.no_grad():
            chunks = [ids[s:s + EVAL_CHUNK] for s in range(0, len(ids) - 1, EVAL_CHUNK) if len(ids[s:s + EVAL_CHUNK]) >= 2]
            nll = n = 0
            for ch in chunks:
                lg = model(torch.tensor([ch]))[0].double()
                nll += float(F.cross_entropy(lg[:-1], torch.tensor(ch[1:]), reduction="sum"))
                n += len(ch) - 1
        ppl_train = math.exp(nll / n)
        ppl_f64 = perplexity_ref(gguf, ids, EVAL_CHUNK, q8=False)
        ppl_q8 = perplexity_ref(gguf, ids, EVAL_CHUNK, q8=True)
        if abs(ppl_f64 - ppl_train) > 1e-3 * ppl_f64:
            raise SystemExit(f"train.py: the exported file's perplexity {ppl_f64} differs from the trained model's "
                             f"{ppl_train}: the export does not describe the trained network")
        evals.append({"name": label, "text": fname, "tokens": len(ids), "chunk": EVAL_CHUNK,
                        "tokens_fnv1a64": f"{prism.fnv1a64(np.array(ids, dtype='<i4').tobytes()):016x}",
                        "perplexity_f64": ppl_f64, "perplexity_q8k": ppl_q8, "perplexity_trainer_f32": ppl_train})
        print(f"{label}: {len(ids)} tokens, perplexity f64 {ppl_f64:.4f}, q8_K-simulated {ppl_q8:.4f}, "
              f"trainer f32 {ppl_train:.4f} (uniform {cfg['vocab']})", flush=True)

    # The words a reader would call real: the most frequent words of each training corpus (lower case),
    # for the C++ test that greedy text from a held-out prefix is made of words, not noise.
    words: set[str] = set()
    for text in (prose_train, code_train):
        counts = collections.Counter(w.lower() for w in re.findall(r"[A-Za-z_]+", text))
        words.update(w for w, _ in counts.most_common(WORDS_PER_CORPUS))
    (args.out / "words.txt").write_text("".join(w + "\n" for w in sorted(words)), encoding="utf-8")

    meta = {
        "generator": "tools/train/train.py",
        "command": f"tools/train/train.py --out DIR --steps {args.steps} --seed {args.seed} --threads {args.threads}"
                   f" --batch {args.batch} --lr {args.lr}" + (f" --minutes {args.minutes}" if args.minutes else ""),
        "gguf": gguf.name,
        "seed": args.seed, "steps": steps_done, "batch": Bsz, "sequence": T, "train_seconds": round(train_s, 1),
        "tokens_seen": steps_done * Bsz * T,
        "uniform_perplexity": cfg["vocab"],
        "corpora": {"prose": "KJV Bible via Debian bible-kjv-text (text public domain); held out: " + ", ".join(HELDOUT_PROSE),
                    "code": "/usr/lib/python3.11/*.py from Debian libpython3.11-stdlib (PSF License 2); held out: "
                            + ", ".join(HELDOUT_CODE)},
        "evaluation": ("perplexity_f64: tools/golden/ref_gguf.py over the exported GGUF (float64, ggml L2 form), "
                       "chunks of `chunk` tokens from a fresh state, every token after a chunk's first predicted; "
                       "perplexity_q8k: the same with float32 and every ternary matmul input rounded through q8_K"),
        "config": cfg,
        "eval": evals,
    }
    (args.out / f"{NAME}.eval.toml").write_text(
        "# Written by tools/train/train.py; the trainer's evaluation of the exported file.\n" + prism.toml_dumps(meta),
        encoding="utf-8")
    print(f"wrote {gguf} ({gguf.stat().st_size} B)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
