"""What changed since GPT-2: five experiments on a modern decoder's real weights, each one number per layer.

Lesson: today's open models keep the 2017 block and change four of its parts. Each function here measures
one of them on a model's own pass:
* rotary positions: moving the whole text later changes no attention weight (`shift_change`), where learned
  positions, added to the tokens, change them;
* grouped-query attention: several query heads read one key/value head, so the KV cache keeps fewer of them
  (`kv_cache_bytes`);
* the attention sink: trained models park most of their attention on the first token (`first_token_share`),
  and need it: taking that share away moves the next-token distribution (`without_first_token`);
* RMSNorm divides by the root mean square alone; on a residual stream whose mean is small against its size it
  gives what LayerNorm would (`norm_difference`);
* sliding-window layers see only the last W tokens, global ones the whole text (`reach`).
"""

from __future__ import annotations

import numpy as np
import torch

from ..device import device_of
from ..model.models import DecoderLM
from ..model.trace import editing

CACHE_BYTES = 4  # a KV cache holds float32 keys and values (the model's activations)


def _ids(model, ids: list[int]) -> torch.Tensor:
    return torch.tensor([ids], device=device_of(model))


@torch.no_grad()
def shift_change(model: DecoderLM, ids: list[int], offset: int) -> np.ndarray:
    """(n_layer,): the largest change of any attention weight of each layer when the whole text is read
    `offset` positions later."""
    before = model.run_with_trace(_ids(model, ids))[1].attention("decoder")[:, 0]
    after = model.run_with_trace(_ids(model, ids), offset=offset)[1].attention("decoder")[:, 0]
    return (before - after).abs().flatten(1).max(-1).values.numpy()


def kv_cache_bytes(config) -> tuple[int, int]:
    """(bytes the KV cache keeps a token with the config's n_kv_head, bytes with one key/value head per query
    head): keys and values, every layer."""
    per_head = 2 * config.n_layer * config.d_head * CACHE_BYTES
    return per_head * config.n_kv_head, per_head * config.n_head


def first_token_share(attn: torch.Tensor) -> np.ndarray:
    """attn (n_layer, n_head, T, T) -> (n_layer,): the mean weight queries after the first put on the first
    token, averaged over the heads."""
    return attn[:, :, 1:, 0].mean(dim=(1, 2)).numpy()


def _without_first(weights: torch.Tensor) -> torch.Tensor:
    """Attention weights (B, H, T, T) with the first key's weight taken from every query after the first and the
    rest of its row scaled back up to sum to 1."""
    out = weights.clone()
    out[..., 1:, 0] = 0
    return out / out.sum(-1, keepdim=True).clamp_min(1e-12)


@torch.no_grad()
def without_first_token(model: DecoderLM, ids: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """(next-token probabilities after the text as the model reads it, the same with the first token's share of
    attention taken away in every layer and head): each (vocab,)."""
    idx = _ids(model, ids)
    before = torch.softmax(model(idx)[0, -1].float(), -1)
    edits = {f"layers.{i}.self_attn.attn": _without_first for i in range(model.config.n_layer)}
    with editing(edits):  # an edited weight is computed on the inspect path (model/layers.py)
        after = torch.softmax(model(idx)[0, -1].float(), -1)
    return before.cpu(), after.cpu()


@torch.no_grad()
def norm_difference(model: DecoderLM, ids: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """((n_layer, T) the residual stream's mean over its root mean square, entering each layer; (n_layer, T) the
    cosine between that layer's RMSNorm of it and the LayerNorm of it with the same gain)."""
    _, trace = model.run_with_trace(_ids(model, ids))
    means, cosines = [], []
    for layer, x in zip(model.layers, trace.hidden["decoder"]):
        x = x[0]
        gain = layer.norm_self.weight.float().cpu()
        rms = x.pow(2).mean(-1, keepdim=True).sqrt()
        rms_normed = x / rms * gain
        layer_normed = (x - x.mean(-1, keepdim=True)) / x.std(-1, unbiased=False, keepdim=True) * gain
        means.append((x.mean(-1) / rms[:, 0]).abs())
        cosines.append(torch.cosine_similarity(rms_normed, layer_normed, dim=-1))
    return torch.stack(means).numpy(), torch.stack(cosines).numpy()


def reach(attn: torch.Tensor, queries: int = 64, floor: float = 0.01) -> tuple[np.ndarray, np.ndarray]:
    """attn (n_layer, n_head, T, T) -> ((n_layer,) the mean distance back the last `queries` queries look,
    weighted by their attention; (n_layer,) the farthest key any of them gives at least `floor`)."""
    T = attn.shape[-1]
    rows = attn[:, :, -queries:]  # (L, H, q, T)
    distance = (torch.arange(T - rows.shape[2], T)[:, None] - torch.arange(T)[None, :]).clamp_min(0).float()
    mean = (rows * distance).sum(-1).mean(dim=(1, 2))
    farthest = torch.where(rows >= floor, distance, torch.zeros(())).amax(dim=(1, 2, 3))
    return mean.numpy(), farthest.numpy()
