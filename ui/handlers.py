"""What every tab's adapters share: a use case's InputError as a message on screen, and one cache of
each deterministic view's outputs (computed once for everyone, kept encoded as Gradio sends them).

(Figures export their own numbers: see the JSON button `app.py` adds to every plot's toolbar.)
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import html
import inspect
import logging
import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass

import gradio as gr
import plotly.graph_objects as go
import plotly.io as pio
from gradio import caching
from gradio.components.plot import PlotData

from i18n import DEFAULT, Joined, Message, render, t
from lab import InputError, models
from lab.policy import MAX_CHARS
from lab.cache import RunCache
from ui.gradio_patches import probing
from views.kit import Figure

log = logging.getLogger("transformer_lab")

CACHE_SIZE = 64  # outputs kept per cached handler (and at most lab.cache.MAX_BYTES of them)


MESSAGE_CHARS = 300  # the longest message a refusal shows: each quotes a value briefly (lab.policy.quoted)


def user_error(e: Exception, lang: str | None = DEFAULT) -> gr.Error:
    """A gr.Error in the reader's language with the message escaped (it may quote the person's own text) and
    one log line, no traceback: a refused input is the app working as meant, not a fault to debug. A message
    longer than MESSAGE_CHARS is cut there, and the log says so: one of its parts was not quoted briefly."""
    log.warning("input refused: %s", str(e).encode("unicode_escape", "backslashreplace").decode("ascii")[:300])
    message = e.args[0] if e.args else ""
    shown = render(message, lang) if isinstance(message, (Message, Joined)) else str(e)
    if len(shown) > MESSAGE_CHARS:
        log.warning("a refusal of %d characters was cut to %d", len(shown), MESSAGE_CHARS)
        shown = shown[:MESSAGE_CHARS - 1] + "…"
    return gr.Error(html.escape(shown, quote=False), title=t("common.error_title", lang), print_exception=False)


def server_error(fn, lang: str | None = DEFAULT) -> gr.Error:
    """What a person hears when handler `fn` failed on something no refusal foresaw (a bug, or a value no
    check knew): a message that says so, not Gradio's empty one; the traceback goes to the log."""
    log.exception("%s failed", getattr(fn, "__qualname__", fn))
    return gr.Error(t("common.server_failed", lang), title=t("common.error_title", lang), print_exception=False)


@dataclass(frozen=True)
class Action:
    """A tab's main action: what a link, a lecture step or the tab's main button runs."""

    fn: Callable
    inputs: list
    outputs: list
    api_name: str
    # other parts of the tab that are always on screen, as (fn, inputs, outputs): the page's language
    # redraws them too, when it is set and when it is switched
    also: tuple = ()


def model_changed(model: str, layer: float, head: float):
    """A newly picked model: its tab's layer and head sliders sized to it, the values kept where they still fit."""
    sizes = models.slider_sizes(model, layer, head)
    if sizes is None:  # an unreadable or unreachable model is reported when it is run
        return gr.Slider(), gr.Slider()
    (top_layer, layer), (top_head, head) = sizes
    return gr.Slider(maximum=max(1, top_layer), value=layer), gr.Slider(maximum=max(1, top_head), value=head)


def positions_slider(n: int, asked, drawn: int) -> dict:
    """A position slider spanning the n positions of the run just drawn, so it never offers a token past the text's
    end, sent in the view's own answer as an update (what Gradio makes of a returned component anyway). The value
    is sent only when the view drew another position than the one asked (past the text's end, or none asked): a
    position the person set while the answer travelled is kept."""
    last = max(1, n - 1)
    return gr.update(maximum=last) if asked == drawn else gr.update(maximum=last, value=drawn)


def when_typed(fn, n_outputs: int):
    """`fn` for the events that run a tab nobody pressed the button of: a link, a lecture step, the language
    switch, a picker, a section opened. While the text (the first input) is empty the view stays as it is and
    no error shows: a student who switches the page to Chinese before typing has done nothing wrong. The
    button and Enter still ask for a text."""
    @functools.wraps(fn)
    def run(text, *args, **kwargs):
        if not (text or "").strip():
            return gr.skip() if n_outputs == 1 else tuple(gr.skip() for _ in range(n_outputs))
        return fn(text, *args, **kwargs)

    if hasattr(fn, "cache"):  # a cache hit is still answered outside the queue
        run.cache = fn.cache
    return run


def _serialized(output):
    """The outputs with every Plotly figure turned into the JSON Gradio sends (its PlotData), so a cached
    answer is encoded once, not once per person: re-encoding was 80% of a cached answer's cost."""
    if isinstance(output, tuple):
        return tuple(_serialized(value) for value in output)
    if isinstance(output, Figure):
        return PlotData(type="plotly", plot=output.to_json())
    if isinstance(output, go.Figure):
        return PlotData(type="plotly", plot=pio.to_json(output, validate=False))  # the views built it valid
    return output


def _key_part(value):
    """An input as it enters a cache key: a text longer than any tab reads (MAX_CHARS) is kept as
    what the model reads, its first MAX_CHARS characters, plus its length and SHA-256 (the notice
    quotes its length; the digest tells two long texts apart), so a key never pins megabytes."""
    if isinstance(value, str) and len(value) > MAX_CHARS:
        digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).digest()
        return value[:MAX_CHARS], len(value), digest
    return value


def cached(fn=None, *, depends: Callable[[], Hashable] | None = None):
    """Compute a deterministic handler once per distinct input, for everyone.

    Keyed by every input (the seed too: every request has one; see `_key_part` for long texts).
    Concurrent equal requests share one computation, and a hit skips Gradio's queue: the queue
    asks a function for a cached answer first when it has a `.cache` attribute (Gradio 6.31,
    queueing.py). A cached stream (generation) answers with its finished output only: replaying
    every token to each person of a lecture hall cost more than computing it. Figures are kept
    encoded (`_serialized`).

    `depends`: what else the answer depends on, read at each call; a change of it is a new key (the real LLMs
    not made yet, for a view that draws another model in their place until they are).
    """
    if fn is None:
        return functools.partial(cached, depends=depends)
    results = RunCache(CACHE_SIZE)

    def key(args, kwargs):
        inputs = tuple(map(_key_part, args)), tuple(sorted((k, _key_part(v)) for k, v in kwargs.items()))
        return inputs if depends is None else (*inputs, depends())

    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def stream(*args, **kwargs):
            if probing() and not results.holds(key(args, kwargs)):
                raise caching.CacheMissError()
            yield from results.stream(key(args, kwargs), lambda: map(_serialized, fn(*args, **kwargs)))
        stream.cache = results
        return stream

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if probing() and not results.holds(key(args, kwargs)):
            raise caching.CacheMissError()
        return results.get(key(args, kwargs), lambda: _serialized(fn(*args, **kwargs)))
    call.cache = results
    return call


_running = [0]  # handler calls in progress, in every session (a streamed one until its last update)
_running_lock = threading.Lock()


@contextlib.contextmanager
def _counted():
    with _running_lock:
        _running[0] += 1
    try:
        yield
    finally:
        with _running_lock:
            _running[0] -= 1


def running() -> int:
    """How many handler calls are in progress now (a real LLM's generation gives way to them: lab/llms.py)."""
    return _running[0]


# what a handler raises that Gradio itself reads: a message already made, and a cache probe's miss (`cached`)
PASSED_ON = (gr.Error, caching.CacheMissError)


def handler(fn):
    """Wrap a tab handler (a function or a generator) so InputError reaches the person as gr.Error, in the
    language of the handler's `lang` argument, and any other failure as a message that says so."""
    signature = inspect.signature(fn)

    def lang_of(args, kwargs) -> str:
        if "lang" not in signature.parameters:
            return DEFAULT
        return signature.bind_partial(*args, **kwargs).arguments.get("lang", DEFAULT)

    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def stream(*args, **kwargs):
            try:
                with _counted():
                    yield from fn(*args, **kwargs)
            except InputError as e:
                raise user_error(e, lang_of(args, kwargs)) from None
            except PASSED_ON:
                raise
            except Exception:  # noqa: BLE001 -- said and logged, never an empty message
                raise server_error(fn, lang_of(args, kwargs)) from None
        return stream

    @functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            with _counted():
                return fn(*args, **kwargs)
        except InputError as e:
            raise user_error(e, lang_of(args, kwargs)) from None
        except PASSED_ON:
            raise
        except Exception:  # noqa: BLE001 -- said and logged, never an empty message
            raise server_error(fn, lang_of(args, kwargs)) from None
    return call
