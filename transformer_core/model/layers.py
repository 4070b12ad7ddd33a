"""The pieces a transformer stack is made of, in the order a block calls them: norms, attention, positions,
feed-forward, blocks.

Lesson: attention alone ignores order, so positions are added to the token
embeddings, either learned or the sinusoidal formula of the original paper.
A block is attention then a position-wise feed-forward network, each wrapped in
a residual connection and a LayerNorm, placed after the sum (post-LN, as in the
2017 paper) or before the sublayer (pre-LN, as in GPT-2: trains more easily).

Today's open decoders (Llama, SmolLM2, Gemma) change three of these pieces:
RMSNorm rescales without centring (below); rotary positions (RoPE, in attention)
turn each query and key by an angle proportional to its position, so their dot
product depends only on how far apart they are; and the feed-forward layer is
gated, act(x W_1) * (x W_3).

Norms keep the residual stream's vectors at a steady size: LayerNorm (Ba et al., 2016) centres each
token's vector and scales it to unit variance, then applies a learned gain and bias. RMSNorm (Zhang
& Sennrich, 2019), the norm of Llama, SmolLM2 and Gemma, skips the centring and the bias: it divides
by the root mean square alone. Both act on one token at a time.

Multi-head scaled dot-product attention: self-attention is a weighted average. Each query scores
every key, softmax(q kᵀ / √d_head) turns the scores into weights that sum to 1, and the output is
the weighted sum of the values. Multi-head attention runs n_head such averages side by side on
d_head = d_model / n_head slices; the heads are folded into the batch dimension so one batched
matrix product serves them all.

Grouped-query attention (Ainslie et al., 2023) keeps fewer key/value heads than
query heads: each key/value head is read by n_head / n_kv_head query heads, so the
KV cache shrinks by that factor while every query head keeps its own weights.

Two execution paths compute the same thing:
  * fast path: torch's fused `scaled_dot_product_attention`, used when no trace
    records and no edit changes the weights (training, generation);
  * inspect path: the four lines of the textbook, which keep the weights so the
    views can draw them (and an edit can change them).
A test proves they agree to 1e-5.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from . import trace
from .kv_cache import LayerCache
from .masks import Mask


# ---------------------------------------------------------------- norms

class LayerNorm(nn.LayerNorm, trace.TracePoint):
    """torch's LayerNorm, passing its output through the point "<path>.out"."""

    def forward(self, x):
        return self.hook("out", super().forward(x))


class RMSNorm(nn.Module, trace.TracePoint):
    """x / sqrt(mean(x^2) + eps) * weight (Zhang & Sennrich, 2019): LayerNorm without the mean and the bias.

    Computed in float32 whatever the input's type: the mean of squares of a residual stream with a few large
    dimensions loses its precision in bfloat16."""

    def __init__(self, d: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        x32 = x.float()
        normed = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.hook("out", (normed * self.weight.float()).to(x.dtype))


NORMS = {"layer": LayerNorm, "rms": RMSNorm}


def make_norm(config, d: int) -> nn.Module:
    """The config's norm over the last `d` dimensions."""
    return NORMS[config.norm](d, eps=config.layer_norm_eps)


# ---------------------------------------------------------------- attention

def _unseen(part: str, x):
    return x


def attend(q, k, v, allowed=None, dropout_p: float = 0.0, need_weights: bool = False, hook=_unseen,
           scale: float | None = None):
    """Attention of queries q over keys k and values v.

    q: (B, H, Tq, d_head); k, v: (B, H_kv, Tk, d_head), H_kv dividing H (query head h reads key/value head
    h // (H / H_kv)); allowed: bool, broadcastable to (B, H, Tq, Tk), True where the query may see the key;
    scale: what scores are multiplied by, 1 / sqrt(d_head) unless given.
    Returns (out (B, H, Tq, d_head), weights (B, H, Tq, Tk) or None).
    A query row with no visible key yields weights 0 and output 0, never NaN.
    hook(part, x) -> x: the inspect path passes "scores" and "attn" through it (a module's trace points).
    """
    B, H, Tq, d_head = q.shape
    scale = 1 / math.sqrt(d_head) if scale is None else scale
    if need_weights:  # the inspect path: the textbook's lines, keeping the weights for the views
        if k.shape[1] != H:  # grouped: each key/value head stands beside the query heads that read it
            k, v = k.repeat_interleave(H // k.shape[1], dim=1), v.repeat_interleave(H // v.shape[1], dim=1)
        Tk = k.shape[2]
        # heads folded into the batch: one bmm computes every head's scores
        scores = torch.bmm(q.reshape(B * H, Tq, d_head), k.reshape(B * H, Tk, d_head).transpose(1, 2))
        scores = hook("scores", scores.view(B, H, Tq, Tk) * scale)
        if allowed is not None:
            scores = scores.masked_fill(~allowed, float("-inf"))
        # softmax over a row of all -inf is NaN: such a query has nothing to read, so 0
        weights = hook("attn", torch.softmax(scores, dim=-1).nan_to_num(0.0))
        dropped = F.dropout(weights, dropout_p)  # p = 0: the weights themselves, no random draw
        out = torch.bmm(dropped.reshape(B * H, Tq, Tk), v.reshape(B * H, Tk, d_head)).view(B, H, Tq, d_head)
        return out, weights

    # the fast path: torch's fused kernel computes the same, without materialising the weights
    grouped = k.shape[1] != H
    if allowed is None:
        return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, scale=scale, enable_gqa=grouped), None
    # A row with nothing allowed would be a softmax over no keys (NaN). Let such
    # rows see everything, then zero their output: same result as the inspect path.
    has_key = allowed.any(-1, keepdim=True)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed | ~has_key, dropout_p=dropout_p, scale=scale,
                                         enable_gqa=grouped)
    return out * has_key, None


def rotary_angles(start: int, T: int, d_head: int, base: float, device=None) -> tuple[torch.Tensor, torch.Tensor]:
    """(cos, sin), each (T, d_head / 2), of the angles by which positions start..start+T-1 turn pair i of a head:
    position * base^(-2i / d_head) (Su et al., 2021). Fast-turning pairs tell neighbours apart, slow ones far
    positions."""
    inv_freq = 1.0 / (base ** (torch.arange(0, d_head, 2, dtype=torch.float32, device=device) / d_head))
    angle = torch.arange(start, start + T, dtype=torch.float32, device=device)[:, None] * inv_freq[None, :]
    return torch.cos(angle), torch.sin(angle)


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Turn x (B, H, T, d_head) by its positions' angles: dimension i and i + d_head/2 form a pair, rotated as a
    point in the plane (the split-half layout of GPT-NeoX and Hugging Face). q.k of two turned vectors then
    depends on their positions only through the difference."""
    x1, x2 = x.float().chunk(2, dim=-1)
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1).to(x.dtype)


class MultiHeadAttention(nn.Module, trace.TracePoint):
    """Self- or cross-attention with n_head query heads of size d_head, reading n_kv_head key/value heads.

    In the 2017 transformer d_head = d_model / n_head and n_kv_head = n_head, so the Q, K, V projections are
    d_model x d_model whatever n_head is: heads split the width, they do not add parameters. The output
    projection W_o mixes them. A modern decoder may also normalise each head's q and k (qk_norm) and turn
    them by their positions (`rotation`).
    """

    def __init__(self, config):
        super().__init__()
        d_model = config.d_model
        self.n_head, self.n_kv_head, self.d_head = config.n_head, config.n_kv_head, config.d_head
        self.w_q = nn.Linear(d_model, self.n_head * self.d_head, bias=config.bias)
        self.w_k = nn.Linear(d_model, self.n_kv_head * self.d_head, bias=config.bias)
        self.w_v = nn.Linear(d_model, self.n_kv_head * self.d_head, bias=config.bias)
        self.w_o = nn.Linear(self.n_head * self.d_head, d_model, bias=config.bias)
        self.q_norm = make_norm(config, self.d_head) if config.qk_norm else None
        self.k_norm = make_norm(config, self.d_head) if config.qk_norm else None
        self.scale = None if config.query_pre_attn_scalar is None else config.query_pre_attn_scalar ** -0.5
        self.dropout = config.dropout

    def _split_heads(self, x: torch.Tensor, n_head: int) -> torch.Tensor:
        B, T, _ = x.shape
        return x.view(B, T, n_head, self.d_head).transpose(1, 2)  # (B, n_head, T, d_head)

    def forward(self, x, source=None, mask: Mask | None = None, cache: LayerCache | None = None,
                rotation: tuple[torch.Tensor, torch.Tensor] | None = None):
        """x: (B, Tq, d_model) queries' input; source: (B, Tk, d_model) for cross-attention
        (None: self-attention over x); rotation: (cos, sin) of this pass's positions (`rotary_angles`).
        Returns (B, Tq, d_model). The points "q", "k", "v" are this pass's projections split into heads
        (after qk_norm): n_head query heads, each of the n_kv_head key/value heads once; "q_rot", "k_rot"
        the same turned by their positions, as the scores read them."""
        q = self.hook("q", self._normed(self.q_norm, self._split_heads(self.w_q(x), self.n_head)))
        if source is not None and cache is not None and cache.k is not None:  # encoder memory does not change
            k, v = cache.k, cache.v
        else:
            src = x if source is None else source
            k = self.hook("k", self._normed(self.k_norm, self._split_heads(self.w_k(src), self.n_kv_head)))
            v = self.hook("v", self._split_heads(self.w_v(src), self.n_kv_head))
            if rotation is not None:  # this pass's keys only: cached ones were turned at their own positions
                k = self.hook("k_rot", rotate(k, *rotation))
            if cache is not None and source is None:  # append this step's keys/values to the past ones
                k, v = cache.append(k, v)
            elif cache is not None:
                cache.k, cache.v = k, v
        if rotation is not None:
            q = self.hook("q_rot", rotate(q, *rotation))
        if mask is not None:
            mask = self.hook("mask", mask)  # a Mask: the trace keeps the object the Masking tab draws
        allowed = None if mask is None else mask.for_heads(q.device)
        # the weights exist only on the inspect path: taken when a trace records them or an edit changes them
        out, _ = attend(q, k, v, allowed, self.dropout if self.training else 0.0,
                        need_weights=self.watched("scores", "attn"), hook=self.hook, scale=self.scale)
        # each head's output, before W_o mixes the heads: where a head is switched off, on either path
        out = self.hook("weighted", out)  # (B, H, Tq, d_head)
        B, H, Tq, d_head = out.shape
        out = self.hook("concat", out.transpose(1, 2).reshape(B, Tq, H * d_head))  # the heads side by side
        return self.hook("out", self.w_o(out))

    @staticmethod
    def _normed(norm, x):
        return x if norm is None else norm(x)


# ---------------------------------------------------------------- positions, feed-forward, blocks

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
