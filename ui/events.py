"""What each event of the app gets from the server, declared once: its queue, a GPU, a place among agents' tools.

One table, by endpoint name (the public API's names: they never change), applied where an event is
wired: every tab wires with `events.on(button.click, fn, inputs, outputs, api_name=...)`. An event
without an api_name (a text box's submit beside the button, a slider's release) calling the same
function gets its endpoint's entry. Every generation shares one queue group: "2 generations at once"
means 2 in the whole app, not 2 per endpoint. Endpoints that need a session's gr.State, or the
app's one training slot, stay callable over HTTP but are not offered to agents (MCP), which
would call them without that state or hold the slot for minutes."""

from __future__ import annotations

import contextlib
import functools
import weakref
from dataclasses import dataclass

import gradio as gr

from lab import live
from ui import admission
from ui.gradio_patches import guard


@dataclass(frozen=True)
class Serving:
    """What the events of one endpoint get."""

    limit: int = 4  # runs at once (of the group, when there is one)
    group: str | None = None  # events of a group share its limit, app-wide; None: the endpoint's own
    gpu: bool = True  # lent a GPU per call on a ZeroGPU Space (a model runs in it)
    agents: bool = True  # listed as an MCP tool
    admits: int | None = None  # jobs the group holds at once, running and waiting (None: ui/admission.GROUP_JOBS)
    # jobs of the group one session holds at once, running and waiting (None: ui/admission.SESSION_JOBS); 1 for a
    # model whose every call holds a core for seconds, so one visitor's tabs cannot take them all
    session_jobs: int | None = None


GENERATION = Serving(2, "generation")  # token-by-token decoding: the slowest model calls
# a real LLM's generation (~0.05-0.1 s of a core a token): one at a time in the whole app, in a queue of its own,
# so the small models' generations never wait behind it (lab/llms.lane keeps every other path to one as well)
LLM = Serving(1, "llm", session_jobs=1)
# the machine to itself; one app-wide slot, and one run waiting for it: the next hears "busy, try again in N s"
TRAINING = Serving(1, "training", agents=False, admits=2)
NEEDS_SESSION = Serving(agents=False)  # reads a gr.State an agent cannot hold
DEFAULT = Serving()  # events no endpoint names: examples, model pickers, re-slicing sliders

ENDPOINTS: dict[str, Serving] = {
    "tokenize": Serving(8, gpu=False),
    "tokens_cost_pair": Serving(8, gpu=False),
    "replay_merges": Serving(4, gpu=False),
    "bpe_from_scratch": Serving(4, gpu=False),
    "bpe_step": Serving(4, gpu=False),
    # 16 at once: requests for one model that run together share a forward pass (lab/cache.Batcher), so more
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
    "generate_llm": LLM,
    # the "Inside an LLM" experiments read a real LLM's whole pass, some twice: one at a time in the app, a job a
    # session; a head of a flow already computed is read from the cached run
    **{name: Serving(1, "llm_views", session_jobs=1) for name in ("inside_flow", "inside_rotary", "inside_kv",
                                                                  "inside_sink", "inside_norms", "inside_reach")},
    "inside_flow_head": Serving(4),
    "generate_llm_step": Serving(1, "llm", agents=False, session_jobs=1),
    "generate_inspect": NEEDS_SESSION,
    "generate_temperatures": GENERATION,
    "classify": Serving(32),  # its passes are shared: 32 running keep a full batch waiting while one pass runs
    "classify_sentence": Serving(4),  # a long review's verdict again (cached) and one sentence's tokens
    "classify_compare": Serving(4),
    "translate": Serving(2),
    "translate_train": TRAINING,
    "translate_fresh": NEEDS_SESSION,
    "translate_lengths": Serving(4),
    # a stage re-slices the walk a text's first stage ran once (lab/forward.py)
    "forward_stage": Serving(8),
    # a dictionary read or write each (ui/questions.py): no model, no GPU. Joining is answered outside the
    # queue; an answer is queued in a group of its own (a hall of 100 at once), because outside the queue a
    # refused value (a list for a choice) is an HTTP 500
    "question_join": Serving(gpu=False, agents=False),
    "question_answer": Serving(32, gpu=False, agents=False),
    **{name: Serving(4) for name in ("concepts_weighted_average", "concepts_scaling", "concepts_order",
                                     "concepts_positions", "concepts_parameters", "concepts_trace")},
}


def queue_settings(endpoint: str | None, event_id: str) -> dict:
    """The `concurrency_limit` / `concurrency_id` keywords of an event that runs `endpoint`'s function."""
    serving = ENDPOINTS.get(endpoint or "", DEFAULT)
    return dict(concurrency_limit=serving.limit, concurrency_id=serving.group or event_id)


def admits(group: str) -> int | None:
    """The jobs concurrency group `group` holds at once (ui/admission.py), None for the default."""
    return next((s.admits for s in ENDPOINTS.values() if s.group == group and s.admits is not None), None)


def session_jobs(group: str) -> int | None:
    """The jobs of concurrency group `group` one session holds at once (ui/admission.py), None for the default."""
    return next((s.session_jobs for s in ENDPOINTS.values() if s.group == group and s.session_jobs is not None), None)


def seconds_until_free(group: str) -> float:
    """At most how long until a full group `group` takes a job again: for live training, what the running
    run has left plus the whole budget of the one waiting."""
    if group == TRAINING.group:
        return live.seconds_until_free() + live.SECONDS[1] + live.SEND_BACK_S
    return 0.0


def threads_needed(demo: gr.Blocks) -> int:
    """Threads for every queued group of `demo` to run its whole limit at once (Blocks.launch's max_threads):
    Gradio's default of 40, shared by all groups, let reviews and attention fill it and tokenize wait."""
    limits: dict[str, int] = {}
    for fn in demo.fns.values():
        if fn.queue is not False and isinstance(fn.concurrency_limit, int):
            limits[fn.concurrency_id] = max(limits.get(fn.concurrency_id, 0), fn.concurrency_limit)
    return max(sum(limits.values()), 40)


def gpu_decorator():
    """`spaces.GPU` on a ZeroGPU Space (the `spaces` package is importable), else a no-op."""
    try:
        import spaces
    except ImportError:
        return lambda fn: fn
    return spaces.GPU


def on_gpu(fn):
    """`fn` lent a GPU per call, keeping its `.cache` (Gradio answers a cache hit outside the queue only then)."""
    wrapped = gpu_decorator()(fn)
    if wrapped is not fn and hasattr(fn, "cache"):
        wrapped.cache = fn.cache
    return wrapped


_endpoint_running: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # function -> its public endpoint


def _endpoint_of(fn) -> str | None:
    """The public endpoint wired to run `fn`, or the function it wraps (`handlers.when_typed`), if any (a bound
    method or a builtin is never one)."""
    for f in (fn, getattr(fn, "__wrapped__", None)):
        with contextlib.suppress(TypeError):  # not weakly referenceable
            if (name := _endpoint_running.get(f)) is not None:
                return name
    return None


def on(trigger, fn, inputs=None, outputs=None, *, api_name=None, reslice=False, **options):
    """Wire `fn` to `trigger` (`button.click`, `box.submit`, `dependency.then`, a list of those for `gr.on`,
    or None: an endpoint with no trigger) with what ENDPOINTS declares for it, and return the dependency.

    `reslice`: the event re-slices a run its view has computed already (a slider, a stage of a walk): it is
    answered outside the queue in one round trip, counted at the unqueued door (ui/admission.unqueued).

    A public event must be declared in ENDPOINTS (KeyError otherwise: a new endpoint must say what it
    gets); an event without an endpoint name gets the entry of the endpoint that runs the same function,
    else DEFAULT. It gets that entry's queue limit and group (a `concurrency_limit` given here is kept),
    its place among agents' tools, a GPU per call, and inputs that refuse what they cannot take.
    """
    public = api_name is not False and options.get("api_visibility", "public") == "public"
    if public and api_name not in ENDPOINTS:
        raise KeyError(f"ui/events.ENDPOINTS does not declare {api_name!r}")
    serving = ENDPOINTS[api_name] if public else ENDPOINTS.get(_endpoint_of(fn) or "", DEFAULT)
    if public:
        with contextlib.suppress(TypeError):  # a function not weakly referenceable cannot have twins found
            _endpoint_running[fn] = api_name
        if not serving.agents:
            options["api_visibility"] = "undocumented"  # callable by clients, not listed (docs, MCP)
    options.setdefault("concurrency_id", str(id(fn)))  # Gradio's own default: one queue per function
    if "concurrency_limit" not in options:
        options["concurrency_limit"] = serving.limit
        options["concurrency_id"] = serving.group or options["concurrency_id"]
    for component in _components(inputs):
        guard(component)
    if reslice:
        fn, options["queue"] = admission.unqueued(fn, len(_components(inputs))), False
    wire = trigger if callable(trigger) else functools.partial(gr.on, trigger)
    dependency = wire(on_gpu(fn) if serving.gpu else fn, inputs, outputs, api_name=api_name, **options)
    clear_on_failure(dependency, outputs)
    return dependency


# What an event shows as its result, and nothing else reads: cleared when the event fails
RESULTS = (gr.Plot, gr.Markdown, gr.HTML, gr.HighlightedText, gr.Label)


def clear_on_failure(dependency, outputs) -> None:
    """When `dependency` fails (a refused input: its toast says why), its results on screen are cleared, not
    left standing under the error badges as if they were the answer: a previous model's figures, a note
    counting another model's heads. Inputs among the outputs (a slider's range) are left as they are."""
    results = [c for c in _components(outputs) if isinstance(c, RESULTS)]
    if results:
        dependency.failure(lambda: None if len(results) == 1 else (None,) * len(results), None, results,
                           queue=False, api_visibility="private", show_progress="hidden")


def _components(inputs) -> list:
    if inputs is None:
        return []
    return list(inputs) if isinstance(inputs, (list, tuple, set)) else [inputs]


# The end of a page script that listens to plots (gr.Plot has no click event: plotly's own is listened to on each
# plot as it is drawn): the script's `listen` runs now, and again after each change of the page, once a frame at most
LISTEN_AS_DRAWN = """  let pending = false;
  new MutationObserver(() => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => { pending = false; listen(); });
  }).observe(document.documentElement, {childList: true, subtree: true});
  listen();
})();"""


# Every example of a set on one page (the longest has 17): Gradio writes its page numbers ("Pages: 1 2") in
# English in every locale, and a student looking for the lecture's example should not have to turn pages
EXAMPLES_PER_PAGE = 100


def examples(*args, **kwargs) -> gr.Examples:
    """`gr.Examples` on one page, whose sample picker refuses an index it does not hold with a message (its own
    event only fills the inputs, unqueued: it runs no model and needs no GPU)."""
    made = gr.Examples(*args, **{"examples_per_page": EXAMPLES_PER_PAGE, **kwargs})
    guard(made.dataset)
    return made


def show_progress_once(demo: gr.Blocks) -> None:
    """Each event of `demo` shows that it runs on one component: its first figure, else its first result, else its
    first output (one it names itself is kept); an event whose progress is hidden, on none. Set here, after the
    tabs have wired their events, through Gradio's public event option `show_progress_on`.

    Gradio's page refreshes, at every status message of any event, the status of every component an event has
    ever shown progress on, finding each in the page's tree and copying its whole value to do so (gradio/templates/
    frontend, Blocks: `update_loading_stati_state`, over `loading_stati.current`). With progress on every output
    (Gradio's default), each view the page had drawn, figures and all, was copied again at every later click: the
    page grew slower the longer it was used, a lecture's later steps most (benchmarks/lecture_walk.py)."""
    for fn in demo.fns.values():
        if fn.show_progress == "hidden":
            fn.show_progress_on = []
        elif fn.show_progress_on is None:
            outputs = list(fn.outputs)
            figures = [c for c in outputs if isinstance(c, gr.Plot)]
            fn.show_progress_on = (figures or [c for c in outputs if isinstance(c, RESULTS)] or outputs)[:1]


def check_declared(demo: gr.Blocks) -> None:
    """KeyError if a public endpoint of `demo` is missing from ENDPOINTS: one wired around `on`."""
    public = {fn.api_name for fn in demo.fns.values() if fn.api_visibility == "public"}
    if missing := public - set(ENDPOINTS):
        raise KeyError(f"ui/events.ENDPOINTS does not declare {sorted(missing)}")
