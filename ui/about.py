"""The landing tab: what Transformer Lab shows, where to start, how to share a view, and the real LLMs' terms."""

import gradio as gr

from lab import llms, store
from ui.i18n import text as _


def terms_file():
    """The copy of the Gemma Terms of Use written beside Gemma's checkpoint (lab/llms.py), which the app serves to
    every visitor (app.py's allowed_paths: this one file, never the folder with the weights); None without an LLM
    folder."""
    folder = store.llm_dir()
    return None if folder is None else folder / llms.GEMMA3.name / "GEMMA_TERMS.html"


def build(lang: gr.State | None = None) -> None:
    """The About tab has no action to run: a link to it only opens it."""
    with gr.Tab(_("tab.about"), id="about"):
        gr.Markdown(_("about.body"))
        terms = terms_file()
        gr.Markdown(_("about.llms", terms=f"gradio_api/file={terms}" if terms else "https://ai.google.dev/gemma/terms"),
                    elem_id="about-llms")
