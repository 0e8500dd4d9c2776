#!/usr/bin/env python3
"""Trains a small byte-level BPE with HF tokenizers, using the Qwen pre-tokenizer settings (NFC, the
qwen35 split regex with isolated matches, ByteLevel without prefix space or its own regex), stores it
in a vocab-only GGUF (tokenizer.ggml.* keys as in the Qwen3.5 files, spec 3.4) and writes encode/decode
fixtures for varied text.

  make_tokenizer.py OUT_DIR     writes tokenizer.gguf, tokenizer.json, tokenizer_cases.toml
"""
from __future__ import annotations

import json
import os
import sys
import unicodedata
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("RAYON_NUM_THREADS", "1")

sys.path.insert(0, str(Path(__file__).resolve().parent))
import prism  # noqa: E402

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers  # noqa: E402

# The qwen35 split regex (spec 3.4): single digits; combining marks stay with letters.
QWEN35_SPLIT = (r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+"
                r"|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

VOCAB_SIZE = 512
CONTROL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]  # token type 3, ids at the end as in Qwen
USER_TOKENS = ["<think>", "</think>"]                             # token type 4
N_MERGE_VOCAB = VOCAB_SIZE - len(CONTROL_TOKENS) - len(USER_TOKENS)

# Training text: varied scripts so that merges form inside accented, CJK, Cyrillic, Devanagari and emoji
# byte sequences, not only ASCII. Written for this tool; no data set is downloaded.
CORPUS = [
    "The quick brown fox jumps over the lazy dog. The dog sleeps; the fox runs away into the forest.",
    "It's a small model, isn't it? We'll see what they've built: I'd say it's fine, and you're right.",
    "Ternary weights are -1, 0 or +1, with one scale per 128 weights. The scale is stored as fp16.",
    "The capital of France is Paris. The capital of Germany is Berlin. The capital of Japan is Tokyo.",
    "Once upon a time there was a little model that wanted to read every file in the world.",
    "Café, déjà vu, naïve, façade, résumé, crème brûlée, São Paulo, Zürich, Ærøskøbing, Łódź, İstanbul.",
    "Les élèves étudient à l'école; ils préfèrent les mathématiques et la géographie.",
    "Über die Brücke gehen wir heute Abend, schön und ruhig; die Straße ist naß.",
    "東京は日本の首都です。京都は古い都です。日本語の文章を少し書きます。東京と京都。",
    "我爱北京天安门。北京是中国的首都。我们学习中文和数学。中国北京。",
    "한국어 텍스트를 조금 씁니다. 서울은 한국의 수도입니다.",
    "Привет, мир! Москва — столица России. Мы пишем немного текста по-русски.",
    "नमस्ते दुनिया। हिन्दी में कुछ शब्द लिखते हैं। भारत की राजधानी दिल्ली है।",
    "مرحبا بالعالم. القاهرة عاصمة مصر.  Γειά σου κόσμε. Η Αθήνα είναι η πρωτεύουσα.",
    "I ❤️ Rust 🦀 and Python 🐍! 😀😃😄 👍🏽 family: 👩‍👩‍👧‍👦 flags: 🇫🇷 🇯🇵 🎉🎉",
    "Numbers: 0 1 2 3 4 5 6 7 8 9 10 42 128 1024 3.14159 2.71828 -17 +5 1,000,000 2026-11-29",
    "def forward(self, x):\n    h = self.norm(x)\n    return x + self.mlp(h)\n\n",
    "for (int i = 0; i < n; ++i) {\n    y[i] += w[i] * x[i];\n}\n",
    "#include <vector>\nint main() { std::vector<int> v{1, 2, 3}; return v.size() == 3 ? 0 : 1; }\n",
    "if x == None and y != 0:\n\tprint(f\"{x=} {y=}\")\n\t\treturn [a for a in b if a]\n",
    "<html><body><p class=\"note\">Hello &amp; welcome!</p></body></html>",
    "    indented line\n        more indented\n\n\nthree newlines   trailing spaces   \r\nwindows line\r\n",
]
TRAINING_TEXT = [line for line in CORPUS for _ in range(6)]

CASES = [
    ("empty", ""),
    ("space", " "),
    ("newline", "\n"),
    ("ascii", "Hello world! The quick brown fox jumps over the lazy dog."),
    ("ascii_unseen", "Zebras vex quirky jocks; pygmy wolves box."),
    ("accents", "Café déjà vu, naïve façade — Ærøskøbing; São Paulo; Łódź"),
    ("combining_marks", "q\u0307 x\u0301 m\u0300 n\u0308o"),  # no precomposed forms: NFC keeps them
    ("cjk", "東京は日本の首都です。我爱北京天安门。"),
    ("hangul", "한국어 텍스트"),
    ("cyrillic_greek", "Привет, мир! Γειά σου κόσμε."),
    ("devanagari", "नमस्ते दुनिया। हिन्दी"),
    ("arabic", "مرحبا بالعالم"),
    ("emoji", "I ❤️ 🦀 and 👩‍👩‍👧‍👦 family 🇫🇷! 👍🏽"),
    ("numbers", "1234567890 3.14159 -42 1,000,000 2026年11月29日 ١٢٣"),
    ("whitespace_runs", "a  b   c\t\td\n\n\ne \r\n f    \n   "),
    ("leading_trailing", "   leading and trailing   "),
    ("only_spaces", "      "),
    ("contractions", "I'm sure you'll see they've done it; she'd say it's JOHN'S and WE'RE DON'T"),
    ("code_python", "def f(x):\n    return x**2 + 1  # square\n\nprint(f(3))\n"),
    ("code_cpp", "int main() { std::vector<int> v{1,2,3}; return v[0] == 1 ? 0 : -1; }\n"),
    ("punctuation", "...!!! ??? --- ''' \"\"\" ``` <<>> (( )) {{ }} @#$%^&*"),
    ("mixed", "Model-7B: 2.125 bits/weight (PQ2_0) vs 1.75 (PTQ1_0) → ≈ 17% smaller."),
    ("special_tokens", "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n<think>\n</think>\nOK<|endoftext|>"),
    ("special_lookalike", "<|im_start <|im_end|x> <think"),
    ("control_chars", "tab\there\u000bvt\u000cff\u0000nul"),
]


def build_tokenizer() -> Tokenizer:
    tok = Tokenizer(models.BPE(unk_token=None, fuse_unk=False, byte_fallback=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN35_SPLIT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=N_MERGE_VOCAB, min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=[])
    tok.train_from_iterator(TRAINING_TEXT, trainer=trainer)
    assert tok.get_vocab_size() == N_MERGE_VOCAB, tok.get_vocab_size()
    tok.add_special_tokens(CONTROL_TOKENS)
    tok.add_tokens(USER_TOKENS)
    assert tok.get_vocab_size() == VOCAB_SIZE
    return tok


def vocab_tables(tok: Tokenizer) -> tuple[list[str], list[int], list[str]]:
    """tokens by id, token types (1 normal, 3 control, 4 user-defined) and merges as 'left right'."""
    vocab = tok.get_vocab(with_added_tokens=True)
    tokens = [""] * len(vocab)
    for piece, idx in vocab.items():
        tokens[idx] = piece
    assert all(tokens)
    types = [3 if t in CONTROL_TOKENS else 4 if t in USER_TOKENS else 1 for t in tokens]
    merges = json.loads(tok.to_str())["model"]["merges"]
    merges = [m if isinstance(m, str) else f"{m[0]} {m[1]}" for m in merges]
    return tokens, types, merges


def add_tokenizer_kv(writer, tok: Tokenizer, n_rows: int) -> None:
    """tokenizer.ggml.* keys as the Qwen3.5 GGUFs carry them; rows past the tokenizer's vocab are
    `[PAD<i>]` entries of type 5 (unused), like the padding rows of the real 248320-row table."""
    from gguf import GGUFValueType

    tokens, types, merges = vocab_tables(tok)
    for i in range(len(tokens), n_rows):
        tokens.append(f"[PAD{i}]")
        types.append(5)
    writer.add_key_value("tokenizer.ggml.model", "gpt2", GGUFValueType.STRING)
    writer.add_key_value("tokenizer.ggml.pre", "qwen35", GGUFValueType.STRING)
    writer.add_key_value("tokenizer.ggml.tokens", tokens, GGUFValueType.ARRAY, sub_type=GGUFValueType.STRING)
    writer.add_key_value("tokenizer.ggml.token_type", types, GGUFValueType.ARRAY, sub_type=GGUFValueType.INT32)
    writer.add_key_value("tokenizer.ggml.merges", merges, GGUFValueType.ARRAY, sub_type=GGUFValueType.STRING)
    vocab = tok.get_vocab(with_added_tokens=True)
    writer.add_key_value("tokenizer.ggml.bos_token_id", vocab["<|endoftext|>"], GGUFValueType.UINT32)
    writer.add_key_value("tokenizer.ggml.eos_token_id", vocab["<|im_end|>"], GGUFValueType.UINT32)
    writer.add_key_value("tokenizer.ggml.padding_token_id", vocab["<|endoftext|>"], GGUFValueType.UINT32)
    writer.add_key_value("tokenizer.ggml.add_bos_token", False, GGUFValueType.BOOL)


def token_bytes(tok: Tokenizer, idx: int) -> bytes:
    """The raw bytes a token stands for: added tokens are their UTF-8 text, the rest byte-level pieces."""
    piece = tok.id_to_token(idx)
    if piece in CONTROL_TOKENS or piece in USER_TOKENS:
        return piece.encode("utf-8")
    table = {c: b for b, c in _byte_to_unicode().items()}
    return bytes(table[c] for c in piece)


def _byte_to_unicode() -> dict[int, str]:
    # GPT-2's reversible byte <-> printable-character table.
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def write(out_dir: Path) -> Tokenizer:
    prism.register_prism_types()
    from gguf import GGUFWriter

    tok = build_tokenizer()
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "tokenizer.json").write_text(json.dumps(json.loads(tok.to_str()), indent=1, ensure_ascii=False) + "\n",
                                            encoding="utf-8")
    writer = GGUFWriter(str(out_dir / "tokenizer.gguf"), arch="qwen35")
    writer.add_key_value("general.type", "vocab", __import__("gguf").GGUFValueType.STRING)
    add_tokenizer_kv(writer, tok, VOCAB_SIZE)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()

    cases = []
    for name, text in CASES:
        assert unicodedata.normalize("NFC", text) == text, f"case {name} changes under NFC"
        enc = tok.encode(text, add_special_tokens=False)
        decoded = tok.decode(enc.ids, skip_special_tokens=False)
        pieces = [token_bytes(tok, i) for i in enc.ids]
        assert b"".join(pieces) == text.encode("utf-8"), f"case {name}: pieces do not concatenate to the text"
        assert decoded == text, f"case {name}: decode does not round-trip"
        cases.append({"name": name, "text": text, "ids": enc.ids, "pieces_hex": [p.hex() for p in pieces],
                      "decoded": decoded})
    # Decode-only cases: single tokens whose bytes are not valid UTF-8 on their own decode with U+FFFD.
    partial = [i for i in range(256, N_MERGE_VOCAB) if _invalid_utf8(token_bytes(tok, i))][:4]
    for i in partial:
        cases.append({"name": f"decode_partial_utf8_{i}", "decode_only": True, "ids": [i],
                      "pieces_hex": [token_bytes(tok, i).hex()],
                      "decoded": tok.decode([i], skip_special_tokens=False)})
    doc = {
        "generator": "tools/golden/make_tokenizer.py",
        "vocab_size": VOCAB_SIZE,
        "split_regex": QWEN35_SPLIT,
        "normalizer": "NFC (every case text is NFC-invariant, so a tokenizer without NFC must agree)",
        "special_tokens_parsed": True,
        "note": ("ids are HF tokenizers' encode(text, add_special_tokens=False): added tokens in the text are "
                 "matched (control and user-defined alike), no BOS is added; decoded is "
                 "decode(ids, skip_special_tokens=False); pieces_hex are each token's raw bytes"),
        "case": cases,
    }
    (out_dir / "tokenizer_cases.toml").write_text(
        "# Written by tools/golden/make_tokenizer.py; regenerate with tools/golden/regen.sh.\n" + prism.toml_dumps(doc),
        encoding="utf-8")
    return tok


def _invalid_utf8(b: bytes) -> bool:
    try:
        b.decode("utf-8")
        return False
    except UnicodeDecodeError:
        return True


if __name__ == "__main__":
    write(Path(sys.argv[1]))
