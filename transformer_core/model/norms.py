"""Norms: keeping the residual stream's vectors at a steady size.

Lesson: LayerNorm (Ba et al., 2016) centres each token's vector and scales it to unit
variance, then applies a learned gain and bias. RMSNorm (Zhang & Sennrich, 2019), the
norm of Llama, SmolLM2 and Gemma, skips the centring and the bias: it divides by the
root mean square alone. Both act on one token at a time.
"""

from __future__ import annotations

import torch
from torch import nn

from . import trace


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
