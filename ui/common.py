"""What every tab's adapters share: turning a use case's InputError into a message on screen.

(Figures export their own numbers: see the JSON button `app.py` adds to every plot's toolbar.)
"""

from __future__ import annotations

import functools
import html
import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass

import gradio as gr

from lab import InputError

log = logging.getLogger("transformer_lab")

CACHE_SIZE = 64  # outputs kept per cached handler
_stores: list = []


def user_error(e: Exception) -> gr.Error:
    """A gr.Error with the message escaped (it may quote the person's own text) and one log line, no traceback:
    a refused input is the app working as meant, not a fault to debug."""
    log.warning("input refused: %s", str(e).encode("unicode_escape", "backslashreplace").decode("ascii")[:300])
    return gr.Error(html.escape(str(e), quote=False), print_exception=False)


@dataclass(frozen=True)
class View:
    """A tab's main action: what a link, a lecture step or the tab's main button runs."""

    fn: Callable
    inputs: list
    outputs: list
    api_name: str


def cached(fn):
    """Gradio's own cache in front of a deterministic handler: keyed by every input (the seed too), a hit
    skips the queue, so a lecture hall opening one link computes it once (lab's run caches sit behind)."""
    wrapper = gr.cache(max_size=CACHE_SIZE)(fn)
    _stores.extend(cell.cell_contents for cell in wrapper.__closure__ or ()
                   if type(cell.cell_contents).__name__ == "_CacheStore")
    return wrapper


def clear_caches() -> None:
    """Forget every cached output (tests that swap models must not see another test's figures)."""
    for store in _stores:
        store.clear()


def handler(fn):
    """Wrap a tab handler (a function or a generator) so InputError reaches the person as gr.Error."""
    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def stream(*args, **kwargs):
            try:
                yield from fn(*args, **kwargs)
            except InputError as e:
                raise user_error(e) from None
        return stream

    @functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except InputError as e:
            raise user_error(e) from None
    return call
