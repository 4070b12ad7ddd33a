"""Transformer Lab: type text and see inside a transformer.

Start with `python app.py` (127.0.0.1:7860). Hugging Face Spaces set
GRADIO_SERVER_NAME / GRADIO_SERVER_PORT, which are honoured.
"""

from __future__ import annotations

import argparse
import os

import gradio as gr

from ui import about, generate, store, tokens

TABS = [tokens, generate, about]


def build_app() -> gr.Blocks:
    with gr.Blocks(title="Transformer Lab") as demo:
        gr.Markdown("# Transformer Lab\nType text and see what a transformer does with it.")
        with gr.Tabs():
            for tab in TABS:
                tab.build()
    return demo


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("GRADIO_SERVER_PORT", "7860")))
    parser.add_argument("--share", action="store_true", help="create a public gradio.live link")
    parser.add_argument("--model-dir", default=None, help="folder of checkpoints (default: assets/)")
    return parser.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.model_dir:
        store.set_model_dir(args.model_dir)
    build_app().queue().launch(server_name=args.host, server_port=args.port, share=args.share)


if __name__ == "__main__":
    main()
