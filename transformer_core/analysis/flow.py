"""Information flow: which earlier tokens, heads and feed-forward blocks wrote a token's residual stream.

Lesson: a decoder's residual stream is a sum. At layer l each token's stream x_i gets the attention block's
output added, itself a sum over heads h and source tokens j of a_hij * (v_j W_o^h), then the feed-forward
block's output. Ferrando & Voita (2024, "Information flow routes") weigh each term c of a sum y by how much
of y it carries, proximity(c, y) = max(0, |y|_1 - |y - c|_1), normalised over the terms of that sum; an edge
of the graph is a term above a threshold, and the routes that end in the chosen token's last stream are its
information flow. Everything is read from one traced pass: the values, the weights and the streams.

Where a norm stands between a block and the stream (Gemma's norm after each sublayer) its scale at that token
is taken as fixed, so each term is scaled as the sum was (the linearisation LLM Transparency Tool also makes).
A head's own output at a token, read through the final norm and the unembedding, says which vocabulary tokens
it pushes up and which it pushes down (`head_logits`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..device import device_of
from ..model.models import DecoderLM
from ..model.layers import RMSNorm
from ..model.trace import recording


@dataclass(frozen=True)
class FlowGraph:
    """Importances of every term of every residual sum of one text (each normalised over its sum's terms).

    attention[l, h, i, j]: head h of layer l moving token j into token i's stream; through_attention[l, i]: token
    i's own stream carried past layer l's attention block; ffn[l, i]: layer l's feed-forward output at token i;
    through_ffn[l, i]: the stream carried past it. head_out[l, h, i] (float16): head h's output at token i, as it
    joins the stream (for `head_logits`)."""

    attention: np.ndarray
    through_attention: np.ndarray
    ffn: np.ndarray
    through_ffn: np.ndarray
    head_out: torch.Tensor
    final_scale: torch.Tensor  # (T, d_model): what the final norm multiplies each token's last stream by
    centred: bool  # the final norm is a LayerNorm: a term's mean is taken away first
    predicted: list[int]  # the model's top next token at each position

    @property
    def shape(self) -> tuple[int, int, int]:
        """(n_layer, n_head, T)."""
        return self.attention.shape[:3]


def _closeness(terms: torch.Tensor, total: torch.Tensor) -> torch.Tensor:
    """terms (..., n, d) of sums total (..., d) -> (..., n): max(0, |y|_1 - |y - c|_1), not yet normalised."""
    return (total.abs().sum(-1)[..., None] - (total[..., None, :] - terms).abs().sum(-1)).clamp_min(0)


def _proximity(terms: torch.Tensor, total: torch.Tensor) -> torch.Tensor:
    """terms (..., n, d) of sums total (..., d) -> (..., n): each term's share, max(0, |y|_1 - |y - c|_1) / sum."""
    raw = _closeness(terms, total)
    return raw / raw.sum(-1, keepdim=True).clamp_min(1e-12)


def _after_norm(norm, pre: torch.Tensor) -> torch.Tensor:
    """(T, d) what a norm after a sublayer multiplies each token's output by, taken as fixed; ones without one."""
    if norm is None:
        return torch.ones_like(pre)
    rms = torch.rsqrt(pre.pow(2).mean(-1, keepdim=True) + norm.eps)
    return rms * norm.weight.float().cpu()  # the trace's tensors are on the CPU, the weights maybe on a GPU


@torch.no_grad()
def information_flow(model: DecoderLM, ids: list[int]) -> FlowGraph:
    """The importances of every term of every residual sum of the language model's pass over `ids`."""
    if not isinstance(model, DecoderLM) or not model.config.norm_first:
        raise ValueError("information flow reads a pre-norm decoder language model")
    idx = torch.tensor([ids], device=device_of(model))
    with recording(all) as trace:
        predicted = model(idx)[0].argmax(-1).tolist()
    c = model.config
    group = c.n_head // c.n_kv_head
    attention, through_attention, ffn, through_ffn, head_out = [], [], [], [], []
    stream = trace.hidden["decoder"]  # the stream before each layer, then after the last
    for l, layer in enumerate(model.layers):
        point = f"layers.{l}"
        weights = trace[f"{point}.self_attn.attn"][0]  # (H, T, T)
        v = trace[f"{point}.self_attn.v"][0].repeat_interleave(group, dim=0)  # (H, T, d_head)
        w_o = layer.self_attn.w_o.weight.float().cpu().view(c.d_model, c.n_head, c.d_head)  # (d, H, d_head)
        moved = torch.einsum("htk,dhk->htd", v, w_o)  # (H, T, d): each source token's value through W_o
        scale = _after_norm(layer.norm_self_out, trace[f"{point}.self_attn.out"][0])  # (T, d)
        before, mid = stream[l][0], trace[f"{point}.resid_mid"][0]
        # every term of token i's sum: its own stream, then each (head h, source token j), a_hij (v_j W_o^h) scaled;
        # the bias is in the total. A head's (Tq, Tk, d) terms are made one head at a time: all heads' at once (21 MB
        # a layer for SmolLM2 at 32 tokens, and as much again for each step of the arithmetic) took most of the
        # graph's time in fresh memory
        own = _closeness(before[:, None], mid)[:, 0]  # (T,)
        heads = torch.stack([_closeness(weights[h][..., None] * (moved[h][None] * scale[:, None]), mid)
                             for h in range(c.n_head)])  # (H, Tq, Tk)
        total = (own + heads.sum((0, 2))).clamp_min(1e-12)
        through_attention.append(own / total)
        attention.append(heads / total[:, None])
        head_out.append((torch.bmm(weights, moved) * scale).half())  # (H, T, d): each head's output, summed over j
        ff = trace[f"{point}.ff.out"][0] * _after_norm(layer.norm_ff_out, trace[f"{point}.ff.out"][0])
        share = _proximity(torch.stack([mid, ff], dim=1), stream[l + 1][0])  # (T, 2)
        through_ffn.append(share[:, 0])
        ffn.append(share[:, 1])
    last, rms = stream[-1][0], isinstance(model.norm, RMSNorm)
    spread = last.pow(2).mean(-1, keepdim=True) if rms else last.var(-1, unbiased=False, keepdim=True)
    final_scale = torch.rsqrt(spread + model.norm.eps) * model.norm.weight.float().cpu()
    return FlowGraph(torch.stack(attention).numpy(), torch.stack(through_attention).numpy(), torch.stack(ffn).numpy(),
                     torch.stack(through_ffn).numpy(), torch.stack(head_out), final_scale, not rms, predicted)


@dataclass(frozen=True)
class Route:
    """An edge kept: from (layer, position) at `level` "in" / "mid" to the next level, by `kind`."""

    kind: str  # "head" | "through_attention" | "ffn" | "through_ffn"
    layer: int
    source: int  # the token position it reads
    target: int  # the token position whose stream it writes
    head: int | None
    importance: float


def routes(graph: FlowGraph, token: int, threshold: float) -> list[Route]:
    """The edges of importance at least `threshold` on routes that end in `token`'s last stream, found from the
    top down: a node is kept when an edge kept so far starts there."""
    n_layer, _, T = graph.shape
    reached = {token}  # positions whose stream after layer l is on a route
    kept: list[Route] = []
    for l in reversed(range(n_layer)):
        mid = set()
        for i in reached:
            if graph.ffn[l, i] >= threshold:
                kept.append(Route("ffn", l, i, i, None, float(graph.ffn[l, i])))
            if graph.through_ffn[l, i] >= threshold:
                kept.append(Route("through_ffn", l, i, i, None, float(graph.through_ffn[l, i])))
                mid.add(i)
        below = set()
        for i in mid:
            if graph.through_attention[l, i] >= threshold:
                kept.append(Route("through_attention", l, i, i, None, float(graph.through_attention[l, i])))
                below.add(i)
            for h, j in zip(*np.nonzero(graph.attention[l, :, i] >= threshold)):
                kept.append(Route("head", l, int(j), i, int(h), float(graph.attention[l, h, i, j])))
                below.add(int(j))
        reached = below
    return kept


def _as_read(graph: FlowGraph, out: torch.Tensor, token: int) -> torch.Tensor:
    """Head outputs (..., d_model) at `token` as the unembedding reads them: through the final norm's scale there."""
    out = out.float()
    return (out - out.mean(-1, keepdim=True) if graph.centred else out) * graph.final_scale[token]


@torch.no_grad()
def direct_push(model: DecoderLM, graph: FlowGraph, token: int, target: int) -> np.ndarray:
    """(n_layer, n_head): how much each head's output at `token` adds to the logit of vocabulary token `target`."""
    unembedding = model.head.weight[target].float().cpu()
    return (_as_read(graph, graph.head_out[:, :, token], token) @ unembedding).numpy()


@torch.no_grad()
def head_logits(model: DecoderLM, graph: FlowGraph, layer: int, head: int, token: int, k: int = 8):
    """(promoted (ids, values), suppressed (ids, values)): the k vocabulary tokens head `head` of `layer` pushes
    most up and most down at `token`, its output read through the final norm (its scale at that token) and the
    unembedding."""
    out = _as_read(graph, graph.head_out[layer, head, token], token)
    logits = model.head(out.to(device_of(model))[None])[0].float().cpu()
    up, down = torch.topk(logits, k), torch.topk(-logits, k)
    return (up.indices.tolist(), up.values.tolist()), (down.indices.tolist(), (-down.values).tolist())
