"""Transformer Lab in a real browser: what a person sees after typing, clicking and waiting.

One `python app.py` process and one headless Debian chromium serve every test (module
fixtures), driven by playwright. Each test opens a fresh page, does what a student would,
asserts on the page itself, saves a screenshot under test-artifacts/ and fails on any
console error. Without chromium the module is skipped, except in CI
(TRANSFORMER_LAB_REQUIRE_BROWSER=1), where a missing browser is a failure.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

from urllib.parse import parse_qs

import numpy as np
import pytest

import i18n
from figures import grid_blocks
from ui.links import LECTURE_PRESETS, step_result

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
STARTUP_LIMIT_S = 120  # a generous bound for a busy CI machine; benchmarks/load.py reports the real figure
RESULT_TIMEOUT_MS = 90_000  # a model call on a loaded 2-core CPU


def _need_browser():
    required = os.environ.get("TRANSFORMER_LAB_REQUIRE_BROWSER") == "1"
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if required:
            pytest.fail("playwright is not installed (pip install -r requirements-dev.txt)")
        pytest.skip("playwright is not installed")
    if not Path(CHROMIUM).exists():
        if required:
            pytest.fail(f"no chromium at {CHROMIUM}: .ci/run installs it with apt")
        pytest.skip(f"no chromium at {CHROMIUM}")
    return sync_playwright


@pytest.fixture(scope="module")
def server(served_app):
    """(base url, startup seconds) of the one app process the app tests share (tests/app/conftest.py)."""
    return served_app


@pytest.fixture(scope="module")
def browser():
    sync_playwright = _need_browser()
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


class Visit:
    """One page of the app, with every console error it logged."""

    def __init__(self, browser, base_url: str, console: bool = True, **context):
        """`console`: count the console's errors, not only the page's uncaught ones; `context`: playwright's
        new_context settings (a viewport)."""
        self.base_url = base_url
        self.context = browser.new_context(**{"viewport": {"width": 1280, "height": 720}, "accept_downloads": True,
                                              **context})
        self.page = self.context.new_page()
        self.page.set_default_timeout(RESULT_TIMEOUT_MS)
        self.errors: list[str] = []
        if console:
            self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

    def open(self, query: str = "") -> None:
        self.page.goto(self.base_url + "/" + query)
        self.page.locator("#tab-about-button").wait_for()  # the last tab: the page is built

    def tab(self, tab_id: str):
        """Select a tab the way a person does (clicking its name); return its panel."""
        self.page.locator(f"#tab-{tab_id}-button").click()
        panel = self.page.locator(f"#tab-{tab_id}")
        panel.wait_for()
        return panel

    def screenshot(self, name: str) -> None:
        ARTIFACTS.mkdir(exist_ok=True)
        self.page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


@pytest.fixture
def visit(browser, server):
    v = Visit(browser, server[0])
    yield v
    v.context.close()
    assert v.errors == [], f"console errors: {v.errors}"


def plot(panel, label: str):
    """The innermost block in `panel` labelled exactly `label` that holds a plotly figure."""
    labelled = panel.locator(".block").filter(has=panel.page.get_by_text(label, exact=True))
    return labelled.filter(has=panel.page.locator(".js-plotly-plot")).last


def heatmaps(locator) -> int:
    """How many heatmap panels (one drawn image per heatmap trace) a plot shows."""
    return locator.locator(".js-plotly-plot g.hm image").count()


def slider_maximum(panel, label: str) -> int:
    return int(panel.locator(".block", has_text=label).locator("input[type=range]").last.get_attribute("max"))


# --- the app as a whole ----------------------------------------------------------------------

def test_the_first_page_is_served_promptly_with_every_tab(server, visit):
    assert server[1] < STARTUP_LIMIT_S
    visit.open()
    names = visit.page.locator("[role=tab]").all_inner_texts()
    assert names[-1].strip() == "About" and names[0].strip() == "Tokens"
    visit.screenshot("start")


def test_about_says_where_to_start(visit):
    visit.open()
    panel = visit.tab("about")
    assert "Where to start" in panel.inner_text()
    visit.screenshot("about")


def test_a_link_opens_the_tab_with_its_text_and_runs_it(visit):
    visit.open("?tab=tokens&text=Link+me+please")
    panel = visit.page.locator("#tab-tokens")
    panel.locator(".tok[data-id]", has_text="please").first.wait_for()
    assert panel.locator("textarea").first.input_value() == "Link me please"


def test_link_to_this_view_reproduces_the_view(visit):
    visit.open("?tab=tokens&text=Round+trip")
    visit.page.locator("#tab-tokens .tok", has_text="trip").first.wait_for()
    visit.page.get_by_text("Lecture mode and links").click()
    visit.page.locator("#make-link").click()
    link = visit.page.locator("#view-link textarea, #view-link input").first
    link.wait_for()  # the box appears with its link
    visit.page.wait_for_function("() => document.querySelector('#view-link textarea, #view-link input').value")
    assert link.input_value().startswith(visit.base_url + "/?tab=tokens&text=Round+trip")


def test_lecture_mode_enlarges_text_and_steps_through_presets(visit):
    visit.open()
    visit.page.get_by_text("Lecture mode and links").click()
    size = lambda: float(visit.page.evaluate(  # noqa: E731
        "() => parseFloat(getComputedStyle(document.querySelector('#tab-tokens textarea')).fontSize)"))
    before = size()
    visit.page.locator("#lecture-mode input").check()
    visit.page.wait_for_function("() => document.body.classList.contains('lecture-mode')")
    assert size() >= 1.3 * before
    visit.page.locator("#lecture-next").click()  # step 1: tokens
    visit.page.locator("#tab-tokens .tok", has_text="question").first.wait_for()
    visit.screenshot("lecture-mode")


def test_in_lecture_mode_the_candidates_label_leaves_the_steps_title_readable(visit):
    visit.open("?lecture=1&tab=generate&text=ROMEO:&seed=3&new_tokens=12")
    visit.page.wait_for_function("() => document.body.classList.contains('lecture-mode')")
    visit.page.locator("#generate-stages .gtitle").wait_for()
    label, title = (visit.page.locator(f"#generate-stages {part}").first.bounding_box()
                    for part in ("[data-testid=block-label]", ".gtitle"))
    # the label in lecture type covered the title's first line ("step 12: chose ... with p = ...")
    assert label["y"] + label["height"] <= title["y"] + 1, (label, title)


def download(visit, figure, title: str):
    """Click the toolbar button `title` of plot `figure`; return the downloaded file's path."""
    figure.hover()
    with visit.page.expect_download() as started:
        figure.locator(f'.modebar-btn[data-title="{title}"]').click()
    return started.value.suggested_filename, started.value.path()


def test_every_plot_downloads_as_png_svg_and_its_numbers(visit):
    visit.open("?tab=tokens")
    figure = visit.page.locator("#tab-tokens .js-plotly-plot").first
    figure.wait_for()
    for title, suffix in (("Download plot as a PNG", ".png"), ("Download plot as SVG", ".svg"),
                          ("Download the numbers (JSON)", ".json")):
        name, path = download(visit, figure, title)
        assert name.endswith(suffix) and path.stat().st_size > 100
    assert path.read_text().startswith('{"title"')


# --- one test per tab: do what a student does, check what they see --------------------------

def test_tokens_shows_chips_with_their_ids(visit):
    visit.open()
    panel = visit.tab("tokens")
    panel.locator("textarea").first.fill("To be, or not to be")
    chip = panel.locator(".tok[data-id]", has_text="not").first
    chip.wait_for()
    ids = panel.locator(".tok[data-id] sub").all_inner_texts()
    assert len(ids) >= 5 and all(re.fullmatch(r"\d+", i) for i in ids)
    visit.screenshot("tokens")


def test_generate_continues_a_prompt_from_an_example(visit):
    visit.open()
    panel = visit.tab("generate")
    panel.locator(".gallery-item, [data-testid=dataset] button, tr.tr-body").first.click()
    panel.get_by_role("button", name="Generate", exact=True).click()
    output = panel.locator('[data-testid="highlighted-text:textfield"]').first
    output.wait_for()
    visit.page.wait_for_function("(el) => el.innerText.trim().length > 40", arg=output.element_handle())
    assert output.inner_text().startswith("ROMEO")
    visit.screenshot("generate")
    # beam search's settings show under beam search only
    width = panel.locator("#beam_width")
    assert not width.is_visible()
    panel.locator("#decoding").get_by_text("beam", exact=True).click()
    width.wait_for(state="visible")
    panel.locator("#decoding").get_by_text("sample", exact=True).click()
    width.wait_for(state="hidden")


def test_attention_draws_every_layer_and_head_in_one_grid(visit):
    visit.open()
    panel = visit.tab("attention")
    panel.get_by_role("button", name="Show attention").click()
    grid = plot(panel, "Every head of every layer")
    grid.locator("g.hm image").first.wait_for()
    n_layer, n_head = slider_maximum(panel, "Layer") + 1, slider_maximum(panel, "Head") + 1
    assert heatmaps(grid) == 1  # one heatmap, the heads a blank row and column apart (views/attention.py)
    visit.screenshot("attention")
    # the weights behind the grid: every head's matrix, every query's row sums to 1 (to 3 decimals a weight)
    _, path = download(visit, grid.locator(".js-plotly-plot"), "Download the numbers (JSON)")
    traces = json.loads(path.read_text())["traces"]
    (ARTIFACTS / "attention-numbers.json").write_text(path.read_text())
    z = np.array([[np.nan if v is None else v for v in row] for row in traces[0]["z"]], dtype=float)
    blocks = grid_blocks(z, n_layer, n_head)  # (n_layer, n_head, T, T)
    assert len(traces) == 1 and np.allclose(blocks.sum(-1), 1, atol=5e-4 * blocks.shape[-1])


def test_masking_shows_the_mask_gallery(visit):
    visit.open()
    panel = visit.tab("masking")
    panel.get_by_role("button", name="Show masks").click()
    gallery = plot(panel, "Mask gallery")
    gallery.locator("g.hm image").first.wait_for()
    assert heatmaps(gallery) >= 4  # none, causal, padding, windows...
    # the position slider spans the text's tokens: it ends where the loss curve does (a loss per token after the first)
    loss = plot(panel, "Per-token loss").locator(".js-plotly-plot")
    loss.locator("g.trace").first.wait_for()
    predicted = loss.evaluate("(gd) => gd._fullData[0].x.length")
    visit.page.wait_for_function(f"""() => document.querySelector(
        '#position_for_the_top_5_guesses input[type=range]').max === '{predicted}'""")
    # the weights under each mask name their tokens: queries on the left, each panel's keys below it
    weights = panel.locator(".token-grid .js-plotly-plot")
    weights.locator("g.hm image").first.wait_for()
    queries, keys = weights.evaluate("(gd) => [gd._fullLayout.yaxis.ticktext, gd._fullLayout.xaxis.ticktext]")
    assert queries[0] == "F" and len(queries) >= (predicted + 1) // 3  # "Friends" in tokens: every 3rd at most
    assert weights.locator(".ytick text").all_text_contents() == queries
    assert weights.locator(".xtick text").all_text_contents() == keys and keys[0] == "F" and len(keys) >= len(queries)
    visit.screenshot("masking")


def test_translate_copies_digits_from_an_example(visit):
    visit.open()
    panel = visit.tab("translate")
    panel.get_by_role("button", name="Translate", exact=True).click()
    output = panel.locator(".block", has_text="Output").locator("textarea, input").first
    visit.page.wait_for_function("(el) => el.value.trim().length > 0", arg=output.element_handle())
    assert re.fullmatch(r"[\d ]+", output.input_value().strip())
    visit.screenshot("translate")


def test_concepts_computes_attention_weights_by_hand(visit):
    visit.open()
    panel = visit.tab("concepts")
    panel.get_by_role("button", name="Compute attention").click()
    weights = plot(panel, "weights")
    weights.locator("g.hm image").first.wait_for()
    assert heatmaps(weights) >= 1
    visit.screenshot("concepts")


def test_sentiment_gives_a_label_with_two_probabilities(visit):
    visit.open()
    panel = visit.tab("sentiment")
    panel.locator("textarea").first.fill("A moving, beautifully acted film.")
    panel.get_by_role("button", name="Classify", exact=True).click()
    confidences = panel.locator("dd.confidence")
    confidences.nth(1).wait_for()
    percents = [int(text.rstrip("%")) for text in confidences.all_inner_texts()]
    assert len(percents) == 2 and 98 <= sum(percents) <= 102  # two classes, rounded to whole percents
    assert panel.locator('[data-testid="label-output-value"]').first.inner_text().strip()
    visit.screenshot("sentiment")


# --- links and lecture steps draw their views, with no click ----------------------------------

# What a person sees in a tab: is anything still running, which visible plots hold data (or say why
# they are empty), which visible outputs are blank. Only what is on screen counts: a closed
# accordion's plot is not drawn, and an output Gradio shows as "Empty value" is a blank one.
SEEN = """(tab) => {
  const root = document.querySelector(`#tab-${tab}`);
  if (!root) return {busy: 1, busyAt: ['not built yet'], plots: [], blank: []};
  const shown = (e) => e.offsetParent !== null && e.getBoundingClientRect().height > 0;
  const busy = Array.from(root.querySelectorAll('[data-testid=status-tracker]'))
    .filter((e) => shown(e) && !e.classList.contains('hide'));
  // which block, and what its tracker says (a queue place, a timer, an error), for a failure's message
  const busyAt = busy.map((e) => `${(e.closest('.block[id]') || {}).id || '?'}: ${e.innerText.trim().slice(0, 60)}`);
  const plots = Array.from(root.querySelectorAll('.js-plotly-plot')).filter(shown).map((gd) => {
    const data = (gd._fullData || []).map((t) => (t.z && t.z.length) || (t.y && t.y.length) || (t.source ? 1 : 0)
      || (t.cells && t.cells.values ? t.cells.values.length : 0));  // a table (the forward pass's ids)
    const notes = ((gd._fullLayout || {}).annotations || []).filter((a) => a.text).length;
    return {id: (gd.closest('.block[id]') || {}).id || '', data: data.reduce((a, b) => a + b, 0), notes};
  });
  const blank = Array.from(root.querySelectorAll('[aria-label="Empty value"]')).filter(shown)
    .map((e) => (e.closest('.block[id]') || {}).id || (e.closest('.block') || e).innerText.trim().slice(0, 60) || '?');
  // what the page told the person meanwhile (an error toast names why an output stayed blank)
  const toasts = Array.from(document.querySelectorAll('[data-testid=toast-body]')).map((e) => e.innerText.trim());
  return {busy: busy.length, busyAt, plots, blank, toasts};
}"""

# tab -> (a link to it, the elements that must then show content)
LINKS = {
    "tokens": ("?tab=tokens&text=Link+me+please", ["#tokens-chips .tok"]),
    "attention": ("?tab=attention&text=The+cat+sat+on+the+mat", ["#attention-grid .js-plotly-plot"]),
    "masking": ("?tab=masking&text=To+be,+or+not+to+be&mask=causal", ["#masking-gallery .js-plotly-plot"]),
    "generate": ("?tab=generate&text=ROMEO:&seed=3&new_tokens=12", ["#generated-text .token"]),
    "sentiment": ("?tab=sentiment&text=Not+bad+at+all", ["#sentiment-tokens span"]),
    "translate": ("?tab=translate&text=1+2+3+4+5&task=reverse", ["#translate-attention .js-plotly-plot"]),
    "concepts": ("?tab=concepts", []),
}
# tab -> (its main button, its main figure): both must be on the first screen after a lecture step
MAIN = {"tokens": (None, "#tokens-chips"), "attention": ("#attention-run", "#attention-grid"),
        "masking": ("#masking-run", "#masking-gallery"), "generate": ("#generate-run", "#generated-text"),
        "sentiment": ("#sentiment-run", "#sentiment-tokens"), "translate": ("#translate-run", "#translate-attention")}
# a step whose main view is not its tab's usual one: (main button, main figure)
MAIN_OF_STEP = {"pretraining": (None, "#sentiment-compare .js-plotly-plot"),
                "whole_review": (None, "#sentiment-running"),
                "find_head": ("#find-button", "#find-ranking"), "two_languages": ("#find-button", "#find-ranking"),
                "switch_off": ("#ablate-button", "#ablate-outcome"),
                "logit_lens": ("#lens-button", "#lens-table"), "copying": ("#roles-button", "#roles-grid"),
                "paris_lens": ("#lens-button", "#lens-table")}
PROJECTOR = {"width": 1280, "height": 720}


def wait_drawn(visit, tab: str, needs: list[str], settle_s: float = 1.0) -> dict:
    """Wait until tab `tab` has finished running and shows content, as a person waits, and stays so for
    `settle_s` (a step's events may start a moment after its click); return what it shows, on a
    time-out too (`assert_drawn` then says what is missing)."""
    ready = f"""() => {{ const s = ({SEEN})({json.dumps(tab)});
                        return s.busy === 0 && s.blank.length === 0
                               && s.plots.every((p) => p.data > 0 || p.notes > 0)
                               && {json.dumps(needs)}.every((sel) => document.querySelector(sel)); }}"""
    deadline, since = time.monotonic() + RESULT_TIMEOUT_MS / 1000, None
    while time.monotonic() < deadline:
        if visit.page.evaluate(ready):
            since = since or time.monotonic()
            if time.monotonic() - since >= settle_s:
                break
        else:
            since = None
        visit.page.wait_for_timeout(100)
    return visit.page.evaluate(SEEN, tab)


def assert_drawn(seen: dict, tab: str) -> None:
    assert seen["busy"] == 0, f"{tab}: still running: {seen['busyAt']}; toasts: {seen.get('toasts')}"
    assert seen["blank"] == [], f"{tab}: visible output(s) left blank: {seen['blank']}; toasts: {seen.get('toasts')}"
    assert all(p["data"] > 0 or p["notes"] > 0 for p in seen["plots"]), f"{tab}: an empty plot: {seen['plots']}"


@pytest.mark.parametrize("tab", list(LINKS))
def test_a_link_draws_its_view_with_no_click(visit, tab):
    query, needs = LINKS[tab]
    visit.open(query)
    seen = wait_drawn(visit, tab, needs)
    assert_drawn(seen, tab)
    assert seen["plots"] or tab in ("tokens", "generate", "sentiment")
    if tab == "attention":  # the figures are of the linked text, not the default one
        keys = visit.page.evaluate("""() => Array.from(document.querySelectorAll('#tab-attention .js-plotly-plot'))
            .flatMap((gd) => (gd._fullData || []).flatMap((t) => Array.from(t.x || [])))""")
        assert "3: sat" in keys and not any("ROMEO" in str(k) for k in keys)
    ARTIFACTS.mkdir(exist_ok=True)  # the first screen, as the README shows it (normal mode, 1280x720)
    visit.page.screenshot(path=str(ARTIFACTS / f"link-{tab}.png"))


def test_a_link_to_the_inside_tab_draws_the_servers_information_flow_and_its_top_heads_words(visit):
    """The contribution graph of the Shakespeare LM (every decoder we ship has one): the routes into the last
    token at the slider's threshold, as many edges as the server finds, and beside it the top head's words, or
    (this text has no head's edge at 0.05) why there is no head to show."""
    from lab import inside

    text = "Shall I compare thee to a summer's day"
    visit.open(f"?tab=inside&model=shakespeare-lm&text={text.replace(' ', '+')}")
    figures = ["#inside-flow-graph .js-plotly-plot", "#inside-head-bars .js-plotly-plot"]
    assert_drawn(wait_drawn(visit, "inside", figures), "inside")
    run = inside.flow("shakespeare-lm", text)
    token, _, routes, heads = inside.flow_routes(run, inside.LAST, 0.05)
    graph = visit.page.evaluate("""() => { const gd = document.querySelector('#inside-flow-graph .js-plotly-plot');
        return {title: gd._fullLayout.title.text, points: gd.data.reduce((n, d) => n + d.x.length, 0)}; }""")
    assert f"(position {token}): {len(routes)} edges of at least 0.050" in graph["title"], graph["title"]
    # the token slider stands at its end, past this text's last position, and says that its end means the last token
    slider = visit.page.locator("#tab-inside #token")
    assert slider.locator("input[type=number]").input_value() == str(inside.LAST) and token < inside.LAST
    assert "At its right end: the text's last token" in slider.inner_text()
    assert routes and graph["points"] >= len(routes) * 3  # each edge a segment of two points and a gap
    bars = visit.page.evaluate("""() => { const l = document.querySelector('#inside-head-bars .js-plotly-plot')
        ._fullLayout; return [(l.title || {}).text || '', (l.annotations || []).map((a) => a.text).join(' ')]; }""")
    if heads:  # the head that pushes the prediction most, opened
        assert bars[0].startswith(f"L{heads[0][0]} H{heads[0][1]} at"), bars
    else:  # this text at 0.05: no head's edge reaches its last token, and the panel says so (not an empty plot)
        assert bars[1].replace("<br>", " ").startswith("No head to show: at this threshold"), bars


def _box(visit, selector: str) -> dict:
    return visit.page.locator(selector).first.bounding_box()


STEPS = list(LECTURE_PRESETS)


def test_lecture_steps_draw_their_views_on_a_projector_going_forward(browser, server):
    walk_lecture(browser, server[0], "?lecture=1")


# Going back, the walk stops at the first step of "What does a head do?": its steps share one tab and one
# section, where a step left behind could linger; the way back to it crosses four tab changes too. (The whole
# way back doubled the walk, the suite's longest test.) It starts at the last step, chosen in the step box, so
# that it runs beside the walk forward, on the other worker.
BACK_TO = "find_head"


def test_lecture_steps_draw_their_views_on_a_projector_going_back(browser, server):
    walk_lecture(browser, server[0], "?lecture=1", walk=range(len(STEPS) - 1, STEPS.index(BACK_TO) - 1, -1))


def step_by_button(visit: Visit, button: str, changes: int, shown: str) -> None:
    """Click Next or Previous step and wait until the page's step script (ui/links.SCROLL_TO_STEP, which runs
    beside the one that starts the step's view) has counted `changes` steps: the step's inputs are set.

    Once in four runs of the suite on a clean clone, a click on Previous step was followed by nothing for 90 s
    (cause not found; the walk passes alone): as a person would, the walk clicks again, only while the step box
    still shows the step it left (`shown`), so a slow step is never skipped."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for attempt in range(3):
        visit.page.locator(button).click()
        try:
            visit.page.wait_for_function("(n) => window.labScrollStep >= n", arg=changes, timeout=30_000)
            return
        except PlaywrightTimeout:
            box = visit.page.locator("#lecture-step input").first.input_value()
            assert attempt < 2 and box == shown, f"{button} never opened its step (the step box shows {box!r})"


def walk_lecture(browser, base_url: str, query: str, check=None, walk: range = range(len(STEPS))) -> None:
    """Step through the lecture's steps `walk` (all of them, forward, by default) at 1280x720 with Next step and
    Previous step, asserting that each step draws its view with its main button and figure on the first screen; a
    walk that does not start at the first step starts by choosing its step in the step box. Going forward, each
    step's first screen is saved, or `check(visit, step)` runs. The page's language is the link's `lang` (English
    when it has none)."""
    lang = i18n.normalise(parse_qs(query.lstrip("?")).get("lang", ["en"])[0])
    visit = Visit(browser, base_url, console=False, viewport=PROJECTOR)
    visit.open(query)
    # a lecture link opens with its controls open, Next step in sight, and the first step shown (issue 48)
    visit.page.locator("#lecture-next").wait_for()
    presets = list(LECTURE_PRESETS.values())
    if walk[0] != 0:  # once the first step is shown, as a person would
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        wait_drawn(visit, LECTURE_PRESETS[STEPS[0]]["tab"], [], settle_s=0.5)
        # The step box's choice is lost or arrives late about one walk in four when the two walks run side by side
        # (as far back as 4cb6041; cause not found): a person picks again. What the walk checks is each step's
        # view and the step's name in the box (below); the page's step count only says when to look.
        for attempt in range(3):
            visit.page.locator("#lecture-step input").click()
            visit.page.get_by_role("option", name=i18n.t(f"lecture.{STEPS[walk[0]]}", lang), exact=True).click()
            try:
                visit.page.wait_for_function("() => window.labScrollStep >= 1", timeout=20_000)
                break
            except PlaywrightTimeout:
                assert attempt < 2, "choosing a step in the step box never opened it"
        visit.page.wait_for_timeout(1000)  # a first choice that arrived late is counted by now
    changes = visit.page.evaluate("() => window.labScrollStep || 0")  # the steps the page has taken
    for i, previous in zip(walk, [None, *walk]):
        if previous is not None:
            changes += 1
            step_by_button(visit, "#lecture-next" if i > previous else "#lecture-back", changes,
                           i18n.t(f"lecture.{STEPS[previous]}", lang))
        tab = presets[i]["tab"]
        visit.page.locator(f"#tab-{tab}").wait_for()
        seen = wait_drawn(visit, tab, LINKS.get(tab, ("", []))[1], settle_s=0.5)
        if walk.step > 0:
            if check:
                check(visit, i + 1)
            else:
                ARTIFACTS.mkdir(exist_ok=True)
                visit.page.screenshot(path=str(ARTIFACTS / f"lecture-{i + 1}.png"))
        assert_drawn(seen, tab)
        chosen = visit.page.locator("#lecture-step input").first.input_value()
        assert chosen == i18n.t(f"lecture.{STEPS[i]}", lang)  # the step's whole name shows in its box
        compared = visit.page.locator("#sentiment-compare .js-plotly-plot")
        if presets[i].get("compare") == "1":  # both classifiers side by side, each with its attention
            assert compared.count() == 2 and all(p["data"] > 0 for p in seen["plots"])
        button, _ = MAIN_OF_STEP.get(STEPS[i]) or MAIN.get(tab, (None, None))
        figure = step_result(STEPS[i])  # what the step shows, as the page knows it (ui/links.STEP_RESULTS)
        for selector in filter(None, (button, figure)):
            box = _box(visit, selector)
            assert box and box["y"] >= 0, f"step {i + 1}: {selector} is not on the page"
        if button:
            box = _box(visit, button)
            assert box["y"] + box["height"] <= PROJECTOR["height"], f"step {i + 1}: {button} is below the first screen"
        if figure:
            box = _box(visit, figure)
            visible = min(PROJECTOR["height"], box["y"] + box["height"]) - max(box["y"], 0)
            assert visible >= min(200, box["height"]), f"step {i + 1}: only {visible:.0f} px of {figure} on the first screen"
    visit.context.close()
    assert visit.errors == []


# "What does a head do?" in the Attention tab: section -> (a link to it, what must then show content)
ANIMAL = "The+animal+didn't+cross+the+street+because+it+was+too+tired"
HEAD_LINKS = {
    "find": (f"?tab=attention&model=sentiment-pretrained+(classifier)&attention=encoder&text={ANIMAL}"
             "&heads_view=find&find_query=it&find_key=animal", ["#find-ranking .js-plotly-plot",
                                                                 "#find-bars .js-plotly-plot"]),
    "ablate": ("?tab=attention&model=shakespeare-lm+(language+model)&text=ROMEO:+But+soft,+what+light"
               "&heads_view=ablate&heads_off=L0+H1,+L2+H3&ablation=mean",
               ["#ablate-outcome .js-plotly-plot", "#ablate-loss .js-plotly-plot", "#importance-map .js-plotly-plot"]),
    "lens": ("?tab=attention&model=shakespeare-lm+(language+model)&text=ROMEO:+But+soft,+what+light&heads_view=lens",
             ["#lens-table .js-plotly-plot", "#lens-ranks .js-plotly-plot"]),
    "roles": ("?tab=attention&model=shakespeare-lm+(language+model)&heads_view=roles",
              ["#roles-grid .js-plotly-plot", "#roles-induction .js-plotly-plot"]),
}


def _titles(visit, selector: str) -> list[str]:
    return visit.page.evaluate("""(sel) => Array.from(document.querySelectorAll(sel + ' .js-plotly-plot'))
        .map((gd) => ((gd._fullLayout || {}).title || {}).text || '')""", selector)


@pytest.mark.parametrize("section", list(HEAD_LINKS))
def test_a_heads_link_draws_its_view_with_no_click(visit, section):
    query, needs = HEAD_LINKS[section]
    visit.open(query)
    seen = wait_drawn(visit, "attention", needs)
    assert_drawn(seen, "attention")
    page = visit.page
    if section == "find":  # the ranking names the head, and that head opens large above
        assert "L5 H11" in page.locator("#find-note").inner_text()
        page.wait_for_function("""() => Array.from(document.querySelectorAll('#tab-attention .js-plotly-plot'))
            .some((gd) => ((gd._fullLayout || {}).title || {}).text === 'Layer 5, head 11')""")
    if section == "ablate":  # the linked heads are ticked in the grid and named in the legend
        ticked = page.locator("#heads-toggles label").evaluate_all(
            "(els) => els.filter((e) => e.querySelector('input:checked')).map((e) => e.innerText.trim())")
        assert sorted(ticked) == ["L0 H1", "L2 H3"]
        names = page.evaluate("""() => document.querySelector('#ablate-outcome .js-plotly-plot')._fullData
            .map((t) => t.name)""")
        assert names[1] == "L0 H1, L2 H3 off (mean)"
    if section == "lens":  # one row per layer and the embedding, one column per token
        rows = page.evaluate("() => document.querySelector('#lens-table .js-plotly-plot')._fullData[0].z.length")
        assert rows == 7
    if section == "roles":
        assert "no induction head" in page.locator("#roles-note").inner_text()
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator("#heads").screenshot(path=str(ARTIFACTS / f"heads-{section}.png"))


def test_generated_text_reads_as_words_and_a_newline_starts_a_new_line(visit):
    visit.open("?tab=generate&text=ROMEO:%0A&seed=3&new_tokens=30")
    assert_drawn(wait_drawn(visit, "generate", LINKS["generate"][1]), "generate")
    lines = visit.page.evaluate("""() => Array.from(document.querySelectorAll('#generated-text .token .text'))
        .map((e) => ({text: e.textContent, top: e.getBoundingClientRect().top}))""")
    assert lines[0]["text"] == "ROMEO:↵\n"
    assert lines[1]["top"] > lines[0]["top"] + 5  # the first generated piece starts the next line
    ends = [n for n, piece in enumerate(lines[:-1]) if piece["text"].endswith("\n")]
    assert all(lines[n + 1]["top"] > lines[n]["top"] + 5 for n in ends)  # so does every piece after a newline
    same_line = [(a, b) for a, b in zip(lines[1:], lines[2:]) if not a["text"].endswith("\n")]
    assert sum(a["top"] == b["top"] for a, b in same_line) > len(same_line) / 2  # the rest flows as text


def test_a_long_review_draws_its_sentence_strip_and_running_verdict_and_a_click_shows_a_sentence(visit):
    from urllib.parse import urlencode

    from lab.sentiment import REVIEW

    visit.open("?" + urlencode({"tab": "sentiment", "text": REVIEW, "classifier": "sentiment-pretrained"}))
    needs = ["#sentiment-strip .sentence", "#sentiment-running .js-plotly-plot"]
    assert_drawn(wait_drawn(visit, "sentiment", needs), "sentiment")
    page = visit.page
    strip = page.locator("#sentiment-strip .sentence")
    assert strip.count() == 5 and "The first hour is slow" in strip.nth(1).inner_text()
    backgrounds = strip.evaluate_all("(spans) => spans.map((s) => getComputedStyle(s).backgroundColor)")
    assert backgrounds[0].startswith("rgba(220, 38, 38") and backgrounds[3].startswith("rgba(22, 163, 74")
    lines = page.evaluate("""() => document.querySelector('#sentiment-running .js-plotly-plot')._fullData
        .map((t) => Array.from(t.y))""")
    assert [len(y) for y in lines] == [5, 5] and lines[1][1] < 0.5 < lines[1][-1]  # the review turns
    assert "Read sentence by sentence" in page.locator("#sentiment-method").inner_text()
    assert page.locator("#sentiment-running .annotation-text", has_text="turns positive").count() == 1
    strip.nth(1).click()  # sentence 2: its own tokens, outlined in the strip
    page.wait_for_function("""() => document.querySelector('#sentiment-shown').innerText.includes('Sentence 2 of 5')
        && document.querySelector('#sentiment-tokens').innerText.includes('slow')""", timeout=RESULT_TIMEOUT_MS)
    assert_drawn(wait_drawn(visit, "sentiment", needs), "sentiment")
    assert "solid" in strip.nth(1).get_attribute("style") and "solid" not in strip.nth(3).get_attribute("style")
    page.locator("#sentiment-review").scroll_into_view_if_needed()
    visit.page.screenshot(path=str(ARTIFACTS / "sentiment-review.png"))


def test_sentiment_opens_its_text_in_the_attention_tab_on_the_same_classifier(visit):
    visit.open(LINKS["sentiment"][0])
    assert_drawn(wait_drawn(visit, "sentiment", LINKS["sentiment"][1]), "sentiment")
    link = visit.page.locator("#tab-sentiment a", has_text="Open this text in the Attention tab")
    if link.get_attribute("target") == "_blank":
        with visit.context.expect_page() as opened:
            link.click()
        visit.page = opened.value
    else:
        link.click()
    visit.page.locator("#tab-attention").wait_for()
    seen = wait_drawn(visit, "attention", LINKS["attention"][1])
    assert_drawn(seen, "attention")
    picker = visit.page.locator("#tab-attention input[role=listbox], #tab-attention .wrap input").first.input_value()
    assert "fine-tuned for sentiment" in picker  # the classifier, named as people name it
    keys = visit.page.evaluate("""() => Array.from(document.querySelectorAll('#tab-attention .js-plotly-plot'))
        .flatMap((gd) => (gd._fullData || []).flatMap((t) => Array.from(t.x || [])))""")
    assert any("bad" in str(k) for k in keys) and not any("cat" in str(k) for k in keys)


def test_the_mcp_server_offers_the_main_endpoints_as_tools(server):
    import urllib.request

    with urllib.request.urlopen(f"{server[0]}/gradio_api/mcp/schema", timeout=30) as response:
        tools = {tool["name"]: tool for tool in json.loads(response.read())}
    assert {"tokenize", "attention", "generate", "classify", "translate"} <= set(tools)
    assert {"find_head", "switch_off", "importance", "logit_lens", "head_roles"} <= set(tools)
    assert tools["classify"]["description"]  # the handler's docstring tells an agent what it does
