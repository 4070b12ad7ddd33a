"""Multi-head scaled dot-product attention.

Lesson: self-attention is a weighted average. Each query scores every key,
softmax(q kᵀ / √d_head) turns the scores into weights that sum to 1, and the
output is the weighted sum of the values. Multi-head attention runs n_head such
averages side by side on d_head = d_model / n_head slices; the heads are folded
into the batch dimension so one batched matrix product serves them all.

Two execution paths compute the same thing:
  * fast path: torch's fused `scaled_dot_product_attention`, used when nobody
    is recording a trace (training, generation);
  * inspect path: the four lines of the textbook, which keep the weights so the
    views can draw them.
A test proves they agree to 1e-5.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from . import trace
from .masks import Mask


def attend(q, k, v, allowed=None, dropout_p: float = 0.0, need_weights: bool = False, name: str = "attn"):
    """Attention of queries q over keys k and values v.

    q: (B, H, Tq, d_head); k, v: (B, H, Tk, d_head); allowed: bool, broadcastable
    to (B, H, Tq, Tk), True where the query may see the key.
    Returns (out (B, H, Tq, d_head), weights (B, H, Tq, Tk) or None).
    A query row with no visible key yields weights 0 and output 0, never NaN.
    """
    if not need_weights:
        if allowed is None:
            return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p), None
        # A row with nothing allowed would be a softmax over no keys (NaN). Let such
        # rows see everything, then zero their output: same result as the inspect path.
        has_key = allowed.any(-1, keepdim=True)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed | ~has_key, dropout_p=dropout_p)
        return out * has_key, None

    B, H, Tq, d_head = q.shape
    Tk = k.shape[2]
    # heads folded into the batch: one bmm computes every head's scores
    scores = torch.bmm(q.reshape(B * H, Tq, d_head), k.reshape(B * H, Tk, d_head).transpose(1, 2))
    scores = scores.view(B, H, Tq, Tk) / math.sqrt(d_head)
    trace.record(f"{name}.scores", scores)
    if allowed is not None:
        scores = scores.masked_fill(~allowed, float("-inf"))
    # softmax over a row of all -inf is NaN: such a query has nothing to read, so 0
    weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)
    dropped = F.dropout(weights, dropout_p) if dropout_p > 0 else weights
    out = torch.bmm(dropped.reshape(B * H, Tq, Tk), v.reshape(B * H, Tk, d_head)).view(B, H, Tq, d_head)
    return out, weights


@dataclass
class LayerCache:
    """Keys and values (B, H, T, d_head) one attention layer has already computed.

    Self-attention appends to them: they are views of buffers with room to spare,
    doubled when full, so a step copies its own position instead of the whole past.
    """

    k: torch.Tensor | None = None
    v: torch.Tensor | None = None
    _room: tuple[torch.Tensor, torch.Tensor] | None = field(default=None, init=False, repr=False)

    def append(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Add keys and values (B, H, t, d_head) after the cached ones; returns all of them (B, H, T + t, d_head)."""
        T = 0 if self.k is None else self.k.shape[2]
        end = T + k.shape[2]
        if self._room is None or end > self._room[0].shape[2]:
            B, H, _, d_head = k.shape
            room_k, room_v = k.new_empty(B, H, 2 * end, d_head), v.new_empty(B, H, 2 * end, d_head)
            if T:
                room_k[:, :, :T], room_v[:, :, :T] = self.k, self.v
            self._room = room_k, room_v
        room_k, room_v = self._room
        room_k[:, :, T:end], room_v[:, :, T:end] = k, v
        self.k, self.v = room_k[:, :, :end], room_v[:, :, :end]
        return self.k, self.v

    def reorder(self, index: torch.Tensor) -> None:
        """Keep batch rows `index`."""
        if self.k is not None:
            self.k, self.v = self.k.index_select(0, index), self.v.index_select(0, index)
            self._room = None  # the next append starts a new buffer from the reordered rows


@dataclass
class KVCache:
    """Incremental-decoding cache for a stack of layers.

    Self-attention keys/values grow by one position per generated token, so each
    step costs one query instead of re-running the whole prefix; cross-attention
    keys/values depend only on the encoder memory and are computed once.
    """

    n_layer: int
    self_attn: list[LayerCache] = field(init=False)
    cross_attn: list[LayerCache] = field(init=False)

    def __post_init__(self):
        self.self_attn = [LayerCache() for _ in range(self.n_layer)]
        self.cross_attn = [LayerCache() for _ in range(self.n_layer)]

    @property
    def length(self) -> int:
        """How many positions are cached already (the next position's index)."""
        k = self.self_attn[0].k
        return 0 if k is None else k.shape[2]

    def reorder(self, index: torch.Tensor) -> None:
        """Keep batch rows `index` (beam search moves cache rows with their beams)."""
        for layer in self.self_attn + self.cross_attn:
            layer.reorder(index)


class MultiHeadAttention(nn.Module):
    """Self- or cross-attention with n_head heads of size d_head = d_model / n_head.

    The Q, K, V projections are d_model x d_model whatever n_head is: heads split
    the width, they do not add parameters. The output projection W_o mixes them.
    """

    def __init__(self, config, name: str, group: str):
        super().__init__()
        d_model = config.d_model
        self.n_head, self.d_head = config.n_head, d_model // config.n_head
        self.w_q = nn.Linear(d_model, d_model, bias=config.bias)
        self.w_k = nn.Linear(d_model, d_model, bias=config.bias)
        self.w_v = nn.Linear(d_model, d_model, bias=config.bias)
        self.w_o = nn.Linear(d_model, d_model, bias=config.bias)
        self.dropout = config.dropout
        self.name, self.group = name, group  # where this layer's tensors appear in a trace

    def _split_heads(self, x: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        return x.view(B, T, self.n_head, self.d_head).transpose(1, 2)  # (B, H, T, d_head)

    def forward(self, x, source=None, mask: Mask | None = None, cache: LayerCache | None = None):
        """x: (B, Tq, d_model) queries' input; source: (B, Tk, d_model) for cross-attention
        (None: self-attention over x). Returns (B, Tq, d_model)."""
        q = self._split_heads(self.w_q(x))
        if source is None:
            k, v = self._split_heads(self.w_k(x)), self._split_heads(self.w_v(x))
            if cache is not None:  # append this step's keys/values to the past ones
                k, v = cache.append(k, v)
        elif cache is not None and cache.k is not None:  # encoder memory does not change
            k, v = cache.k, cache.v
        else:
            k, v = self._split_heads(self.w_k(source)), self._split_heads(self.w_v(source))
            if cache is not None:
                cache.k, cache.v = k, v
        for part, t in (("q", q), ("k", k), ("v", v)):
            trace.record(f"{self.name}.{part}", t)

        tracing = trace.active() is not None
        allowed = None if mask is None else mask.for_heads(q.device)
        out, weights = attend(
            q, k, v, allowed, self.dropout if self.training else 0.0, need_weights=tracing, name=self.name
        )
        if weights is not None:
            trace.record_attention(self.group, f"{self.name}.attn", weights, mask)
            trace.record(f"{self.name}.weighted", out)
        B, H, Tq, d_head = out.shape
        out = out.transpose(1, 2).reshape(B, Tq, H * d_head)  # concatenate the heads
        trace.record(f"{self.name}.concat", out)
        return self.w_o(out)
