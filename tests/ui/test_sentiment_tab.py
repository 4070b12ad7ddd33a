"""The Sentiment tab's adapter: a verdict, token contributions and the link to the Attention tab."""

from __future__ import annotations

import math
import re

import gradio as gr
import pytest

from i18n import t
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
    probs, method, notices, tokens_html, bars, grid, link, box, strip, sentence, running, shown = figures(
        tab.classify("not bad at all", tab.METHODS[0]))
    assert set(probs) == set(LABELS) and sum(probs.values()) == pytest.approx(1.0)
    assert notices == "" and "bad" in tokens_html
    assert method == "Read by **English movie reviews, trained from scratch (5.8M)**."  # who read it, always
    assert box.visible is False and strip == "" and running is None  # short: read whole
    assert "tab=attention" in link and "model=sentiment" in link and "text=not+bad+at+all" in link
    assert len(bars.data[0].y) == 4


def test_the_grid_of_every_layer_and_head_is_drawn_only_when_asked(tiny_store):
    """The grid is 127 kB of a short review's 133 kB answer: the page asks for it while its box is open."""
    run = tab.use.classify("not bad at all")
    n_layer, n_head, T, _ = run.attn.shape
    unasked = figures(tab.classify("not bad at all", tab.METHODS[0]))
    asked = figures(tab.classify("not bad at all", tab.METHODS[0], grid=True))
    assert unasked[5] is None and unasked[:5] == asked[:5] and unasked[6] == asked[6]  # the rest as before
    z = asked[5].data[0].z  # the heads a blank row and column apart (views/attention.py)
    assert len(z) == n_layer * (T + 1) - 1 and len(z[0]) == n_head * (T + 1) - 1
    assert asked[5].data[0].x[:T] == tuple(f"H0 {i}:{label}" for i, label in enumerate(run.labels))
    assert figures(tab.classify_sentence(HOSTILE_REVIEW, tab.METHODS[0], 5))[5] is None
    sentence = tab.use.classify(HOSTILE_REVIEW, None, 5)
    x = figures(tab.classify_sentence(HOSTILE_REVIEW, tab.METHODS[0], 5, grid=True))[5].data[0].x
    assert x[:len(sentence.labels)] == tuple(f"H0 {i}:{label}" for i, label in enumerate(sentence.labels))


def test_the_token_shares_drawn_add_up_to_the_verdict_and_the_page_says_so(tiny_store):
    probs, _, _, tokens_html, bars, *_ = figures(tab.classify("not bad at all", tab.METHODS[0]))
    log_odds = math.log(probs["positive"] / probs["negative"])
    run = tab.use.classify("not bad at all")
    assert sum(bars.data[0].x) + run.base == pytest.approx(log_odds, abs=1e-3)  # the bars, one per token
    # the sentence under the tokens: head's bias + the tokens' sum = the log-odds, in numbers
    assert f"{run.base:+.2f} (the head's bias) {sum(bars.data[0].x):+.2f} (the tokens) = {log_odds:+.2f}" in tokens_html
    assert f"P(positive) = {probs['positive']:.0%}" in tokens_html
    _, _, _, read_html, rollout_bars, *_ = figures(tab.classify("not bad at all", tab.METHODS[1]))
    assert "add up" not in read_html and min(rollout_bars.data[0].x) >= 0  # rollout: what was read, unsigned


def test_tab_says_when_it_truncates_and_when_there_are_no_words(tiny_store):
    _, _, notices, *_ = figures(tab.classify("word " * 50, tab.METHODS[1]))
    assert "only the first 12" in notices
    _, _, notices, *_ = figures(tab.classify("👍🎉!!!", tab.METHODS[0]))
    assert "no letters" in notices


@pytest.mark.parametrize("text", ["", "   ", None])
def test_tab_refuses_empty_text_with_a_message(tiny_store, text):
    with pytest.raises(gr.Error, match="Type a sentence"):
        tab.classify(text, tab.METHODS[0])


HOSTILE_REVIEW = ("<script>alert('x')</script> was the first line of this review, and it is bad. " * 3
                  + "Then it got much better. The ending is wonderful and moving. I loved the music.")


def test_a_long_review_draws_its_strip_the_running_verdict_and_a_picked_sentence(tiny_store):
    probs, method, notices, tokens_html, bars, grid, link, box, strip, sentence, running, shown = figures(
        tab.classify(HOSTILE_REVIEW, tab.METHODS[0]))
    assert method.startswith("Read by") and "*Read sentence by sentence" in method and box.visible is True
    assert strip.count("data-sentence=") == 6 and "<script>" not in strip and "&lt;script&gt;" in strip
    assert sentence.maximum == 6 and 1 <= sentence.value <= 6
    line = [t for t in running.data if t.mode == "lines+markers"][0]
    assert list(line.x) == [1, 2, 3, 4, 5, 6] and line.y[-1] == pytest.approx(probs["positive"])
    assert all("<script>" not in str(t.text) for t in running.data)
    picked = figures(tab.classify_sentence(HOSTILE_REVIEW, tab.METHODS[0], 5))
    assert picked[0] == probs and picked[9].value == 5 and "Sentence 5 of 6" in picked[11]
    assert "moving" in picked[3] and "script" not in picked[3]  # the tokens are sentence 5's
    assert 'outline' in picked[8].split('data-sentence="5"')[1].split("</span>")[0]  # and it is outlined


def test_a_click_on_the_strip_picks_its_sentence():
    assert tab.picked(type("Event", (), {"sentence": 3})()) == 3


def test_compare_shows_both_classifiers_strips_side_by_side():
    from lab import sentiment as use

    heading, notice, *parts, note = figures(tab.compare(use.REVIEW, tab.METHODS[0]))
    assert len(parts) == 8  # per classifier: verdict, strip, tokens, attention
    for verdict, strip in (parts[0:2], parts[4:6]):
        assert "Read sentence by sentence" in verdict and strip.count("data-sentence=") == 5
    # English: what pre-training adds, said of the two English classifiers it shows
    assert "trained from scratch" in heading and "pre-trained + fine-tuned" in heading and "pre-training" in heading
    assert note.startswith("**What pre-training gave.**")
    assert tab.compare_if(False, use.REVIEW, tab.METHODS[0]) == tuple(gr.skip() for _ in range(11))


def test_compare_on_chinese_text_shows_the_multilingual_pair_under_their_names():
    heading, notice, *parts, note = figures(tab.compare("质量太差了，非常失望。", tab.METHODS[0], "zh-CN"))
    assert len(parts) == 8
    # issue 60: the heading promised "从零训练 vs 预训练" over the two multilingual-e5 heads; it names what it shows
    assert "从零训练" not in heading and "只用英文标签" in heading
    assert t("sentiment.model.everyday", "zh-CN") in heading and t("sentiment.model.crosslingual", "zh-CN") in heading
    assert note.startswith("**什么能跨越语言。**") and "从零训练" not in note
    assert t("sentiment.model.everyday", "zh-CN") in parts[0]
    assert t("sentiment.model.crosslingual", "zh-CN") in parts[4]
    assert "质" in parts[2] and "质" in parts[6]  # each column's tokens are the Chinese text's characters


def test_with_no_classifier_chosen_a_chinese_review_is_read_by_a_chinese_classifier_on_the_chinese_page():
    """Issue 48 row 8: Sentiment defaulted to the English classifier, asked for English text, had no Chinese
    example, and the English classifiers' Chinese names did not say they read English."""
    probs, method, notices, tokens_html, *_ = figures(tab.classify("这本书写得很好，值得一读，推荐！", tab.METHODS[0],
                                                              model=tab.AUTO, lang="zh-CN"))
    assert max(probs, key=probs.get) == t("sentiment.label.positive", "zh-CN") and "书" in tokens_html
    assert notices == "" and t("sentiment.model.everyday", "zh-CN") in method
    assert any("这本书" in example[0] for example in tab.EXAMPLES["zh-CN"])
    # the Chinese page's examples are Chinese (one English sentence for the multilingual model), the English page's
    # English: a Chinese student no longer scrolls past nine others to the one Chinese review
    assert sum(bool(re.search("[一-鿿]", text)) for text, _ in tab.EXAMPLES["zh-CN"]) >= len(tab.EXAMPLES["zh-CN"]) - 1
    assert not any(re.search("[一-鿿]", text) for text, _ in tab.EXAMPLES["en"])
    assert "英文" not in t("sentiment.placeholder", "zh-CN").replace("中文或英文", "")
    assert "英文" in t("sentiment.model.scratch", "zh-CN") and "英文" in t("sentiment.model.pretrained", "zh-CN")
