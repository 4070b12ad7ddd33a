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
from lab.live import BUSY, GOAL_CHECK_SIZE, PRESETS, TOY_TASKS, LiveTraining, held_out_score
from lab.policy import InputError, clamp, notice
from ui import events
from ui.common import cached, Action, handler, user_error
from ui.i18n import language, text as _
from views.kit import placeholder
from views.generate import beam_tree
from views.translate import attention_figure, length_figure, loss_curve, step_rows

GROUPS = {"cross-attention": "cross", "encoder self-attention": "encoder", "decoder self-attention": "decoder"}
HEADS = ["mean of heads", *(f"head {h}" for h in range(8))]
LAYERS = [(_("translate.layer.auto"), use.AUTO_LAYER), *((str(i), i) for i in range(3))]
LIVE_PRESETS = ("tiny", "small", "medium")
LIVE_CHECK_SIZE = 200  # held-out sources scored after a live run (1,000 would keep the class waiting)

_live = LiveTraining()  # one live training run per app



def _figures(run: use.TranslationRun, group: str, layer, head: str, lang: str):
    """The attention map and beam tree of a run, at the chosen group, layer and head."""
    notices: list[str] = []
    if group not in GROUPS:
        raise InputError(Message("translate.bad_group", groups=", ".join(GROUPS), group=repr(group)))
    layer = run.layer(layer, notices)
    n_head = run.attn["cross"].shape[1]
    head_index = None if head in (None, HEADS[0]) else clamp(str(head).split()[-1], 0, n_head - 1,
                                                               Message("setting.head"), notices)
    figure = attention_figure(run.attn[GROUPS[group]], GROUPS[group], layer, head_index, run.labels, lang)
    return figure, notice(*notices)


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
        beam_tree(run.beam, label, int(width), lang)
    steps = pd.DataFrame(step_rows(run.probs, run.written, label), columns=step_headers(lang))
    return run.output, render(notice(run.notice, cut), lang), steps, figure, tree


def step_headers(lang: str) -> list[str]:
    return [t(f"translate.steps.{h}", lang) for h in ("step", "token", "probability", "runners_up")]


def train_live(task_name: str, preset: str, steps: int, seconds: float, source: str, group: str, layer,
               head: str, lang: str = "en", progress=gr.Progress()):
    """Train a fresh model live (a generator: the loss curve grows while it trains)."""
    try:
        steps = clamp(steps, 50, 3000, Message("setting.steps"))
        seconds = clamp(seconds, 10, 180, Message("setting.time_budget"))
        if preset not in LIVE_PRESETS:
            raise InputError(Message("translate.bad_size", sizes=", ".join(LIVE_PRESETS), size=repr(preset)))
        state = None
        for state in _live.run(task_name, preset, steps, seconds):
            step = state.losses[-1][0] if state.losses else 0
            if state.model is None:
                progress(min(1.0, max(step / steps, state.seconds / seconds)),
                         desc=t("translate.progress", lang, step=step, steps=steps))
                checks = t("translate.checks", lang, score=state.checks[-1][1]) if state.checks else ""
                status = (t("translate.training", lang, step=step, steps=steps, seconds=state.seconds, budget=seconds,
                            checks=checks) if step else t("translate.starting", lang))
                yield (status,
                       loss_curve(state.losses, lang), gr.skip(), gr.skip(), gr.skip())
        run = use.run_translation(state.model, state.codec, use.source_text(state.codec, state.model.config.max_len,
                                                                            source)[0])
    except InputError as e:
        raise user_error(e, lang) from None
    accuracy = held_out_score(state.model, state.codec, task_name, LIVE_CHECK_SIZE)
    figure, _ = _figures(run, group, layer, head, lang)
    why = (t("translate.stopped_early", lang, score=state.checks[-1][1], n=GOAL_CHECK_SIZE)
           if state.reached_goal else t("translate.used_budget", lang))
    status = t("translate.done", lang, steps=state.losses[-1][0], seconds=state.seconds, why=why, n=LIVE_CHECK_SIZE,
               accuracy=accuracy)
    yield status, loss_curve(state.losses, lang), run.output, figure, (state.model, state.codec)


@handler
def translate_fresh(fresh, task_name: str, source: str, group: str, layer, head: str, lang: str = "en"):
    """The model just trained live (fresh = (model, codec) from `train_live`) translates the source."""
    if fresh is None:
        raise InputError(Message("translate.train_first"))
    model, codec = fresh
    run = use.run_translation(model, codec, use.source_text(codec, model.config.max_len, source)[0])
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
    rows = [[length, *(round(c[length], 3) for c in curves.values())] for length in use.LENGTHS]
    return length_figure(curves, longest, lang), pd.DataFrame(rows, columns=length_headers(lang))


def length_headers(lang: str) -> list[str]:
    return [t("translate.length.length", lang), *(t(f"translate.position.{name.split()[0]}", lang)
                                                  for name in use.POSITION_MODELS)]


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
                    task = gr.Radio([(_(f"translate.task.{k}"), k) for k in use.CHECKPOINTS], value="copy",
                                    label=_("translate.task"), scale=3, elem_id="task")
                    button = gr.Button(_("translate.run"), variant="primary", elem_id="translate-run", scale=1)
            with gr.Column(scale=2):
                with gr.Row():
                    output = gr.Textbox(label=_("translate.output"), interactive=False)
                    group = gr.Dropdown([(_(f"translate.group.{g}"), name) for name, g in GROUPS.items()],
                                        value="cross-attention", label=_("common.attention"), elem_id="attention")
                with gr.Row():
                    # "sharpest": the layer whose cross-attention is most decisive, where the lesson shows
                    layer = gr.Dropdown(LAYERS, value=use.AUTO_LAYER, label=_("common.layer"), elem_id="layer")
                    head = gr.Dropdown([(_("translate.head.mean"), HEADS[0]),
                                        *((_("translate.head.n", head=h), name) for h, name in enumerate(HEADS[1:]))],
                                       value=HEADS[0], label=_("common.head"), elem_id="head")
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

        with gr.Accordion(_("translate.live_box"), open=False):
            gr.Markdown(_("translate.live_note"))
            with gr.Row():
                live_task = gr.Radio([(_(f"translate.task.{k}"), k) for k in TOY_TASKS], value="copy",
                                     label=_("translate.live_task"))
                preset = gr.Dropdown([(_(f"translate.size.{p}"), p) for p in LIVE_PRESETS], value="small",
                                     label=_("translate.model_size"),
                                     info=_("translate.size_infos", **{p: Message("translate.size_info",
                                            preset=Message(f"translate.size.{p}"), d_model=PRESETS[p].d_model,
                                            n_layer=PRESETS[p].n_layer) for p in LIVE_PRESETS}))
            with gr.Row():
                live_steps = gr.Slider(50, 3000, value=1000, step=50, label=_("translate.steps"), elem_id="steps")
                budget = gr.Slider(10, 180, value=60, step=5, label=_("translate.budget"), elem_id="time_budget")
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
    return Action(translate, inputs, outputs, "translate")
