"""The Sentiment tab's adapter: a verdict, token contributions and the link to the Attention tab."""

from __future__ import annotations

import gradio as gr
import pytest

from transformer_core.analysis.sentiment import LABELS
from figures import figures
from lab import store
from ui import sentiment as tab


@pytest.fixture
def tiny_store(tiny_checkpoint):
    before = store.model_dir()
    store.set_model_dir(tiny_checkpoint)
    yield
    store.set_model_dir(before)


def test_tab_classifies_and_links_to_the_attention_tab(tiny_store):
    probs, notices, tokens_html, bars, grid, link = figures(tab.classify("not bad at all", tab.METHODS[0]))
    assert set(probs) == set(LABELS) and sum(probs.values()) == pytest.approx(1.0)
    assert notices == "" and "bad" in tokens_html
    assert "tab=attention" in link and "model=sentiment" in link and "text=not+bad+at+all" in link
    assert len(bars.data[0].y) == 4


def test_tab_says_when_it_truncates_and_when_there_are_no_words(tiny_store):
    _, notices, *_ = figures(tab.classify("word " * 50, tab.METHODS[1]))
    assert "only the first 12" in notices
    _, notices, *_ = figures(tab.classify("👍🎉!!!", tab.METHODS[0]))
    assert "no letters" in notices


@pytest.mark.parametrize("text", ["", "   ", None])
def test_tab_refuses_empty_text_with_a_message(tiny_store, text):
    with pytest.raises(gr.Error, match="Type a sentence"):
        tab.classify(text, tab.METHODS[0])
