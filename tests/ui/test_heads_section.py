"""The Attention tab's "What does a head do?" section: its figures draw the runs' numbers, its handlers
answer a bad input with a message, and the role grid marks exactly the heads that pass the threshold."""

import json
import re

import gradio as gr
import numpy as np
import pytest

from figures import figure
from lab import heads as use
from ui import heads as section
from views import heads as views

ANIMAL = "The animal didn't cross the street because it was too tired"
ENCODER = "sentiment-pretrained (classifier)"
LINE = "ROMEO: But soft, what light through yonder window breaks?"


def test_find_head_draws_the_ranking_and_offers_the_top_head_first():
    note, ranking, bars, opened = section.find_head(ENCODER, ANIMAL, "encoder", "it", "animal")
    found = use.find_head(ENCODER, ANIMAL, "it", "animal")
    np.testing.assert_allclose(figure(ranking).data[0].z, found.weights, atol=5e-4)  # drawn to 3 decimals
    assert list(figure(bars).data[0].y)[-1] == "L5 H11"  # the longest bar on top
    assert opened.value == "L5 H11" and len(opened.choices) == 72 and "L5 H11" in note


def test_a_word_the_text_lacks_is_a_message_with_the_text_escaped():
    with pytest.raises(gr.Error) as refused:
        section.find_head(ENCODER, ANIMAL, "encoder", "it", "<b>zebra</b>")
    assert "&lt;b&gt;zebra" in str(refused.value) and "animal" in str(refused.value)
    with pytest.raises(gr.Error, match="language model"):
        section.logit_lens(ENCODER, ANIMAL)


def test_the_switch_off_figure_compares_the_same_tokens_before_and_after():
    run = use.switch_off("shakespeare-lm", "ROMEO: But soft, what light", "L3 H0")
    outcome, losses = figure(views.switch_off_outcome(run)), figure(views.loss_change(run))
    before, after = outcome.data
    assert list(before.x) == list(after.x) and after.name == "L3 H0 off (zero)"
    np.testing.assert_allclose(losses.data[0].y, run.after.losses - run.before.losses, rtol=1e-5)


def test_the_importance_map_is_centred_on_no_damage():
    run = use.importance("shakespeare-lm", "ROMEO: But soft, what light")
    heatmap = figure(views.importance_figure(run)).data[0]
    assert heatmap.zmin == -heatmap.zmax and heatmap.zmax == pytest.approx(np.abs(run.damage["decoder"]).max())


def test_the_lens_table_shows_each_layers_guess_escaped():
    run = use.LensRun("m", ["a", "b"], [["<s>", "x"], ["y", "z"]], np.array([[0.9, 0.1], [0.5, 0.2]]),
                      np.zeros((2, 2)), np.zeros((2, 2)), "")
    table = figure(views.lens_table(run)).data[0]
    assert table.text[0][0] == "&lt;s&gt;" and list(table.y) == ["embedding", "layer 0"]


def test_the_lens_table_writes_a_guess_where_it_changes_and_names_every_one_on_hover():
    guesses = [["x", "y"], ["x", "z"], ["w", "z"]]  # the embedding, then two layers
    run = use.LensRun("m", ["a", "b"], guesses, np.full((3, 2), 0.5), np.zeros((3, 2)), np.zeros((3, 2)), "")
    drawn = figure(views.lens_table(run))
    table = drawn.data[0]
    assert [list(row) for row in table.text] == [["x", "y"], ["", "z"], ["w", ""]]  # blank: as the layer above
    assert [list(row) for row in table.customdata] == guesses and "%{customdata}" in table.hovertemplate
    assert "a blank cell: the same guess as the layer above" in drawn.layout.title.text
    many = use.LensRun("m", ["a"] * 41, [["x"] * 41] * 2, np.full((2, 41), 0.5), np.zeros((2, 41)),
                       np.zeros((2, 41)), "")
    wide = figure(views.lens_table(many))  # too many columns to write in: hover only, and no word of blanks
    assert not wide.data[0].texttemplate and "blank" not in wide.layout.title.text



def test_the_lens_table_names_the_width_its_written_guesses_need_and_the_ranks_count_from_one():
    def table(guess: str, columns: int):
        probs = np.full((2, columns), 0.5)
        return use.LensRun("m", ["a"] * columns, [[guess] * columns] * 2, probs,
                           np.array([[3] * columns, [0] * columns]), np.zeros((2, columns)), "")
    short, long = figure(views.lens_table(table("x", 10))), figure(views.lens_table(table(" capital", 10)))
    margins = short.layout.margin.l + short.layout.margin.r
    assert short.layout.meta["min_width"] == margins + 10 * views.COLUMN_PX[0]  # a one-letter guess: the least
    assert margins + 10 * 40 < long.layout.meta["min_width"] <= margins + 10 * views.COLUMN_PX[1]
    assert figure(views.lens_table(table("x", 41))).layout.meta is None  # hover only: any width reads
    ranks = figure(views.rank_lines(table("x", 2))).data[0].y
    assert list(ranks[:2]) == [4, 1] and "1 = the top guess" in figure(views.rank_lines(table("x", 2))).layout.title.text

def test_the_role_grid_marks_only_heads_at_the_threshold():
    zeros = np.zeros((2, 3))
    scores = {role: {"decoder": zeros.copy()} for role in use.ROLES}
    scores["induction"]["decoder"][1, 2] = 0.4
    scores["previous-token"]["decoder"][0, 0] = 0.39
    run = use.RolesRun("m", scores, [], None, 10, 0.4, "")
    grid = figure(views.roles_grid(run)).data[0]
    marks = np.array(grid.text)
    assert marks[1, 2] == "I" and (marks != "").sum() == 1
    assert figure(views.induction_curve(run)).layout.annotations  # no loss: it says why it is empty


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_every_heads_handler_draws_in_either_language(lang):
    lm = "shakespeare-lm (language model)"
    outputs = [*section.logit_lens(lm, "ROMEO: But soft", lang), *section.head_roles(lm, lang),
               *section.importance("translate-reverse (translator)", "123456789", "zero", lang),
               *section.switch_off(ENCODER, ANIMAL, "L5 H11", "mean", "it", "animal", lang=lang)]
    titles = [figure(o).layout.title.text or "" for o in outputs if hasattr(o, "plot")]
    assert len(titles) == 9 and sum(map(bool, titles)) == 8  # a classifier has no per-token loss: a note
    assert any("logit 透镜" in title for title in titles) == (lang == "zh-CN")


def test_the_page_reads_head_names_with_the_cores_pattern():
    pattern = json.dumps("^" + use.HEAD_NAME + "$")
    assert f"new RegExp({pattern}, 'i')" in section.CLICK_TO_FIND and pattern in section.OPEN_HEAD
    assert not re.search(r"/\^?L\\+d|L\(\\+d", section.CLICK_TO_FIND + section.OPEN_HEAD)  # no pattern of its own


def test_opening_switch_off_answers_every_output_with_the_top_head_ticked():
    lm = "shakespeare-lm (language model)"
    *shown, toggles = section.open_switch_off(lm, LINE, "", "zero")
    top = use.importance(lm, LINE, "zero").ranked[0][0]
    assert len(shown) == 7 and shown[2] == top and toggles.value == [top] and len(toggles.choices) == 36


def test_the_two_languages_lecture_step_finds_the_merged_piece_and_one_head_for_both_sentences():
    """Issue 47: the English and the Chinese seed sentence side by side, read by the multilingual encoder."""
    from ui.links import LECTURE_PRESETS
    from ui.attention import SEEDS, examples
    from lab import attention

    step = LECTURE_PRESETS["two_languages"]
    note, _, _, opened = section.find_head(step["model"], step["text"], step["attention"], step["find_query"],
                                           step["find_key"], "zh-CN")
    assert "“它”在词元“因为它”" in note and "排名针对" in note  # said in the reader's language
    # both links ranked at once (issue 60): the top head's weight for each is said
    assert "对所有联系都排第一的头" in note and "it” → “▁animal” 0." in note and "“因为它” → “动物” 0." in note
    english = use.find_head(step["model"], step["text"], "it", "animal")
    chinese = use.find_head(step["model"], step["text"], "它", "动物")
    both = use.find_head(step["model"], step["text"], "it, 它", "animal, 动物")
    np.testing.assert_allclose(both.weights, (english.weights + chinese.weights) / 2, atol=1e-6)
    assert opened.value == both.names[0]
    offered = [row for row in examples(attention.models_offered()) if row[0] == step["model"]]
    assert [row[1] for row in offered] == SEEDS and SEEDS[0] in step["text"] and SEEDS[1] in step["text"]


def test_opening_the_find_view_before_anything_is_typed_says_nothing():
    """Issue 60: opening "Which head links A to B?" showed a red error before a query or key was typed."""
    opened = section._named(section.find_head, 4)
    assert all(isinstance(o, type(gr.skip())) for o in opened("shakespeare-lm (language model)", LINE, "decoder",
                                                                  "", "", "zh-CN"))
    note, *_ = opened("shakespeare-lm (language model)", LINE, "decoder", "ROMEO", "soft", "en")
    assert "Top head" in note


def test_a_chinese_page_shows_no_english_from_the_core():
    """Issue 60: "mean next-token loss increase (nats)" and the class labels "negative"/"positive" on 中文 pages."""
    note, _ = section.importance("shakespeare-lm (language model)", LINE, "zero", "zh-CN")
    assert "mean next-token" not in note and "平均" in note
    *_, outcome, _ = section.switch_off(ENCODER, ANIMAL, "L5 H11", "zero", lang="zh-CN")
    assert set(figure(outcome).data[0].x) == {"负面", "正面"}


def test_the_copying_step_runs_on_smollm2_where_it_is_made_else_on_the_shipped_lm(monkeypatch):
    from ui import links

    step = links.LECTURE_PRESETS["copying"]
    monkeypatch.setattr(links, "_readable", lambda label: True)
    assert links.usable(step)["model"] == "SmolLM2-135M-Instruct (real LLM)"
    monkeypatch.setattr(links, "_readable", lambda label: label.startswith("shakespeare"))
    assert links.usable(step)["model"] == "shakespeare-lm (language model)"
    assert links.usable(links.LECTURE_PRESETS["tokens"]) == links.LECTURE_PRESETS["tokens"]



def test_a_classifiers_heads_speak_the_pages_language_on_a_chinese_page():
    """Issue 60: "drop in log p of the predicted label" and the classes "negative"/"positive" were English on a
    Chinese page (the importance summary and the switch-off outcome)."""
    summary, _ = section.importance(ENCODER, ANIMAL, "zero", "zh-CN")
    assert "预测标签的 log p 下降" in summary and "drop in log p" not in summary
    *_, outcome, _ = section.switch_off(ENCODER, ANIMAL, "L5 H11", "zero", lang="zh-CN")
    assert [list(bars.x) for bars in figure(outcome).data] == [["负面", "正面"]] * 2
    *_, outcome, _ = section.switch_off(ENCODER, ANIMAL, "L5 H11", "zero", lang="en")
    assert list(figure(outcome).data[0].x) == ["negative", "positive"]
