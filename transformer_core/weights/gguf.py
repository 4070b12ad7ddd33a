"""Import a real LLM from a GGUF file (llama.cpp's format) into our DecoderLM: SmolLM2 ("llama") and Gemma 3.

A GGUF file holds everything a model needs: its sizes as metadata under the architecture's name
("llama.block_count"), its tokenizer (the vocabulary, BPE merges or SentencePiece scores, which tokens are
control tokens, a chat template) and its tensors, most of them quantised in blocks (Q4_1: 32 weights share a
scale and a minimum; Q4_K, Q6_K: super-blocks of 256). The `gguf` package, llama.cpp's own reader, parses the
file and dequantises every block type to float32 with numpy: nothing here decodes bits by hand.

Three things the file does differently from the Hugging Face checkpoints these models come from:
* llama.cpp's converter permutes the rows of a llama's q and k projections, so that its kernel can turn
  adjacent pairs of dimensions; we turn the split halves (as Hugging Face does), so the permutation is undone.
  Gemma's file is written unpermuted.
* Gemma's norm weights are stored as 1 + w (its RMSNorm multiplies by 1 + w): our RMSNorm multiplies by w,
  so they are read as they are.
* What the file does not say is named here: Gemma 3's pattern of five sliding-window layers to one global
  layer, and the local layers' rotary base of 10,000 (llama.cpp has both in its source, not in the file).

The tokenizer is rebuilt with the `tokenizers` library as llama.cpp reads it: SmolLM2's byte-level BPE with
the pre-tokenizer llama.cpp defines for "smollm" (each digit alone, then GPT-2's split), Gemma's SentencePiece
pieces as a BPE with byte fallback whose merges follow the pieces' order in the file. Control tokens
(<|im_start|>, <end_of_turn>) are special: typed in a text they stay text (`TextTokenizer`), and only a chat
template (`chat_ids`) writes them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from tokenizers import AddedToken, Regex, decoders, models, normalizers, pre_tokenizers, processors
from tokenizers import Tokenizer as HFTokenizer

from ..model.models import ConfigError, DecoderLM, DecoderLMConfig
from ..tokenization import TextTokenizer
from .hub import shapes_only

ARCHITECTURES = ("llama", "gemma3")
# Gemma 3: layers 5, 11, 17 (every sixth) attend to the whole text, the others to a window; the local layers turn
# their keys with base 10,000. Neither is in the file (llama.cpp: src/llama-model.cpp, LLM_ARCH_GEMMA3).
GEMMA3_GLOBAL_EVERY = 6
GEMMA3_LOCAL_ROPE_BASE = 10_000.0
# llama.cpp's token types: 1 normal, 2 unknown, 3 control, 4 user-defined (matched whole in text), 6 byte
CONTROL, USER_DEFINED = 3, 4
# The pre-tokenizers of llama.cpp (src/llama-vocab.cpp, `llm_tokenizer_bpe`) for the byte-level files read here:
# each regex splits the pieces the one before it left.
_GPT2_SPLIT = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"
PRE_TOKENIZERS = {
    "smollm": (r"\p{N}", _GPT2_SPLIT),
    "gpt2": (_GPT2_SPLIT,),
    "default": (_GPT2_SPLIT,),
}


class GGUFImportError(ValueError):
    """A file that is missing, cut short, not GGUF, or a model this importer does not read; says which and why."""


@dataclass(frozen=True)
class GGUFModel:
    """What one GGUF file gives: the model, its tokenizer, and how to talk to it."""

    model: DecoderLM
    tokenizer: TextTokenizer
    chat_template: str | None  # Jinja, as the file ships it (an instruct model's); None for a base model
    stop_tokens: tuple[str, ...]  # tokens that end a text or a turn (generation stops there)
    metadata: dict  # the file's general.* keys: name, licence, organisation, ...


def read_gguf(path: str | os.PathLike, dtype: torch.dtype = torch.float32) -> GGUFModel:
    """The model and tokenizer of the GGUF file at `path`, the weights dequantised to `dtype`."""
    reader = _reader(path)
    fields = _fields(reader)
    architecture = fields.get("general.architecture")
    if architecture not in ARCHITECTURES:
        raise GGUFImportError(f"{path}: architecture {architecture!r}; this importer reads {', '.join(ARCHITECTURES)}")
    try:
        config = config_of(fields, tied=not any(t.name == "output.weight" for t in reader.tensors))
    except (KeyError, ConfigError, TypeError) as e:
        raise GGUFImportError(f"{path}: its metadata does not describe a model we can build ({e})") from e
    model = _model(reader, config, architecture, dtype, path)
    tokenizer = tokenizer_of(fields)
    stops = tuple(t for t in ("<|im_end|>", "<|endoftext|>", "<end_of_turn>", "<eos>") if tokenizer.token_to_id(t) is not None)
    return GGUFModel(model, tokenizer, fields.get("tokenizer.chat_template"), stops,
                     {k.removeprefix("general."): v for k, v in fields.items() if k.startswith("general.")})


def _reader(path):
    from gguf import GGUFReader

    path = Path(path)
    if not path.is_file():
        raise GGUFImportError(f"no GGUF file at {path.absolute()}")
    with path.open("rb") as f:
        if f.read(4) != b"GGUF":
            raise GGUFImportError(f"{path} is not a GGUF file (it does not start with 'GGUF')")
    try:
        return GGUFReader(path)
    except (ValueError, IndexError, OSError, KeyError) as e:  # a file cut short: its tensors lie past its end
        raise GGUFImportError(f"{path} is damaged or cut short: {type(e).__name__}: {e}") from e


def _fields(reader) -> dict:
    """Every metadata key with its value (arrays as lists), the tokenizer's large arrays included."""
    out = {}
    for name, field in reader.fields.items():
        try:
            out[name] = field.contents()
        except (ValueError, IndexError, UnicodeDecodeError):  # a value of a type we never read
            continue
    return out


def config_of(fields: dict, tied: bool = True) -> DecoderLMConfig:
    """Our DecoderLM's config from a file's metadata (KeyError where a size is missing); `tied`: the file has no
    output matrix, so the embedding writes the logits too."""
    arch = fields["general.architecture"]
    key = lambda name: fields[f"{arch}.{name}"]  # noqa: E731 -- the metadata's names, read as they are written
    d_model, n_head = key("embedding_length"), key("attention.head_count")
    common = dict(
        vocab_size=len(fields["tokenizer.ggml.tokens"]), d_model=d_model, n_layer=key("block_count"), n_head=n_head,
        n_kv_head=fields.get(f"{arch}.attention.head_count_kv", n_head), d_ff=key("feed_forward_length"),
        max_len=key("context_length"), layer_norm_eps=key("attention.layer_norm_rms_epsilon"),
        rope_base=fields.get(f"{arch}.rope.freq_base", 10_000.0), dropout=0.0, bias=False, norm="rms",
        positions="rotary", gated=True, tie_embeddings=tied,
    )
    if arch == "llama":
        return DecoderLMConfig(**common, d_head=fields.get("llama.rope.dimension_count", d_model // n_head),
                               activation="silu")
    return DecoderLMConfig(  # gemma3
        **common, d_head=key("attention.key_length"), activation="gelu_tanh", scale_embeddings=True, qk_norm=True,
        sandwich_norm=True, sliding_window=key("attention.sliding_window"), global_every=GEMMA3_GLOBAL_EVERY,
        rope_local_base=GEMMA3_LOCAL_ROPE_BASE,
    )


# the file's tensor names within one block -> ours
_BLOCK_NAMES = {
    "attn_norm": "norm_self", "attn_q": "self_attn.w_q", "attn_k": "self_attn.w_k", "attn_v": "self_attn.w_v",
    "attn_output": "self_attn.w_o", "attn_q_norm": "self_attn.q_norm", "attn_k_norm": "self_attn.k_norm",
    "post_attention_norm": "norm_self_out", "ffn_norm": "norm_ff", "ffn_gate": "ff.w_1", "ffn_up": "ff.w_3",
    "ffn_down": "ff.w_2", "post_ffw_norm": "norm_ff_out",
}


def _our_name(name: str) -> str:
    """'blk.3.attn_q.weight' -> 'layers.3.self_attn.w_q.weight'; KeyError for a tensor we have no place for."""
    if name == "token_embd.weight":
        return "embed.tok.weight"
    if name == "output_norm.weight":
        return "norm.weight"
    if name == "output.weight":
        return "head.weight"
    _, layer, part, kind = name.split(".")
    return f"layers.{layer}.{_BLOCK_NAMES[part]}.{kind}"


def unpermute(w: np.ndarray, n_head: int) -> np.ndarray:
    """Undo llama.cpp's permutation of q or k rows (n_head heads of d_head rows each): within each head it wrote
    rows 0, d/2, 1, d/2 + 1, ... (pairs side by side); this gives back rows 0, 1, ..., d - 1 (halves)."""
    rows = w.shape[0]
    return w.reshape(n_head, rows // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def _model(reader, config: DecoderLMConfig, architecture: str, dtype: torch.dtype, path) -> DecoderLM:
    from gguf.quants import dequantize

    state = {}
    for tensor in reader.tensors:
        try:
            name = _our_name(tensor.name)
            w = np.asarray(dequantize(tensor.data, tensor.tensor_type), dtype=np.float32)
        except (KeyError, ValueError) as e:
            raise GGUFImportError(f"{path}: tensor {tensor.name} ({tensor.tensor_type.name}) cannot be read: {e}") from e
        if architecture == "llama" and name.endswith(("w_q.weight", "w_k.weight")):
            w = unpermute(w, config.n_head if "w_q" in name else config.n_kv_head)
        state[name] = torch.from_numpy(w.reshape(tuple(reversed(tensor.shape.tolist()))).copy()).to(dtype)
    with shapes_only():
        model = DecoderLM(config)
    if config.tie_embeddings:  # the embedding matrix writes the logits too
        state["head.weight"] = state["embed.tok.weight"]
    try:
        model.load_state_dict(state, strict=True, assign=True)
    except RuntimeError as e:
        raise GGUFImportError(f"{path}: its tensors do not fit the model its metadata describes: {e}") from e
    if config.tie_embeddings:
        model.head.weight = model.embed.tok.weight
    return model.eval()


# ---------------------------------------------------------------- the tokenizer


def tokenizer_of(fields: dict) -> TextTokenizer:
    """The file's tokenizer, rebuilt with `tokenizers` (see the module's docstring)."""
    kind = fields.get("tokenizer.ggml.model")
    tokens = fields["tokenizer.ggml.tokens"]
    types = fields.get("tokenizer.ggml.token_type") or [1] * len(tokens)
    if kind == "gpt2":
        tokenizer = _byte_level(tokens, fields["tokenizer.ggml.merges"], fields.get("tokenizer.ggml.pre", "default"))
    elif kind == "llama":
        tokenizer = _sentencepiece(tokens, fields.get("tokenizer.ggml.unknown_token_id"))
    else:
        raise GGUFImportError(f"tokenizer model {kind!r}; this importer reads 'gpt2' and 'llama'")
    vocab = tokenizer.get_vocab()
    tokenizer.add_special_tokens([AddedToken(t, special=True, normalized=False)
                                  for t, type_ in zip(tokens, types) if type_ == CONTROL])
    tokenizer.add_tokens([AddedToken(t, special=False, normalized=False)
                          for t, type_ in zip(tokens, types) if type_ == USER_DEFINED and t in vocab])
    bos = fields.get("tokenizer.ggml.bos_token_id")
    if fields.get("tokenizer.ggml.add_bos_token") and bos is not None:  # Gemma reads every text after <bos>
        tokenizer.post_processor = processors.TemplateProcessing(single=f"{tokens[bos]} $A", pair=f"{tokens[bos]} $A $B",
                                                                 special_tokens=[(tokens[bos], bos)])
    return TextTokenizer(tokenizer)


def _byte_level(tokens: list[str], merges: list[str], pre: str) -> HFTokenizer:
    if pre not in PRE_TOKENIZERS:
        raise GGUFImportError(f"pre-tokenizer {pre!r}; this importer knows {', '.join(PRE_TOKENIZERS)}")
    vocab = {token: i for i, token in enumerate(tokens)}
    tokenizer = HFTokenizer(models.BPE(vocab, [tuple(m.split(" ", 1)) for m in merges], ignore_merges=False))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Split(Regex(regex), behavior="isolated") for regex in PRE_TOKENIZERS[pre]]
        + [pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tokenizer.decoder = decoders.ByteLevel()
    return tokenizer


SPACE = "\u2581"  # SentencePiece writes a space as "▁"


def _sentencepiece(tokens: list[str], unk: int | None) -> HFTokenizer:
    """Gemma's pieces as a BPE with byte fallback. The file lists no merges: a piece is made by merging two
    pieces whose concatenation it is, and pieces earlier in the file merge first (Gemma's scores do not follow
    its merge order; its file order does). Pieces of two or more spaces are stored as spaces; SentencePiece
    reads them as "▁" runs."""
    pieces = [SPACE * len(t) if len(t) > 1 and not t.strip(" ") else t for t in tokens]
    vocab = {piece: i for i, piece in enumerate(pieces)}
    tokenizer = HFTokenizer(models.BPE(vocab, merges_of(vocab), byte_fallback=True, fuse_unk=True,
                                       unk_token=None if unk is None else pieces[unk]))
    tokenizer.normalizer = normalizers.Replace(" ", SPACE)
    tokenizer.decoder = decoders.Sequence([decoders.Replace(SPACE, " "), decoders.ByteFallback(), decoders.Fuse()])
    return tokenizer


def merges_of(vocab: dict[str, int]) -> list[tuple[str, str]]:
    """Every split of a piece into two pieces of the vocabulary, pieces earlier in the file first, and of one
    piece the split with the longer left part first (as transformers' `generate_merges` ranks them)."""
    merges = []
    for piece, rank in vocab.items():
        merges.extend((rank, -i, piece[:i], piece[i:]) for i in range(1, len(piece))
                      if piece[:i] in vocab and piece[i:] in vocab)
    merges.sort(key=lambda m: m[:2])
    return [(left, right) for *_, left, right in merges]
