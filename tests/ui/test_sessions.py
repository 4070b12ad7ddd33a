"""Lazy sessions: a new visitor costs the server no config rendering, and Gradio sees the same session."""

import gradio as gr
import pytest
from gradio.state_holder import SessionState

from ui import gradio_patches


@pytest.fixture(scope="module")
def demo():
    with gr.Blocks() as demo:
        with gr.Row():
            text = gr.Textbox("hello", label="Text")
            n = gr.Slider(1, 8, value=3, step=1, label="n")
        gr.Plot(label="Plot")
        gr.Markdown("**notes**")
        gr.State([1, 2])
        text.submit(lambda t, k: t * k, [text, n], text)
    return demo


def _session(demo, init) -> SessionState:
    state = SessionState.__new__(SessionState)
    init(state, demo)
    return state


def _configs(state: SessionState) -> dict:
    return {config["id"]: config for config in state.components}


def test_a_lazy_session_holds_what_gradios_own_constructor_makes(demo):
    eager, lazy = _session(demo, gradio_patches.EAGER_INIT), _session(demo, gradio_patches._lazy_init)
    assert vars(eager).keys() - {"config_values"} <= vars(lazy).keys()  # no attribute of Gradio's is missing
    assert lazy.STATE_TTL_WHEN_CLOSED == eager.STATE_TTL_WHEN_CLOSED
    assert _configs(lazy) == _configs(eager) and len(_configs(eager)) == len(demo.blocks)


def test_a_lazy_session_renders_no_config_until_gradio_asks_and_then_only_the_blocks_asked(demo):
    lazy, eager = _session(demo, gradio_patches._lazy_init), _session(demo, gradio_patches.EAGER_INIT)
    assert dict.__len__(lazy.config_values) == 0
    text = next(b for b in demo.blocks.values() if isinstance(b, gr.Textbox))
    for state in (lazy, eager):  # what a request does with its inputs and outputs
        state._update_value_in_config(text._id, "hello hello hello")
    assert dict.__len__(lazy.config_values) == 1
    assert lazy.config_values[text._id] == eager.config_values[text._id]
    assert _configs(lazy)[text._id]["props"]["value"] == "hello hello hello"
    assert _configs(lazy) == _configs(eager)
    assert -1 not in lazy.config_values and lazy.config_values.get(-1) is None


def test_an_updated_block_is_rendered_from_the_sessions_own_copy(demo):
    lazy, eager = _session(demo, gradio_patches._lazy_init), _session(demo, gradio_patches.EAGER_INIT)
    slider = next(b for b in demo.blocks.values() if isinstance(b, gr.Slider))
    for state in (lazy, eager):  # what Gradio does with a gr.update(maximum=12) for the slider
        state[slider._id] = gr.Slider(1, 12, value=9, step=1, label="n", render=False)
        state._update_config(slider._id)
    assert _configs(lazy)[slider._id]["props"]["maximum"] == 12
    assert _configs(lazy) == _configs(eager)
    assert demo.default_config.blocks[slider._id].maximum == 8  # other sessions keep the app's



def test_the_apps_own_blocks_are_rendered_once_for_every_session_and_each_session_gets_its_own_copy(demo, monkeypatch):
    text = next(b for b in demo.blocks.values() if isinstance(b, gr.Textbox))
    rendered = []
    render = type(demo.default_config).config_for_block
    monkeypatch.setattr(type(demo.default_config), "config_for_block",
                        staticmethod(lambda *args: rendered.append(args[0]) or render(*args)))
    monkeypatch.setattr(gradio_patches, "_RENDERED", {})
    first, second = _session(demo, gradio_patches._lazy_init), _session(demo, gradio_patches._lazy_init)
    first._update_value_in_config(text._id, "the first student's sentence")
    second._update_value_in_config(text._id, "the second student's sentence")
    assert rendered == [text._id]  # once, not once per session
    assert first.config_values[text._id]["props"]["value"] == "the first student's sentence"
    assert second.config_values[text._id]["props"]["value"] == "the second student's sentence"
    assert _configs(_session(demo, gradio_patches._lazy_init)) == _configs(_session(demo, gradio_patches.EAGER_INIT))
