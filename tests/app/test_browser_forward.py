"""The Forward pass tab in chromium: every stage, one click at a time, drawn from the one traced run."""

from __future__ import annotations

from urllib.parse import quote

import pytest

import i18n
from lab import forward
from lab.forward import NUMBERS, STAGES
from test_browser import ARTIFACTS, Visit, browser, server  # noqa: F401 -- the shared fixtures

TITLE = """() => document.querySelector('#forward-diagram .forward-title')?.textContent || ''"""
DRAWN = """() => { const gd = document.querySelector('#forward-heatmap .js-plotly-plot'), t = gd && gd._fullData[0];
  return {cells: !t ? 0 : t.z ? t.z.length : t.cells ? t.cells.values[0].length : t.y ? t.y.length : 0,
          notes: gd ? (gd._fullLayout.annotations || []).length : 0,
          lit: document.querySelectorAll('#forward-diagram svg rect.box.lit').length}; }"""


@pytest.fixture
def visit(browser, server):  # noqa: F811
    v = Visit(browser, server[0])
    yield v
    v.context.close()
    assert v.errors == [], f"console errors: {v.errors}"


# the heatmap shows stage `name`: its title names it, or, for a stage this kind has not, its note does
HEATMAP_SHOWS = """(name) => { const gd = document.querySelector('#forward-heatmap .js-plotly-plot');
  const L = gd && gd._fullLayout;
  return !!L && ((L.title && L.title.text.startsWith(name + ' (')) || (L.annotations || []).some((a) => a.text.includes(name))); }"""


def _wait_stage(visit, n, lang: str = "en") -> None:
    """Until stage `n` (its number: 1-19, or "4a" ...) is drawn: the diagram's title names it and so does the
    heatmap (the diagram is HTML, drawn before plotly draws the heatmap)."""
    stage = forward.stage_of(n)
    visit.page.wait_for_function(f"() => ({TITLE})().startsWith('{NUMBERS[stage]}. ')")
    visit.page.wait_for_function(HEATMAP_SHOWS, arg=i18n.t(f"forward.stage.{stage}", lang))


def test_the_walk_steps_through_every_stage_with_the_stage_lit_and_its_numbers_drawn(visit):
    text = quote("The cat sat on the mat because it was tired.")
    visit.open(f"?tab=forward&model=shakespeare-lm+(language+model)&text={text}&stage=ids&follow=7")
    _wait_stage(visit, 1)
    # a language model's stages only: no pooling (18), so Next goes from the chosen token (17) to the loss (19)
    stages = [stage for stage in STAGES if stage != "pooled"]
    for n, stage in enumerate(stages):
        if n:
            visit.page.locator("#forward-next").click()
            _wait_stage(visit, NUMBERS[stage])
        visit.page.wait_for_timeout(200)
        drawn = visit.page.evaluate(DRAWN)
        assert drawn["cells"] > 0 and drawn["lit"] == 1, (stage, drawn)
        assert i18n.t(f"forward.stage.{stage}", "en") in visit.page.locator("#forward-says").inner_text()
        if stage == "scores":
            visit.screenshot("forward-scores")
    said = visit.page.locator("#forward-says").inner_text()
    assert "-log" in said or "loss" in said


# whether the layer and the head slider take a drag: [layer, head]
MOVABLE = """() => ['#forward-layer', '#forward-head'].map((id) =>
  getComputedStyle(document.querySelector(id)).pointerEvents !== 'none')"""


def test_the_layer_and_head_sliders_can_be_moved_only_where_the_stage_has_them(visit):
    text = quote("The cat sat on the mat.")
    visit.open(f"?tab=forward&model=shakespeare-lm+(language+model)&text={text}&stage=ids")
    _wait_stage(visit, 1)
    assert visit.page.evaluate(MOVABLE) == [False, False]  # token ids: no layer, no head
    for n, movable in ((2, [False, False]), (3, [True, False]), (4, [True, True])):  # embedding, norm, Q K V
        visit.page.locator("#forward-next").click()
        _wait_stage(visit, n)
        shown = str(movable).lower().replace(" ", "")
        visit.page.wait_for_function(f"() => JSON.stringify(({MOVABLE})()) === '{shown}'")
        if n == 3:  # the slider that cannot move fades, the other stays as it was
            faded = visit.page.evaluate("""() => ['#forward-layer', '#forward-head'].map((id) =>
                getComputedStyle(document.querySelector(id)).opacity)""")
            assert faded == ["1", "0.45"], faded
            visit.screenshot("forward-norm-sliders")


def test_a_link_to_an_attention_stage_can_move_both_sliders(visit):  # a lecture step opens there
    text = quote("The cat sat on the mat.")
    visit.open(f"?tab=forward&model=shakespeare-lm+(language+model)&text={text}&stage=attn&layer=2&head=3")
    _wait_stage(visit, 7)
    visit.page.wait_for_function(f"() => JSON.stringify(({MOVABLE})()) === '[true,true]'")


def test_the_translator_shows_its_decoder_loop_in_chinese(visit):
    visit.open("?tab=forward&lang=zh-CN&model=translate-reverse+(translator)&text=123456789&stage=next")
    _wait_stage(visit, 17, "zh-CN")
    # the token picked after each step, in the table beside the candidates' bars
    picked = visit.page.evaluate("""() => Array.from(document.querySelector('#forward-row .js-plotly-plot')
        ._fullData[0].cells.values[2])""")
    assert "".join(picked[:-1]) == "987654321"  # each step writes one token, read by the next step
    said = visit.page.locator("#forward-says").inner_text()
    assert "解码循环" in said and "译文：987654321" in said
    # the stage's name in bold, then a full-width full stop: "**17. 选出的下一个词元。**" left the asterisks
    # standing (CommonMark closes no emphasis between a full stop and a Chinese character)
    bold = visit.page.locator("#forward-says strong").first.inner_text()
    assert bold == f"17. {i18n.t('forward.stage.next', 'zh-CN')}" and "**" not in said and "。" in said
    boxes = visit.page.evaluate("""() => Array.from(document.querySelectorAll('#forward-diagram svg text'))
        .map((t) => t.textContent)""")
    assert any("编码器" in b for b in boxes) and any("解码器" in b for b in boxes)  # encoder beside decoder
    visit.screenshot("forward-translator-zh")


ROW_TITLE = """() => { const gd = document.querySelector('#forward-row .js-plotly-plot');
                       return gd && gd._fullLayout && gd._fullLayout.title ? gd._fullLayout.title.text : ''; }"""
# the middle of row `row` of the heatmap, in page pixels (plotly's own axis maps)
ROW_AT = """(row) => { const gd = document.querySelector('#forward-heatmap .js-plotly-plot');
  gd.scrollIntoView({block: 'center'});
  const box = gd.querySelector('.nsewdrag').getBoundingClientRect(), L = gd._fullLayout;
  return {x: box.left + box.width / 2, y: box.top + L.yaxis.l2p(row),
          outline: (L.shapes || []).map((s) => s.y0)}; }"""


def test_a_click_on_a_heatmap_row_follows_that_token(visit):
    text = quote("The cat sat on the mat because it was tired.")
    visit.open(f"?tab=forward&model=shakespeare-lm+(language+model)&text={text}&stage=resid_mid&follow=0")
    _wait_stage(visit, 11)
    visit.page.wait_for_function(f"() => ({ROW_TITLE})().includes('token 0:')")
    before = visit.page.evaluate(ROW_AT, 7)
    assert before["outline"] == [-0.5]  # row 0 outlined
    rows = visit.page.evaluate("""() => Array.from(document.querySelector('#forward-heatmap .js-plotly-plot')
        ._fullLayout.yaxis.ticktext)""")
    # the follow slider spans the text's tokens, not the 128 a text may have
    visit.page.wait_for_function(f"""() => document.querySelector('#forward-follow input[type=range]').max
        === '{len(rows) - 1}'""", timeout=10_000)
    visit.page.mouse.click(before["x"], before["y"])
    visit.page.wait_for_function(f"() => ({ROW_TITLE})().includes('token 7:')")
    assert rows[7] in visit.page.evaluate(ROW_TITLE)  # the clicked row's token names the row drawn beside it
    assert visit.page.evaluate(ROW_AT, 7)["outline"] == [6.5]  # and row 7 is the one outlined now
    assert visit.page.locator("#forward-follow input[type=number]").input_value() == "7"  # the slider moved too
    visit.screenshot("forward-click-row")
