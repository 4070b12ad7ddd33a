"""User text shown in Markdown is shown as typed: a crafted link can put no link, image or tag on our page."""

import shutil

import pytest
from markdown_it import MarkdownIt

from lab import store
from lab.markdown import literal
from ui import concepts, masking

CRAFTED = "[Sign in](https://x) ![x](y) <img src=x> <input type=password> **bold** https://evil.example"
RENDER = MarkdownIt("commonmark").render


def _assert_inert(markdown: str) -> None:
    html = RENDER(markdown)
    for tag in ("<a ", "<img", "<input", "<strong>bold"):
        assert tag not in html, f"{tag!r} rendered from {markdown!r}: {html}"


@pytest.mark.parametrize("text", [CRAFTED, "`code` | table | ~~x~~ $x$ \\*", "&lt;img&gt; &amp;", "# heading\n\n- item"])
def test_literal_markdown_renders_as_the_text_itself(text):
    html = RENDER(literal(text))
    _assert_inert(literal(text))
    assert "<h1>" not in html and "<li>" not in html and "<code>" not in html


def test_a_crafted_sentence_in_the_order_experiment_shows_as_text(tmp_path):
    (tmp_path / "shakespeare-bpe").mkdir()
    shutil.copy(store.DEFAULT_MODEL_DIR / "shakespeare-bpe" / "tokenizer.json", tmp_path / "shakespeare-bpe")
    before = store.model_dir()
    store.set_model_dir(tmp_path)
    try:
        summary, *_ = concepts.order(CRAFTED, 0)
    finally:
        store.set_model_dir(before)
    _assert_inert(summary)
    assert "[Sign" in RENDER(summary) and "&lt;img" in RENDER(summary)  # shown, as typed (shuffled)


def test_a_crafted_prompt_in_the_cheating_demo_shows_as_text():
    store.set_model_dir(store.DEFAULT_MODEL_DIR)
    try:
        text, _ = masking.cheating(CRAFTED, 2)
    finally:
        store.set_model_dir(store.DEFAULT_MODEL_DIR)
    _assert_inert(text)
