"""What the server writes on a Chinese page is Chinese (issue 48): the Concepts experiments' refusals that the
core words, an input's refusal by the guard, and the results of an event that failed (cleared, not left under
the error badges)."""

from __future__ import annotations

import asyncio
import re

import gradio as gr
import numpy as np
import pytest

from ui import concepts as tab
from ui import events, gradio_patches
from ui.i18n import text as _

CJK = re.compile(r"[\u3400-\u9fff]")
LATIN_WORD = re.compile(r"[A-Za-z]{3,}")


def _shown(call) -> str:
    with pytest.raises(gr.Error) as refused:
        call()
    return refused.value.message


# each refusal the core words (ConceptInputError), reached from the Concepts tab as a person can
CORE_REFUSALS = {
    "not a number": lambda lang: tab.weighted_average("1 x", False, "", "", "", False, lang),
    "empty": lambda lang: tab.weighted_average("", False, "", "", "", False, lang),
    "ragged": lambda lang: tab.weighted_average("1 2\n3", False, "", "", "", False, lang),
    "too big": lambda lang: tab.weighted_average("\n".join(["1"] * 9), False, "", "", "", False, lang),
    "not finite": lambda lang: tab.weighted_average("1e9 0", False, "", "", "", False, lang),
    "projection rows": lambda lang: tab.weighted_average("1 0\n0 1", True, "1 0", "1 0", "1 0", False, lang),
    "query key columns": lambda lang: tab.weighted_average("1 0", True, "1 0\n0 1", "1\n0", "1 0\n0 1", False, lang),
    "odd d_model": lambda lang: tab.positions(8, 7, lang),
    "heads divide": lambda lang: tab.parameters(12, lang),
    "token ids": lambda lang: tab.trace("1 2 99999", "1 2", 0.1, 0, 0, 1, lang),
    "batch sizes": lambda lang: tab.trace("1 2\n3 4", "1 2", 0.1, 0, 0, 1, lang),
}


@pytest.mark.parametrize("name", list(CORE_REFUSALS))
def test_a_refusal_the_core_words_reads_in_chinese_on_the_chinese_page(name):
    english, chinese = (_shown(lambda: CORE_REFUSALS[name](lang)) for lang in ("en", "zh-CN"))
    assert not CJK.search(english)
    assert CJK.search(chinese), chinese
    # what stays Latin is the names the Chinese texts keep (d_model, W_q, X) and the values, never English words
    kept = re.sub(r"d_model|W_[qkv]|'[^']*'", "", chinese)
    assert not LATIN_WORD.search(kept), chinese


def _guarded():
    with gr.Blocks():
        slider = gr.Slider(0, 10, label=_("setting.seed"))
        out = gr.Textbox()
        events.on(slider.release, lambda value: value, slider, out, api_name=False)
    return slider


def test_the_input_guards_refusal_is_in_the_page_language():
    slider = _guarded()
    english = _shown(lambda: slider.preprocess(["a", "list"]))
    token = gradio_patches.PAGE_LANGUAGE.set("zh-CN")
    try:
        with pytest.raises(gr.Error) as refused:
            slider.preprocess(["a", "list"])
    finally:
        gradio_patches.PAGE_LANGUAGE.reset(token)
    assert english.startswith("Seed:") and "cannot be used" in english
    assert refused.value.message.startswith("随机种子：") and "不能使用这个值" in refused.value.message
    assert refused.value.title == "错误"


def _refused_in(lang: str, component, value) -> str:
    token = gradio_patches.PAGE_LANGUAGE.set(lang)
    try:
        return _shown(lambda: component.preprocess(value))
    finally:
        gradio_patches.PAGE_LANGUAGE.reset(token)


def test_the_guards_reason_in_brackets_is_in_the_page_language_too():
    # Gradio's own reasons are English in every locale and quote Python: "'<' not supported between instances of
    # 'list' and 'int'", "Value: bogus is not in the list of choices: ['a', 'b']"
    with gr.Blocks():
        slider, picker = gr.Slider(0, 10, label=_("setting.seed")), gr.Dropdown(["a", "b"], label=_("setting.seed"))
        number, out = gr.Number(label=_("setting.seed")), gr.Textbox()
        events.on(slider.release, lambda *values: values[0], [slider, picker, number], out, api_name=False)
    refusals = [(slider, ["a", "list"]), (slider, float("inf")), (slider, 99), (picker, "bogus"), (number, float("nan"))]
    for component, value in refusals:
        chinese = _refused_in("zh-CN", component, value)
        assert chinese.startswith("随机种子：不能使用这个值（") and not LATIN_WORD.search(chinese), chinese
    assert _refused_in("zh-CN", slider, 99) == "随机种子：不能使用这个值（这里只能填 0 到 10 之间的数）。"
    assert _refused_in("en", picker, "bogus") == "Seed: this value cannot be used (it is not one of the choices)."


def test_the_guard_speaks_the_language_of_the_session_that_sent_the_request():
    with gr.Blocks() as demo:
        lang = gr.State("en")
    seen = []

    async def preprocess_data(block_fn, inputs, state, explicit_call=False):  # Gradio's, recording the language
        seen.append(gradio_patches.PAGE_LANGUAGE.get())

    demo.preprocess_data = preprocess_data
    gradio_patches.speak_page_language(demo, lang)
    asyncio.run(demo.preprocess_data(None, [], {lang._id: "zh-CN"}))  # a Chinese page's session
    asyncio.run(demo.preprocess_data(None, [], None))  # an API client's request: no page, English
    assert seen == ["zh-CN", "en"] and gradio_patches.PAGE_LANGUAGE.get() == "en"


def test_an_event_that_fails_clears_its_results_not_its_inputs():
    with gr.Blocks() as demo:
        text = gr.Textbox()
        layer = gr.Slider(0, 5)
        note, figure = gr.Markdown(), gr.Plot()
        run = gr.Button()
        events.on(run.click, lambda t: t, text, [note, figure, layer], api_name=False)
    failure = [fn for fn in demo.fns.values() if fn.trigger_only_on_failure]
    assert len(failure) == 1
    cleared = failure[0]
    assert [o._id for o in cleared.outputs] == [note._id, figure._id]  # the slider keeps its value
    assert cleared.fn() == (None, None)


# --- figures as exported (PNG, SVG): row 15 of issue 48 ----------------------------------------------------------

def test_every_row_of_a_head_figure_keeps_its_room_when_long_key_labels_widen_the_top_margin():
    from views import attention as figures
    n_layer, n_head, keys = 6, 12, 5
    long_key = "这是一个很长很长的词元标签用来测试"  # 17 Han characters, drawn upright along the top
    fig = figures.query_rows_heatmap(np.full((n_layer, n_head, keys), 0.2), ["a", "b", "c", "d", long_key], "标题",
                                     "zh-CN")
    layout = fig.layout
    rows_px = (layout["height"] - layout["margin"]["t"] - layout["margin"]["b"]) / (n_layer * n_head)
    assert rows_px >= 15  # a 12 px label per row, with room between (12.9 px when the margin took it from the rows)


def test_a_title_stands_below_the_top_edge_and_figures_name_a_chinese_font():
    from views import kit
    import plotly.graph_objects as go
    title = kit.top_title("每个头中从“it”到“animal”的注意力权重")
    assert title["yanchor"] == "top" and title["pad"]["t"] >= 6  # Han characters stand above plotly's 0.7em
    for font in (kit.TEMPLATE["layout"]["font"], go.Figure().to_plotly_json()["layout"]["template"]["layout"]["font"]):
        assert "Noto Sans CJK SC" in font["family"]


def test_pickers_name_the_shipped_models_as_people_do_in_both_languages():
    """Issue 60: "English pre-trained encoder" had to be guessed as `sentiment-pretrained`. The picker shows the
    human name (its folder after it); the value links and the API use stays the folder's label."""
    from i18n import Message
    from ui.i18n import choice, translated

    label = Message("store.model_label", name="sentiment-pretrained", kind=Message("store.kind.EncoderClassifier"))
    shown, value = choice(label)
    assert value == "sentiment-pretrained (classifier)"
    assert translated(shown, "en") == "English pre-trained encoder (BERT), fine-tuned for sentiment · sentiment-pretrained"
    assert translated(shown, "zh-CN").startswith("英文预训练编码器")
    unnamed = Message("store.model_label", name="my-model", kind=Message("store.kind.DecoderLM"))
    assert translated(choice(unnamed)[0], "zh-CN") == "my-model（语言模型）"  # no human name: the folder's
