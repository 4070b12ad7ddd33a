"""The lighter attention views in a real browser: the numbers drawn are the model's, and hover and export still work.

The figures travel small (one heatmap per grid, weights to the 3 decimals the hover shows,
a gzip'd stream); these tests read back what chromium drew and compare it with the model's
own weights, computed here in the test process from the same checkpoint.
"""

from __future__ import annotations

import json
from urllib.parse import quote_plus

import numpy as np
import pytest
import serving
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from figures import grid_blocks
from lab import attention as use, heads
from test_browser import (ARTIFACTS, Visit, assert_drawn, browser, download, server,  # noqa: F401  (fixtures)
                          wait_drawn)

LM = "shakespeare-lm"
TEXT = "ROMEO: But soft, what light through yonder window breaks?"
LAYER, HEAD, QUERY = 2, 1, 5


def _open_attention(chromium, base_url: str) -> Visit:
    """The Attention tab opened on TEXT with the LM, layer LAYER, head HEAD, drawn."""
    if LM in serving.missing():
        pytest.skip(f"{LM} is not in assets/: the app would draw a random stand-in")
    label = next(lab for lab, name in use.models_offered().items() if name == LM)
    visit = Visit(chromium, base_url)
    visit.open(f"?tab=attention&model={quote_plus(label)}&text={quote_plus(TEXT)}&layer={LAYER}&head={HEAD}"
               f"&query_token={QUERY}")
    visit.page.wait_for_function("""() => { const plots = document.querySelectorAll('#tab-attention .js-plotly-plot');
        return plots.length >= 5 && Array.from(plots).every((gd) => (gd._fullData || []).length > 0)
            && document.querySelector('#attention-grid .js-plotly-plot').layout.title.text.includes('tokens'); }""")
    return visit


@pytest.fixture(scope="module")
def drawn_page(browser, server):  # noqa: F811
    """One such page, with the model's own run, for the tests that only read it, hover it and download from it
    (opening and drawing a page costs seconds); a test that changes the page opens its own (`own_attention_page`)."""
    visit = _open_attention(browser, server[0])
    yield visit, use.attention_run(LM, TEXT)
    visit.context.close()
    assert visit.errors == [], f"console errors: {visit.errors}"


@pytest.fixture
def attention_page(drawn_page):
    """The shared page; a console error it logs fails the test that was using it."""
    visit, run = drawn_page
    logged = len(visit.errors)
    yield visit, run
    assert visit.errors[logged:] == [], f"console errors: {visit.errors[logged:]}"


@pytest.fixture
def own_attention_page(browser, server):  # noqa: F811
    """A page of its own, for a test that changes it."""
    visit = _open_attention(browser, server[0])
    yield visit, use.attention_run(LM, TEXT)
    visit.context.close()
    assert visit.errors == [], f"console errors: {visit.errors}"


def drawn(visit, selector: str) -> dict:
    """The first trace chromium drew in plot `selector`: z, x and y as plotly.js decoded them."""
    return visit.page.evaluate("""(sel) => { const t = document.querySelector(sel)._fullData[0];
        const plain = (v) => ArrayBuffer.isView(v) ? Array.from(v) : Array.isArray(v) ? v.map(plain) : v;
        return {z: plain(t.z), x: plain(t.x), y: plain(t.y)}; }""", selector)


def test_the_drawn_grid_and_head_hold_the_models_own_weights(attention_page):
    visit, run = attention_page
    n_layer, n_head, T, _ = run.attn.shape
    grid = drawn(visit, "#attention-grid .js-plotly-plot")
    z = np.array([[np.nan if v is None else v for v in row] for row in grid["z"]], dtype=float)
    np.testing.assert_allclose(grid_blocks(z, n_layer, n_head), run.attn, atol=5e-4)  # 3 decimals, as hovered
    by_title = visit.page.evaluate("""() => Array.from(document.querySelectorAll('#tab-attention .js-plotly-plot'))
        .map((gd) => [gd.layout.title.text, Array.from(gd._fullData[0].z || [], (r) => Array.from(r))])""")
    selected = dict(by_title)[f"Layer {LAYER}, head {HEAD}"]
    np.testing.assert_allclose(np.array(selected, dtype=float), run.attn[LAYER, HEAD], atol=5e-4)
    assert grid["x"][:T] == [f"H0 {i}:{t}" for i, t in enumerate(run.k_labels)]


def test_the_query_slider_spans_the_texts_tokens_once_drawn(attention_page):
    visit, run = attention_page
    last = run.attn.shape[2] - 1
    assert QUERY < last < 127  # a shorter text than the slider spans before a run, a query that fits
    slider = visit.page.locator("#query_token")
    visit.page.wait_for_function(f"""() => document.querySelector('#query_token input[type=range]').max === '{last}'""")
    assert slider.get_by_test_id("max-value").inner_text() == str(last)
    assert slider.locator("input[type=number]").input_value() == str(QUERY)


def test_the_run_button_sizes_the_query_slider_to_the_new_text(own_attention_page):
    visit, _ = own_attention_page
    longer = TEXT + " It is the east, and Juliet is the sun."
    visit.page.locator("#text textarea").fill(longer)
    visit.page.locator("#attention-run").click()
    last = use.attention_run(LM, longer).attn.shape[2] - 1
    visit.page.wait_for_function(f"""() => document.querySelector('#query_token input[type=range]').max === '{last}'""")
    assert visit.page.locator("#query_token").get_by_test_id("max-value").inner_text() == str(last)


def test_the_step_slider_spans_the_tokens_generated(own_attention_page):
    visit, _ = own_attention_page
    visit.page.get_by_text("Attention while generating (language models)").click()  # opening it runs its view
    n_new = int(visit.page.locator("#new_tokens input[type=number]").input_value())
    visit.page.wait_for_function(f"""() => document.querySelector('#step input[type=range]').max === '{n_new - 1}'""")
    assert n_new - 1 < 39  # narrower than the slider is built (the most tokens it may generate)


def test_hovering_a_cell_shows_its_weight_and_the_figure_downloads_as_numbers_and_png(attention_page):
    visit, run = attention_page
    figure = visit.page.locator("#attention-grid .js-plotly-plot")
    n_layer, n_head, T, _ = run.attn.shape
    row, col = LAYER * (T + 1) + QUERY, HEAD * (T + 1) + 2  # query QUERY of layer LAYER reading key 2 in head HEAD
    figure.scroll_into_view_if_needed()
    point = visit.page.evaluate("""([row, col]) => { const gd = document.querySelector('#attention-grid .js-plotly-plot');
        const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, box = gd.getBoundingClientRect();
        return {x: box.left + xa._offset + xa.c2p(col), y: box.top + ya._offset + ya.c2p(row)}; }""", [row, col])
    visit.page.mouse.move(point["x"] - 5, point["y"] - 5)
    visit.page.mouse.move(point["x"], point["y"], steps=3)
    label = figure.locator(".hoverlayer .hovertext").first
    label.wait_for()
    # the pointer lands on query QUERY or a neighbour (a pixel apart at 17 tokens); the label must name the
    # cell it is on and that cell's own weight
    shown = label.text_content()
    query = int(shown.split(" ")[1].split(":")[0])
    assert abs(query - QUERY) <= 1, shown
    weight = run.attn[LAYER, HEAD, query, 2]
    assert shown == f"L{LAYER} {query}:{run.q_labels[query]} → H{HEAD} 2:{run.k_labels[2]}: {weight:.3f}"

    name, path = download(visit, figure, "Download the numbers (JSON)")
    exported = json.loads(path.read_text())
    z = np.array([[np.nan if v is None else v for v in r] for r in exported["traces"][0]["z"]], dtype=float)
    np.testing.assert_allclose(grid_blocks(z, n_layer, n_head), run.attn, atol=5e-4)
    name, path = download(visit, figure, "Download plot as a PNG")
    assert name.endswith(".png") and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert path.stat().st_size > 20_000
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "attention-grid.png").write_bytes(path.read_bytes())
    name, path = download(visit, figure, "Download plot as SVG")
    assert name.endswith(".svg") and path.read_text().count("<image") >= 1  # the heatmap, drawn as an image


def test_each_heatmap_holds_its_labels_in_the_margins_it_was_given(attention_page):
    """The selected head, the query's rows and the rollout are drawn with the margins the server asked for: their
    tick labels and colour bar fit, so plotly's automargin pushes nothing, which would draw the figure twice."""
    visit, _ = attention_page
    margins = visit.page.evaluate("""() => Array.from(document.querySelectorAll('#tab-attention .js-plotly-plot'))
        .filter((gd) => gd.layout.xaxis && gd.layout.xaxis.side === 'top')
        .map((gd) => { const m = gd.layout.margin, s = gd._fullLayout._size;
                       return [[m.l, m.r, m.t], [s.l, s.r, s.t].map(Math.round)]; })""")
    assert len(margins) >= 3  # head, rows, rollout
    for asked, drawn_at in margins:
        assert drawn_at == asked


def test_sentencepiece_labels_fit_the_margins_they_were_given_too(browser, server):  # noqa: F811
    """The multilingual encoder's labels start with SentencePiece's "▁", which no Latin font has: drawn from the
    Chinese font, it is twice a letter's width, and the margin estimated for a letter was pushed wider by plotly,
    drawing the selected head and the rollout twice (25-30 ms each on this machine)."""
    label = next(lab for lab, name in use.models_offered().items() if name == "multilingual-e5")
    visit = Visit(browser, server[0])
    text = "That summer we swam."
    visit.open(f"?tab=attention&model={quote_plus(label)}&attention=encoder&text={quote_plus(text)}")
    visit.page.wait_for_function("""() => { const plots = document.querySelectorAll('#tab-attention .js-plotly-plot');
        return plots.length >= 5 && Array.from(plots).every((gd) => (gd._fullData || []).length > 0)
            && Array.from(plots).some((gd) => (gd.layout.xaxis.ticktext || []).some((t) => t.includes('▁'))); }""")
    margins = visit.page.evaluate("""() => Array.from(document.querySelectorAll('#tab-attention .js-plotly-plot'))
        .filter((gd) => gd.layout.xaxis && gd.layout.xaxis.side === 'top')
        .map((gd) => { const m = gd.layout.margin, s = gd._fullLayout._size;
                       return [[m.l, m.r, m.t], [s.l, s.r, s.t].map(Math.round)]; })""")
    visit.context.close()
    assert len(margins) >= 3  # head, rows, rollout
    for asked, drawn_at in margins:
        assert drawn_at == asked


# Each figure's key labels as drawn ([left, right] in the page's pixels), by the figure's elem_id
KEY_LABELS = """(ids) => Object.fromEntries(ids.map((id) => [id, Array.from(
    document.querySelectorAll(`#${id} .js-plotly-plot .xtick text`), (e) => e.getBoundingClientRect())
    .filter((r) => r.width > 0).map((r) => [r.left, r.right])]))"""
KEYED = ["attention-head", "attention-rows", "attention-rollout"]


def _crossed(boxes: list) -> list:
    boxes = sorted(boxes)
    return [(a, b) for a, b in zip(boxes, boxes[1:]) if b[0] < a[1] - 1]


def test_on_a_phone_the_key_labels_are_thinned_apart_and_a_wider_screen_gets_them_back(browser, server):  # noqa: F811
    """The server names up to 40 keys, as many as a projector's figure holds; a phone's is a third as wide, and its
    29 upright labels ran into each other. The page keeps every k-th (ui/page.js)."""
    if LM in serving.missing():
        pytest.skip(f"{LM} is not in assets/: the app would draw a random stand-in")
    label = next(lab for lab, name in use.models_offered().items() if name == LM)
    text = TEXT + " It is the east, and Juliet is the sun."
    sent = len(use.attention_run(LM, text).k_labels)  # under 40: every key is named
    visit = Visit(browser, server[0], viewport={"width": 390, "height": 844})
    visit.page.goto(server[0] + f"/?tab=attention&model={quote_plus(label)}&text={quote_plus(text)}")
    visit.page.wait_for_function("""(ids) => ids.every((id) => {
        const gd = document.querySelector(`#${id} .js-plotly-plot`);
        return gd && (gd._fullData || []).length > 0; })""", arg=KEYED)

    def settled(count: str) -> dict:  # the labels once the page has fitted them to the screen (a frame after drawing)
        try:
            visit.page.wait_for_function(f"(ids) => Object.values(({KEY_LABELS})(ids)).every((b) => {count})",
                                         arg=KEYED, timeout=5_000)
        except PlaywrightTimeout:
            pass  # the assertions below name what was drawn
        return visit.page.evaluate(KEY_LABELS, KEYED)

    on_phone = settled(f"b.length < {sent}")
    visit.page.set_viewport_size({"width": 1280, "height": 720})
    widened = settled(f"b.length === {sent}")
    visit.context.close()
    assert visit.errors == [], visit.errors
    for id in KEYED:
        assert 5 <= len(on_phone[id]) < sent and _crossed(on_phone[id]) == [], (id, on_phone[id])
        assert len(widened[id]) == sent and _crossed(widened[id]) == [], (id, widened[id])


def test_a_new_text_is_drawn_once_per_figure_not_also_into_the_plots_gradio_throws_away(own_attention_page):
    """Gradio replaces a plot's element whenever its figure changes, after handing the new figure to the old
    element as well; the old elements are not drawn again but let go (app.py's HEAD: purged, no window listener
    keeps them alive), and the new ones show the new text."""
    visit, run = own_attention_page
    page = visit.page
    # the first figures' own last pass (Gradio's resize, 0.1 s after each draw) must be over before counting
    page.evaluate("""() => { window.lastDrawn = performance.now();
        document.querySelectorAll('#tab-attention .js-plotly-plot').forEach((gd) =>
            gd.on('plotly_afterplot', () => { window.lastDrawn = performance.now(); })); }""")
    page.wait_for_function("() => performance.now() - window.lastDrawn > 500")
    page.evaluate("""() => { window.oldPlots = Array.from(document.querySelectorAll('#tab-attention .js-plotly-plot'))
        .map((gd) => [gd, gd.data, gd._responsiveChartHandler]);
        window.redrawn = 0;
        window.oldPlots.forEach(([gd]) => gd.on('plotly_afterplot', () => { window.redrawn += 1; })); }""")
    assert page.evaluate("window.oldPlots.length") >= 5
    page.locator("#tab-attention textarea").first.fill("JULIET: O Romeo, Romeo, wherefore art thou Romeo?")
    page.locator("#attention-run").click()
    page.wait_for_function("""() => { const old = window.oldPlots.map(([gd]) => gd);
        const plots = Array.from(document.querySelectorAll('#tab-attention .js-plotly-plot'));
        return plots.length >= 5 && plots.every((gd) => !old.includes(gd) && (gd._fullData || []).length > 0); }""")
    assert page.evaluate("() => window.oldPlots.every(([gd, data, resized]) => data && resized)")  # drawn, responsive
    assert page.evaluate("window.redrawn") == 0
    old = page.evaluate("""() => window.oldPlots.map(([gd, data, resized]) => [gd.isConnected, gd.data === undefined,
        gd._fullLayout === undefined, gd._responsiveChartHandler === undefined])""")
    assert old == [[False, True, True, True]] * len(old)  # thrown away and purged
    keys = drawn(visit, "#attention-head .js-plotly-plot")["x"]
    assert any("wherefore" in key for key in keys) and not any("yonder" in key for key in keys)
    assert_drawn(wait_drawn(visit, "attention", ["#attention-grid .js-plotly-plot"], settle_s=0.3), "attention")


# --- a click on a heatmap cell asks which head links its query to its key ---------------------------------

ENCODER = "sentiment-pretrained"
ANIMAL = "The animal didn't cross the street because it was too tired"
CLICK_WAIT_MS = 30_000  # a click's answer re-slices a cached run; a broken wiring fails in this, not in 90 s


CELL = """([sel, row, col]) => { const gd = document.querySelector(sel);
    const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, box = gd.getBoundingClientRect();
    return {x: box.left + xa._offset + xa.c2p(col), y: box.top + ya._offset + ya.c2p(row)}; }"""


def _cell(visit, selector: str, row: int, col: int) -> dict:
    """The window pixel of heatmap cell (row, col) of plot `selector`, scrolled to the middle of the screen (a
    figure may be taller than the window)."""
    point = visit.page.evaluate(CELL, [selector, row, col])
    visit.page.evaluate("(y) => window.scrollBy(0, y - window.innerHeight / 2)", point["y"])
    return visit.page.evaluate(CELL, [selector, row, col])


# the cell plotly reports clicked, recorded on the plot that is drawn when the pointer comes (a new answer may
# replace the plot element)
RECORD_CLICK = """(sel) => { const gd = document.querySelector(sel); window.cellClicked = null;
    gd.once('plotly_click', (e) => { window.cellClicked = e.points[0].pointNumber; }); }"""


def _click_cell(visit, selector: str, row: int, col: int) -> str:
    """Hover cell (row, col) as a person does, then click it; return the hover label it showed. The click waits
    until the cell stands still under the pointer, and is tried again until plotly reports that very cell
    clicked: for a moment after a click the page brings its result into sight (ui/page.js) and lays out the
    figures that arrive, and a cell moved away under a waiting pointer showed no label or was a click on another
    cell (each failed CI once)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page = visit.page
    for _ in range(8):
        point = _cell(visit, selector, row, col)
        page.wait_for_timeout(250)
        if page.evaluate(CELL, [selector, row, col]) != point:
            continue  # still moving
        page.mouse.move(point["x"] - 4, point["y"] - 4)
        page.mouse.move(point["x"], point["y"], steps=3)
        label = page.locator(f"{selector} .hoverlayer .hovertext").first
        try:
            label.wait_for(timeout=5_000)
        except PlaywrightTimeout:
            continue
        shown = label.text_content()
        if page.evaluate(CELL, [selector, row, col]) != point:
            continue
        page.evaluate(RECORD_CLICK, selector)
        page.mouse.click(point["x"], point["y"])
        try:
            page.wait_for_function("() => window.cellClicked !== null", timeout=5_000)
        except PlaywrightTimeout:
            continue
        if page.evaluate("window.cellClicked") == [row, col]:
            return shown
    raise AssertionError(f"cell ({row}, {col}) of {selector} never stood still under the pointer to be clicked")


def _ranked(visit, run, query: int, key: int) -> None:
    """Wait for the ranking of query -> key, and assert it is the server's own: the pickers name the two tokens,
    the map holds every head's weight, its top head is the first bar and is opened large above."""
    found = heads.find_head(ENCODER, ANIMAL, str(query), str(key), "encoder")
    (top, weight), n_layer, n_head = found.ranked[0], *found.weights.shape
    page = visit.page
    page.wait_for_function("""([q, k]) => { const gd = document.querySelector('#find-ranking .js-plotly-plot');
        const title = gd && ((gd._fullLayout || {}).title || {}).text || '';
        return title.includes(`“${q}”`) && title.includes(`“${k}”`); }""",
                           arg=[run.q_labels[query], run.k_labels[key]], timeout=CLICK_WAIT_MS)
    assert_drawn(wait_drawn(visit, "attention", ["#find-bars .js-plotly-plot"], settle_s=0.5), "attention")
    picked = [page.locator(f"#find-{box} textarea").input_value() for box in ("query", "key")]
    assert heads.positions(run.q_labels, picked[0]) == [query] and heads.positions(run.k_labels, picked[1]) == [key]
    assert picked[0].endswith(run.q_labels[query]), picked  # as the axis names it: "10:it"
    ranking = drawn(visit, "#find-ranking .js-plotly-plot")
    z = np.array(ranking["z"], dtype=float)
    np.testing.assert_allclose(z, found.weights, atol=5e-4)
    assert np.unravel_index(z.argmax(), z.shape) == (top.layer, top.head) and z.shape == (n_layer, n_head)
    assert drawn(visit, "#find-bars .js-plotly-plot")["y"][-1] == f"L{top.layer} H{top.head}"  # the top bar
    assert f"L{top.layer} H{top.head}" in page.locator("#find-note").inner_text() and f"{weight:.2f}" in \
        page.locator("#find-note").inner_text()
    page.wait_for_function("""(title) => ((document.querySelector('#attention-head .js-plotly-plot')._fullLayout
        || {}).title || {}).text === title""", arg=f"Layer {top.layer}, head {top.head}", timeout=CLICK_WAIT_MS)
    assert [page.locator(f"#{s} input[type=number]").input_value() for s in ("layer", "head")] == \
        [str(top.layer), str(top.head)]


def test_clicking_a_heatmap_cell_ranks_the_heads_for_its_query_and_key(browser, server):  # noqa: F811
    """The selected head's cell ("it" reading "animal") opens the find view and ranks; then, with it open, a cell
    of the layer-average grid and one of the query-rows figure (whose query is the slider's) rank again."""
    if ENCODER in serving.missing():
        pytest.skip(f"{ENCODER} is not in assets/")
    label = next(lab for lab, name in use.models_offered().items() if name == ENCODER)
    run = use.attention_run(ENCODER, ANIMAL, "encoder")
    it, animal, tired = run.q_labels.index("it"), run.k_labels.index("animal"), run.k_labels.index("tired")
    visit = Visit(browser, server[0])
    try:
        visit.open(f"?tab=attention&model={quote_plus(label)}&attention=encoder&text={quote_plus(ANIMAL)}"
                   f"&layer=1&head=2&query_token={QUERY}")
        assert_drawn(wait_drawn(visit, "attention", ["#attention-head .js-plotly-plot"]), "attention")
        assert not visit.page.locator("#find-ranking").is_visible()  # the find view is closed

        hovered = _click_cell(visit, "#attention-head .js-plotly-plot", it, animal)
        # hover still shows the cell under the pointer, with its weight
        assert hovered == f"{it}:it → {animal}:animal: {run.attn[1, 2, it, animal]:.3f}", hovered
        _ranked(visit, run, it, animal)

        T = len(run.k_labels)
        _click_cell(visit, "#attention-average .js-plotly-plot", it, 2 * (T + 1) + tired)  # layer 2's block
        _ranked(visit, run, it, tired)

        _click_cell(visit, "#attention-rows .js-plotly-plot", 0, animal)  # a head's row: the slider's query
        _ranked(visit, run, QUERY, animal)
        visit.screenshot("attention-click-to-find")
    finally:
        visit.context.close()
    assert visit.errors == [], f"console errors: {visit.errors}"
