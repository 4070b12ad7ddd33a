"""The Concepts tab: six textbook ideas, each a live experiment on transformer_core.

Handlers validate, call `transformer_core.analysis.concepts`, and hand the result to
`views.concepts`; every number on the page is computed when the button is pressed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import gradio as gr
import pandas as pd

from i18n import render, t
from lab import concepts as use
from ui import events
from ui.handlers import Action, handler
from ui.i18n import language, text as _
from views import concepts as views
from views.kit import placeholder


def _table(rows: list[list], headers: list[str]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=headers)


# 1 ------------------------------------------------------------------------------------------

X_DEFAULT = "2 0\n0 1\n1 1"
WQ_DEFAULT, WK_DEFAULT, WV_DEFAULT = "1 0\n0 2", "1 1\n0 1", "0 1\n1 0"


@handler
def weighted_average(x_text, use_projections, wq_text, wk_text, wv_text, scaled, lang="en"):
    wa = use.weighted_average(x_text, use_projections, wq_text, wk_text, wv_text, scaled)
    labels = views.vector_labels(len(wa.y), "y")
    headers = [t("concepts.output", lang), *[t("concepts.dim", lang, j=j + 1) for j in range(wa.y.shape[1])]]
    return (views.weights_figure(wa, lang), views.vectors_figure(wa, lang), views.weighted_sums(wa, lang),
            _table(views.matrix_rows(wa.y, labels), headers))


# 2 ------------------------------------------------------------------------------------------

@handler
def scaling(d, n_keys, seed, lang="en"):
    points, chosen = use.scaling(d, n_keys, seed)
    return (views.scaling_figure(points, chosen.d, lang), views.chosen_d_figure(chosen, lang=lang),
            _table(views.scaling_rows(points), views.scaling_headers(lang)))


# 3 ------------------------------------------------------------------------------------------

SENTENCE_DEFAULT = "the plot was dull but the acting was wonderful"


@handler
def order(sentence, seed, lang="en"):
    summary, variants, labels, names = use.order(sentence, seed)
    # the shuffled words are the person's own: marked as such, and isolated (<bdi>): a right-to-left override
    # (U+202E) typed in them cannot reverse the sentence around them
    shown = t(summary.key, lang, **{**summary.params,
                                    "shuffled": f'<bdi class="model-text">{summary.params["shuffled"]}</bdi>'})
    return (shown, views.order_figure(variants, labels, lang),
            _table(views.verdict_rows(variants, names, lang), views.verdict_headers(names, lang)))


# 4 ------------------------------------------------------------------------------------------

@handler
def positions(n_positions, d_model, lang="en"):
    (pe, similarity), learned, note = use.positions(n_positions, d_model)
    sinusoidal = views.positions_figure(pe, similarity, t("concepts.sin_title", lang), lang)
    if learned is None:
        return sinusoidal, placeholder(t("concepts.learned_missing", lang)), render(note, lang)
    title, table, learned_similarity = learned
    return sinusoidal, views.positions_figure(table, learned_similarity, render(title, lang), lang), render(note, lang)


# 5 ------------------------------------------------------------------------------------------

@handler
def parameters(d_model, lang="en"):
    counts, tables, problems = use.parameters(d_model)
    rows = [row for name, table in tables.items() for row in views.parameter_rows(name, table, lang)]
    note = t("concepts.no_checkpoints", lang, folder=use.store.model_dir()) if not rows and not problems else ""
    if problems:
        note = t("concepts.could_not_count", lang, problems="\n".join(problems))
    return (views.head_figure(counts, lang), _table(views.head_rows(counts), views.head_headers(lang)),
            _table(rows, views.param_headers(lang)), note)


# 6 ------------------------------------------------------------------------------------------

SRC_DEFAULT, TGT_DEFAULT = "1 2 3\n4 3 2", "2 3\n1 4"


@handler
def trace(src_text, tgt_text, label_smoothing, seed, follow_row=0, follow_position=1, lang="en"):
    run, b, position = use.trace(src_text, tgt_text, label_smoothing, seed, follow_row, follow_position)
    return (_table(views.step_rows(run, lang), views.step_headers(lang)),
            _table(views.loss_rows(run), views.loss_headers(lang)),
            views.follow_token(run, b, position, lang), views.step_values(run, lang))


# layout ---------------------------------------------------------------------------------------

class Section(NamedTuple):
    """One experiment of the tab: its button, handler, inputs (the language comes last, added by `build`),
    outputs and endpoint."""

    button: gr.Button
    fn: Callable
    inputs: list
    outputs: list
    api_name: str


def _weighted_average_section() -> Section:
    with gr.Accordion(_("concepts.s1"), open=True):
        gr.Markdown(_("concepts.intro1"))
        with gr.Row():
            x_text = gr.Textbox(X_DEFAULT, lines=4, label=_("concepts.x"), elem_id="x")
            with gr.Column():
                use_projections = gr.Checkbox(False, label=_("concepts.use_projections"),
                                              elem_id="use_projections_w_q_w_k_w_v")
                scaled = gr.Checkbox(False, label=_("concepts.scaled"), elem_id="divide_scores_by_d")
            wq = gr.Textbox(WQ_DEFAULT, lines=3, label=_("concepts.w_rows", name="W_q"), elem_id="w_q")
            wk = gr.Textbox(WK_DEFAULT, lines=3, label=_("concepts.w_rows", name="W_k"), elem_id="w_k")
            wv = gr.Textbox(WV_DEFAULT, lines=3, label=_("concepts.w_rows", name="W_v"), elem_id="w_v")
        button = gr.Button(_("concepts.run1"), variant="primary")
        inputs = [x_text, use_projections, wq, wk, wv, scaled]
        events.examples([[X_DEFAULT, False, WQ_DEFAULT, WK_DEFAULT, WV_DEFAULT, False],
                         ["3 0\n2.5 0.5\n0 3\n-2 -2", False, WQ_DEFAULT, WK_DEFAULT, WV_DEFAULT, False],
                         [X_DEFAULT, True, WQ_DEFAULT, WK_DEFAULT, WV_DEFAULT, False],
                         ["1 0 0\n0 1 0\n0 0 1\n1 1 1", False, "", "", "", True]], inputs,
                        label=_("common.examples"))
        with gr.Row():
            fig_weights, fig_vectors = gr.Plot(label=_("concepts.weights")), gr.Plot(label=_("concepts.vectors"))
        sums, y_table = gr.Markdown(), gr.Dataframe(label=_("concepts.outputs_y"), interactive=False)
    return Section(button, weighted_average, inputs, [fig_weights, fig_vectors, sums, y_table],
                   "concepts_weighted_average")


def _scaling_section() -> Section:
    with gr.Accordion(_("concepts.s2"), open=True):
        gr.Markdown(_("concepts.intro2"))
        with gr.Row():
            d = gr.Slider(2, 1024, 64, step=1, label=_("concepts.d"), elem_id="d")
            n_keys = gr.Slider(2, 64, 16, step=1, label=_("concepts.n_keys"), elem_id="number_of_keys")
            seed = gr.Number(0, precision=0, label=_("concepts.seed"), minimum=0, elem_id="seed")
        button = gr.Button(_("concepts.run2"), variant="primary")
        inputs = [d, n_keys, seed]
        events.examples([[4, 16, 0], [512, 16, 0], [1024, 64, 0]], inputs, label=_("common.examples"))
        fig_scaling, fig_rows = gr.Plot(label=_("concepts.against_d")), gr.Plot(label=_("concepts.six_rows"))
        scaling_table = gr.Dataframe(_table([], views.scaling_headers()), label=_("concepts.means"),
                                     interactive=False)
    return Section(button, scaling, inputs, [fig_scaling, fig_rows, scaling_table], "concepts_scaling")


def _order_section() -> Section:
    with gr.Accordion(_("concepts.s3"), open=True):
        gr.Markdown(_("concepts.intro3"))
        with gr.Row():
            sentence = gr.Textbox(SENTENCE_DEFAULT, label=_("concepts.sentence"), scale=4, elem_id="sentence")
            seed = gr.Number(0, precision=0, label=_("concepts.shuffle_seed"), minimum=0, scale=1,
                             elem_id="shuffle_seed")
        button = gr.Button(_("concepts.run3"), variant="primary")
        inputs = [sentence, seed]
        # a Chinese sentence is shuffled character by character, by the Chinese classifier (lab/concepts.order)
        events.examples([[SENTENCE_DEFAULT, 0], ["not bad at all , truly a good film", 1],
                         ["a good film , not a bad one", 2], ["一点也不差，真是一部好电影。", 3]], inputs,
                        label=_("common.examples"))
        order_note, fig_order = gr.Markdown(), gr.Plot(label=_("concepts.order_plot"))
        verdicts = gr.Dataframe(label=_("concepts.verdicts"), interactive=False)
    return Section(button, order, inputs, [order_note, fig_order, verdicts], "concepts_order")


def _positions_section() -> Section:
    with gr.Accordion(_("concepts.s4"), open=True):
        gr.Markdown(_("concepts.intro4"))
        with gr.Row():
            n_positions = gr.Slider(2, 256, 64, step=1, label=_("concepts.positions"), elem_id="positions")
            d_pos = gr.Slider(4, 256, 64, step=2, label=_("concepts.d_model_sin"), elem_id="d_model")
        button = gr.Button(_("concepts.run4"), variant="primary")
        inputs = [n_positions, d_pos]
        events.examples([[64, 64], [256, 128], [16, 16]], inputs, label=_("common.examples"))
        fig_sin, fig_learned = gr.Plot(label=_("concepts.sinusoidal")), gr.Plot(label=_("concepts.learned"))
        lm_note = gr.Markdown()
    return Section(button, positions, inputs, [fig_sin, fig_learned, lm_note], "concepts_positions")


def _parameters_section() -> Section:
    with gr.Accordion(_("concepts.s5"), open=True):
        gr.Markdown(_("concepts.intro5"))
        d_heads = gr.Dropdown([64, 128, 256, 512, 768], value=128, label="d_model")
        button = gr.Button(_("concepts.run5"), variant="primary")
        events.examples([[128], [768]], [d_heads], label=_("common.examples"))
        with gr.Row():
            fig_heads = gr.Plot(label=_("concepts.one_layer"))
            head_table = gr.Dataframe(_table([], views.head_headers()), interactive=False)
        model_table = gr.Dataframe(_table([], views.param_headers()), label=_("concepts.shipped_models"),
                                   interactive=False)
        model_note = gr.Markdown()
    return Section(button, parameters, [d_heads], [fig_heads, head_table, model_table, model_note],
                   "concepts_parameters")


def _trace_section() -> Section:
    with gr.Accordion(_("concepts.s6"), open=True):
        gr.Markdown(_("concepts.intro6"))
        with gr.Row():
            src_text = gr.Textbox(SRC_DEFAULT, lines=2, label=_("concepts.source_ids"), elem_id="source_ids")
            tgt_text = gr.Textbox(TGT_DEFAULT, lines=2, label=_("concepts.target_ids"), elem_id="target_ids")
            smoothing = gr.Slider(0.0, 0.5, 0.1, step=0.05, label=_("concepts.label_smoothing"),
                                  elem_id="label_smoothing")
            seed = gr.Number(0, precision=0, label=_("concepts.model_seed"), minimum=0, elem_id="model_seed")
        with gr.Row():
            follow_row = gr.Number(0, precision=0, label=_("concepts.follow_row"), minimum=0,
                                   elem_id="follow_batch_row")
            follow_position = gr.Number(1, precision=0, label=_("concepts.follow_position"), minimum=0,
                                        elem_id="follow_target_position")
        button = gr.Button(_("concepts.run6"), variant="primary")
        inputs = [src_text, tgt_text, smoothing, seed, follow_row, follow_position]
        events.examples([[SRC_DEFAULT, TGT_DEFAULT, 0.1, 0, 0, 1], [SRC_DEFAULT, TGT_DEFAULT, 0.0, 0, 1, 0],
                         ["1 2 3\n1 2 3", "4 4\n4 4", 0.3, 1, 0, 0]], inputs, label=_("common.examples"))
        steps = gr.Dataframe(_table([], views.step_headers()), label=_("concepts.steps"), interactive=False)
        losses = gr.Dataframe(_table([], views.loss_headers()), label=_("concepts.loss_per_token"), interactive=False)
        followed = gr.Markdown()
        values = gr.Code(label=_("concepts.every_value"), lines=20, max_lines=40)
    return Section(button, trace, inputs, [steps, losses, followed, values], "concepts_trace")


SECTIONS = (_weighted_average_section, _scaling_section, _order_section, _positions_section, _parameters_section,
            _trace_section)


def _every_section(sections: list[Section]):
    """All six sections at once, for a link or lecture step that opens this tab (the last value: the language).
    A section whose inputs it cannot take says so in a warning and is left as it was: the other five still draw."""
    def every_section(*values):
        *values, language = values
        results, start = [], 0
        for section in sections:
            try:
                results += section.fn(*values[start: start + len(section.inputs)], lang=language)
            except gr.Error as e:
                gr.Warning(e.message)
                results += [gr.skip() for _ in section.outputs]
            start += len(section.inputs)
        return results
    return every_section


def build(lang: gr.State | None = None) -> Action:
    lang = language(lang)
    with gr.Tab(_("tab.concepts"), id="concepts") as tab:
        gr.Markdown(_("concepts.intro"))
        sections = [make() for make in SECTIONS]
    for section in sections:
        events.on(section.button.click, section.fn, [*section.inputs, lang], section.outputs,
                  api_name=section.api_name)
        # fill every section when the tab opens
        events.on(tab.select, section.fn, [*section.inputs, lang], section.outputs, api_visibility="private")
    return Action(_every_section(sections), [*(c for s in sections for c in s.inputs), lang],
                  [c for s in sections for c in s.outputs], "concepts")
