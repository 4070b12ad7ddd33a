"""The Translate tab: the original encoder-decoder transformer on tasks whose answer we know.

Copy, reverse and sort strings of digits, or turn English into pig latin; watch
the decoder's cross-attention read the source (a diagonal for copy, an
anti-diagonal for reverse), train a model from scratch in front of the class,
and see where learned positions stop generalising.
"""

from __future__ import annotations

import gradio as gr
import pandas as pd

from i18n import Message, render, t
from lab import translate as use
from lab.live import BUSY, FINAL_CHECK_SIZE, GOAL_CHECK_SIZE, PRESETS, SECONDS, SIZES, STEPS, TOY_TASKS, LiveTraining
from lab.policy import InputError, notice
from ui import events
from ui.handlers import cached, Action, handler, user_error
from ui.i18n import language, text as _
from views.kit import placeholder
from views.generate import beam_tree
from views.translate import attention_figure, length_figure, length_rows, loss_curve, step_rows

LAYERS = [(_("translate.layer.auto"), use.AUTO_LAYER), *((str(i), i) for i in range(3))]

_live = LiveTraining()  # one live training run per app


def _figures(run: use.TranslationRun, group: str, layer, head: str, lang: str):
    """The attention map of a run at the chosen group, layer and head, and a notice of what was moved."""
    group, layer, head_index, moved = run.focus(group, layer, head)
    return attention_figure(run.attn[group], group, layer, head_index, run.labels, lang), moved


@cached
@handler
def translate(task_name: str, source: str, width: int, group: str, layer, head: str, lang: str = "en"):
    """The shipped encoder-decoder of a task translates a source: (output, notice, decoding steps, attention
    figure, beam tree).

    Args:
        task_name: "copy", "reverse", "sort" (digits) or "pig_latin" (English)
        source: the text to translate
        width: beam width, 1 = greedy decoding
        group: "cross-attention", "encoder self-attention" or "decoder self-attention"
        layer: a layer index, or -1 for the layer whose cross-attention is sharpest
        head: "mean of heads" or "head N"
    """
    run = use.translation(task_name, source, width)
    figure, cut = _figures(run, group, layer, head, lang)
    label = use.token_label(run.codec)
    tree = placeholder(t("translate.greedy_no_tree", lang)) if run.beam is None else \
        beam_tree(run.beam, label, run.width, lang)
    steps = pd.DataFrame(step_rows(run.probs, run.written, label), columns=step_headers(lang))
    return run.output, render(notice(run.notice, cut), lang), steps, figure, tree


def step_headers(lang: str) -> list[str]:
    return [t(f"translate.steps.{h}", lang) for h in ("step", "token", "probability", "runners_up")]


def train_live(task_name: str, preset: str, steps: int, seconds: float, source: str, group: str, layer,
               head: str, lang: str = "en", progress=gr.Progress()):
    """Train a fresh model live (a generator: the loss curve grows while it trains)."""
    try:
        for live in use.train_live(_live, task_name, preset, steps, seconds, source):
            if live.run is None:
                progress(live.done, desc=t("translate.progress", lang, step=live.step, steps=live.steps))
                yield _live_status(live, lang), loss_curve(live.progress.losses, lang), gr.skip(), gr.skip(), gr.skip()
        figure, _ = _figures(live.run, group, layer, head, lang)
    except InputError as e:
        raise user_error(e, lang) from None
    trained = live.progress
    why = (t("translate.stopped_early", lang, score=live.last_check, n=GOAL_CHECK_SIZE)
           if trained.reached_goal else t("translate.used_budget", lang))
    status = t("translate.done", lang, steps=live.step, seconds=trained.seconds, why=why, n=FINAL_CHECK_SIZE,
               accuracy=live.accuracy)
    yield status, loss_curve(trained.losses, lang), live.run.output, figure, (trained.model, trained.codec)


def _live_status(live: use.LiveRun, lang: str) -> str:
    """The line above the loss curve while a live run trains."""
    if not live.step:
        return t("translate.starting", lang)
    checks = t("translate.checks", lang, score=live.last_check) if live.last_check is not None else ""
    return t("translate.training", lang, step=live.step, steps=live.steps, seconds=live.progress.seconds,
             budget=live.budget, checks=checks)


@handler
def translate_fresh(fresh, task_name: str, source: str, group: str, layer, head: str, lang: str = "en"):
    """The model just trained live (fresh = (model, codec) from `train_live`) translates the source."""
    if fresh is None:
        raise InputError(Message("translate.train_first"))
    run = use.translate_source(*fresh, source)
    return run.output, _figures(run, group, layer, head, lang)[0]


def live_busy(lang: str = "en") -> None:
    """Say "busy" at once (unqueued), before the request would wait in the training queue."""
    if _live.busy:
        raise user_error(InputError(BUSY), lang)


@cached
@handler
def length_generalisation(n_per_length: int, lang: str = "en"):
    """Accuracy by source length of the copy models with learned and with sinusoidal positions."""
    curves, longest = use.length_generalisation(n_per_length)
    rows = length_rows(curves, use.LENGTHS)
    return length_figure(curves, longest, lang), pd.DataFrame(rows, columns=length_headers(lang))


def length_headers(lang: str) -> list[str]:
    return [t("translate.length.length", lang), *(t(f"translate.position.{name.split()[0]}", lang)
                                                  for name in use.POSITION_MODELS)]


def _live_box(source, group, layer, head, lang) -> None:
    """Train a fresh model in front of the class, then let it translate the source above."""
    with gr.Accordion(_("translate.live_box"), open=False):
        gr.Markdown(_("translate.live_note"))
        with gr.Row():
            live_task = gr.Radio([(_(f"translate.task.{k}"), k) for k in TOY_TASKS], value="copy",
                                 label=_("translate.live_task"))
            preset = gr.Dropdown([(_(f"translate.size.{p}"), p) for p in SIZES], value="small",
                                 label=_("translate.model_size"),
                                 info=_("translate.size_infos", **{p: Message("translate.size_info",
                                        preset=Message(f"translate.size.{p}"), d_model=PRESETS[p].d_model,
                                        n_layer=PRESETS[p].n_layer) for p in SIZES}))
        with gr.Row():
            live_steps = gr.Slider(*STEPS, value=1000, step=50, label=_("translate.steps"), elem_id="steps")
            budget = gr.Slider(*SECONDS, value=60, step=5, label=_("translate.budget"), elem_id="time_budget")
        with gr.Row():
            train_button = gr.Button(_("translate.train"))
            again_button = gr.Button(_("translate.again"))
        live_status = gr.Markdown(_("translate.curve_placeholder"))
        curve = gr.Plot(label=_("translate.training_loss"))
        with gr.Row():
            live_output = gr.Textbox(label=_("translate.fresh_output"), interactive=False,
                                     placeholder=_("translate.fresh_placeholder"))
            live_attention = gr.Plot(label=_("translate.fresh_attention"))
        fresh_model = gr.State()
        free = events.on(train_button.click, live_busy, lang, None, queue=False, api_visibility="private")
        events.on(free.success, train_live,
                  [live_task, preset, live_steps, budget, source, group, layer, head, lang],
                  [live_status, curve, live_output, live_attention, fresh_model], api_name="translate_train")
        events.on(again_button.click, translate_fresh, [fresh_model, live_task, source, group, layer, head, lang],
                  [live_output, live_attention], api_name="translate_fresh")


def _lengths_box(lang) -> None:
    """Where learned positions stop generalising: accuracy by source length of the two copy models."""
    with gr.Accordion(_("translate.length_box"), open=False) as lengths:
        gr.Markdown(_("translate.length_note"))
        per_length = gr.Slider(20, 500, value=100, step=20, label=_("translate.per_length"),
                               elem_id="test_sources_per_length")
        length_button = gr.Button(_("translate.measure"))
        length_plot = gr.Plot(label=_("translate.length_plot"))
        length_table = gr.Dataframe(pd.DataFrame([], columns=length_headers("en")), label=_("translate.length_table"),
                                    interactive=False)
        length_in, length_out = [per_length, lang], [length_plot, length_table]
        events.on(length_button.click, length_generalisation, length_in, length_out, api_name="translate_lengths")
        events.on(lengths.expand, length_generalisation, length_in, length_out, api_name=False)


def build(lang: gr.State | None = None) -> Action:
    lang = language(lang)
    with gr.Tab(_("tab.translate"), id="translate"):
        with gr.Accordion(_("common.what"), open=False, elem_classes=["lecture-hide"]):
            gr.Markdown(_("translate.explainer"))
        with gr.Row():
            with gr.Column(scale=3):
                source = gr.Textbox(label=_("translate.source"), value="3 1 4 1 5 9 2 6",
                                    placeholder=_("translate.source_placeholder"), elem_id="source")
                with gr.Row(equal_height=True):
                    task = gr.Radio([(_(f"translate.task.{k}"), k) for k in use.TASKS], value="copy",
                                    label=_("translate.task"), scale=3, elem_id="task")
                    button = gr.Button(_("translate.run"), variant="primary", elem_id="translate-run", scale=1)
            with gr.Column(scale=2):
                with gr.Row():
                    output = gr.Textbox(label=_("translate.output"), interactive=False)
                    group = gr.Dropdown([(_(f"translate.group.{g}"), name) for name, g in use.GROUPS.items()],
                                        value="cross-attention", label=_("common.attention"), elem_id="attention")
                with gr.Row():
                    # "sharpest": the layer whose cross-attention is most decisive, where the lesson shows
                    layer = gr.Dropdown(LAYERS, value=use.AUTO_LAYER, label=_("common.layer"), elem_id="layer")
                    mean, *heads = use.HEADS
                    head = gr.Dropdown([(_("translate.head.mean"), mean),
                                        *((_("translate.head.n", head=h), name) for h, name in enumerate(heads))],
                                       value=mean, label=_("common.head"), elem_id="head")
        notice = gr.Markdown()
        attention = gr.Plot(label=_("common.attention"), elem_id="translate-attention", show_label=False)
        with gr.Column(elem_classes=["lecture-hide"]):
            events.examples(
                [["3 1 4 1 5 9 2 6", "copy"], ["1 2 3 4 5 6 7 8 9", "reverse"], ["5 2 8 1 9 3 3", "sort"],
                 ["She pet the dog.", "pig_latin"], ["Quiet, the school rhythm is an apple!", "pig_latin"]],
                inputs=[source, task], label=_("translate.examples"),
            )
        steps_table = gr.Dataframe(pd.DataFrame([], columns=step_headers("en")), label=_("translate.steps_table"),
                                   interactive=False)
        with gr.Accordion(_("translate.beam_box"), open=False) as beam_box:
            width = gr.Slider(1, 8, value=1, step=1, label=_("generate.beam_width"), info=_("translate.beam_width_info"),
                              elem_id="beam_width")
            tree = gr.Plot(label=_("translate.tree"))
        inputs = [task, source, width, group, layer, head, lang]
        outputs = [output, notice, steps_table, attention, tree]
        events.on(button.click, translate, inputs, outputs, api_name="translate")
        events.on(beam_box.expand, translate, inputs, outputs, api_name=False)
        events.on(source.submit, translate, inputs, outputs, api_name=False)

        _live_box(source, group, layer, head, lang)
        _lengths_box(lang)
    return Action(translate, inputs, outputs, "translate")
