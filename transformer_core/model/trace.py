"""The trace: everything one forward pass computed, in one store keyed by module path.

Lesson: "tracing" a model means following each tensor and its shape from input to
output. Modules pass each tensor through a named point (as TransformerLens's hook
points do) and go on with what the point returns:

    q = self.hook("q", q)            # inside the module at path "layers.0.self_attn"
    x = trace.point("logits", x)     # the same, named in full

The point is where a recorded pass is read and where an edited pass is changed:

    logits, run = model.run_with_trace(idx)
    run["layers.0.self_attn.attn"]   # (B, n_head, T, T), detached, float, on the CPU
    run.shapes["layers.0.ff.hidden"] # every point passed has its shape, kept or not
    with editing({"layers.0.ff.out": lambda x: 0 * x}):
        model(idx)                   # runs with that tensor changed, on every path

Names are module paths (`layers.0.self_attn`, as in `model.named_modules()` and the
state dict) plus a part, set once by `name_trace_points`, so no constructor passes
names by hand. When nothing records and nothing is edited, a point costs one
context-variable lookup; context variables also keep concurrent requests apart.
Views are pure functions of a `Trace`; they never recompute model internals.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

import torch
from torch import nn

from .masks import Mask

Edit = Callable[[torch.Tensor], torch.Tensor]
Names = Callable[[str], bool] | Iterable[str] | None


def _viewed(name: str, part: str, stream: bool) -> bool:
    """What a trace keeps by default: what the views draw (weights, residual streams, outputs)."""
    return stream or part == "attn" or name in ("logits", "pooled")


class Trace:
    """One forward pass, recorded: tensor by point name (detached, on the CPU, floats in float32),
    plus the readers the views use.

    names: which points to keep. None: what the views draw (every `.attn`, the residual
    stream after the embedding and after each block, `pooled`, `logits`); the builtin
    `all`: every point; a collection of names, or a predicate on a name.
    """

    def __init__(self, names: Names = None):
        if names is None or names is all:
            self._keeps = None if names is None else (lambda name: True)
        else:
            self._keeps = names if callable(names) else frozenset(names).__contains__
        self._kept: dict[str, torch.Tensor] = {}
        self.shapes: dict[str, tuple[int, ...]] = {}  # every point passed, in the order computed
        self._attn: dict[str, list[str]] = {}  # group -> its layers' `.attn` names
        self._stream: dict[str, list[str]] = {}  # stack -> its residual-stream names
        self._masks: dict[str, Mask] = {}  # group -> the Mask it obeyed

    def _take(self, name: str, part: str, x, group: str, stream: bool) -> None:
        """Record point `name` (its last part `part`, given by the caller: this runs at every point of a pass)."""
        if isinstance(x, Mask):  # the Mask object is kept as is: the Masking tab draws exactly what was applied
            self._masks[group] = x
            x = x.for_heads()
        self.shapes[name] = tuple(x.shape)
        if part == "attn":
            self._attn.setdefault(group, []).append(name)
        if stream:
            self._stream.setdefault(group, []).append(name)
        if _viewed(name, part, stream) if self._keeps is None else self._keeps(name):
            x = x.detach().cpu()
            self._kept[name] = x.float() if x.is_floating_point() else x  # a mask stays bool

    def __getitem__(self, name: str) -> torch.Tensor:
        if name not in self._kept:
            raise KeyError(f"no point {name!r} kept in this trace; kept: {self.names()}")
        return self._kept[name]

    def __contains__(self, name: str) -> bool:
        return name in self._kept

    def names(self) -> list[str]:
        """The points kept, in the order computed."""
        return list(self._kept)

    # --- the readers the views use: thin views over the one store ------------------------

    def attention(self, group: str) -> torch.Tensor:
        """All layers' weights of one group stacked: (n_layer, B, H, Tq, Tk)."""
        if group not in self._attn:
            raise KeyError(f"no attention recorded for {group!r}; recorded groups: {sorted(self._attn)}")
        return torch.stack([self[name] for name in self._attn[group]])

    @property
    def groups(self) -> list[str]:
        """The attention groups recorded: "encoder", "decoder", "cross"."""
        return list(self._attn)

    @property
    def masks(self) -> dict[str, Mask | None]:
        """group -> the Mask its layers applied (None: no mask)."""
        return {group: self._masks.get(group) for group in self._attn}

    @property
    def hidden(self) -> dict[str, list[torch.Tensor]]:
        """stack -> the residual stream (B, T, d_model) per layer; index 0 is the embedding."""
        return {stack: [self[name] for name in names] for stack, names in self._stream.items()}

    @property
    def logits(self) -> torch.Tensor | None:
        return self._kept.get("logits")


@dataclass(frozen=True)
class _Now:
    """What this thread or task is doing with its points: recording into `trace`, applying `edits`."""

    trace: Trace | None
    edits: dict[str, Edit]


_NOW: ContextVar[_Now | None] = ContextVar("transformer_core_trace", default=None)


def _pass(now: _Now, name: str, part: str, x, group: str = "", stream: bool = False):
    edit = now.edits.get(name)
    if edit is not None:
        x = edit(x)
    if now.trace is not None:  # recorded as it flows on: an edited point shows its edit
        now.trace._take(name, part, x, group, stream)
    return x


def point(name: str, x):
    """The tensor that flows on from point `name`: `x`, recorded if a trace records, changed if edited."""
    now = _NOW.get()
    return x if now is None else _pass(now, name, name.rsplit(".", 1)[-1], x)


def active() -> Trace | None:
    """The trace being recorded in this thread or task, if any."""
    now = _NOW.get()
    return None if now is None else now.trace


@contextmanager
def recording(names: Names = None):
    """Record a trace of the forward passes run inside the block (edits in force stay in force)."""
    trace, now = Trace(names), _NOW.get()
    token = _NOW.set(_Now(trace, {} if now is None else now.edits))
    try:
        yield trace
    finally:
        _NOW.reset(token)


@contextmanager
def editing(edits: dict[str, Edit]):
    """Run the forward passes inside the block with `edits[name]` applied to the tensor at point `name`
    (e.g. "layers.0.self_attn.weighted", where a head is switched off). A name no module passes changes
    nothing: callers that take names from people (`analysis.heads.switch_off`) check them first."""
    now = _NOW.get()
    token = _NOW.set(_Now(None if now is None else now.trace, {**(now.edits if now else {}), **edits}))
    try:
        yield
    finally:
        _NOW.reset(token)


def name_trace_points(model: nn.Module, groups: dict[str, str], root: str = "") -> None:
    """Name every module's points by its path in `model` and say which group they belong to.

    groups: path -> "encoder", "decoder" or "cross", for the module at that path and all below it (the
    longest path wins; "" is the whole model). The group says which stack a residual stream belongs to
    and which attention weights `Trace.attention(group)` stacks. `root` names a module traced on its
    own (its path would be empty).
    """
    def within(path: str, prefix: str) -> bool:
        return prefix == "" or path == prefix or path.startswith(prefix + ".")

    by_length = sorted(groups.items(), key=lambda item: -len(item[0]))
    for path, module in model.named_modules():
        module.trace_name = ".".join(p for p in (root, path) if p)
        module.trace_group = next(group for prefix, group in by_length if within(path, prefix))


class TracePoint:
    """Mixin for the modules that pass tensors through points: `self.hook("q", x)` is point "<path>.q"."""

    trace_name = ""  # set by name_trace_points when the model is built
    trace_group = "encoder"
    writes_stream = False  # True where the module's "out" is the residual stream (embeddings, blocks)

    def point_name(self, part: str) -> str:
        return f"{self.trace_name}.{part}" if self.trace_name else part

    def hook(self, part: str, x):
        now = _NOW.get()  # the whole cost when nothing records and nothing is edited
        if now is None:
            return x
        return _pass(now, self.point_name(part), part, x, self.trace_group, self.writes_stream and part == "out")

    def watched(self, *parts: str) -> bool:
        """Whether a trace records, or an edit changes one of `parts`: then the points must be computed."""
        now = _NOW.get()
        return now is not None and (now.trace is not None or any(self.point_name(p) in now.edits for p in parts))


class Traceable(TracePoint):
    """Mixin giving a model `run_with_trace`, the one way views get a trace."""

    def run_with_trace(self, *args, names: Names = None, **kwargs):
        """Run forward once and return (output, Trace); `names` picks what the trace keeps (see Trace)."""
        with recording(names) as trace, torch.no_grad():
            out = self(*args, **kwargs)
        return out, trace
