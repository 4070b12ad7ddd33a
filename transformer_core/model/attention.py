"""Multi-head scaled dot-product attention.

Lesson: self-attention is a weighted average. Each query scores every key,
softmax(q kᵀ / √d_head) turns the scores into weights that sum to 1, and the
output is the weighted sum of the values. Multi-head attention runs n_head such
averages side by side on d_head = d_model / n_head slices; the heads are folded
into the batch dimension so one batched matrix product serves them all.

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


def _unseen(part: str, x):
    return x


def attend(q, k, v, allowed=None, dropout_p: float = 0.0, need_weights: bool = False, hook=_unseen):
    """Attention of queries q over keys k and values v.

    q: (B, H, Tq, d_head); k, v: (B, H, Tk, d_head); allowed: bool, broadcastable
    to (B, H, Tq, Tk), True where the query may see the key.
    Returns (out (B, H, Tq, d_head), weights (B, H, Tq, Tk) or None).
    A query row with no visible key yields weights 0 and output 0, never NaN.
    hook(part, x) -> x: the inspect path passes "scores" and "attn" through it (a module's trace points).
    """
    if need_weights:  # the inspect path: the textbook's lines, keeping the weights for the views
        B, H, Tq, d_head = q.shape
        Tk = k.shape[2]
        # heads folded into the batch: one bmm computes every head's scores
        scores = torch.bmm(q.reshape(B * H, Tq, d_head), k.reshape(B * H, Tk, d_head).transpose(1, 2))
        scores = hook("scores", scores.view(B, H, Tq, Tk) / math.sqrt(d_head))
        if allowed is not None:
            scores = scores.masked_fill(~allowed, float("-inf"))
        # softmax over a row of all -inf is NaN: such a query has nothing to read, so 0
        weights = hook("attn", torch.softmax(scores, dim=-1).nan_to_num(0.0))
        dropped = F.dropout(weights, dropout_p)  # p = 0: the weights themselves, no random draw
        out = torch.bmm(dropped.reshape(B * H, Tq, Tk), v.reshape(B * H, Tk, d_head)).view(B, H, Tq, d_head)
        return out, weights

    # the fast path: torch's fused kernel computes the same, without materialising the weights
    if allowed is None:
        return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p), None
    # A row with nothing allowed would be a softmax over no keys (NaN). Let such
    # rows see everything, then zero their output: same result as the inspect path.
    has_key = allowed.any(-1, keepdim=True)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed | ~has_key, dropout_p=dropout_p)
    return out * has_key, None


class MultiHeadAttention(nn.Module, trace.TracePoint):
    """Self- or cross-attention with n_head heads of size d_head = d_model / n_head.

    The Q, K, V projections are d_model x d_model whatever n_head is: heads split
    the width, they do not add parameters. The output projection W_o mixes them.
    """

    def __init__(self, config):
        super().__init__()
        d_model = config.d_model
        self.n_head, self.d_head = config.n_head, d_model // config.n_head
        self.w_q = nn.Linear(d_model, d_model, bias=config.bias)
        self.w_k = nn.Linear(d_model, d_model, bias=config.bias)
        self.w_v = nn.Linear(d_model, d_model, bias=config.bias)
        self.w_o = nn.Linear(d_model, d_model, bias=config.bias)
        self.dropout = config.dropout

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
        q, k, v = self.hook("q", q), self.hook("k", k), self.hook("v", v)
        if mask is not None:
            mask = self.hook("mask", mask)  # a Mask: the trace keeps the object the Masking tab draws
        allowed = None if mask is None else mask.for_heads(q.device)
        # the weights exist only on the inspect path: taken when a trace records them or an edit changes them
        out, _ = attend(q, k, v, allowed, self.dropout if self.training else 0.0,
                        need_weights=self.watched("scores", "attn"), hook=self.hook)
        # each head's output, before W_o mixes the heads: where a head is switched off, on either path
        out = self.hook("weighted", out)  # (B, H, Tq, d_head)
        B, H, Tq, d_head = out.shape
        out = self.hook("concat", out.transpose(1, 2).reshape(B, Tq, H * d_head))  # the heads side by side
        return self.hook("out", self.w_o(out))
