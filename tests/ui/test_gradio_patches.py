"""Each patch of Gradio (ui/gradio_patches.py) stands on a line of Gradio's own source: an upgrade that rewrites
that line fails here, and the patch must be read again (kept, changed, or deleted for a public way)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import gradio
import gradio as gr
import pytest
from gradio.state_holder import SessionState

from ui import gradio_patches

GRADIO = Path(gradio.__file__).parent


def _source(pattern: str) -> str:
    files = sorted(GRADIO.glob(pattern))
    assert files, f"gradio/{pattern} is gone"
    return "".join(f.read_text(encoding="utf-8") for f in files)


@pytest.mark.parametrize("patch", gradio_patches.PATCHES, ids=lambda p: f"{p.name}: {p.file}")
def test_the_line_each_patch_works_around_is_still_gradios(patch):
    assert patch.line in _source(patch.file), f"{patch.name}: Gradio changed {patch.file}; read the patch again"


def test_every_patch_of_the_module_names_its_line():
    named = {p.name for p in gradio_patches.PATCHES}
    assert named == {"lazy sessions", "the queue's door", "refused inputs", "the page's language", "the cache probe",
                     "drawing a figure once", "toast titles", "integer choices", "skipped outputs"}


def test_the_public_ways_that_replaced_a_patch_are_still_there():
    # Plotly's toolbar in the page's language: plotly.js registers the locales waiting in window.PlotlyLocales as
    # it loads, and Gradio draws each figure with plotly's own default config merged in (setPlotConfig)
    plotly = _source("templates/frontend/assets/PlotlyPlot-*.js")
    assert "window.PlotlyLocales&&Array.isArray(window.PlotlyLocales)" in plotly
    assert "setPlotConfig" in plotly


class Counted(gr.Textbox):
    """A text box that counts how often it is built."""

    built = 0

    def __init__(self, *args, **kwargs):
        type(self).built += 1
        super().__init__(*args, **kwargs)


@pytest.mark.parametrize("predictions", [[gr.skip(), "x", gr.skip()], [gr.skip(), "x", "y"], ["w", "x", "y"],
                                         [gr.skip(), gr.skip(), gr.skip()], [gr.skip(), [("a", 0.5)], gr.skip()]],
                         ids=["one changed", "two changed", "none skipped", "all skipped", "a list value"])
def test_a_skipped_output_is_answered_as_gradio_answers_it_without_building_the_component_again(predictions):
    with gr.Blocks() as demo:
        outputs = [Counted(label="a"), gr.HighlightedText() if isinstance(predictions[1], list) else gr.Textbox(),
                   gr.Textbox()]
        gr.Button().click(lambda: None, None, outputs)
    event = list(demo.fns.values())[0]
    built = Counted.built
    gradios = asyncio.run(gradio_patches.POSTPROCESS(demo, event, predictions, SessionState(demo)))
    # what the patch works around: Gradio 6.31 builds a skipped component anew (and renders its config again)
    assert Counted.built - built == (predictions[0] == gr.skip())
    built = Counted.built
    assert asyncio.run(gradio_patches._postprocess_passing_skips(demo, event, predictions, SessionState(demo))) \
        == gradios
    assert Counted.built == built
