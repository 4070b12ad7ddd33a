"""Sentiment on the Chinese page, in a real browser (issue 48 row 8): it asks for a review in either language,
its classifiers' names say which language they read, and a Chinese review is read by a Chinese classifier
with no classifier chosen. The screenshot goes to test-artifacts/zh-sentiment-chinese-review.png."""

from __future__ import annotations

from test_browser import (ARTIFACTS, assert_drawn, browser, server, visit, wait_drawn)  # noqa: F401 (fixtures)

REVIEW = "这本书写得很好，值得一读，推荐！"


def test_a_chinese_review_on_the_chinese_page_is_read_by_a_chinese_classifier(visit):
    visit.open("?tab=sentiment&lang=zh-CN")
    panel = visit.page.locator("#tab-sentiment")
    text = panel.locator("textarea").first
    placeholder = text.get_attribute("placeholder") or ""
    assert "中文" in placeholder and "（英文）" not in placeholder
    picker = panel.locator("#sentiment-classifier input")
    assert picker.input_value() == "按文本的语言自动选择"
    picker.click()
    options = visit.page.locator("[role=option]").all_inner_texts()
    assert any(o.startswith("英文影评") for o in options) and any(o.startswith("中文评论") for o in options)
    visit.page.keyboard.press("Escape")
    text.fill(REVIEW)
    panel.locator("#sentiment-run").click()
    visit.page.wait_for_function("() => /正面/.test(document.querySelector('#tab-sentiment').innerText)")
    assert_drawn(wait_drawn(visit, "sentiment", ["#sentiment-tokens span"]), "sentiment")
    shown = panel.inner_text()
    assert "读不懂" not in shown and "由 中英文评论，再加日常句子，multilingual-e5 预训练（3,500 万参数） 读取。" in shown
    ARTIFACTS.mkdir(exist_ok=True)
    visit.page.screenshot(path=str(ARTIFACTS / "zh-sentiment-chinese-review.png"))


def test_a_link_to_sentiment_and_the_language_switch_show_no_error_before_anything_is_typed(visit):
    """Opening the tab by a link and switching the page to Chinese ran the classifier on the empty text, and the
    page answered with an error toast nobody had asked for. The button still asks for a text."""
    visit.open("?tab=sentiment")
    panel = visit.page.locator("#tab-sentiment")
    panel.locator("#sentiment-run").wait_for()
    visit.page.locator("#lang").get_by_text("简体中文", exact=True).click()
    visit.page.wait_for_function("() => document.querySelector('#sentiment-run').innerText.trim() === '分类'")
    visit.page.wait_for_timeout(1500)  # the switch's redraw has run by now
    toasts = visit.page.locator("[data-testid=toast-body]")
    assert toasts.count() == 0, toasts.all_inner_texts()
    panel.locator("#sentiment-run").click()
    toasts.first.wait_for()
    assert "输入一个要分类的句子" in toasts.first.inner_text()
