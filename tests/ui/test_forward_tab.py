"""The Forward pass tab opened by a link or a lecture step: every stage of every shipped model kind (language model,
Tang-poetry language model, classifier, translator) draws, in English and in Chinese.

The link goes through the app's own link table (ui/links.LINK_KEYS) to the tab's inputs, then to the handler the
page runs; the lecture steps are links the app keeps (ui/links.LECTURE_PRESETS)."""

import json
import re

import gradio as gr
import pytest

from i18n import t
from lab import forward as use, models
from ui import forward as tab
from ui.links import LECTURE_PRESETS, apply, link_tabs
from views import forward as views

LANGS = ("en", "zh-CN")
KINDS = {"shakespeare-lm": "lm", "tang-poems-char": "lm", "sentiment": "classifier", "translate-reverse": "translator"}


@pytest.fixture(scope="module")
def linked():
    with gr.Blocks() as demo, gr.Tabs():
        action = tab.build()
    forward_tab = next(b for b in demo.blocks.values() if isinstance(b, gr.Tab) and b.id == "forward")
    return link_tabs(demo, [forward_tab]), action


def opened(linked, params: dict[str, str]):
    """What the page draws for link `params`: (says, diagram, heatmap, row)."""
    links, action = linked
    tab_id, values = apply(params, links)
    assert tab_id == "forward"
    args = [values.get(id(c), c.value) for c in action.inputs[:-1]]  # the last input is the page's language
    says, diagram, *figures, _ = action.fn(*args, params.get("lang", "en"))  # the last, the follow slider
    return says, diagram, *(json.loads(f.plot) for f in figures)  # as the page receives the figures


def assert_drawn(shown, stage: str, lang: str, applies: bool) -> None:
    says, diagram, heatmap, row = shown
    assert views.stage_title(stage, lang) in says
    lit = diagram.count('class="box lit"')
    if applies:
        assert lit == 1, (stage, lang)  # the stage's box is the one lit
        drawn = heatmap["data"][0]
        if stage == "ids":  # the ids as a list: position, token, id
            assert drawn["type"] == "table" and len(drawn["cells"]["values"]) == 3, (stage, lang)
        elif stage == "next":  # the chosen token among its candidates, ranked
            assert drawn["type"] == "bar" and drawn["y"][0].startswith("1. "), (stage, lang)
            assert row["data"][0]["type"] == "table", "each position's pick"
        else:
            assert drawn["z"] and row["data"][0]["y"], (stage, lang)
            assert heatmap["layout"]["shapes"], "the followed row is outlined"
    else:  # a stage this kind has not: it says so instead of drawing
        assert not lit and not heatmap["data"] and heatmap["layout"]["annotations"], (stage, lang)


def test_the_shipped_models_are_the_four_kinds():
    offered = use.models_offered()
    assert {name: models.checkpoint(name).kind.role for name in offered.values() if name in KINDS} == KINDS


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("name", list(KINDS))
def test_every_stage_draws_from_a_link_for_every_model_kind(linked, name, lang):
    label = next(label for label, checkpoint in use.models_offered().items() if checkpoint == name)
    kind = KINDS[name]
    stacks = [("encoder", "false"), ("decoder", "false"), ("decoder", "true")] if kind == "translator" else \
        [("decoder", "false")]
    for stack, cross in stacks:
        for stage in use.STAGES:
            params = {"tab": "forward", "model": label, "text": tab.EXAMPLES[name], "stage": stage,
                      "layer": "1", "head": "1", "follow": "2", "stack": stack, "cross": cross, "lang": lang}
            # a classifier picks no next token; the others pool nothing
            assert_drawn(opened(linked, params), stage, lang, stage != ("next" if kind == "classifier" else "pooled"))


def test_a_translator_run_with_no_stack_named_starts_its_walk_at_the_encoder(linked):
    """Issue 60, finding 8: a walk goes encoder, then decoder; a Run that opened on the decoder's ids made Next
    walk the decoder alone, the encoder reached only backwards."""
    label = next(label for label, checkpoint in use.models_offered().items() if checkpoint == "translate-reverse")
    text = tab.EXAMPLES["translate-reverse"]
    says, diagram, table, row = opened(linked, {"tab": "forward", "model": label, "text": text, "stage": "ids"})
    run = use.walk(label, text)
    assert run.labels("encoder") != run.labels("decoder")
    assert list(table["data"][0]["cells"]["values"][1]) == run.labels("encoder")


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("step", [name for name, preset in LECTURE_PRESETS.items() if preset["tab"] == "forward"])
def test_the_lecture_steps_of_the_walk_draw_every_stage(linked, step, lang):
    preset = {key: value for key, value in LECTURE_PRESETS[step].items() if key != "focus"}
    # the steps walk a language model, a translator
    assert models.checkpoint(preset["model"].split(" (")[0]).kind.role != "classifier"
    for stage in use.STAGES:
        assert_drawn(opened(linked, {**preset, "stage": stage, "lang": lang}), stage, lang, stage != "pooled")


def test_a_classifiers_walk_pools_before_it_scores_the_classes_one_row_for_the_whole_text(linked):
    """A classifier's head reads the pooled vector: the walk goes final norm, pooled, logits, softmax, loss (it
    went logits, softmax, pooled, as a language model's readouts), and its readouts are one row for the whole
    text, said so in the page's language (the row was labelled with the checkpoint's name, "token 0: sentiment",
    and the logits were said to score "every token of the vocabulary")."""
    label = next(label for label, checkpoint in use.models_offered().items() if checkpoint == "sentiment")
    run = use.walk(label, tab.EXAMPLES["sentiment"])
    assert [stage for stage, _, _ in use.steps(run)][-5:] == ["final_norm", "pooled", "logits", "probs", "loss"]
    assert use.step(run, "final_norm", None, False, +1)[0] == "pooled"
    for lang, whole, vocabulary in (("en", "whole text", "vocabulary"), ("zh-CN", "全文", "词汇表")):
        for stage in ("pooled", "logits", "probs", "loss"):
            says, diagram, heatmap, row = opened(linked, {"tab": "forward", "model": label, "stage": stage,
                                                          "text": tab.EXAMPLES["sentiment"], "lang": lang})
            assert heatmap["layout"]["yaxis"]["ticktext"] == [whole], (stage, lang)  # the drawn row label
            assert row["layout"]["title"]["text"] == t("forward.text_row_title", lang), (stage, lang)
            assert "sentiment" not in json.dumps(row["layout"]["title"]), (stage, lang)
            assert vocabulary not in says.split("\n")[0], (stage, lang, says)
        # the loss is of the class the model picks: a typed text has no label
        says = opened(linked, {"tab": "forward", "model": label, "stage": "loss", "text": tab.EXAMPLES["sentiment"],
                               "lang": lang})[0]
        assert t("forward.says.loss_classifier", lang) in says, (lang, says)


@pytest.mark.parametrize("stage", ["logits", "probs", "loss"])
def test_a_classifiers_classes_are_named_in_the_pages_language(linked, stage):
    label = next(label for label, checkpoint in use.models_offered().items() if checkpoint == "sentiment")
    params = {"tab": "forward", "model": label, "text": tab.EXAMPLES["sentiment"], "stage": stage}
    english = opened(linked, {**params, "lang": "en"})
    chinese = opened(linked, {**params, "lang": "zh-CN"})
    classes = {"en": {"negative", "positive"}, "zh-CN": {"负面", "正面"}}
    for lang, (says, diagram, heatmap, row) in (("en", english), ("zh-CN", chinese)):
        drawn = {*heatmap["data"][0]["x"], *row["data"][0]["x"]}
        assert drawn and drawn <= classes[lang], (stage, lang, drawn)



def test_the_followed_tokens_id_note_shows_a_token_in_angle_brackets_as_written(linked):
    # its note was escaped twice (plain() and the placeholder's own escape): Gemma's "<bos>" showed as "&lt;bos&gt;"
    label = next(label for label, checkpoint in use.models_offered().items() if checkpoint == "shakespeare-lm")
    params = {"tab": "forward", "model": label, "text": "<b> & co", "stage": "ids", "follow": "0", "lang": "en"}
    note = opened(linked, params)[3]["layout"]["annotations"][0]["text"]
    assert note.startswith("Token 0 “&lt;") and "&amp;" not in note, note  # plotly reads the entities as "<"


@pytest.mark.parametrize("lang", LANGS)
def test_the_ids_stage_names_no_trace_point_it_does_not_read(linked, lang):
    # it said "Read from the trace at —." (读取自追踪点 —。): the ids are the tokenizer's, read from no point
    label = next(label for label, checkpoint in use.models_offered().items() if checkpoint == "shakespeare-lm")
    says = opened(linked, {"tab": "forward", "model": label, "text": "To be", "stage": "ids", "lang": lang})[0]
    assert "—" not in says and t("forward.output", lang, output="(T=2)") in says, says
    later = opened(linked, {"tab": "forward", "model": label, "text": "To be", "stage": "embed", "lang": lang})[0]
    assert t("forward.points", lang, points="", output="")[:4] in later  # a stage read from the trace says where


def test_the_follow_slider_spans_the_walks_tokens_in_the_stages_answer():
    """A stage's answer ends the follow slider at the last token of the stack drawn: a position past the text's end
    moves there, one that fits stays; a translator's source and written target differ, and a step from its
    encoder onto its decoder sizes the slider to the decoder's tokens."""
    text, label = "A cat sat.", "shakespeare-lm (language model)"
    n = len(use.walk(label, text).labels())
    *_, follow = tab.forward_stage(label, text, "attn", 0, 0, "decoder", False, 99)
    assert follow == gr.update(maximum=n - 1, value=n - 1) and n > 3
    *_, follow = tab.forward_stage(label, text, "attn", 0, 0, "decoder", False, 2)
    assert follow == gr.update(maximum=n - 1)  # a position that fits stays
    *_, follow = tab.forward_stage(label, text, "attn", 0, 0, "decoder", False, None)  # an API client's null
    assert follow == gr.update(maximum=n - 1, value=0)
    run = use.walk("translate-pig-latin", "pig latin")
    source, target = len(run.labels("encoder")), len(run.labels("decoder"))
    assert source != target
    for stack, n in (("encoder", source), ("decoder", target)):
        *_, follow = tab.forward_stage("translate-pig-latin", "pig latin", "embed", 0, 0, stack, False, 99)
        assert follow["maximum"] == n - 1, stack
    stage, stack, cross, *_, follow = tab._stepper(+1)("translate-pig-latin", "pig latin", "final_norm", 0, 0,
                                                       "encoder", False, 99)
    assert (stage, stack) == ("ids", "decoder") and follow["maximum"] == target - 1


def test_a_classifiers_readout_keeps_the_follow_slider_where_the_person_set_it():
    """A classifier's readouts have one row, for the whole text: the row drawn is 0, yet the slider stays at the
    token the person follows (position 3 here), to be drawn again at the stages that have a row per token."""
    text = "a wonderful, moving film"
    n = len(use.walk("sentiment", text).labels())
    *_, follow = tab.forward_stage("sentiment", text, "logits", 0, 0, "decoder", False, 3)
    assert follow == gr.update(maximum=n - 1) and n > 4  # no value: the person's 3 is kept
    *_, follow = tab.forward_stage("sentiment", text, "logits", 0, 0, "decoder", False, 99)
    assert follow == gr.update(maximum=n - 1, value=n - 1)


@pytest.mark.parametrize("kind", ["shakespeare-lm", "sentiment", "translate-reverse"])
def test_a_chinese_pages_figure_titles_use_chinese_punctuation(linked, kind):
    """Chinese typography: a full-width colon before Chinese words, never ": " glued to a translated sentence (the
    chosen token's title read "选出的下一个词元 (T=12, vocab=262144): 第 3 个词元…")."""
    label = next(label for label, checkpoint in use.models_offered().items() if checkpoint == kind)
    for stage in use.model_stages(label):
        *_, heatmap, row = opened(linked, {"tab": "forward", "model": label, "stage": stage, "lang": "zh-CN",
                                           "text": tab.EXAMPLES.get(kind, "3 1 4 1 5")})
        for figure in (heatmap, row):
            title = (figure["layout"].get("title") or {}).get("text", "")
            assert not re.search(r"[:;,] ?[\u4e00-\u9fff]", title), (stage, title)
