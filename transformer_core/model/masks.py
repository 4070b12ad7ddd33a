"""Attention masks as first-class objects.

Lesson: a mask decides which keys each query may look at. A causal mask is what
stops a language model from reading the answer; sliding, dilated and global
patterns are how long-sequence transformers cut the quadratic cost.

Every mask here is a boolean "may attend" matrix wrapped in `Mask`. The model
applies exactly this object and the Masking tab draws exactly this object, so
the picture can never disagree with the computation.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

MASK_KINDS = ("none", "causal", "padding", "sliding_window", "dilated_window", "global_window")


class MaskError(ValueError):
    """A mask was asked for with impossible parameters (e.g. a window of width 0)."""


@dataclass(frozen=True)
class Mask:
    """A boolean "may attend" matrix: `allowed[..., i, j]` is True when query i may see key j.

    `allowed` has shape (Tq, Tk), or (B, Tq, Tk) when it differs per batch row
    (padding). `kind` and `params` say how it was built, for labels in the UI.
    """

    allowed: torch.Tensor
    kind: str
    params: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.allowed.dtype != torch.bool or self.allowed.dim() not in (2, 3):
            raise MaskError("Mask.allowed must be a bool tensor of shape (Tq, Tk) or (B, Tq, Tk)")

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.allowed.shape)

    def __and__(self, other: Mask) -> Mask:
        """Both masks allow it: e.g. causal & padding, or a window made causal."""
        return Mask(self.allowed & other.allowed, f"{self.kind}&{other.kind}", {**self.params, **other.params})

    def for_heads(self, device: torch.device | None = None) -> torch.Tensor:
        """The matrix broadcastable against attention scores of shape (B, H, Tq, Tk)."""
        allowed = self.allowed.to(device)  # device None: stays where it is
        return allowed[None, None] if allowed.dim() == 2 else allowed[:, None]

    def rows(self, start: int, stop: int) -> Mask:
        """The mask for queries start..stop-1 only (used when decoding with a KV cache)."""
        return Mask(self.allowed[..., start:stop, :], self.kind, self.params)


def _check_len(n: int) -> None:
    if n < 1:
        raise MaskError(f"a mask needs at least one position, got length {n}")


def _offsets(n: int) -> torch.Tensor:
    """(n, n) matrix of i - j: how far key j lies behind query i."""
    i = torch.arange(n)
    return i[:, None] - i[None, :]


def no_mask(n: int) -> Mask:
    """Bidirectional: every query sees every key (an encoder's default)."""
    _check_len(n)
    return Mask(torch.ones(n, n, dtype=torch.bool), "none")


def causal_mask(n: int) -> Mask:
    """Query i sees keys 0..i: the "subsequent mask" of the Annotated Transformer."""
    _check_len(n)
    return Mask(_offsets(n) >= 0, "causal")


def padding_mask(lengths: list[int], n: int | None = None) -> Mask:
    """Per batch row, keys at or beyond the row's true length are padding and hidden.

    Shape (B, n, n). Query rows of padding positions still see the real keys, so
    they stay finite; their outputs are ignored by pooling and loss anyway.
    """
    if not lengths or min(lengths) < 1:
        raise MaskError("padding_mask needs one length >= 1 per batch row")
    n = max(lengths) if n is None else n
    if max(lengths) > n:
        raise MaskError(f"a length {max(lengths)} does not fit in {n} positions")
    real = torch.arange(n)[None, :] < torch.tensor(lengths)[:, None]  # (B, n)
    return Mask(real[:, None, :].expand(len(lengths), n, n).clone(), "padding", {"lengths": list(lengths)})


def sliding_window_mask(n: int, w: int, causal: bool = False) -> Mask:
    """Each query sees keys at most w positions away (only behind it when causal)."""
    _check_len(n)
    if w < 1:
        raise MaskError(f"window width must be at least 1, got {w}")
    d = _offsets(n)
    allowed = (d >= 0) & (d <= w) if causal else d.abs() <= w
    return Mask(allowed, "sliding_window", {"w": w, "causal": causal})


def dilated_window_mask(n: int, w: int, dilation: int, causal: bool = False) -> Mask:
    """Like a sliding window of w steps, but each step is `dilation` positions long: a query
    sees the keys 0, dilation, 2 * dilation, ..., w * dilation positions away, skipping the
    dilation - 1 positions between two of them (dilation 1 is the plain sliding window).

    The receptive field grows to w * dilation at the same cost (Longformer's dilated
    windows). With w = 2 and dilation = 3, query 4 of 9 sees keys 1, 4 and 7 (the next
    ones, -2 and 10, lie outside the text):

    >>> dilated_window_mask(9, w=2, dilation=3).allowed[4].int().tolist()
    [0, 1, 0, 0, 1, 0, 0, 1, 0]
    """
    _check_len(n)
    if w < 1 or dilation < 1:
        raise MaskError(f"window width and dilation must be at least 1, got w={w}, dilation={dilation}")
    d = _offsets(n)
    reach = d.abs() if not causal else d
    allowed = (reach >= 0) & (reach <= w * dilation) & (d % dilation == 0)
    return Mask(allowed, "dilated_window", {"w": w, "dilation": dilation, "causal": causal})


def global_window_mask(n: int, w: int, global_tokens: list[int], causal: bool = False) -> Mask:
    """A sliding window plus a few global tokens that see, and are seen by, everyone."""
    window = sliding_window_mask(n, w).allowed  # made causal below, with the global rows and columns
    if any(g < 0 or g >= n for g in global_tokens):
        raise MaskError(f"global token positions must lie in 0..{n - 1}, got {global_tokens}")
    g = torch.zeros(n, dtype=torch.bool)
    g[list(global_tokens)] = True
    allowed = window | g[None, :] | g[:, None]
    if causal:
        allowed &= _offsets(n) >= 0
    return Mask(allowed, "global_window", {"w": w, "global_tokens": list(global_tokens), "causal": causal})


def window_rows(start: int, T: int, size: int) -> Mask:
    """A sliding-window layer's reach for queries start..start+T-1 over keys 0..start+T-1: each query sees the keys
    fewer than `size` positions away (made causal by the mask it is combined with: `size` keys, itself included,
    as Gemma 3 counts its window). Only these rows are built, so a cached step at position 8,000 costs 8,001 cells."""
    if T < 1 or size < 1:
        raise MaskError(f"a window of {size} keys for {T} queries: both must be at least 1")
    offsets = torch.arange(start, start + T)[:, None] - torch.arange(start + T)[None, :]
    return Mask(offsets.abs() < size, "sliding_window", {"w": size - 1, "causal": False})


def build_mask(kind: str, n: int, **params) -> Mask:
    """Build a mask by name, for views and handlers that let the user choose one."""
    builders = {
        "none": lambda: no_mask(n),
        "causal": lambda: causal_mask(n),
        "sliding_window": lambda: sliding_window_mask(n, params.get("w", 4), params.get("causal", False)),
        "dilated_window": lambda: dilated_window_mask(
            n, params.get("w", 2), params.get("dilation", 2), params.get("causal", False)
        ),
        "global_window": lambda: global_window_mask(
            n, params.get("w", 2), params.get("global_tokens", [0]), params.get("causal", False)
        ),
    }
    if kind == "padding":
        return padding_mask(params["lengths"], n)
    if kind not in builders:
        raise MaskError(f"unknown mask kind {kind!r}; choose one of {', '.join(MASK_KINDS)}")
    return builders[kind]()
