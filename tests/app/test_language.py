"""The page's language on the server: links, lecture steps, handlers and errors in English and in Chinese.

(The browser's side, labels switched in place and the page read in Chinese, is tests/app/test_browser_zh.py.)
"""

from __future__ import annotations

import types
from urllib.parse import parse_qsl

import gradio as gr
import pytest
from figures import figures

import app
import i18n
from ui.links import LECTURE_PRESETS, Links


@pytest.fixture(scope="module")
def links():
    demo = app.build_app()
    return Links(demo, [b for b in demo.blocks.values() if isinstance(b, gr.Tab)])


def _open(links, query: str, browser_lang: str = "en") -> list:
    return links.open_link(browser_lang, types.SimpleNamespace(query_params=dict(parse_qsl(query))))


@pytest.mark.parametrize("query", ["tab=attention&text=The+cat+sat&layer=2&head=1&query_token=3",
                                   "tab=generate&text=ROMEO:&temperature=0.3&seed=0&decoding=greedy",
                                   "tab=masking&text=To+be&mask=sliding_window&window_width_w=2",
                                   "tab=translate&text=1+2+3&task=reverse&attention=encoder+self-attention",
                                   "tab=sentiment&text=Not+bad&compare=1"])
def test_a_link_with_lang_en_or_zh_sets_the_same_components_to_the_same_values(links, query):
    english, chinese = _open(links, query + "&lang=en"), _open(links, query + "&lang=zh-CN")
    assert english[0].selected == chinese[0].selected
    assert english[1:-2] == chinese[1:-2]  # the tab id, every input, the lecture flag, the view to run
    assert english[-2:] == ["en", "en"] and chinese[-2:] == ["zh-CN", "zh-CN"]  # the switch and the page state
    assert any(v != gr.skip() for v in english[2:-4])  # the link did set inputs


def test_without_lang_the_browser_language_decides_and_any_chinese_is_simplified(links):
    assert _open(links, "tab=tokens", "zh-TW")[-1] == "zh-CN"
    assert _open(links, "tab=tokens", "fr")[-1] == "en"
    assert _open(links, "tab=tokens&lang=en", "zh-CN")[-1] == "en"  # the link wins


def test_link_to_this_view_carries_the_language_and_keys_that_do_not_depend_on_it(links):
    components = links.components
    values = [c.value for c in components]
    tab = next(t for t in links.tabs if t.tab_id == "attention")
    text = tab.components["text"]
    values[components.index(text)] = "The cat"
    query = links.link("attention", *values, lang="zh-CN")
    assert query == "?tab=attention&text=The+cat&lang=zh-CN"
    assert links.link("attention", *values, lang="en") == "?tab=attention&text=The+cat&lang=en"
    # the keys a link uses are the inputs' elem_ids, never their (translated) labels
    assert set(tab.components) == {"model", "text", "attention", "layer", "head", "query_token", "new_tokens", "step",
                                   "heads_view", "find_query", "find_key", "heads_off", "ablation"}  # + the head tools


def test_a_lecture_step_sets_the_view_and_leaves_the_language_alone(links):
    step = links.open_preset("attention")
    assert len(step) == 2 + len(links.components) + 2  # tab, inputs, link notice, the view to run: no language
    assert step[1] == "attention"


def test_handlers_draw_in_the_language_they_are_given_and_the_api_default_is_english():
    from ui import attention

    label = next(iter(attention.checkpoints()))
    notice_en, grid_en, head_en, *_ = figures(attention.attention(label, "The cat sat", "decoder", 0, 0, 9))
    notice_zh, grid_zh, head_zh, *_ = figures(attention.attention(label, "The cat sat", "decoder", 0, 0, 9, "zh-CN"))
    assert "Query token can be" in notice_en and "查询词元的范围是" in notice_zh
    assert head_en.layout.title.text == "Layer 0, head 0" and head_zh.layout.title.text == "第 0 层，第 0 个头"
    assert head_zh.layout.xaxis.title.text == "键 (key)"


def test_a_refused_input_is_told_in_the_readers_language():
    from ui import sentiment

    with pytest.raises(gr.Error, match="输入一个要分类的句子"):
        sentiment.classify("   ", sentiment.METHODS[0], lang="zh-CN")
    with pytest.raises(gr.Error, match="Type a sentence to classify"):
        sentiment.classify("   ", sentiment.METHODS[0])


def test_every_component_text_of_the_app_is_in_both_languages(links):
    translations = app.i18n.translations().translations_dict
    assert set(translations) == set(i18n.LANGUAGES)
    assert translations["en"].keys() == translations["zh-CN"].keys() and len(translations["en"]) > 150
    from ui.i18n import GRADIO_KEYS  # Gradio's own strings ("Error", the queue's status), in the page's language
    assert {k for k in translations["en"] if not k.startswith("lab.")} == set(GRADIO_KEYS)
    assert translations["zh-CN"]["common.complete"] != translations["en"]["common.complete"]


def test_a_lecture_link_opens_its_controls_on_its_first_step(links):
    # issue 48: `?lecture=1` opened with the steps folded away and no step chosen; Next step was out of sight
    update = _open(links, "lecture=1&lang=zh-CN")
    controls, step, lecture = update[-6], update[-5], update[-4]
    assert controls.open is True and step == next(iter(LECTURE_PRESETS)) and lecture is True
    assert update[0].selected == "tokens" and update[-3] == "tokens"  # step 1's view, drawn at once
    assert update[-1] == "zh-CN"
    # a lecture link to a view opens that view with the controls open, and chooses no step
    update = _open(links, "tab=attention&lecture=1")
    assert update[-6].open is True and update[-5] == gr.skip() and update[-3] == "attention"
    # a plain link leaves the controls as they are
    assert _open(links, "tab=attention")[-6] == gr.skip()
