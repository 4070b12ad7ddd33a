"""The public door, unit by unit: link values, refusals in every kind of session (issue 49)."""

from __future__ import annotations

import json

import gradio as gr
import orjson
import pytest

from ui import events, state
from ui.i18n import text as _


def test_a_link_number_past_an_integer_bound_is_clamped_on_python_311():
    # a bound given as an int made the clamped value an int, and int.is_integer() is new in Python 3.12
    assert state.coerce(gr.Slider(1, 256, step=1), "500") == 256
    assert state.coerce(gr.Slider(0, 11, step=1), "9") == 9
    assert state.coerce(gr.Slider(0, 11, step=1), "-3") == 0
    assert state.coerce(gr.Slider(0.0, 2.0, step=0.05), "7") == 2


def test_a_huge_seed_in_a_link_stays_a_number_the_page_can_carry():
    seed = state.coerce(gr.Number(0, precision=0), "1e30")
    orjson.dumps(seed)  # Gradio's encoder: an int past 64 bits raised here, a 500 for the page
    assert isinstance(seed, int) and 2**32 < seed <= 2**53
    assert json.loads(json.dumps(seed)) == seed


def _wired():
    with gr.Blocks():
        slider, picker, out = gr.Slider(0, 10, label=_("setting.seed")), gr.Dropdown(["a", "b"]), gr.Textbox()
        events.on(slider.release, lambda value, choice: value, [slider, picker], out, api_name=False)
    return slider, picker


def test_a_sessions_own_copy_of_an_updated_input_refuses_a_bad_value_with_a_message():
    # Gradio rebuilds an input a session's event updated (a slider's maximum) as block.__class__(**kwargs) and
    # preprocesses that session's values with the copy: the guard on the app's instance alone was lost there
    slider, picker = _wired()
    for component, bad in ((slider, ["a", "list"]), (picker, "bogus")):
        copy = type(component)(**{**component.constructor_args, "render": False})
        with pytest.raises(gr.Error, match="cannot be used"):
            copy.preprocess(bad)


def test_a_refusal_names_the_input_by_its_label_not_by_a_catalogue_marker():
    slider, _picker = _wired()
    with pytest.raises(gr.Error) as refused:
        slider.preprocess(["a", "list"])
    assert "__i18n__" not in str(refused.value) and "translation_metadata" not in str(refused.value)
    assert refused.value.message.startswith("Seed:")


def test_a_refusal_quoting_an_integer_of_5000_digits_still_says_what_was_wrong():
    class Quoting(Exception):
        def __str__(self):
            return str(10**5000)  # ValueError: Python will not write an int of over 4,300 digits

    assert events._shortened(Quoting()) == "Quoting"
    assert len(events._shortened(ValueError("x" * 10_000_000))) <= events.SHOWN_CHARS + 1
