"""The pieces a transformer stack is made of: norms, positions, feed-forward, blocks.

Lesson: attention alone ignores order, so positions are added to the token
embeddings, either learned or the sinusoidal formula of the original paper.
A block is attention then a position-wise feed-forward network, each wrapped in
a residual connection and a LayerNorm, placed after the sum (post-LN, as in the
2017 paper) or before the sublayer (pre-LN, as in GPT-2: trains more easily).

Today's open decoders (Llama, SmolLM2, Gemma) change three of these pieces:
RMSNorm rescales without centring (norms.py); rotary positions (RoPE, attention.py)
turn each query and key by an angle proportional to its position, so their dot
product depends only on how far apart they are; and the feed-forward layer is
gated, act(x W_1) * (x W_3).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from . import trace
from .attention import MultiHeadAttention
from .norms import RMSNorm, make_norm
from .kv_cache import LayerCache
from .masks import Mask

ACTIVATIONS = {
    "relu": nn.ReLU,
    "gelu": nn.GELU,
    "gelu_tanh": lambda: nn.GELU(approximate="tanh"),  # GPT-2's approximation (and Gemma's GeGLU)
    "silu": nn.SiLU,  # x * sigmoid(x), "swish": SwiGLU's gate (Llama, SmolLM2)
}
POSITIONS = ("learned", "sinusoidal", "rotary", "none")


class SequenceTooLongError(ValueError):
    """A sequence is longer than the model's max_len positions."""


def sinusoidal_encoding(max_len: int, d_model: int) -> torch.Tensor:
    """PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(same). Shape (max_len, d_model).

    Each pair of dimensions is a clock of a different frequency, so every
    position gets a distinct pattern and relative offsets are linear maps.
    """
    # computed on the CPU, where models are built (`.to(device)` moves it), even while a model is built on the
    # meta device (shapes only): a table of fixed values has no meta version worth having
    pos = torch.arange(max_len, dtype=torch.float32, device="cpu")[:, None]
    two_i = torch.arange(0, d_model, 2, dtype=torch.float32, device="cpu")
    angle = pos / torch.pow(10000.0, two_i / d_model)  # (max_len, d_model/2)
    pe = torch.zeros(max_len, d_model, device="cpu")
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return pe


class Embeddings(nn.Module, trace.TracePoint):
    """Token embedding plus position information, then dropout: (B, T) ids -> (B, T, d_model)."""

    writes_stream = True  # "out" starts the residual stream

    def __init__(self, vocab_size: int, config):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, config.d_model)
        self.kind, self.max_len = config.positions, config.max_len
        # the 2017 paper's and Gemma's sqrt(d_model): embeddings drawn small grow to the size of what blocks add
        self.scale = math.sqrt(config.d_model) if config.scale_embeddings else None
        if self.kind == "learned":
            self.pos = nn.Embedding(config.max_len, config.d_model)
        elif self.kind == "sinusoidal":
            # a fixed formula, not a parameter: not saved in checkpoints. Its values are of size 1 and,
            # unlike the 2017 paper, token embeddings are not scaled up by sqrt(d_model) to match, so the
            # positions can drown out small embeddings (the sentiment model card compares both kinds)
            self.register_buffer("pe", sinusoidal_encoding(config.max_len, config.d_model), persistent=False)
        # a plain LayerNorm: its output is this module's "out" (after dropout, the identity in eval)
        self.norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps) if config.embed_norm else nn.Identity()
        self.drop = nn.Dropout(config.dropout)

    def positions(self, T: int, offset: int = 0) -> torch.Tensor | None:
        """(T, d_model) position vectors for positions offset..offset+T-1; None without positions added here
        (none, or rotary: those turn queries and keys inside attention)."""
        if offset + T > self.max_len:
            raise SequenceTooLongError(f"sequence of {offset + T} tokens is longer than max_len={self.max_len}")
        if self.kind == "learned":
            return self.pos.weight[offset : offset + T]
        if self.kind == "sinusoidal":
            return self.pe[offset : offset + T]
        return None

    def forward(self, idx: torch.Tensor, offset: int = 0) -> torch.Tensor:
        x = self.hook("tok", self.tok(idx))  # (B, T, d_model): the ids' rows
        if self.scale is not None:
            x = x * torch.tensor(self.scale, dtype=x.dtype)  # rounded to the weights' type first, as Gemma does
        pos = self.positions(idx.shape[1], offset)
        if pos is not None:
            x = x + self.hook("pos", pos)  # (T, d_model), the same for every batch row
        return self.hook("out", self.drop(self.norm(x)))


class FeedForward(nn.Module, trace.TracePoint):
    """Position-wise MLP d_model -> d_ff -> d_model, applied to each token separately.

    Gated (SwiGLU, GeGLU): a second projection W_3 multiplies the activation, so each hidden unit is a
    gate act(x W_1) times a value x W_3 (Shazeer, 2020; W_1, W_3, W_2 as in Llama's code)."""

    def __init__(self, config):
        super().__init__()
        self.w_1 = nn.Linear(config.d_model, config.d_ff, bias=config.bias)
        self.w_3 = nn.Linear(config.d_model, config.d_ff, bias=config.bias) if config.gated else None
        self.act = ACTIVATIONS[config.activation]()
        self.w_2 = nn.Linear(config.d_ff, config.d_model, bias=config.bias)
        self.drop = nn.Dropout(config.dropout)

    def forward(self, x):
        if self.w_3 is None:
            h = self.hook("hidden", self.act(self.w_1(x)))  # (B, T, d_ff)
        else:
            gate, up = self.hook("gate", self.act(self.w_1(x))), self.hook("up", self.w_3(x))  # (B, T, d_ff) each
            h = self.hook("hidden", gate * up)
        return self.hook("out", self.w_2(self.drop(h)))


class Block(nn.Module, trace.TracePoint):
    """One transformer layer: self-attention, optional cross-attention, feed-forward.

    Each sublayer is wrapped as `x + dropout(f(norm(x)))` (pre-LN, norm_first) or
    `norm(x + dropout(f(x)))` (post-LN); with sandwich_norm, pre-LN's f(norm(x)) is
    normalised once more before it joins the stream (Gemma).
    """

    writes_stream = True  # "out" is the residual stream after this layer

    def __init__(self, config, cross: bool = False):
        super().__init__()
        self.norm_first = config.norm_first
        self.norm_self = make_norm(config, config.d_model)
        self.self_attn = MultiHeadAttention(config)
        if cross:
            self.norm_cross = make_norm(config, config.d_model)
            self.cross_attn = MultiHeadAttention(config)
        else:
            self.cross_attn = None
        self.norm_ff = make_norm(config, config.d_model)
        self.ff = FeedForward(config)
        sandwich = config.sandwich_norm
        self.norm_self_out = make_norm(config, config.d_model) if sandwich else None
        self.norm_ff_out = make_norm(config, config.d_model) if sandwich else None
        self.drop = nn.Dropout(config.dropout)

    def _sublayer(self, x, norm, f, norm_out=None):
        if self.norm_first:
            h = f(norm(x))
            return x + self.drop(h if norm_out is None else norm_out(h))
        return norm(x + self.drop(f(x)))

    def forward(
        self,
        x,
        mask: Mask | None = None,
        memory=None,
        memory_mask: Mask | None = None,
        cache: LayerCache | None = None,
        cross_cache: LayerCache | None = None,
        rotation: tuple[torch.Tensor, torch.Tensor] | None = None,
    ):
        """x: (B, T, d_model); memory: (B, S, d_model) encoder output for cross-attention;
        rotation: (cos, sin) of the rotary positions (`rotary_angles`)."""
        x = self._sublayer(x, self.norm_self, lambda h: self.self_attn(h, mask=mask, cache=cache, rotation=rotation),
                           self.norm_self_out)
        if self.cross_attn is not None:
            x = self.hook("resid_self", x)  # a decoder's stream after self-attention, before it reads the encoder
            x = self._sublayer(
                x, self.norm_cross, lambda h: self.cross_attn(h, memory, mask=memory_mask, cache=cross_cache)
            )
        x = self.hook("resid_mid", x)  # the residual stream between attention and feed-forward
        x = self._sublayer(x, self.norm_ff, self.ff, self.norm_ff_out)
        return self.hook("out", x)


def init_weights(module: nn.Module) -> None:
    """GPT-2's initialisation: N(0, 0.02) weights, zero biases, unit LayerNorms."""
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if getattr(module, "bias", None) is not None:
            nn.init.zeros_(module.bias)
    elif isinstance(module, nn.LayerNorm):
        nn.init.ones_(module.weight)
        nn.init.zeros_(module.bias)
    elif isinstance(module, RMSNorm):
        nn.init.ones_(module.weight)


def scaled_init_residual(model: nn.Module, n_layer: int) -> None:
    """Shrink the projections that write into the residual stream by 1/sqrt(2 n_layer),
    so the stream's variance does not grow with depth (GPT-2)."""
    std = 0.02 / math.sqrt(2 * n_layer)
    for name, p in model.named_parameters():
        if name.endswith("w_o.weight") or name.endswith("w_2.weight"):
            nn.init.normal_(p, mean=0.0, std=std)
