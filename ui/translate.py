"""The Translate tab: the original encoder-decoder transformer on tasks whose answer we know.

Copy, reverse and sort strings of digits, or turn English into pig latin; watch
the decoder's cross-attention read the source (a diagonal for copy, an
anti-diagonal for reverse), train a model from scratch in front of the class,
and see where learned positions stop generalising.
"""

from __future__ import annotations

import gradio as gr

from lab import translate as use
from lab.live import BUSY, GOAL_CHECK_SIZE, PRESETS, TOY_TASKS, LiveTraining, held_out_score
from lab.policy import InputError, clamp, notice
from ui.common import cached, View, handler, user_error
from views.kit import placeholder
from views.generate import beam_tree
from views.translate import attention_figure, length_figure, loss_curve, step_rows

GROUPS = {"cross-attention": "cross", "encoder self-attention": "encoder", "decoder self-attention": "decoder"}
HEADS = ["mean of heads", *(f"head {h}" for h in range(8))]
LAYERS = [("sharpest (auto)", use.AUTO_LAYER), *((str(i), i) for i in range(3))]
LIVE_PRESETS = ("tiny", "small", "medium")
LIVE_CHECK_SIZE = 200  # held-out sources scored after a live run (1,000 would keep the class waiting)

_live = LiveTraining()  # one live training run per app

NOTE = """**What am I looking at?** The encoder reads the whole source at once; the decoder then writes
the target one token at a time, starting from `<s>` and stopping at `</s>`. *Cross-attention* is
how each writing step looks back at the source: row *i* is the step that writes the *i*-th output
token, and its darkest cell is the source position it read. Copy gives a diagonal, reverse an
anti-diagonal, sort a permutation; for pig latin you can see each word read from its first vowel
on, then its leading consonants, then nothing for "ay". The table lists every step's token and how
sure the model was. Beam search keeps several candidate outputs alive (width 1 = greedy)."""

LIVE_NOTE = """Trains a brand-new encoder-decoder in this app, from random weights, on fresh random
examples every step. Every 50 steps it tries 100 held-out sources and stops as soon as it gets 99%
of them right (or after the steps or the time budget, whichever comes first); then it scores itself
on 200 other held-out sources and translates the source above. Shipped models are never touched.
One run at a time per app, in a process of its own."""

LENGTH_NOTE = """The copy models were trained on sources of 1-10 symbols only. Learned position
vectors for positions beyond 10 were never trained, so the model has no idea what they mean;
sinusoidal positions are a formula that exists for every position, yet the model still has
never *used* them. Both fail on long inputs, the same way: they copy the first 10 symbols and
then write `</s>`, because no target they ever saw was longer. An honest picture of a known weakness."""


def _figures(run: use.TranslationRun, group: str, layer, head: str):
    """The attention map and beam tree of a run, at the chosen group, layer and head."""
    notices: list[str] = []
    if group not in GROUPS:
        raise InputError(f"Attention must be one of {', '.join(GROUPS)}, not {group!r}.")
    layer = run.layer(layer, notices)
    n_head = run.attn["cross"].shape[1]
    head_index = None if head in (None, HEADS[0]) else clamp(str(head).split()[-1], 0, n_head - 1, "Head", notices)
    figure = attention_figure(run.attn[GROUPS[group]], GROUPS[group], layer, head_index, run.labels)
    return figure, notice(*notices)


@cached
@handler
def translate(task_name: str, source: str, width: int, group: str, layer, head: str):
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
    figure, cut = _figures(run, group, layer, head)
    label = use.token_label(run.codec)
    tree = placeholder("Beam width 1 is greedy decoding: one path, no tree.") if run.beam is None else \
        beam_tree(run.beam, label, int(width))
    return run.output, notice(run.notice, cut), step_rows(run.probs, run.written, label), figure, tree


def train_live(task_name: str, preset: str, steps: int, seconds: float, source: str, group: str, layer,
               head: str, progress=gr.Progress()):
    """Train a fresh model live (a generator: the loss curve grows while it trains)."""
    try:
        steps, seconds = clamp(steps, 50, 3000, "Steps"), clamp(seconds, 10, 180, "Time budget")
        if preset not in LIVE_PRESETS:
            raise InputError(f"Model size must be one of {', '.join(LIVE_PRESETS)}, not {preset!r}.")
        state = None
        for state in _live.run(task_name, preset, steps, seconds):
            step = state.losses[-1][0] if state.losses else 0
            if state.model is None:
                progress(min(1.0, max(step / steps, state.seconds / seconds)), desc=f"step {step}/{steps}")
                checks = f"; held-out exact match {state.checks[-1][1]:.0%}" if state.checks else ""
                status = (f"Training… step {step}/{steps}, {state.seconds:.0f} s of {seconds:.0f} s{checks}" if step
                          else "Starting a training process…")
                yield (status,
                       loss_curve(state.losses), gr.skip(), gr.skip(), gr.skip())
        run = use.run_translation(state.model, state.codec, use.source_text(state.codec, state.model.config.max_len,
                                                                            source)[0])
    except InputError as e:
        raise user_error(e) from None
    accuracy = held_out_score(state.model, state.codec, task_name, LIVE_CHECK_SIZE)
    figure, _ = _figures(run, group, layer, head)
    why = (f"stopped early: it got {state.checks[-1][1]:.0%} of {GOAL_CHECK_SIZE} held-out sources right"
           if state.reached_goal else "used all its steps or its time budget")
    status = (f"Done: {state.losses[-1][0]} steps in {state.seconds:.1f} s ({why}); exact match on "
              f"{LIVE_CHECK_SIZE} other held-out sources: **{accuracy:.1%}**.")
    yield status, loss_curve(state.losses), run.output, figure, (state.model, state.codec)


@handler
def translate_fresh(fresh, task_name: str, source: str, group: str, layer, head: str):
    """The model just trained live (fresh = (model, codec) from `train_live`) translates the source."""
    if fresh is None:
        raise InputError("Train a model first: press Train from scratch.")
    model, codec = fresh
    run = use.run_translation(model, codec, use.source_text(codec, model.config.max_len, source)[0])
    return run.output, _figures(run, group, layer, head)[0]


def live_busy() -> None:
    """Say "busy" at once (unqueued), before the request would wait in the training queue."""
    if _live.busy:
        raise user_error(InputError(BUSY))


@cached
@handler
def length_generalisation(n_per_length: int):
    """Accuracy by source length of the copy models with learned and with sinusoidal positions."""
    curves, longest = use.length_generalisation(n_per_length)
    rows = [[length, *(round(c[length], 3) for c in curves.values())] for length in use.LENGTHS]
    return length_figure(curves, longest), rows


def build() -> View:
    with gr.Tab("Translate", id="translate"):
        with gr.Accordion("What am I looking at?", open=False, elem_classes=["lecture-hide"]):
            gr.Markdown(NOTE)
        with gr.Row():
            with gr.Column(scale=3):
                source = gr.Textbox(label="Source", value="3 1 4 1 5 9 2 6",
                                    placeholder="Digits 0-9 for copy/reverse/sort (spaces optional); "
                                                "a sentence for pig latin")
                with gr.Row(equal_height=True):
                    task = gr.Radio(list(use.CHECKPOINTS), value="copy", label="Task", scale=3)
                    button = gr.Button("Translate", variant="primary", elem_id="translate-run", scale=1)
            with gr.Column(scale=2):
                with gr.Row():
                    output = gr.Textbox(label="Output", interactive=False)
                    group = gr.Dropdown(list(GROUPS), value="cross-attention", label="Attention")
                with gr.Row():
                    # "sharpest": the layer whose cross-attention is most decisive, where the lesson shows
                    layer = gr.Dropdown(LAYERS, value=use.AUTO_LAYER, label="Layer")
                    head = gr.Dropdown(HEADS, value=HEADS[0], label="Head")
        notice = gr.Markdown()
        attention = gr.Plot(label="Attention", elem_id="translate-attention", show_label=False)
        with gr.Column(elem_classes=["lecture-hide"]):
            gr.Examples(
                [["3 1 4 1 5 9 2 6", "copy"], ["1 2 3 4 5 6 7 8 9", "reverse"], ["5 2 8 1 9 3 3", "sort"],
                 ["She pet the dog.", "pig_latin"], ["Quiet, the school rhythm is an apple!", "pig_latin"]],
                inputs=[source, task], label="Examples: a diagonal, an anti-diagonal, a permutation, pig latin",
            )
        steps_table = gr.Dataframe(headers=["step", "token", "probability", "runners-up"],
                                   label="Decoding steps", interactive=False)
        with gr.Accordion("Beam search: keep several outputs alive", open=False) as beam_box:
            width = gr.Slider(1, 8, value=1, step=1, label="Beam width", info="1 = greedy decoding; press Translate "
                                                                           "again after changing it")
            tree = gr.Plot(label="Beam search tree")
        inputs = [task, source, width, group, layer, head]
        outputs = [output, notice, steps_table, attention, tree]
        button.click(translate, inputs, outputs, api_name="translate")
        beam_box.expand(translate, inputs, outputs, api_name=False)
        source.submit(translate, inputs, outputs, api_name=False)

        with gr.Accordion("Train from scratch, live", open=False):
            gr.Markdown(LIVE_NOTE)
            with gr.Row():
                live_task = gr.Radio(list(TOY_TASKS), value="copy", label="Task to train")
                preset = gr.Dropdown(list(LIVE_PRESETS), value="small", label="Model size",
                                     info=", ".join(f"{p}: d_model {PRESETS[p].d_model}, {PRESETS[p].n_layer} layers"
                                                    for p in LIVE_PRESETS))
            with gr.Row():
                live_steps = gr.Slider(50, 3000, value=1000, step=50, label="Steps")
                budget = gr.Slider(10, 180, value=60, step=5, label="Time budget (seconds)")
            with gr.Row():
                train_button = gr.Button("Train from scratch")
                again_button = gr.Button("Translate the source with the fresh model")
            live_status = gr.Markdown()
            curve = gr.Plot(placeholder("Press Train from scratch: the training loss is drawn here as it falls."),
                            label="Training loss")
            with gr.Row():
                live_output = gr.Textbox(label="Fresh model's output for the source above", interactive=False)
                live_attention = gr.Plot(placeholder("The fresh model's attention appears here once it is trained."),
                                         label="Fresh model's attention")
            fresh_model = gr.State()
            train_button.click(live_busy, None, None, queue=False, api_visibility="private").success(
                train_live, [live_task, preset, live_steps, budget, source, group, layer, head],
                [live_status, curve, live_output, live_attention, fresh_model], api_name="translate_train")
            again_button.click(translate_fresh, [fresh_model, live_task, source, group, layer, head],
                               [live_output, live_attention], api_name="translate_fresh")

        with gr.Accordion("Length generalisation: train on ≤ 10 symbols, test on up to 20", open=False) as lengths:
            gr.Markdown(LENGTH_NOTE)
            per_length = gr.Slider(20, 500, value=100, step=20, label="Test sources per length")
            length_button = gr.Button("Measure")
            length_plot = gr.Plot(label="Accuracy by length")
            length_table = gr.Dataframe(headers=["length", *use.POSITION_MODELS], label="Exact match", interactive=False)
            length_button.click(length_generalisation, per_length, [length_plot, length_table],
                                api_name="translate_lengths")
            lengths.expand(length_generalisation, per_length, [length_plot, length_table], api_name=False)
    return View(translate, inputs, outputs, "translate")
