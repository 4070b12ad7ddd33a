"""The Tokens tab's chips as the page draws them while a person types (ui/tokens.js), in a real browser.

The page runs our byte-level BPEs itself, so it holds a second tokenizer and a second panel writer: each must give
the server's tokens, ids and HTML to the character, on texts chosen to break one written twice (emoji split into
bytes, combining marks, markup and entities typed as text, Oniguruma's spaces, the 5,000-character cut). Then, in
the app: typing draws those panels before the server answers, the others wait dimmed, and the answer stands.
"""

from __future__ import annotations

import json
import re

import pytest
from test_browser import CHROMIUM, CHROMIUM_ARGS, _need_browser, browser, server, visit  # noqa: F401 (fixtures)

from i18n import LANGUAGES, render
from lab import tokens as use
from lab.policy import MAX_CHARS, truncate
from ui import tokens as tab

# texts that break a tokenizer written twice, by what they try
HOSTILE = {
    "emoji_skin_tones": "I love this film 😍🎬 — 10/10 👍🏽👍🏿 👩🏿‍🚀 family 👩‍👩‍👧 🏳️‍🌈",
    "cjk": "自然语言处理很有趣。日本語のテキスト、한국어 텍스트！「引用」",
    "combining_marks": "cafe\u0301 na\u0308ive n\u0303 Z\u0351\u0334a\u0336l\u0310g\u0357o \u0915\u094d\u0937",
    "script_tag": "<script>alert('x')</script> <img src=x onerror=\"y()\">",
    "html_entities": "&amp; &lt;b&gt; &#x27; &quot; \"double\" 'single' both'\"",
    "long_spaces": "a" + " " * 40 + "b \u00a0\u3000\u2003 c   ",
    "newlines_tabs": "line one\nline two\r\n\ttabbed\t\tend\n\n\n  \n",
    "digits": "In 1599 the Globe held 3,000 people; 2 + 2 = 4, π ≈ 3.14159, ١٢٣ ４５６ ½",
    "contractions": "It's what they've said: don't, we're, I'm, you'll, he'd; IT'S 'tis ' s",
    # U+0085 is a space to the server's regex (Oniguruma) and U+FEFF is not; JavaScript's \s holds the reverse
    "controls_and_invisibles": "NUL\x00 bell\x07 del\x7f a  \x85b c  \ufeffd zwj\u200d rlo\u202e sep\u2028 lone\ud800",
    "max_chars_cut": ("Shall I compare thee to a summer's day? 🙂 日本\n\t" * 150)[:MAX_CHARS + 1000],
}
LABELS = {lang: [render(label, lang) for label, _ in use.page_tokenizers()] for lang in LANGUAGES}


@pytest.fixture(scope="module")
def page(browser):  # noqa: F811 (a fixture)
    """A blank page with ui/tokens.js and the tables the app serves, ready in `window.tables`."""
    context = browser.new_context()
    page = context.new_page()
    page.set_content("<html><body></body></html>")
    page.add_script_tag(content=tab.PAGE_SCRIPT.read_text(encoding="utf-8"))
    page.evaluate("(d) => { const t = JSON.parse(d); window.tables = {...t, tokenizers: t.tokenizers.map(labTokens.ready)}; }",
                  json.dumps(tab.page_tables()))
    yield page
    context.close()


def _tokenizer(label: str):
    return next(tokenizer for shown, tokenizer, _ in use.shipped_tokenizers()[0] if render(shown, "en") == label)


def page_panels(page, text: str, lang: str) -> list[str]:
    """ui/tokens.js's panel of each tokenizer it runs; the text goes as JSON (a lone surrogate stays one)."""
    return page.evaluate("""([text, lang]) => { const chars = labTokens.read(tables, JSON.parse(text));
        return tables.tokenizers.map((tok) => labTokens.panel(tables, tok, chars, lang)); }""",
                         [json.dumps(text), lang])


def server_panels(text: str, lang: str) -> dict[str, str]:
    """The `tokenize` endpoint's panels, by their (escaped) heading."""
    _, html = tab.tokenize(text, lang)
    assert html.startswith('<div class="panels">') and html.endswith("</div>")
    parts = html[len('<div class="panels">'):-len("</div>")].split('<div class="panel"><h4>')[1:]
    return {part.split("</h4>", 1)[0]: '<div class="panel"><h4>' + part for part in parts}


def test_the_page_runs_our_byte_level_bpes_and_character_tokenizers_and_not_the_others():
    names = " ".join(LABELS["en"])
    assert all(name in names for name in ("shakespeare-bpe", "chinese-bpe", "sentiment ·", "shakespeare-char",
                                          "translate-copy", "translate-pig-latin"))
    # sentiment-zh's and the Tang poems' models read traditional characters converted (OpenCC), which the page has not
    assert all(name not in names for name in ("sentiment-zh", "tang-poems-char", "WordPiece", "unigram"))


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("name", list(HOSTILE))
def test_the_page_draws_the_servers_panel_to_the_character(page, name, lang):
    text = HOSTILE[name]
    drawn, panels = server_panels(text, lang), page_panels(page, text, lang)
    assert len(panels) == len(LABELS[lang]) == 6
    for label, html in zip(LABELS[lang], panels):
        heading = html.split("</h4>", 1)[0].removeprefix('<div class="panel"><h4>')
        assert html == drawn[heading], f"{name}, {label}: the page's panel differs from the server's"


@pytest.mark.parametrize("name", list(HOSTILE))
def test_the_page_gives_the_servers_ids(page, name):
    text, _ = truncate(HOSTILE[name])
    ids = page.evaluate("""(text) => { const chars = labTokens.read(tables, JSON.parse(text));
        return tables.tokenizers.map((tok) => labTokens.tokens(tok, chars, tables.unknown).map((s) => s.id)); }""",
                       json.dumps(text))
    for label, page_ids in zip(LABELS["en"], ids):
        assert page_ids == [s.id for s in _tokenizer(label).tokens(text)], f"{name}, {label}"


def test_the_page_reads_no_more_than_the_server(page):
    text = HOSTILE["max_chars_cut"]
    read = page.evaluate("(text) => labTokens.read(tables, JSON.parse(text)).join('')", json.dumps(text))
    assert read == truncate(text)[0] and len(read) == MAX_CHARS


def test_numbers_round_halfway_to_even_as_python_does(page):
    ratios = [n / m for n in range(1, 80) for m in range(1, 80)] + [k * 137.508 % 360 for k in range(20_000)]
    drawn = page.evaluate("(xs) => xs.map((x) => [labTokens.fixed(x, 2), labTokens.fixed(x, 0)])", ratios)
    assert drawn == [[f"{x:.2f}", f"{x:.0f}"] for x in ratios]


def test_typing_draws_our_bpes_before_the_server_answers_and_its_answer_stands(visit):  # noqa: F811
    visit.open("?tab=tokens")
    page = visit.page
    page.locator("#tokens-chips .tok").first.wait_for()
    page.wait_for_function("() => labTokens.loaded()")
    held = []  # the server's `tokenize` calls, answered only once the page has drawn
    hold = lambda route: held.append(route)  # noqa: E731 (playwright keys a handler by its attributes)
    page.route("**/gradio_api/queue/join*", hold)
    typed = "Held <b>back</b> 😍 — it's 自然"
    ids = [s.id for s in _tokenizer(LABELS["en"][0]).tokens(typed)]
    page.locator("#tokens_text textarea").fill(typed)
    page.wait_for_function("""([label, ids]) => Array.from(document.querySelectorAll('#tokens-chips .panel')).some(
        (p) => p.querySelector('h4').textContent === label && Array.from(p.querySelectorAll('.tok'),
        (c) => +c.dataset.id).join() === ids.join())""", arg=[LABELS["en"][0], ids], timeout=10_000)
    assert held, "the server was asked nothing"
    bpe = page.locator("#tokens-chips .panel", has_text=LABELS["en"][0])
    assert "&lt;" in bpe.inner_html() and "<b>back" not in bpe.inner_html()  # the typed tag is text on chips
    for label in LABELS["en"]:
        assert page.locator("#tokens-chips .panel:not(.pending)", has_text=label).count() == 1
    drafted = bpe.evaluate("(el) => el.outerHTML")
    assert page.locator("#tokens-chips .panel.pending").count() == 4  # unigram, WordPiece, Tang poems, sentiment-zh
    for route in held:
        route.continue_()
    page.unroute("**/gradio_api/queue/join*", hold)
    page.wait_for_function("() => !document.querySelector('#tokens-chips .panel.pending')")
    assert bpe.evaluate("(el) => el.outerHTML") == drafted


def test_a_late_answer_for_a_text_typed_past_within_one_frame_is_drawn_over(visit):  # noqa: F811
    # fast typing: two texts within one frame, so no frame draws the first; its late answer must not stand
    visit.open("?tab=tokens")
    page = visit.page
    page.locator("#tokens-chips .tok").first.wait_for()
    page.wait_for_function("() => labTokens.loaded()")
    hold = lambda route: None  # noqa: E731 (the server's own answers never come: the late one is played below)
    page.route("**/gradio_api/queue/join*", hold)
    first, typed = "Held back", "Held back, then typed on"
    label = LABELS["en"][0]
    ids = [s.id for s in _tokenizer(label).tokens(typed)]
    shows_typed = """([label, ids]) => Array.from(document.querySelectorAll('#tokens-chips .panel')).some(
        (p) => p.querySelector('h4').textContent === label && Array.from(p.querySelectorAll('.tok'),
        (c) => +c.dataset.id).join() === ids.join())"""
    page.evaluate("""([first, typed]) => { const box = document.querySelector('#tokens_text textarea');
        for (const text of [first, typed]) { box.value = text; box.dispatchEvent(new Event('input', {bubbles: true})); }
    }""", [first, typed])
    page.wait_for_function(shows_typed, arg=[label, ids], timeout=10_000)
    _, late = tab.tokenize(first, "en")  # the server's answer for the first text, arriving now
    page.evaluate("(html) => { document.querySelector('#tokens-chips .panels').outerHTML = html; }", late)
    page.wait_for_function(shows_typed, arg=[label, ids], timeout=5_000)
    page.unroute("**/gradio_api/queue/join*", hold)
