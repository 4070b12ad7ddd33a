"""Ask the hall in two browsers: the lecturer opens a question, a student answers, the lecturer reveals."""

from __future__ import annotations

import re

import pytest

from test_browser import ARTIFACTS, Visit, browser, server  # noqa: F401 -- the shared fixtures


@pytest.fixture
def pages(browser, server):  # noqa: F811
    opened = [Visit(browser, server[0]) for _ in range(2)]
    yield opened
    for page in opened:
        page.context.close()
    assert [p.errors for p in opened] == [[], []]


def _box(page, elem_id: str):
    return page.locator(f"#{elem_id} textarea, #{elem_id} input").first


def test_a_lecturer_asks_a_student_answers_and_the_reveal_shows_both_answers(pages):
    lecturer, student = pages
    lecturer.open("?tab=questions")
    lecturer.page.locator("#question-lecturer").get_by_text("Lecturer").click()
    lecturer.page.locator("#question-open").click()
    shown = lecturer.page.locator("#question-link")
    shown.get_by_text("code=").wait_for()
    # an absolute link, in large type, and a QR code of it large enough to scan from the back of a hall
    url = shown.locator(".hall-url a").inner_text()
    assert url.startswith(lecturer.base_url + "/?tab=questions&code="), url
    code = re.search(r"code=([A-Z0-9]+)", url).group(1)
    qr = shown.locator(".hall-qr svg")
    assert qr.get_attribute("aria-label") == url and qr.bounding_box()["width"] >= 300
    assert float(lecturer.page.evaluate("""() => getComputedStyle(document.querySelector('.hall-url')).fontSize
        """).rstrip("px")) >= 24
    # the lecturer's projected page shows no student answer box
    assert not lecturer.page.locator("#question-student").is_visible()
    assert not lecturer.page.locator("#question-send").is_visible()
    assert lecturer.page.locator("#question-status").count() == 0 or \
        lecturer.page.locator("#question-status").inner_text().strip() == ""  # no error on the lecturer's page

    student.page.goto(url)  # the link the lecturer shows, as scanned
    student.page.locator("#tab-about-button").wait_for()
    student.page.locator("#question-prompt").get_by_text("How many tokens").wait_for()
    _box(student.page, "question-number").fill("seven")
    student.page.locator("#question-send").click()
    student.page.locator("#question-status").get_by_text("is not a number").wait_for()
    _box(student.page, "question-number").fill("6")
    student.page.locator("#question-send").click()
    student.page.locator("#question-status").get_by_text("Your answer: 6").wait_for()
    _box(student.page, "question-number").fill("7")  # a change of mind: still one answer
    student.page.locator("#question-send").click()
    student.page.locator("#question-status").get_by_text("Your answer: 7").wait_for()
    assert student.page.locator("#question-result .js-plotly-plot").count() == 0  # nothing of the hall yet

    lecturer.page.locator("#question-count").get_by_text("1 answered").wait_for()  # the timer's count
    lecturer.page.locator("#question-reveal").click()
    lecturer.page.locator("#question-hall .js-plotly-plot").wait_for()
    bars = lecturer.page.evaluate("""() => { const gd = document.querySelector('#question-hall .js-plotly-plot');
        return {x: Array.from(gd._fullData[0].x), y: Array.from(gd._fullData[0].y)}; }""")
    assert bars == {"x": ["7"], "y": [1]}
    lecturer.page.locator("#question-verdict").get_by_text("The model's answer: 7").wait_for()

    student.page.locator("#question-result .js-plotly-plot").wait_for()  # the student's page hears the reveal
    marked = student.page.evaluate("""() => document.querySelector('#question-result .js-plotly-plot')
        ._fullLayout.annotations.map((a) => a.text)""")
    assert marked == ["your answer"]
    _box(student.page, "question-number").fill("8")
    student.page.locator("#question-send").click()
    student.page.locator("#question-status").get_by_text("answers are closed").wait_for()
    ARTIFACTS.mkdir(exist_ok=True)
    lecturer.screenshot("questions-lecturer")
    student.screenshot("questions-student")


def test_a_forged_code_says_so_and_reveals_nothing(pages):
    student = pages[0]
    student.open("?tab=questions&code=ZZZZZ")
    student.page.locator("#question-prompt").get_by_text("No open question has the code").wait_for()
    assert student.page.locator("#question-result .js-plotly-plot").count() == 0
