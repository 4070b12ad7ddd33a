"""Multi-head scaled dot-product attention.

Lesson: self-attention is a weighted average. Each query scores every key,
softmax(q kᵀ / √d_head) turns the scores into weights that sum to 1, and the
output is the weighted sum of the values. Multi-head attention runs n_head such
averages side by side on d_head = d_model / n_head slices; the heads are folded
into the batch dimension so one batched matrix product serves them all.

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
from .norms import make_norm


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
