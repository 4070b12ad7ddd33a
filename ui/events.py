"""What each event of the app gets from the server, declared once: its queue, a GPU, a place among agents' tools.

One table, by endpoint name (the public API's names: they never change). An event without an
api_name (a text box's submit beside the button, a slider's release) calling the same function
gets its endpoint's entry. Every generation shares one queue group: "2 generations at once"
means 2 in the whole app, not 2 per endpoint. Endpoints that need a session's gr.State, or the
app's one training slot, stay callable over HTTP but are not offered to agents (MCP), which
would call them without that state or hold the slot for minutes.
"""

from __future__ import annotations

import functools
import html
import math
from dataclasses import dataclass

import gradio as gr
from gradio import caching

from ui.common import log


@dataclass(frozen=True)
class Serving:
    """What the events of one endpoint get."""

    limit: int = 4  # runs at once (of the group, when there is one)
    group: str | None = None  # events of a group share its limit, app-wide; None: the endpoint's own
    gpu: bool = True  # lent a GPU per call on a ZeroGPU Space (a model runs in it)
    agents: bool = True  # listed as an MCP tool


GENERATION = Serving(2, "generation")  # token-by-token decoding: the slowest model calls
TRAINING = Serving(1, "training", agents=False)  # the machine to itself; one app-wide slot
NEEDS_SESSION = Serving(agents=False)  # reads a gr.State an agent cannot hold
DEFAULT = Serving()  # events no endpoint names: examples, model pickers, re-slicing sliders

ENDPOINTS: dict[str, Serving] = {
    "tokenize": Serving(8, gpu=False),
    "tokens_cost_pair": Serving(8, gpu=False),
    "replay_merges": Serving(4, gpu=False),
    "bpe_from_scratch": Serving(4, gpu=False),
    "bpe_step": Serving(4, gpu=False),
    # 16 at once: requests for one model that run together share a forward pass (lab/batching.py), so more
    # of them in flight make larger, fewer passes; 100 own sentences cost the app 25-30% less CPU than with 4
    "attention": Serving(16),
    "attention_generate": GENERATION,
    # what a head does: find_head re-slices a cached run; importance runs batched forward passes
    "find_head": Serving(8),
    "ablate": Serving(4),
    "importance": Serving(2),
    "logit_lens": Serving(4),
    "head_roles": Serving(4),
    "masking": Serving(4),
    "cheating": GENERATION,
    "generate": GENERATION,
    "generate_step": Serving(2, "generation", agents=False),
    "generate_inspect": NEEDS_SESSION,
    "generate_temperatures": GENERATION,
    "classify": Serving(16),  # as attention: its passes are shared
    "classify_sentence": Serving(4),  # a long review's verdict again (cached) and one sentence's tokens
    "classify_compare": Serving(4),
    "translate": Serving(2),
    "translate_train": TRAINING,
    "translate_fresh": NEEDS_SESSION,
    "translate_lengths": Serving(4),
    **{name: Serving(4) for name in ("concepts_weighted_average", "concepts_scaling", "concepts_order",
                                     "concepts_positions", "concepts_parameters", "concepts_trace")},
}


def queue_settings(endpoint: str | None, event_id: str) -> dict:
    """The `concurrency_limit` / `concurrency_id` keywords of an event that runs `endpoint`'s function."""
    serving = ENDPOINTS.get(endpoint or "", DEFAULT)
    return dict(concurrency_limit=serving.limit, concurrency_id=serving.group or event_id)


def gpu_decorator():
    """`spaces.GPU` on a ZeroGPU Space (the `spaces` package is importable), else a no-op."""
    try:
        import spaces
    except ImportError:
        return lambda fn: fn
    return spaces.GPU


def on_gpu(fn, gpu=None):
    """`fn` lent a GPU per call, keeping its `.cache` (Gradio answers a cache hit outside the queue only then)."""
    wrapped = (gpu or gpu_decorator())(fn)
    if wrapped is not fn and hasattr(fn, "cache"):
        wrapped.cache = fn.cache
    return wrapped


def _endpoint_of(demo: gr.Blocks) -> dict[int, str]:
    """id(event function) -> the public endpoint that calls it."""
    return {id(fn.fn): fn.api_name for fn in demo.fns.values() if fn.api_visibility == "public"}


def serve(demo: gr.Blocks) -> None:
    """Give every tab event what ENDPOINTS declares for it (an explicit limit set at wiring is kept).

    A public endpoint missing from the table is an error: a new endpoint must say what it gets.
    """
    endpoints = _endpoint_of(demo)
    missing = set(endpoints.values()) - set(ENDPOINTS)
    if missing:
        raise KeyError(f"ui/events.ENDPOINTS does not declare {sorted(missing)}")
    gpu = gpu_decorator()
    for fn in list(demo.fns.values()):
        if fn.fn is None:
            continue
        endpoint = endpoints.get(id(fn.fn))
        serving = ENDPOINTS.get(endpoint or "", DEFAULT)
        if fn.concurrency_limit == "default":
            fn.concurrency_limit = serving.limit
            fn.concurrency_id = serving.group or fn.concurrency_id
        if fn.api_visibility == "public" and not serving.agents:
            fn.api_visibility = "undocumented"  # callable by clients, not listed (docs, MCP)
        if serving.gpu:
            fn.fn = on_gpu(fn.fn, gpu)
        for component in fn.inputs:
            _guard(component)


def integer_choices(component) -> None:
    """Publish a picker whose choices are all whole numbers with an integer type: Gradio's own schema says
    "string" with an integer enum, which no agent can satisfy."""
    values = [value for _, value in component.choices]
    if values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        component.api_info = lambda: {"type": "integer", "enum": [value for _, value in component.choices]}


class _NotCached(caching.CacheMissError, gr.Error):
    """A probe's miss raised while preprocessing: Gradio passes its own Error type through preprocessing
    unwrapped, and its queue takes a CacheMissError as "queue the request as usual"."""


def _guard(component) -> None:
    """A value a component cannot take (a list for a dropdown, 1e400 for a slider) answers with a clear
    message, and while Gradio's queue only asks for a cached answer it means "not cached" (the request
    is then queued and answered with that message), never an HTTP 500."""
    if getattr(component, "_guarded", False) or not hasattr(component, "preprocess"):
        return
    if isinstance(component, (gr.Dropdown, gr.Radio)):
        integer_choices(component)
    preprocess = component.preprocess

    @functools.wraps(preprocess)
    def checked(payload):
        if isinstance(payload, float) and not math.isfinite(payload) and isinstance(component, (gr.Slider, gr.Number)):
            error: Exception = ValueError(f"{payload} is not a finite number")
        else:
            try:
                return preprocess(payload)
            except Exception as e:  # noqa: BLE001 -- any refusal of a component is the client's input
                error = e
        if caching._probe_mode_active.get():
            raise _NotCached("not cached")
        name = component.label or type(component).__name__
        shown = str(error) if len(str(error)) < 300 else str(error)[:300] + "…"
        log.warning("input refused by %s: %s", name, shown.encode("unicode_escape", "backslashreplace").decode("ascii"))
        raise gr.Error(html.escape(f"{name}: this value cannot be used ({shown}).", quote=False), print_exception=False)

    component.preprocess = checked
    component._guarded = True
