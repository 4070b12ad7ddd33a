"""What every Concepts experiment shares: the error for an unusable input, and weights drawn from a seed."""

from __future__ import annotations

import torch
from torch import nn


class ConceptInputError(ValueError):
    """An experiment's input (a matrix typed by hand, a size, a token id) is unusable; the message says why, in
    English. `reason` names the problem and `fields` hold its values, so an app can say it in its reader's
    language ("" when the problem is one no app's input can cause)."""

    def __init__(self, message: str, reason: str = "", **fields):
        super().__init__(message)
        self.reason, self.fields = reason, fields


@torch.no_grad()
def draw_matrices(model: nn.Module, seed: int, std: float) -> nn.Module:
    """Redraw every weight matrix (and embedding table) from N(0, std²) with a private generator,
    so the same seed gives the same model even while other requests use torch's global RNG.
    Biases and LayerNorms keep their fixed initial values (zeros, ones)."""
    g = torch.Generator().manual_seed(seed)
    for p in model.parameters():
        if p.dim() >= 2:
            p.copy_(torch.randn(p.shape, generator=g) * std)
    return model.eval()
