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

import torch
import torch.nn.functional as F
from torch import nn

from . import trace
from .cache import LayerCache
from .masks import Mask


def attend(q, k, v, allowed=None, dropout_p: float = 0.0, need_weights: bool = False, name: str = "attn"):
    """Attention of queries q over keys k and values v.

    q: (B, H, Tq, d_head); k, v: (B, H, Tk, d_head); allowed: bool, broadcastable
    to (B, H, Tq, Tk), True where the query may see the key.
    Returns (out (B, H, Tq, d_head), weights (B, H, Tq, Tk) or None).
    A query row with no visible key yields weights 0 and output 0, never NaN.
    """
    if need_weights:  # the inspect path: the textbook's lines, keeping the weights for the views
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

    @property
    def trace_group(self) -> str:
        """Which of the trace's attention groups this module's weights go to."""
        return "cross" if self.trace_name.endswith("cross_attn") else self.trace_stack

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
            trace.record(self.point(part), t)

        tracing = trace.active() is not None
        allowed = None if mask is None else mask.for_heads(q.device)
        out, weights = attend(
            q, k, v, allowed, self.dropout if self.training else 0.0, need_weights=tracing, name=self.trace_name
        )
        # each head's output (B, H, Tq, d_head), before W_o mixes the heads: the place where
        # a head can be switched off, on either path, since both compute it alike
        out = trace.edit(self.point("weighted"), out)
        if weights is not None:
            trace.record_attention(self.trace_group, self.point("attn"), weights, mask)
            trace.record(self.point("weighted"), out)
        B, H, Tq, d_head = out.shape
        out = out.transpose(1, 2).reshape(B, Tq, H * d_head)  # concatenate the heads
        trace.record(self.point("concat"), out)
        return self.w_o(out)
