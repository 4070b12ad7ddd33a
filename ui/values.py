"""What each kind of input takes from a client, checked before Gradio reads the value (issue 61).

The page sends each input a value of its kind; an API or MCP client can send anything. Gradio's own
reading lets some wrong kinds through to the handler: a list of offered choices for a one-choice
picker, a list or a 2 MB text for a checkbox. There they failed at the queue's door (an unhashable
cache key: HTTP 500) or inside the handler (an error with no message). So a value is first held to
the JSON type its input's schema states (`component.api_info()`, what the API page and the MCP tool
list tell a client), and only then read by Gradio: a wrong kind is refused like any value the input
cannot take (ui/events._guard says which input and what it takes).
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import gradio as gr

from lab import models
from lab.attention import MAX_NEW_TOKENS
from lab.masking import MAX_TOKENS as MAX_MASKED_TOKENS
from lab.policy import MAX_DRAWN_TOKENS

CHOICE = (str, int, float)  # one choice of a picker: its value (pickers of whole numbers have int choices)


def wrong_kind(component, payload) -> str | None:
    """Why `payload` is not of the kind `component` takes (English, for the log), or None when it is. None (no
    value) is every input's to judge; a gr.State is the server's own and takes anything."""
    if payload is None or isinstance(component, gr.State):
        return None
    if isinstance(component, gr.Checkbox):
        return None if isinstance(payload, bool) else f"a checkbox takes true or false, not {_kind(payload)}"
    if isinstance(component, (gr.Slider, gr.Number)):
        if not _number(payload):
            return f"takes a number, not {_kind(payload)}"
        finite = not isinstance(payload, float) or math.isfinite(payload)  # an int of 400 digits is no float
        return None if finite else f"{payload} is not a finite number"
    if isinstance(component, gr.CheckboxGroup) or getattr(component, "multiselect", False):
        if isinstance(payload, list) and all(_choice(v) for v in payload):
            return None
        return f"takes a list of choices, not {_kind(payload)}"
    if isinstance(component, (gr.Dropdown, gr.Radio)):
        return None if _choice(payload) else f"takes one choice, not {_kind(payload)}"
    if isinstance(component, (gr.Textbox, gr.Code)):
        return None if isinstance(payload, str) else f"takes a text, not {_kind(payload)}"
    return None  # other kinds: their own preprocess judges


# The position sliders a run sizes in its view's answer, by elem_id, each with the last position its view ever draws
# (the slider's built end): narrowed to the run's positions once drawn
SIZED_BY_RUN = {"forward-follow": MAX_DRAWN_TOKENS - 1, "query_token": MAX_DRAWN_TOKENS - 1,
                "position_for_the_top_5_guesses": MAX_MASKED_TOKENS - 1, "step": MAX_NEW_TOKENS - 1}


# The layer and head sliders a picked model sizes (ui/handlers.model_changed), by elem_id: 0 a layer, 1 a head
SIZED_BY_MODEL = {"layer": 0, "head": 1, "forward-layer": 0, "forward-head": 1}


def as_built(component):
    """What a component's input is judged by: a position slider a run sized (SIZED_BY_RUN) by the range it was built
    with, not the last run's. The next text may be longer than the last one (an API client's next call, a lecture
    step that starts several events at once, a person who types a longer text): its position is the view's to draw,
    clamped with a notice past the text's end, and the answer sizes the slider again. A layer or head slider a
    picked model sized (SIZED_BY_MODEL), by the largest model offered: a lecture step that changes the model starts
    its view beside the resize, and the view's request may carry the last model's layer (11 of multilingual-e5's
    12) after the next model's 6 narrowed the slider; the view clamps it with a notice. Other components as they
    are."""
    if isinstance(component, gr.Slider) and component.elem_id in SIZED_BY_MODEL:
        return SimpleNamespace(minimum=component.minimum, maximum=models.largest_sizes()[SIZED_BY_MODEL[
            component.elem_id]], precision=component.precision)
    end = SIZED_BY_RUN.get(component.elem_id) if isinstance(component, gr.Slider) else None
    if end is None:
        return component
    return SimpleNamespace(minimum=component.minimum, maximum=end, precision=component.precision)


def reason_id(component) -> str | None:
    """The catalogue id of what a kind of input takes, for the kinds whose refusal is about the value's type
    (pickers and numbers say it with their choices and range, ui/events._reason)."""
    if isinstance(component, gr.Checkbox):
        return "common.value_refused.boolean"
    if isinstance(component, (gr.Textbox, gr.Code)):
        return "common.value_refused.text"
    return None


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _choice(value) -> bool:
    return isinstance(value, CHOICE) and not isinstance(value, bool)


def _kind(value) -> str:
    """The JSON kind of a value, as a client sent it."""
    if isinstance(value, bool):
        return "true/false"
    return {str: "a text", list: "a list", dict: "an object", int: "a number", float: "a number"}.get(
        type(value), type(value).__name__)
