"""The landing tab: what Transformer Lab shows and where to start."""

import gradio as gr

import transformer_core


def build() -> None:
    with gr.Tab("About"):
        gr.Markdown(
            "Every picture here comes from a real forward pass of our own transformer package, "
            f"`transformer_core` ({len(transformer_core.__all__)} public names): tokens, attention per "
            "layer and head, masks, sampling, and two trained task models."
        )
