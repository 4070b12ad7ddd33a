"""The app in Chinese, in a real browser: every tab and lecture step with `lang=zh-CN` at 1280x720, and
the language switch, which keeps the view and redraws it.

"Chinese" is checked on the page itself: no visible text node may be English only (Latin letters and no
Chinese), apart from what stays as it is in either language: token chips and the model's own text,
model names, numbers, code, and the terms the Chinese texts keep in Latin letters (softmax, BPE, ...).
Screenshots of each tab and step in Chinese go to test-artifacts/zh-*.png.
"""

from __future__ import annotations

import pytest

from i18n import t
from test_browser import (ARTIFACTS, HEAD_LINKS, LINKS, PROJECTOR, Visit, assert_drawn, browser,  # noqa: F401
                          server, visit, wait_drawn, walk_lecture)  # (fixtures)

# Where a text node is not ours to translate: what a person typed or a model wrote, token chips, code,
# model names and the examples' texts (inputs in the language the models read), and the numbers on axes.
NOT_OURS = ", ".join([
    "script", "style", "textarea", "input", "code", "pre", ".sr-only", ".model-text",  # typed, written, hidden
    ".tok", ".token", "#generated-text", "[data-testid=highlighted-text]",  # token chips and generated text
    "[data-testid^=dataset-cell]", ".gallery-item",  # the examples: inputs in the language the models read
    ".body-cell", ".sizing-body",  # table cells: token texts, tensor and model names, numbers (the headers are checked)
    'g[class$="tick"]', ".cbaxis", ".cartesianlayer .plot text", ".heatmap-label", ".legendtext",  # axis ticks, text on
    # the data (a heatmap's cell labels sit in plotly's overplot layer: the logit lens's guesses) and legends of tokens
    ".column-block:not(#header)",  # a plotly table's cells (the forward pass's ids: the text's tokens); not its headers
    ".codemirror-wrapper", ".cm-editor", "[data-testid=label-output-value]", ".output-class", "[role=listbox]",
])
# Latin words a Chinese page keeps: names, the terms the Chinese texts keep, and units.
KEPT = ["Transformer Lab", "Transformer", "transformer_core", "Hugging Face Hub", "Hugging Face", "GPT-2", "GPT",
        "BERT", "MiniLM", "all-MiniLM-L6-v2", "Shakespeare", "BPE", "WordPiece", "softmax", "logits", "top-k",
        "Top-k", "top-p", "Top-p", "min-p", "Min-p", "token", "Abnar", "Zuidema", "nats", "d_model", "d_head",
        "d_ff", "n_head", "n_class", "vocab", "W_q", "W_k", "W_v", "W_o", "TOTAL", "UTF-8", "UNK", "PNG", "SVG", "JSON", "API", "MCP",
        "Gradio", "gradio_client", "pig latin", "teacher forcing", "rollout", "English",
        # model names (the checkpoints' folders)
        "shakespeare-lm", "sentiment-pretrained", "sentiment", "translate-copy-sinusoidal", "translate-copy",
        "translate-reverse", "translate-sort", "translate-pig-latin", "cheat-causal", "cheat-nomask", "gpt2",
        # the notice Gemma's terms ask every distribution to carry, word for word (lab/llms.py, the About tab)
        "Gemma is provided under and subject to the Gemma Terms of Use found at ai.google.dev/gemma/terms",
        # Gradio writes these itself, in English in every locale (not in its translations): the status
        # tracker's cache badge
        "from cache", "used cache"]

ENGLISH_ONLY = """([notOurs, kept]) => {
  const shown = (el) => el && el.getClientRects().length > 0 && getComputedStyle(el).visibility !== 'hidden';
  const found = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode, el = node.parentElement;
    let text = node.textContent.trim();
    if (!text || /[\\u3400-\\u9fff]/.test(text) || !shown(el) || el.closest(notOurs)) continue;
    for (const word of kept) text = text.split(word).join(' ');
    if (/[A-Za-z]{2,}/.test(text.replace(/\\b(?:[A-Za-z]\\d*|[A-Za-z]_?[a-z]?)\\b/g, ' ')))
      found.push(node.textContent.trim().slice(0, 80));
  }
  return [...new Set(found)];
}"""


def english_only(visit) -> list[str]:
    """The visible text nodes that are English only (see the module's note on what is left out)."""
    return visit.page.evaluate(ENGLISH_ONLY, [NOT_OURS, KEPT])


def shot(visit, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    visit.page.screenshot(path=str(ARTIFACTS / f"zh-{name}.png"))


def test_every_lecture_step_reads_in_chinese_and_fits_the_projector(browser, server):  # noqa: F811
    seen = []

    def check(visit, step: int) -> None:
        shot(visit, f"lecture-{step}")
        seen.append((step, english_only(visit)))

    # forward only: what each step leaves for the next is the same in either language, and the English walk
    # goes back through every step
    walk_lecture(browser, server[0], "?lecture=1&lang=zh-CN", check)
    assert [s for s in seen if s[1]] == []


def test_the_switch_keeps_the_text_and_settings_and_redraws_the_view(visit):
    visit.open("?tab=attention&text=The+cat+sat+on+the+mat+because+it+was+tired&layer=1&lang=en")
    assert_drawn(wait_drawn(visit, "attention", LINKS["attention"][1]), "attention")
    panel = visit.page.locator("#tab-attention")
    text = panel.locator("textarea").first
    layer = panel.locator("input[type=number]").first
    text.fill("The animal did not cross the street because it was too tired")
    layer.fill("2")
    layer.press("Enter")
    panel.get_by_role("button", name="Show attention").click()
    title = "() => Array.from(document.querySelectorAll('#tab-attention .gtitle')).map((e) => e.textContent)"
    visit.page.wait_for_function(f"() => ({title})().some((t) => t.startsWith('Layer 2'))")
    camera = "() => Array.from(document.querySelectorAll('#tab-attention .modebar-btn')).map((b) => b.dataset.title)"
    assert "Download plot as a PNG" in visit.page.evaluate(camera)
    visit.page.locator("#lang").get_by_text("简体中文").click()
    visit.page.wait_for_function(f"() => ({title})().some((t) => t.startsWith('第 2 层'))")
    # plotly's own toolbar in the page's language too (its zh-CN locale)
    visit.page.wait_for_function(f"() => ({camera})().includes('下载图表为PNG格式')")
    assert_drawn(wait_drawn(visit, "attention", LINKS["attention"][1]), "attention")
    assert text.input_value() == "The animal did not cross the street because it was too tired"
    assert layer.input_value() == "2"
    assert visit.page.locator("#tab-attention").is_visible()  # the same tab
    keys = visit.page.evaluate("""() => Array.from(document.querySelectorAll('#tab-attention .js-plotly-plot'))
        .flatMap((gd) => (gd._fullData || []).flatMap((t) => Array.from(t.x || [])))""")
    assert keys and not any("cat" in str(k) for k in keys)  # redrawn from the typed text, not the link's
    assert english_only(visit) == []
    shot(visit, "switched")


# --- what an error leaves, the head tools after a new model, figures as exported (issue 48, rows 5, 9, 13, 15) ---

DRAWN = """(sel) => Array.from(document.querySelectorAll(sel + ' .js-plotly-plot'))
  .filter((gd) => (gd._fullData || []).length > 0).length"""


def test_an_error_clears_the_old_figures_and_its_toast_is_titled_in_chinese(visit):
    visit.open(LINKS["attention"][0] + "&lang=zh-CN")
    assert_drawn(wait_drawn(visit, "attention", LINKS["attention"][1]), "attention")
    assert visit.page.evaluate(DRAWN, "#attention-grid") == 1
    panel = visit.page.locator("#tab-attention")
    panel.locator("#text textarea").fill("   ")
    panel.locator("#attention-run").click()
    toast = visit.page.locator("[data-testid=toast-body]").first
    toast.wait_for()
    visit.page.wait_for_function("() => document.querySelector('.toast-title').textContent.trim() === '错误'")
    assert "请先输入" in toast.inner_text()
    # the cat's figures no longer stand under the error as if they were the answer
    visit.page.wait_for_function(f"() => ({DRAWN})('#tab-attention') === 0")
    shot(visit, "attention-error")


# Gradio's status line as it writes it (statustracker-*.js): its words, then a comment node and the timer
STATUS = """(words) => { const line = document.createElement('div'); line.className = 'progress-text';
  line.append(words, document.createComment(''), ' 0.1s'); document.body.append(line); return true; }"""
STATUSES = "() => Array.from(document.querySelectorAll('.progress-text')).map((line) => line.textContent)"


def test_a_wait_says_processing_and_its_place_in_the_queue_in_chinese(visit):
    """Gradio writes "processing |" and "queue: 2/5 |" in English in every locale (ui/gradio_patches.js, 12): its
    status line, as Gradio builds it, is in the page's language a frame later. (A real wait's line was looked at in
    chromium; asserting one here depended on the wait outlasting a frame, which a loaded CI did not give.)"""
    visit.open(LINKS["tokens"][0] + "&lang=zh-CN")
    for words in ("processing |", "queue: 2/5 |", "queue: 3/ |"):
        visit.page.evaluate(STATUS, words)
    visit.page.wait_for_function(f"() => ({STATUSES})().filter((t) => t.startsWith('排队')).length === 2")
    assert {"处理中 | 0.1s", "排队：2/5 | 0.1s", "排队：3/ | 0.1s"} <= set(visit.page.evaluate(STATUSES))


def test_the_find_note_counts_the_heads_of_the_model_now_chosen(visit):
    visit.open(HEAD_LINKS["find"][0] + "&lang=zh-CN")
    assert_drawn(wait_drawn(visit, "attention", HEAD_LINKS["find"][1]), "attention")
    note = visit.page.locator("#find-note")
    assert "全部 72 个头" in note.inner_text()  # sentiment-pretrained: 6 layers x 12 heads
    visit.page.locator("#model input").click()
    visit.page.get_by_role("option", name="莎士比亚语言模型（从零训练）·shakespeare-lm").click()  # its human name
    visit.page.wait_for_function("() => document.querySelector('#find-note').innerText.includes('全部 36 个头')")
    assert "72" not in note.inner_text()


TITLES = """() => Array.from(document.querySelectorAll('#tab-attention .js-plotly-plot')).filter((gd) => gd.offsetParent)
  .map((gd) => { const title = gd.querySelector('.gtitle');
                 return title ? title.getBoundingClientRect().top - gd.getBoundingClientRect().top : 99; })"""
SVG_FONT = """async () => { const gd = document.querySelector('#find-ranking .js-plotly-plot');
  const svg = decodeURIComponent((await Plotly.toImage(gd, {format: 'svg'})).split(',')[1]);
  return /class="gtitle"[^>]*Noto Sans CJK SC/.test(svg); }"""


def test_a_chinese_title_stands_inside_its_figure_and_the_svg_names_a_chinese_font(visit):
    visit.open(HEAD_LINKS["find"][0] + "&lang=zh-CN")
    assert_drawn(wait_drawn(visit, "attention", HEAD_LINKS["find"][1]), "attention")
    tops = visit.page.evaluate(TITLES)
    assert tops and min(tops) >= 0, tops  # Han characters stand taller than plotly's 0.7em: the top was cut
    assert visit.page.evaluate(SVG_FONT)


def test_a_title_of_several_lines_stands_inside_its_figure(visit):
    visit.open(HEAD_LINKS["lens"][0] + "&lang=zh-CN")
    assert_drawn(wait_drawn(visit, "attention", HEAD_LINKS["lens"][1]), "attention")
    lines = visit.page.evaluate("() => document.querySelector('#lens-table .gtitle').querySelectorAll('.line').length")
    assert lines >= 3  # the lens table's title: two lines and a note
    tops = visit.page.evaluate(TITLES)
    assert tops and min(tops) >= 0, tops  # plotly placed such a title by its first baseline: half a line was cut


# --- the phone (issue 48, row 14) ------------------------------------------------------------------------------

PHONE = {"width": 390, "height": 844}
# a control's text squeezed to about one character a line (a label beside a slider's number box), and the page's
# title broken over lines ("Tran/sfor/mer/Lab")
SQUEEZED = """() => {
  const shown = (el) => el.offsetParent !== null && el.getClientRects().length > 0;
  const squeezed = Array.from(document.querySelectorAll('[data-testid=block-info], button, label'))
    .filter((el) => shown(el) && el.innerText.trim().length >= 3)
    .filter((el) => { const size = parseFloat(getComputedStyle(el).fontSize), box = el.getBoundingClientRect();
                      return box.width < 2.2 * size && box.height > 2.5 * size; })
    .map((el) => el.innerText.trim().slice(0, 30));
  const h1 = document.querySelector('h1'), size = parseFloat(getComputedStyle(h1).fontSize);
  return {squeezed: [...new Set(squeezed)], titleLines: Math.round(h1.getBoundingClientRect().height / (1.2 * size))};
}"""


# Titles in a figure at phone width that run into each other or past the figure's edge: the figure's title and
# its panels' titles (plotly's annotations), as the browser draws them
CROWDED = """(sel) => {
  const gd = document.querySelector(sel + ' .js-plotly-plot'), edge = gd.getBoundingClientRect();
  const boxes = Array.from(gd.querySelectorAll('.gtitle, .annotation-text'))
    .map((e) => [e.textContent, e.getBoundingClientRect()]).filter(([, b]) => b.width > 0);
  const meet = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  const crowded = [];
  boxes.forEach(([text, box], i) => {
    if (box.left < edge.left || box.right > edge.right) crowded.push(['past the edge', text]);
    boxes.slice(i + 1).filter(([, other]) => meet(box, other)).forEach(([other]) => crowded.push([text, other]));
  });
  return {titles: boxes.length, crowded};
}"""


# Each visible figure's toolbar box (shown on a tap on a phone) against the titles in it
COVERED = """(tab) => Array.from(document.querySelectorAll(`#tab-${tab} .js-plotly-plot`)).filter((gd) => gd.offsetParent)
  .flatMap((gd) => { const bar = gd.querySelector('.modebar');
    if (!bar) return [];
    const b = bar.getBoundingClientRect();
    return Array.from(gd.querySelectorAll('.gtitle, .annotation-text')).filter((e) => {
      const t = e.getBoundingClientRect();
      return t.width > 0 && t.left < b.right && b.left < t.right && t.top < b.bottom && b.top < t.bottom;
    }).map((e) => e.textContent); })"""


# the figures whose panels' titles share a phone's width (issue 48, row 14)
# (a figure, the titles and notes it shows at least)
PANEL_TITLES = {"masking": (("#masking-gallery", 5), ("#masking-attention", 3)), "generate": (("#generate-stages", 5),)}
TOOLBAR_TABS = ("attention", "masking", "translate", "sentiment")


def _examples_show_no_raw_true_or_false(visit) -> None:
    cells = visit.page.locator("#tab-masking [data-testid^=dataset-cell]").all_inner_texts()
    assert cells and not {c.strip().lower() for c in cells} & {"true", "false"}
    assert any("无掩码" in c for c in cells)  # the mask column in the page's words


def _every_example_of_a_set_is_on_one_page_with_no_english_page_numbers(visit) -> None:
    # the Attention tab's examples: one per model, more than Gradio's 10 a page (folded under the figures' way:
    # a person opens them)
    panel = visit.page.locator("#tab-attention")
    panel.locator("#attention-examples").get_by_text("示例").first.click()
    panel.locator("[data-testid^=dataset-cell]").first.wait_for()
    assert panel.locator(".paginate").count() == 0 and "Pages" not in panel.inner_text()
    assert panel.locator("[data-testid^=dataset-cell]").count() > 10 * 3  # every row (3 columns), not 10


# what else a tab's page shows in Chinese at the projector
AT_THE_PROJECTOR = {"masking": _examples_show_no_raw_true_or_false,
                    "attention": _every_example_of_a_set_is_on_one_page_with_no_english_page_numbers}


# The lens table as drawn: its width, the width its written guesses need, whether its block scrolls sideways, and
# each written guess's box
LENS_DRAWN = """() => { const gd = document.querySelector('#lens-table .js-plotly-plot');
  const guesses = Array.from(gd.querySelectorAll('.heatmaplayer text')).filter((e) => e.textContent.trim());
  return {width: gd._fullLayout.width, least: gd.layout.meta.min_width,
          scrolls: gd.parentElement.scrollWidth > gd.parentElement.clientWidth + 1,
          boxes: guesses.map((e) => { const b = e.getBoundingClientRect();
                                      return [Math.round(b.top), b.left, b.right, e.textContent]; })}; }"""


def test_on_a_phone_the_lens_table_is_drawn_as_wide_as_its_guesses_need_and_scrolls_sideways(visit):
    visit.page.set_viewport_size(PHONE)
    visit.page.goto(visit.base_url + "/" + HEAD_LINKS["lens"][0] + "&lang=zh-CN")  # a phone folds the tab names
    visit.page.locator("#tab-attention").wait_for()
    assert_drawn(wait_drawn(visit, "attention", HEAD_LINKS["lens"][1]), "attention")
    for _ in range(100):  # widened a moment after it is drawn
        seen = visit.page.evaluate(LENS_DRAWN)
        if seen["width"] >= seen["least"]:
            break
        visit.page.wait_for_timeout(200)
    visit.page.locator("#lens-table").scroll_into_view_if_needed()
    shot(visit, "phone-lens")
    assert seen["width"] >= seen["least"] > PHONE["width"] and seen["scrolls"], seen
    rows: dict[int, list] = {}
    for top, left, right, text in seen["boxes"]:
        rows.setdefault(top, []).append((left, right, text))
    crossed = [(a[2], b[2]) for row in rows.values() for a, b in zip(sorted(row), sorted(row)[1:]) if b[0] < a[1] - 1]
    assert len(seen["boxes"]) >= 10 and crossed == [], crossed  # at phone width they crossed in every row


# Each visible figure's titles and notes as drawn: those past its left or right edge, and pairs on one line that
# run into each other (a Chinese title 565 px long in a 326 px figure lost both ends; two panels' titles crossed)
CUT_OR_CROSSED = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).filter((gd) => gd.offsetParent).flatMap((gd) => {
  const g = gd.getBoundingClientRect();
  const texts = Array.from(gd.querySelectorAll('.gtitle, .annotation-text')).map((e) => [e.getBoundingClientRect(), e.textContent])
    .filter(([r]) => r.width > 0);
  const cut = texts.filter(([r]) => r.left < g.left - 1 || r.right > g.right + 1 || r.top < g.top - 1).map(([, t]) => t);
  const crossed = texts.flatMap(([a, s], i) => texts.slice(i + 1).filter(([b]) => a.left < b.right - 1 && b.left < a.right - 1
    && a.top < b.bottom - 1 && b.top < a.bottom - 1).map(([, t]) => s + ' | ' + t));
  return [...cut, ...crossed]; })"""


@pytest.mark.parametrize("query, needs", [
    (HEAD_LINKS["ablate"][0] + "&lang=zh-CN", HEAD_LINKS["ablate"][1]),  # a long title, a placeholder's long note
    ("?tab=concepts&lang=zh-CN", []),  # two panels' titles side by side
])
def test_on_a_phone_every_figures_titles_and_notes_stand_inside_it_apart(visit, query, needs):
    visit.page.set_viewport_size(PHONE)
    visit.page.goto(visit.base_url + "/" + query)
    tab = query.split("tab=")[1].split("&")[0]
    visit.page.locator(f"#tab-{tab}").wait_for()
    assert_drawn(wait_drawn(visit, tab, needs), tab)
    try:  # broken into lines once drawn (ui/page.js)
        visit.page.wait_for_function(f"() => ({CUT_OR_CROSSED})().length === 0", timeout=10_000)
    finally:
        assert visit.page.evaluate(CUT_OR_CROSSED) == []
    titles = visit.page.evaluate("() => Array.from(document.querySelectorAll('.js-plotly-plot')).filter((gd) => "
                                 "gd.offsetParent).map((gd) => gd.querySelectorAll('.gtitle tspan.line').length)")
    assert max(titles) >= 2  # a title of one line broken into several, not shrunk or dropped
    # a figure with no label shown stands under the toolbar's strip alone (a hidden label's 36 px were added too)
    gaps = visit.page.evaluate("""() => Array.from(document.querySelectorAll('.block > .js-plotly-plot'))
        .filter((gd) => gd.offsetParent && !gd.parentElement.querySelector(':scope > [data-testid=block-label]:not(.hide)'))
        .map((gd) => Math.round(gd.getBoundingClientRect().top - gd.parentElement.getBoundingClientRect().top))""")
    assert max(gaps, default=0) <= 30, gaps  # (no figure of Concepts is a block's own child)
    # the phone turned sideways: each figure takes the wider box (a height given to plotly had pinned its width)
    visit.page.set_viewport_size(PROJECTOR)
    widths = ("() => Array.from(document.querySelectorAll('.js-plotly-plot')).filter((gd) => gd.offsetParent)"
              ".map((gd) => [gd._fullLayout.width, gd.getBoundingClientRect().width])")
    try:  # plotly follows its box a moment after the resize
        visit.page.wait_for_function(f"() => ({widths})().every(([drawn, box]) => Math.abs(drawn - box) < 2)",
                                     timeout=10_000)
    finally:
        assert all(abs(drawn - box) < 2 for drawn, box in visit.page.evaluate(widths)), visit.page.evaluate(widths)
    assert visit.page.evaluate(CUT_OR_CROSSED) == []


# Each visible figure's x-axis labels that run into a neighbour, as drawn level or upright (a label plotly turns by
# another angle crosses its neighbour's box without touching its letters)
CROSSED_LABELS = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).filter((gd) => gd.offsetParent)
  .flatMap((gd) => { const axes = {};
    gd.querySelectorAll('g[class$="tick"] > text').forEach((e) => {
      const axis = e.parentNode.getAttribute('class'), turn = /rotate\((-?[0-9.]+)/.exec(e.getAttribute('transform') || '');
      const r = e.getBoundingClientRect();
      if (/^x[0-9]*tick$/.test(axis) && r.width > 0 && (!turn || Number(turn[1]) % 90 === 0))
        (axes[axis] = axes[axis] || []).push([r.left, r.right, e.textContent]); });
    return Object.values(axes).flatMap((boxes) => { boxes.sort((a, b) => a[0] - b[0]);
      return boxes.slice(1).flatMap((b, i) => b[0] < boxes[i][1] - 1 ? [boxes[i][2] + ' | ' + b[2]] : []); }); })"""


# One page per tab (a page of a tab costs seconds to open and draw), opened at phone width as a phone opens it, with
# every check of row 14 on it; then widened to the projector's 1280x720, where the same page must read in Chinese
@pytest.mark.parametrize("tab", [*LINKS, "inside", "forward", "questions", "about"])
def test_every_tab_reads_in_chinese_and_on_a_phone_no_control_is_squeezed_and_no_figure_title_is_crowded_or_covered(
        visit, tab):
    query, needs = LINKS.get(tab, (f"?tab={tab}", []))
    visit.page.set_viewport_size(PHONE)
    visit.page.goto(visit.base_url + "/" + query + "&lang=zh-CN")
    visit.page.locator(f"#tab-{tab}").wait_for()
    drawn = wait_drawn(visit, tab, needs)
    seen = visit.page.evaluate(SQUEEZED)
    shot(visit, f"phone-{tab}")
    assert seen["squeezed"] == [] and seen["titleLines"] == 1, seen  # the page's title is one line
    if tab in LINKS:
        assert_drawn(drawn, tab)
    try:  # thinned to the phone's width once drawn (ui/page.js)
        visit.page.wait_for_function(f"() => ({CROSSED_LABELS})().length === 0", timeout=5_000)
    finally:
        assert visit.page.evaluate(CROSSED_LABELS) == []
    for figure, least in PANEL_TITLES.get(tab, ()):  # no two titles run into each other or past the figure's edge
        visit.page.locator(figure).scroll_into_view_if_needed()
        ARTIFACTS.mkdir(exist_ok=True)
        visit.page.locator(figure).screenshot(path=str(ARTIFACTS / f"zh-phone-{figure[1:]}-titles.png"))
        crowded = visit.page.evaluate(CROWDED, figure)
        assert crowded["titles"] >= least and crowded["crowded"] == [], (figure, crowded)
    if tab in TOOLBAR_TABS:  # the toolbar a tap shows covers no title
        assert visit.page.evaluate(f"() => document.querySelectorAll('#tab-{tab} .modebar').length") > 0
        first = visit.page.locator(f"#tab-{tab} .js-plotly-plot").first
        first.scroll_into_view_if_needed()
        first.hover()
        shot(visit, f"phone-{tab}-toolbar")
        assert visit.page.evaluate(COVERED, tab) == []
        # the toolbar's own buttons (ui/page.js) named from the catalogue in the page's language
        titles = visit.page.evaluate(f"() => Array.from(document.querySelectorAll('#tab-{tab} .modebar'), (bar) => "
                                     "Array.from(bar.querySelectorAll('.modebar-btn'), (b) => b.dataset.title))")
        assert titles and all({t("app.export_svg", "zh-CN"), t("app.export_json", "zh-CN")} <= set(bar)
                              and len(set(bar)) == len(bar) for bar in titles), titles  # each once

    visit.page.mouse.move(0, 0)  # the toolbar's tap is over
    visit.page.set_viewport_size(PROJECTOR)
    visit.page.evaluate("() => window.scrollTo(0, 0)")
    # the About tab too: its page load settles first (it failed once in a full run under load; cause unconfirmed)
    assert_drawn(wait_drawn(visit, tab, needs), tab)
    # the tab names the server sends in the page's language (tabs not opened yet) have arrived
    visit.page.wait_for_function("() => /[\\u3400-\\u9fff]/.test(document.querySelector('#tab-about-button').textContent)")
    shot(visit, tab)
    assert english_only(visit) == []
    if check := AT_THE_PROJECTOR.get(tab):
        check(visit)
