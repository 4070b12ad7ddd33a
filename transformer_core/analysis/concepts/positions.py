"""Idea 4: positions are vectors added to tokens: the sinusoidal formula, or learned rows."""

from __future__ import annotations

import torch
from torch import nn

from ...model.layers import sinusoidal_encoding
from .common import ConceptInputError

def position_similarity(pe: torch.Tensor) -> torch.Tensor:
    """Dot products between position vectors: (n, d) -> (n, n)."""
    return pe @ pe.T


def sinusoidal_positions(n_positions: int, d_model: int) -> torch.Tensor:
    """The sinusoidal table of `layers.sinusoidal_encoding`, checked sizes: (n_positions, d_model)."""
    if not 1 <= n_positions <= 2048 or not 2 <= d_model <= 1024:
        raise ConceptInputError("need 1..2048 positions and an even d_model of 2..1024")
    if d_model % 2:  # sines and cosines come in pairs
        raise ConceptInputError(f"d_model must be even, got {d_model}", "odd_d_model", d_model=d_model)
    return sinusoidal_encoding(n_positions, d_model)


def learned_positions(model: nn.Module, n_positions: int | None = None) -> torch.Tensor | None:
    """A model's learned position table (n_positions, d_model), or None if it has none.
    For an encoder-decoder, the encoder's (source) table."""
    for stack in ("embed", "src_embed"):
        pos = getattr(getattr(model, stack, None), "pos", None)
        if pos is not None:
            return pos.weight.detach().float().cpu()[:n_positions]
    return None
