"""The three transformers every tab runs on, each with one frozen config.

* `DecoderLM`: GPT-style causal language model (can hold GPT-2 weights exactly).
* `EncoderClassifier`: encoder stack, mean pooling (or a [CLS] position), linear head.
* `EncoderDecoder`: the original transformer: encoder, decoder with masked
  self-attention and cross-attention, generator head.

Save/load goes through huggingface_hub's `PyTorchModelHubMixin` (safetensors +
config.json); see `hub.py` for the checked loader.
"""

# No `from __future__ import annotations` here: the hub mixin reads the `config`
# annotation at runtime to rebuild the dataclass from config.json.

from dataclasses import dataclass

import torch
from huggingface_hub import PyTorchModelHubMixin
from torch import nn

from . import trace
from .kv_cache import KVCache
from .layers import (ACTIVATIONS, NORMS, POSITIONS, Block, Embeddings, init_weights, make_norm, rotary_angles,
                     scaled_init_residual)
from .masks import Mask, causal_mask, no_mask, padding_mask, window_rows

_HUB = dict(library_name="transformer_core", tags=["transformer-lab"])


class ConfigError(ValueError):
    """A model config with inconsistent sizes or unknown options."""


@dataclass(frozen=True, kw_only=True)
class TransformerConfig:
    """Sizes and switches shared by every model; names follow the paper.

    The defaults are the 2017 / GPT-2 transformer. The switches after `embed_norm` turn it into the decoder of
    today's open models (Llama, SmolLM2, Gemma 3): RMSNorm, rotary positions, grouped-query attention, a gated
    feed-forward layer; and Gemma's extras. Each is off by default, so every older config.json reads as before.
    """

    d_model: int = 128
    n_head: int = 4
    n_layer: int = 4
    d_ff: int = 512
    dropout: float = 0.1
    activation: str = "gelu"  # relu | gelu | gelu_tanh | silu
    norm_first: bool = True  # pre-LN (GPT-2) if True, post-LN (2017 paper) if False
    positions: str = "learned"  # learned | sinusoidal | rotary | none
    max_len: int = 256
    bias: bool = True
    layer_norm_eps: float = 1e-5
    embed_norm: bool = False  # LayerNorm on token + position embeddings (BERT), for imported BERT weights
    # -- the modern decoder
    norm: str = "layer"  # layer: LayerNorm | rms: RMSNorm (Zhang & Sennrich 2019), no mean, no bias
    d_head: int | None = None  # size of one head; None: d_model // n_head (Gemma 3 270M: 256 with d_model 640)
    n_kv_head: int | None = None  # key/value heads, each shared by n_head // n_kv_head query heads (GQA); None: n_head
    gated: bool = False  # feed-forward act(x W_1) * (x W_3), then W_2 (Shazeer 2020: SwiGLU with silu, GeGLU with gelu)
    rope_base: float = 10_000.0  # rotary positions: pair i of a head turns rope_base^(-2i/d_head) radians a position
    scale_embeddings: bool = False  # token embeddings times sqrt(d_model), as the 2017 paper and Gemma do
    qk_norm: bool = False  # RMSNorm on each head's query and key before the rotation (Gemma 3)
    sandwich_norm: bool = False  # a norm on each sublayer's output too, before it joins the residual stream (Gemma)
    query_pre_attn_scalar: float | None = None  # scores are q.k / sqrt(this); None: sqrt(d_head) (Gemma's name)
    sliding_window: int | None = None  # local layers: a query sees itself and the sliding_window - 1 keys before it
    global_every: int | None = None  # with sliding_window: layers global_every - 1, 2 global_every - 1, ... see all
    rope_local_base: float | None = None  # the local layers' rope_base; None: rope_base

    def __post_init__(self):
        if min(self.d_model, self.n_head, self.n_layer, self.d_ff, self.max_len) < 1:
            raise ConfigError("sizes must be positive")
        if self.d_head is None:
            if self.d_model % self.n_head:
                raise ConfigError(f"d_model={self.d_model} is not divisible by n_head={self.n_head}")
            object.__setattr__(self, "d_head", self.d_model // self.n_head)  # one name for the size, always set
        if self.n_kv_head is None:
            object.__setattr__(self, "n_kv_head", self.n_head)
        if self.d_head < 1 or self.n_kv_head < 1 or self.n_head % self.n_kv_head:
            raise ConfigError(f"n_kv_head={self.n_kv_head} must divide n_head={self.n_head} (d_head={self.d_head})")
        if self.activation not in ACTIVATIONS:
            raise ConfigError(f"activation must be one of {sorted(ACTIVATIONS)}, got {self.activation!r}")
        if self.positions not in POSITIONS:
            raise ConfigError(f"positions must be one of {POSITIONS}, got {self.positions!r}")
        if self.norm not in NORMS:
            raise ConfigError(f"norm must be one of {sorted(NORMS)}, got {self.norm!r}")
        if self.positions == "rotary" and self.d_head % 2:
            raise ConfigError(f"rotary positions turn pairs of dimensions: d_head={self.d_head} must be even")
        if min(self.rope_base, self.rope_local_base or 1.0) <= 0:
            raise ConfigError("rope bases must be positive")
        if (self.sliding_window is None) != (self.global_every is None) or min(self.sliding_window or 1,
                                                                                self.global_every or 1) < 1:
            raise ConfigError("sliding_window and global_every come together, each at least 1")
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"dropout must be at least 0 and below 1, got {self.dropout}")

    def is_local(self, layer: int) -> bool:
        """Whether layer `layer` (from 0) attends through the sliding window (Gemma 3: five local, one global)."""
        return self.sliding_window is not None and (layer + 1) % self.global_every != 0

    def rope_base_of(self, layer: int) -> float:
        """The rotary base layer `layer` turns its queries and keys with."""
        return self.rope_local_base or self.rope_base if self.is_local(layer) else self.rope_base


def _check_arch(config, expected: str) -> None:
    if config.arch != expected:
        raise ConfigError(f"config is for {config.arch!r}, not {expected!r}")


@dataclass(frozen=True, kw_only=True)
class DecoderLMConfig(TransformerConfig):
    vocab_size: int
    tie_embeddings: bool = True
    arch: str = "DecoderLM"  # written to config.json so a folder says what it holds

    def __post_init__(self):
        super().__post_init__()
        _check_arch(self, "DecoderLM")


@dataclass(frozen=True, kw_only=True)
class EncoderClassifierConfig(TransformerConfig):
    vocab_size: int
    n_class: int = 2
    pooling: str = "mean"  # mean over real tokens | cls (position 0)
    arch: str = "EncoderClassifier"

    def __post_init__(self):
        super().__post_init__()
        _check_arch(self, "EncoderClassifier")
        _encoder_positions(self)
        if self.pooling not in ("mean", "cls"):
            raise ConfigError(f"pooling must be 'mean' or 'cls', got {self.pooling!r}")


@dataclass(frozen=True, kw_only=True)
class EncoderDecoderConfig(TransformerConfig):
    src_vocab_size: int
    tgt_vocab_size: int
    arch: str = "EncoderDecoder"

    def __post_init__(self):
        super().__post_init__()
        _check_arch(self, "EncoderDecoder")
        _encoder_positions(self)


def _final_norm(config) -> nn.Module:
    # pre-LN leaves the residual stream un-normalised after the last block; post-LN's is normalised already
    return make_norm(config, config.d_model) if config.norm_first else nn.Identity()


def _encoder_positions(config) -> None:
    if config.positions == "rotary" or config.sliding_window is not None:
        raise ConfigError("rotary positions and sliding windows are built for the decoder LM only")


def _init(model: nn.Module, config) -> None:
    model.apply(init_weights)
    scaled_init_residual(model, config.n_layer)


class DecoderLM(nn.Module, trace.Traceable, PyTorchModelHubMixin, **_HUB):
    """GPT-style language model: (B, T) token ids -> (B, T, vocab_size) next-token logits.

    The same class is GPT-2 and a modern decoder (SmolLM2, Gemma 3): the config's switches choose the norm, the
    positions, the feed-forward layer and how many key/value heads the query heads share."""

    def __init__(self, config: DecoderLMConfig):
        super().__init__()
        self.config = config
        self.embed = Embeddings(config.vocab_size, config)
        self.layers = nn.ModuleList(Block(config) for _ in range(config.n_layer))
        self.norm = _final_norm(config)
        self.head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        _init(self, config)
        trace.name_trace_points(self, {"": "decoder"})
        if config.tie_embeddings:  # one matrix reads tokens in and writes them out
            self.head.weight = self.embed.tok.weight

    def new_cache(self) -> KVCache:
        return KVCache(self.config.n_layer)

    def hidden(self, idx: torch.Tensor, mask: Mask | None = None, cache: KVCache | None = None,
               offset: int = 0) -> torch.Tensor:
        """(B, T) ids -> (B, T, d_model): the last block's output, normalised; what the head reads.
        mask overrides the causal mask (to show what masks do);
        cache: continue from the positions already in it (incremental decoding);
        offset: read the text as if it started `offset` positions later (what moving a text does to attention)."""
        T = idx.shape[1]
        past = 0 if cache is None else cache.length
        if mask is None and not (cache is not None and T == 1):  # one new query may see all the past
            mask = causal_mask(past + T).rows(past, past + T)
        x = self.embed(idx, offset=offset + past)
        angles = self._angles(offset + past, T, x.device)
        local = self._local_mask(mask, past, T)
        for i, layer in enumerate(self.layers):
            x = layer(x, local if self.config.is_local(i) else mask,
                      cache=None if cache is None else cache.self_attn[i],
                      rotation=angles.get(self.config.rope_base_of(i)))
        return self.norm(x)

    def _angles(self, start: int, T: int, device) -> dict[float, tuple[torch.Tensor, torch.Tensor]]:
        """rope base -> (cos, sin) of positions start..start+T-1, computed once a pass for every layer."""
        if self.config.positions != "rotary":
            return {}
        bases = {self.config.rope_base_of(i) for i in range(self.config.n_layer)}
        return {base: rotary_angles(start, T, self.config.d_head, base, device) for base in bases}

    def _local_mask(self, mask: Mask | None, past: int, T: int) -> Mask | None:
        """What a sliding-window layer obeys: `mask` (None: all the past) within the window."""
        if self.config.sliding_window is None:
            return None
        window = window_rows(past, T, self.config.sliding_window)
        return window if mask is None else mask & window

    def forward(self, idx: torch.Tensor, mask: Mask | None = None, cache: KVCache | None = None, offset: int = 0):
        """(B, T) ids -> (B, T, vocab_size) logits; mask, cache and offset as in `hidden`."""
        return self.hook("logits", self.head(self.hidden(idx, mask, cache, offset)))


class EncoderClassifier(nn.Module, trace.Traceable, PyTorchModelHubMixin, **_HUB):
    """Sequence classifier: (B, T) ids -> (B, n_class) logits, pooled over the encoder output."""

    def __init__(self, config: EncoderClassifierConfig):
        super().__init__()
        self.config = config
        self.embed = Embeddings(config.vocab_size, config)
        self.layers = nn.ModuleList(Block(config) for _ in range(config.n_layer))
        self.norm = _final_norm(config)
        self.drop = nn.Dropout(config.dropout)
        self.head = nn.Linear(config.d_model, config.n_class)
        _init(self, config)
        trace.name_trace_points(self, {"": "encoder"})

    def encode(self, idx, lengths: torch.Tensor | None = None, mask: Mask | None = None) -> torch.Tensor:
        """(B, T) ids -> (B, T, d_model) contextual vectors. `lengths` (B,) hides right padding."""
        T = idx.shape[1]
        if mask is None:
            mask = no_mask(T) if lengths is None else padding_mask(lengths.tolist(), T)
        x = self.embed(idx)
        for layer in self.layers:
            x = layer(x, mask)
        return self.norm(x)

    def pool(self, h: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
        """(B, T, d_model) -> (B, d_model): mean over real tokens, or the [CLS] position."""
        if self.config.pooling == "cls":
            return h[:, 0]
        if lengths is None:
            return h.mean(dim=1)
        real = (torch.arange(h.shape[1], device=h.device)[None, :] < lengths[:, None].to(h.device)).to(h.dtype)
        return (h * real[..., None]).sum(1) / real.sum(1, keepdim=True)

    def forward(self, idx, lengths: torch.Tensor | None = None, mask: Mask | None = None):
        pooled = self.hook("pooled", self.pool(self.encode(idx, lengths, mask), lengths))  # (B, d_model)
        return self.hook("logits", self.head(self.drop(pooled)))


class EncoderDecoder(nn.Module, trace.Traceable, PyTorchModelHubMixin, **_HUB):
    """The original transformer: source ids (B, S) and target ids (B, T) -> (B, T, tgt_vocab) logits."""

    def __init__(self, config: EncoderDecoderConfig):
        super().__init__()
        self.config = config
        self.src_embed = Embeddings(config.src_vocab_size, config)
        self.tgt_embed = Embeddings(config.tgt_vocab_size, config)
        self.encoder = nn.ModuleList(Block(config) for _ in range(config.n_layer))
        self.decoder = nn.ModuleList(Block(config, cross=True) for _ in range(config.n_layer))
        self.encoder_norm, self.decoder_norm = _final_norm(config), _final_norm(config)
        self.generator = nn.Linear(config.d_model, config.tgt_vocab_size)
        _init(self, config)
        # the decoder's cross-attention reads the encoder: its weights are a group of their own
        cross = {f"decoder.{i}.cross_attn": "cross" for i in range(config.n_layer)}
        stacks = {"": "encoder", "tgt_embed": "decoder", "decoder": "decoder", "decoder_norm": "decoder"}
        trace.name_trace_points(self, {**stacks, **cross})

    def new_cache(self) -> KVCache:
        return KVCache(self.config.n_layer)

    @staticmethod
    def source_mask(src_lengths: torch.Tensor | None, S: int) -> Mask | None:
        return None if src_lengths is None else padding_mask(src_lengths.tolist(), S)

    def encode(self, src, src_lengths: torch.Tensor | None = None) -> torch.Tensor:
        """(B, S) source ids -> memory (B, S, d_model)."""
        mask = self.source_mask(src_lengths, src.shape[1])
        x = self.src_embed(src)
        for layer in self.encoder:
            x = layer(x, mask)
        return self.encoder_norm(x)

    def decode(self, tgt, memory, src_lengths=None, cache: KVCache | None = None, mask: Mask | None = None):
        """(B, T) target ids so far + memory -> (B, T, tgt_vocab) logits for the next tokens."""
        T, S = tgt.shape[1], memory.shape[1]
        past = 0 if cache is None else cache.length
        if mask is None and not (cache is not None and T == 1):
            mask = causal_mask(past + T).rows(past, past + T)
        memory_mask = None
        if src_lengths is not None:  # queries may not read the source's padding
            real = torch.arange(S)[None, :] < src_lengths.cpu()[:, None]
            memory_mask = Mask(real[:, None, :].expand(len(real), T, S), "padding", {"lengths": src_lengths.tolist()})
        x = self.tgt_embed(tgt, offset=past)
        for i, layer in enumerate(self.decoder):
            x = layer(
                x,
                mask,
                memory=memory,
                memory_mask=memory_mask,
                cache=None if cache is None else cache.self_attn[i],
                cross_cache=None if cache is None else cache.cross_attn[i],
            )
        return self.hook("logits", self.generator(self.decoder_norm(x)))

    def forward(self, src, tgt, src_lengths: torch.Tensor | None = None, mask: Mask | None = None):
        return self.decode(tgt, self.encode(src, src_lengths), src_lengths, mask=mask)


MODEL_CLASSES = {cls.__name__: cls for cls in (DecoderLM, EncoderClassifier, EncoderDecoder)}
