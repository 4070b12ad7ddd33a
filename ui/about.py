"""The landing tab: what Transformer Lab shows, where to start, and how to share a view."""

import gradio as gr

ABOUT = """
Every picture in Transformer Lab comes from a real forward pass of our own transformer package,
`transformer_core`, running the small checkpoints shipped in
`assets/`. Nothing is drawn from a formula: when a heatmap shows a head looking at a token, the model did.

**Where to start.** Follow the tabs left to right: **Tokens** (how text becomes numbers), **Attention**
(what every head of every layer reads), **Masking** (what a mask hides, and what that does to the output),
**Generate** (how temperature and top-k reshape the next-token distribution), then two trained task models:
**Sentiment** (an encoder reads a review) and **Translate** (an encoder meets a decoder through
cross-attention). **Concepts** collects the smaller lessons.

**Sharing a view.** Open *Lecture mode and links* at the top and press *Link to this view*: the link reopens
the same tab with the same text and settings, e.g. `?tab=attention&text=The+cat+sat`. Every plot has
download buttons for PNG and SVG in its toolbar (hover over the plot).

**In a lecture.** Switch on *Lecture mode* for large type and plots made for a projector, then step through the
numbered presets with *Next step ▶*. Everything runs offline; seeds are fixed, so every run shows the same.

**From code.** Every button is also an API endpoint (`tokenize`, `attention`, `generate`, `classify`,
`translate`, ...): see "Use via API" at the bottom of the page, or the `gradio_client` example in the README.
"""


def build() -> None:
    """The About tab has no action to run: a link to it only opens it."""
    with gr.Tab("About", id="about"):
        gr.Markdown(ABOUT)
