"""The keys and values incremental decoding reuses.

Lesson: a decoder's keys and values for positions already read never change (the
causal mask keeps the past from seeing the future), so generating one more token
needs only the new position's query, key and value; the rest comes from this cache.
Cross-attention's keys and values depend only on the encoder's output: computed once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch


@dataclass
class LayerCache:
    """Keys and values (B, H, T, d_head) one attention layer has already computed.

    Self-attention appends to them: they are views of buffers with room to spare,
    doubled when full, so a step copies its own position instead of the whole past.
    """

    k: torch.Tensor | None = None
    v: torch.Tensor | None = None
    _room: tuple[torch.Tensor, torch.Tensor] | None = field(default=None, init=False, repr=False)

    def append(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Add keys and values (B, H, t, d_head) after the cached ones; returns all of them (B, H, T + t, d_head)."""
        T = 0 if self.k is None else self.k.shape[2]
        end = T + k.shape[2]
        if self._room is None or end > self._room[0].shape[2]:
            B, H, _, d_head = k.shape
            room_k, room_v = k.new_empty(B, H, 2 * end, d_head), v.new_empty(B, H, 2 * end, d_head)
            if T:
                room_k[:, :, :T], room_v[:, :, :T] = self.k, self.v
            self._room = room_k, room_v
        room_k, room_v = self._room
        room_k[:, :, T:end], room_v[:, :, T:end] = k, v
        self.k, self.v = room_k[:, :, :end], room_v[:, :, :end]
        return self.k, self.v

    def reorder(self, index: torch.Tensor) -> None:
        """Keep batch rows `index`."""
        if self.k is not None:
            self.k, self.v = self.k.index_select(0, index), self.v.index_select(0, index)
            self._room = None  # the next append starts a new buffer from the reordered rows


@dataclass
class KVCache:
    """Incremental-decoding cache for a stack of layers.

    Self-attention keys/values grow by one position per generated token, so each
    step costs one query instead of re-running the whole prefix; cross-attention
    keys/values depend only on the encoder memory and are computed once.
    """

    n_layer: int
    self_attn: list[LayerCache] = field(init=False)
    cross_attn: list[LayerCache] = field(init=False)

    def __post_init__(self):
        self.self_attn = [LayerCache() for _ in range(self.n_layer)]
        self.cross_attn = [LayerCache() for _ in range(self.n_layer)]

    @property
    def length(self) -> int:
        """How many positions are cached already (the next position's index)."""
        k = self.self_attn[0].k
        return 0 if k is None else k.shape[2]

    def reorder(self, index: torch.Tensor) -> None:
        """Keep batch rows `index` (beam search moves cache rows with their beams)."""
        for layer in self.self_attn + self.cross_attn:
            layer.reorder(index)
