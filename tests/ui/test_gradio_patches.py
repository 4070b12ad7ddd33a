"""Each patch of Gradio (ui/gradio_patches.py) stands on a line of Gradio's own source: an upgrade that rewrites
that line fails here, and the patch must be read again (kept, changed, or deleted for a public way)."""

from __future__ import annotations

from pathlib import Path

import gradio
import pytest

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
                     "drawing a figure once", "toast titles", "integer choices"}


def test_the_public_ways_that_replaced_a_patch_are_still_there():
    # Plotly's toolbar in the page's language: plotly.js registers the locales waiting in window.PlotlyLocales as
    # it loads, and Gradio draws each figure with plotly's own default config merged in (setPlotConfig)
    plotly = _source("templates/frontend/assets/PlotlyPlot-*.js")
    assert "window.PlotlyLocales&&Array.isArray(window.PlotlyLocales)" in plotly
    assert "setPlotConfig" in plotly
