"""The landing tab: what Transformer Lab shows, where to start, and how to share a view."""

import gradio as gr

from ui.i18n import text as _


def build(lang: gr.State | None = None) -> None:
    """The About tab has no action to run: a link to it only opens it."""
    with gr.Tab(_("tab.about"), id="about"):
        gr.Markdown(_("about.body"))
