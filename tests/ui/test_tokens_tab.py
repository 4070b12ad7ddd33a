"""The Tokens tab's handlers: chips, counts, merge replay, BPE from scratch, bad input, tokenizer discovery."""

from __future__ import annotations

import os
import re
import shutil
from html.parser import HTMLParser

import gradio as gr
import pytest

from transformer_core.tokenization import TextTokenizer, train_byte_level_bpe
from lab import store
from lab import tokens as use
from figures import figures
from ui import tokens as tab
from views import tokens as views

BPE = "shakespeare-bpe"
CHAR = "shakespeare-char"

VARIED = [
    "To be, or not to be, that is the question:",
    "antidisestablishmentarianism",
    "In 1599 the Globe held 3,000 people; π ≈ 3.14159",
    "def f(x):\n\treturn x ** 2  # square",
    "I love this film 😍🎬 family 👩‍👩‍👧",
    "自然语言处理很有趣。",
    "مرحبا بالعالم and עברית",
]

HUNDRED_KB = ("Shall I compare thee to a summer's day? 🙂 日本 " * 2500)[:100_000]
BAD_INPUTS = ["", None, "   ", "\x00", "NUL\x00 bell\x07 esc\x1b del\x7f c1\x85", "a\ud800b\udfff",
              "\u202eright-to-left override", "שלום עולם", "\ufeff\u200b\u200d", HUNDRED_KB]


class _Chips(HTMLParser):
    """Chips in the tab's HTML, by panel: [(panel title, [[id or None, chip text, hover title], ...])].

    Panel 0 (untitled) holds chips outside any panel (merge replay, BPE from scratch).
    """

    def __init__(self, html: str):
        super().__init__()
        self.panels: list[tuple[str, list]] = [("", [])]
        self._in: str | None = None
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "h4":
            self.panels.append(("", []))
        elif tag == "span" and attrs.get("class") in ("tok", "tok fragment"):
            chip_id = int(attrs["data-id"]) if "data-id" in attrs else None
            self.panels[-1][1].append([chip_id, "", attrs["title"]])
        self._in = tag

    def handle_endtag(self, tag):
        self._in = "span" if tag == "sub" else None

    def handle_data(self, data):
        if self._in == "h4":
            self.panels[-1] = (self.panels[-1][0] + data, self.panels[-1][1])
        elif self._in == "span":
            self.panels[-1][1][-1][1] += data


def _panel(html: str, name: str) -> list:
    return next(chips for title, chips in _Chips(html).panels[1:] if name in title)


def _chips(html: str) -> list:
    return _Chips(html).panels[0][1]


@pytest.fixture(scope="module")
def bpe():
    return store.tokenizer(BPE)


@pytest.mark.parametrize("text", VARIED)
def test_one_chip_per_token_with_the_tokenizers_ids_in_every_panel(text):
    _, html = tab.tokenize(text)
    for name in (CHAR, BPE):
        chips, ids = _panel(html, name), store.tokenizer(name).encode(text)
        unknown = store.tokenizer(name).token_to_id("[UNK]")
        if ids.count(unknown) > len(ids) / 2:  # more unknown than known: one line says so, no chip wall
            assert chips == [] and "cannot represent this text" in html
        else:
            assert [chip_id for chip_id, _, _ in chips] == ids


def test_a_tokenizer_that_cannot_represent_a_text_says_so_in_one_line():
    _, html = tab.tokenize("The quick brown fox jumps over the lazy dog.")
    for name in ("translate-copy", "translate-reverse", "translate-sort"):  # digits only
        assert _panel(html, name) == []
    # one line each: the three digit tasks (they share one tokenizer file) and the Tang poems' characters
    assert html.count("cannot represent this text") == 2
    assert len(_panel(html, BPE)) > 5


def test_chips_show_token_text_with_spaces_made_visible_and_spans_on_hover(bpe):
    text = "To be,\tor not"
    chips = _panel(tab.tokenize(text)[1], BPE)
    assert "".join(chip_text for _, chip_text, _ in chips) == "To·be,⇥or·not"
    for (chip_id, _, title), span in zip(chips, bpe.tokens(text)):
        assert title == (f"id {span.id} | chars {span.start}:{span.end} {text[span.start:span.end]!r} | "
                         f"bytes {span.byte_start}:{span.byte_end}")


def test_token_text_that_looks_like_html_is_escaped():
    text = '<script>alert("x")</script> <b onmouseover=\'y\'>&amp;'
    _, html = tab.tokenize(text)
    assert "<script" not in html and "<b " not in html
    chips = _panel(html, BPE)
    assert "".join(chip_text for _, chip_text, _ in chips) == views.visible(text)
    assert all(title.startswith("id ") for _, _, title in chips)  # the quotes did not end a title early


@pytest.mark.parametrize("text", VARIED)
def test_counts_are_characters_bytes_tokens_and_their_ratio(text, bpe):
    _, html = tab.tokenize(text)
    n = len(bpe.encode(text))
    token_word = "token" if n == 1 else "tokens"
    expected = (f"{len(text):,} characters · {len(text.encode('utf-8')):,} bytes · <b>{n:,} {token_word}</b> · "
                f"{len(text) / n:.2f} characters/token")
    assert expected in html


def test_the_same_token_always_gets_the_same_colour():
    html = tab.tokenize("the the the")[1]
    chips = re.findall(r'data-id="(\d+)" style="background:([^"]+)"', html)
    assert len({colour for token_id, colour in chips if token_id == chips[-1][0]}) == 1


def test_replay_with_all_merges_equals_the_tokenizers_encoding(bpe):
    chinese = store.tokenizer("chinese-bpe")
    for text in VARIED:  # a mostly Chinese text replays the BPE learned on Chinese, the others the Shakespeare BPE
        replayed = chinese if text == "自然语言处理很有趣。" else bpe
        summary, html = tab.replay(text, 10**9)
        assert [chip_id for chip_id, _, _ in _chips(html)] == replayed.encode(text)
        assert f"of {len(replayed.merges):,} merges of `{'chinese-bpe' if replayed is chinese else BPE}`" in summary


def test_replay_with_no_merges_gives_one_chip_per_byte_and_names_the_last_merge(bpe):
    text = "Wherefore art thou 🙂"
    summary, html = tab.replay(text, 0)
    assert len(_chips(html)) == len(text.encode("utf-8"))
    summary, _ = tab.replay(text, 1)
    left, right = bpe.merges[0]
    assert "Merge #1 joined" in summary and summary.count("`") == 8  # the BPE's name, then the merge's three pieces
    assert tab.replay(text, 10**9) == tab.replay(text, len(bpe.merges))  # the slider is clamped


def test_bpe_from_scratch_on_the_sailor_rhyme_grows_then_shrinks_the_vocabulary():
    notice, slider, table, curve, html = figures(tab.train_scratch(tab.SAILOR))
    rows = table.values.tolist()
    sizes = list(curve.data[0].y)
    assert notice == "" and slider.maximum == len(rows) == len(sizes) - 1
    assert max(sizes) > sizes[0] and sizes[-1] < max(sizes)
    assert rows[0][:4] == [1, "s + e", 13, "se"]  # "se" occurs 13 times: sea x 6, see x 7
    words = tab.SAILOR.split(" ")
    assert [text for _, text, _ in _chips(html)] == [views.visible(w + " ") for w in words[:-1]] + [words[-1]]


def test_bpe_from_scratch_segmentation_never_crosses_a_space_and_rebuilds_the_text():
    _, training, _ = use.scratch(tab.SAILOR)
    for k in range(len(training.steps) + 1):
        curve, html = figures(tab.scratch_step(tab.SAILOR, k))
        chips = [text for _, text, _ in _chips(html)]
        assert "".join(chips) == views.visible(tab.SAILOR)
        assert all(re.fullmatch(r"[^·]*·?", chip) for chip in chips)
        assert list(curve.data[1].x) == [k]  # the current step is marked on the curve


@pytest.mark.parametrize("text", BAD_INPUTS, ids=lambda t: repr(t)[:20])
def test_bad_input_gives_a_result_or_a_friendly_message(text):
    notice, html = tab.tokenize(text)
    summary, replay_html = tab.replay(text, 100)
    scratch = figures(tab.train_scratch(text))
    curve, scratch_html = figures(tab.scratch_step(text, 5))
    for out in (html, replay_html, scratch_html, notice, summary, scratch[0]):
        out.encode("utf-8")  # no lone surrogate left to break the JSON reply
        assert not re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", out)  # control characters shown, not sent
    if not text:
        assert "Type or paste some text" in html and "<span" not in html


def test_long_paste_is_cut_to_the_stated_limit_with_a_notice(bpe):
    notice, html = tab.tokenize(HUNDRED_KB)
    assert "100,000 characters" in notice and "5,000" in notice
    # the chips drawn are the first CHIPS_SHOWN tokens of the 5,000 characters kept, and say so
    assert [i for i, _, _ in _panel(html, BPE)] == bpe.encode(HUNDRED_KB[:5000])[:views.CHIPS_SHOWN]
    assert f"of {len(bpe.encode(HUNDRED_KB[:5000])):,} tokens are drawn" in html
    assert "2,000" in tab.train_scratch(HUNDRED_KB)[0]


def test_visible_marks_whitespace_controls_and_invisible_characters():
    assert views.visible("a b\n\t\x00\x7f\u202e\u200d\ud800") == "a·b↵⇥\\x00\\x7f<U+202E><U+200D><U+D800>"


@pytest.fixture
def model_dir(tmp_path):
    """A checkpoint folder with the two shipped tokenizers, a copy of one, and a new BPE."""
    for name in (CHAR, BPE, "shakespeare-lm"):
        (tmp_path / name).mkdir()
        source = CHAR if name == CHAR else BPE
        shutil.copy(store.DEFAULT_MODEL_DIR / source / "tokenizer.json", tmp_path / name / "tokenizer.json")
    train_byte_level_bpe(["good film, bad film, great film"] * 5, 300).save(tmp_path / "sentiment" / "tokenizer.json")
    (tmp_path / "no-tokenizer").mkdir()
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "tokenizer.json").write_text("{not json")
    store.set_model_dir(tmp_path)
    yield tmp_path
    store.set_model_dir(store.DEFAULT_MODEL_DIR)


def test_every_shipped_tokenizer_gets_a_panel_and_a_shared_file_one(model_dir):
    text = "good film"
    notice, html = tab.tokenize(text)
    titles = [title for title, _ in _Chips(html).panels[1:]]
    assert "broken" in notice and str(model_dir / "broken" / "tokenizer.json") in notice
    assert len(titles) == 3 and "characters" in titles[0]
    assert any("shakespeare-bpe" in t and "shakespeare-lm" in t for t in titles)
    sentiment = TextTokenizer.load(model_dir / "sentiment")
    assert [i for i, _, _ in _panel(tab.tokenize(text)[1], "sentiment")] == sentiment.encode(text)


def test_no_tokenizer_at_all_is_a_gradio_error(tmp_path):
    store.set_model_dir(tmp_path)
    try:
        with pytest.raises(gr.Error, match="No readable tokenizer.json"):
            tab.tokenize("hello")
    finally:
        store.set_model_dir(store.DEFAULT_MODEL_DIR)


def test_the_tab_is_first_and_exposes_its_endpoints():
    import app

    assert app.TABS[0] is tab
    with gr.Blocks() as demo:
        tab.build()
    names = {fn.api_name for fn in demo.fns.values()}
    assert {"tokenize", "replay_merges", "bpe_from_scratch", "bpe_step"} <= names


def _chromium() -> str:
    path = shutil.which("chromium")
    if path is None:
        message = "Debian's chromium is needed for the browser test (apt-get install chromium)"
        if os.environ.get("TRANSFORMER_LAB_REQUIRE_BROWSER"):
            pytest.fail(message)
        pytest.skip(message)
    return path


def test_chips_render_in_a_real_browser_with_the_text_escaped_and_spans_on_hover(bpe):
    from playwright.sync_api import sync_playwright

    chromium = _chromium()
    text = "<script>window.hacked = 1</script> 🙂"
    with gr.Blocks() as demo:
        tab.build()
    demo.launch(prevent_thread_lock=True, quiet=True)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            page = browser.new_page()
            page.goto(demo.local_url)
            page.locator("#tokens_text textarea").fill(text)
            bpe_chips = page.locator(".panel").filter(has_text=BPE).locator(".tok")
            bpe_chips.nth(len(bpe.encode(text)) - 1).wait_for(timeout=30_000)
            assert bpe_chips.count() == len(bpe.encode(text))
            labels = bpe_chips.evaluate_all("chips => chips.map(chip => chip.firstChild.textContent)")
            assert labels == [views.visible(span.text) for span in bpe.tokens(text)]  # "<script>" shown as text
            assert page.evaluate("window.hacked") is None
            assert bpe_chips.first.get_attribute("title").startswith(f"id {bpe.encode(text)[0]} | chars 0:1")
            browser.close()
    finally:
        demo.close()


def test_replay_without_the_shakespeare_bpe_says_what_is_missing(tmp_path):
    store.set_model_dir(tmp_path)
    try:
        with gr.Blocks():
            tab.build()  # the tab still builds
        with pytest.raises(gr.Error, match="shakespeare-bpe"):
            tab.replay("hello", 3)
    finally:
        store.set_model_dir(store.DEFAULT_MODEL_DIR)


def test_each_panel_shows_tokens_per_character_bytes_per_token_and_dashes_the_fragments():
    _, html_ = tab.tokenize("它 is")
    assert "tokens/character" in html_ and "bytes/token" in html_
    assert 'class="tok fragment"' in html_  # a byte-level BPE splits 它 into bytes
    counts = views.counts("它 is", store.tokenizer("shakespeare-bpe").tokens("它 is"))
    assert counts.fragments == 3 and counts.bytes_per_token == pytest.approx(counts.bytes / counts.tokens)
    _, zh = tab.tokenize("它 is", "zh-CN")
    assert "每个字符" in zh


def test_the_cost_pair_table_shows_the_chinese_over_english_ratio():
    table = tab.cost_pair()
    assert "Chinese ÷ English" in table and "×" in table and "shakespeare-bpe" in table
    assert "中文 ÷ 英文" in tab.cost_pair("zh-CN")


def test_the_cost_table_gives_tokens_per_character_for_the_multilingual_sentencepiece_beside_the_bpes():
    """Issue 47: multilingual-e5's unigram pieces cost about as many tokens in Chinese as in English."""
    row = next(r for r in tab.cost_pair().split("<tr>") if "multilingual-e5" in r)
    assert "SentencePiece unigram" in row and "16 (0.27 per character)" in row and "15 (0.88 per character)" in row
    assert "0.94×" in row and "每字符" in tab.cost_pair("zh-CN")
