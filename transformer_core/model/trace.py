"""The trace: everything one forward pass computed, kept for the views.

Lesson: "tracing" a model means following each tensor and its shape from input
to loss. Modules announce tensors at named places (as TransformerLens's hook
points do); when no trace is being recorded that announcement is a single
context-variable lookup, so tracing is free when off.

    logits, trace = model.run_with_trace(idx)
    trace.attention("decoder")      # (n_layer, B, n_head, Tq, Tk)
    trace.shapes["layers.0.self_attn.q"]  # (B, n_head, T, d_head)

Each place is named by the module's path in the model (`layers.0.self_attn`, as in
`model.named_modules()` and the state dict), set once by `name_trace_points`, so no
constructor passes names by hand.

Views are pure functions of a `Trace`; they never recompute model internals.

The same named places can also *change* what passes through them (an intervention,
e.g. switching a head off): `with intervening({"layers.2.self_attn.weighted": f}):`
runs the model with f applied there. Like recording, it is one context-variable
lookup per place when nothing is changed, so the normal path pays nothing for it.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

import torch
from torch import nn

from .masks import Mask

_ACTIVE: ContextVar[Trace | None] = ContextVar("transformer_core_trace", default=None)
Edit = Callable[[torch.Tensor], torch.Tensor]
_EDITS: ContextVar[dict[str, Edit] | None] = ContextVar("transformer_core_edits", default=None)


@dataclass
class Trace:
    """Plain data recorded by one traced forward pass.

    attn:   group ("encoder", "decoder", "cross") -> per-layer weights (B, H, Tq, Tk)
    masks:  group -> the Mask that was applied (None: no masking)
    hidden: stack ("encoder", "decoder") -> per-layer outputs (B, T, d_model); index 0 is the embedding
    logits: the model's final output
    shapes: every named tensor's shape, in the order it was computed
    values: the named tensors themselves, only when recorded with values=True
    """

    keep_values: bool = False
    attn: dict[str, list[torch.Tensor]] = field(default_factory=dict)
    masks: dict[str, Mask | None] = field(default_factory=dict)
    hidden: dict[str, list[torch.Tensor]] = field(default_factory=dict)
    logits: torch.Tensor | None = None
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    values: dict[str, torch.Tensor] = field(default_factory=dict)

    def attention(self, group: str) -> torch.Tensor:
        """All layers' weights of one group stacked: (n_layer, B, H, Tq, Tk)."""
        if group not in self.attn:
            raise KeyError(f"no attention recorded for {group!r}; recorded groups: {sorted(self.attn)}")
        return torch.stack(self.attn[group])

    @property
    def groups(self) -> list[str]:
        return list(self.attn)


def name_trace_points(model: nn.Module, stacks: dict[str, str], root: str = "") -> None:
    """Name every module's trace point by its path in `model` and tell it which stack it is in.

    stacks: path prefix -> "encoder" or "decoder" (the longest matching prefix wins; "" matches
    every path). A cross-attention layer's weights go to the group "cross" whatever its stack.
    `root` names a module traced on its own (its path would be empty).
    """
    by_length = sorted(stacks.items(), key=lambda item: -len(item[0]))
    for path, module in model.named_modules():
        module.trace_name = ".".join(p for p in (root, path) if p)
        module.trace_stack = next(stack for prefix, stack in by_length if path.startswith(prefix))


class TracePoint:
    """Mixin for the modules that announce tensors: `point("q")` is "<module path>.q"."""

    trace_name = ""  # set by name_trace_points when the model is built
    trace_stack = "encoder"

    def point(self, part: str) -> str:
        return f"{self.trace_name}.{part}" if self.trace_name else part


def active() -> Trace | None:
    """The trace being recorded in this thread/task, if any."""
    return _ACTIVE.get()


@contextmanager
def recording(keep_values: bool = False):
    """Record a trace of every forward pass run inside the block."""
    trace = Trace(keep_values=keep_values)
    token = _ACTIVE.set(trace)
    try:
        yield trace
    finally:
        _ACTIVE.reset(token)


def record(name: str, tensor: torch.Tensor) -> None:
    """Announce a named intermediate tensor; a no-op unless a trace is recording."""
    trace = _ACTIVE.get()
    if trace is None:
        return
    trace.shapes[name] = tuple(tensor.shape)
    if trace.keep_values:
        trace.values[name] = tensor.detach().float().cpu()


def record_attention(group: str, name: str, attn: torch.Tensor, mask: Mask | None) -> None:
    """Keep one layer's attention weights (B, H, Tq, Tk) and the mask it obeyed."""
    trace = _ACTIVE.get()
    if trace is None:
        return
    trace.attn.setdefault(group, []).append(attn.detach().float().cpu())
    trace.masks[group] = mask
    record(name, attn)


def record_hidden(stack: str, name: str, x: torch.Tensor) -> None:
    """Keep a stack's residual stream after the embedding and after each block."""
    trace = _ACTIVE.get()
    if trace is None:
        return
    trace.hidden.setdefault(stack, []).append(x.detach().float().cpu())
    record(name, x)


def record_logits(logits: torch.Tensor) -> None:
    trace = _ACTIVE.get()
    if trace is None:
        return
    trace.logits = logits.detach().float().cpu()
    record("logits", logits)


@contextmanager
def intervening(edits: dict[str, Edit]):
    """Run every forward pass inside the block with `edits[name]` applied to the tensor
    announced at `name` (a module path plus a part, e.g. "layers.0.self_attn.weighted").
    A name no module announces changes nothing: callers that take names from users
    (`analysis.heads.ablating`) check them against the model first."""
    token = _EDITS.set(dict(edits))
    try:
        yield
    finally:
        _EDITS.reset(token)


def edit(name: str, tensor: torch.Tensor) -> torch.Tensor:
    """The tensor that flows on from place `name`: `tensor` itself unless an intervention changes it."""
    edits = _EDITS.get()
    if edits is None:
        return tensor
    change = edits.get(name)
    return tensor if change is None else change(tensor)


class Traceable:
    """Mixin giving a model `run_with_trace`, the one way views get a trace."""

    def run_with_trace(self, *args, keep_values: bool = False, **kwargs):
        """Run forward once and return (output, Trace)."""
        with recording(keep_values) as trace, torch.no_grad():
            out = self(*args, **kwargs)
        return out, trace
