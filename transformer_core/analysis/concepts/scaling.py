"""Idea 2: dividing scores by √d keeps softmax out of saturation, where its gradient vanishes."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .common import ConceptInputError
from .weighted_average import single_head

SCALING_DIMS = (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


def softmax_jacobian_norm(attn: torch.Tensor) -> torch.Tensor:
    """Frobenius norm of softmax's Jacobian diag(p) - p pᵀ at each row p of attn (..., n) -> (...).

    Near 0 when softmax is saturated (one weight ~1): gradients through it vanish.
    """
    jacobian = torch.diag_embed(attn) - attn[..., :, None] * attn[..., None, :]
    return jacobian.flatten(-2).norm(dim=-1)


@dataclass
class ScalingPoint:
    """For one d: per query, the largest weight and the softmax gradient size, with and without 1/√d.

    q (n_queries, d) and k (n_keys, d) are the random vectors; the keys double as values.
    """

    d: int
    q: torch.Tensor
    k: torch.Tensor
    max_weight: dict[str, torch.Tensor]  # "scaled" | "unscaled" -> (n_queries,)
    grad_norm: dict[str, torch.Tensor]  # same keys -> (n_queries,)
    attn: dict[str, torch.Tensor]  # same keys -> (n_queries, n_keys)


def scaling_point(d: int, n_keys: int = 16, n_queries: int = 256, seed: int = 0) -> ScalingPoint:
    """Random queries and keys with N(0, 1) entries of dimension d, through `attend` both ways."""
    if not 1 <= d <= 4096 or not 2 <= n_keys <= 256 or not 1 <= n_queries <= 4096:
        raise ConceptInputError("need 1 <= d <= 4096, 2 <= keys <= 256, 1 <= queries <= 4096")
    g = torch.Generator().manual_seed(seed * 100_003 + d)
    q, k = torch.randn(n_queries, d, generator=g), torch.randn(n_keys, d, generator=g)
    point = ScalingPoint(d, q, k, {}, {}, {})
    for label, scaled in (("scaled", True), ("unscaled", False)):
        _, attn, _ = single_head(q, k, k, scaled)
        point.attn[label] = attn
        point.max_weight[label] = attn.max(dim=-1).values
        point.grad_norm[label] = softmax_jacobian_norm(attn)
    return point


def scaling_sweep(dims=SCALING_DIMS, n_keys: int = 16, n_queries: int = 256, seed: int = 0) -> list[ScalingPoint]:
    return [scaling_point(d, n_keys, n_queries, seed) for d in sorted(set(dims))]
