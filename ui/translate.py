"""The Translate tab: the original encoder-decoder transformer on tasks whose answer we know.

Copy, reverse and sort strings of digits, or turn English into pig latin; watch
the decoder's cross-attention read the source (a diagonal for copy, an
anti-diagonal for reverse), train a model from scratch in front of the class,
and see where learned positions stop generalising.
"""

from __future__ import annotations

import time

import gradio as gr
import torch

from transformer_core.seq2seq import Codec, DecodingError, exact_match, traced, translate
from transformer_core.tasks import TOY_LENGTHS, TOY_TASKS, examples, get_task
from transformer_core.train_translate import (
    BUSY,
    LIVE_BATCH,
    PRESETS,
    OneAtATime,
    TrainingBusyError,
    accuracy_by_length,
    build_model,
    fit,
    live_config,
)
from ui import store
from ui.common import truncate
from views.sampling import beam_tree, empty, show
from views.translate import attention_figure, length_figure, loss_curve, step_rows

CHECKPOINTS = {"copy": "translate-copy", "reverse": "translate-reverse", "sort": "translate-sort",
               "pig_latin": "translate-pig-latin"}
POSITION_MODELS = {"learned positions": "translate-copy", "sinusoidal positions": "translate-copy-sinusoidal"}
GROUPS = {"cross-attention": "cross", "encoder self-attention": "encoder", "decoder self-attention": "decoder"}
HEADS = ["mean of heads", *(f"head {h}" for h in range(8))]
LIVE_PRESETS = ("tiny", "small", "medium")
LIVE_CHECK_SIZE = 200  # held-out sources scored after a live run (1,000 would keep the class waiting)
LENGTHS = range(1, 21)
LIVE_THREADS = 1

_live = OneAtATime()  # one live training run per app

NOTE = """**What am I looking at?** The encoder reads the whole source at once; the decoder then writes
the target one token at a time, starting from `<s>` and stopping at `</s>`. *Cross-attention* is
how each writing step looks back at the source: row *i* is the step that writes the *i*-th output
token, and its darkest cell is the source position it read. Copy gives a diagonal, reverse an
anti-diagonal, sort a permutation; for pig latin you can see each word read from its first vowel
on, then its leading consonants, then nothing for "ay". The table lists every step's token and how
sure the model was. Beam search keeps several candidate outputs alive (width 1 = greedy)."""

LIVE_NOTE = """Trains a brand-new encoder-decoder in this app, from random weights, on fresh random
examples every step. It stops after the steps or the time budget, whichever comes first, scores
itself on 200 held-out sources and translates the source above. Shipped models are never touched.
One run at a time per app."""

LENGTH_NOTE = """The copy models were trained on sources of 1-10 symbols only. Learned position
vectors for positions beyond 10 were never trained, so the model has no idea what they mean;
sinusoidal positions are a formula that exists for every position, yet the model still has
never *used* them. Both fail on long inputs, the same way: they copy the first 10 symbols and
then write `</s>`, because no target they ever saw was longer. An honest picture of a known weakness."""


def _source(task_name: str, text: str | None) -> tuple[str, str]:
    """The source as the task reads it (digits: spaces dropped), and a notice if it was cut."""
    text, notice = truncate(text)
    text = text.strip()
    if get_task(task_name).name in TOY_TASKS:
        text = "".join(text.split())  # "3 1 4" and "314" are the same source
    if not text:
        raise gr.Error("Type a source first: digits for copy/reverse/sort, a sentence for pig latin.")
    return text, notice


def _label(codec: Codec):
    """id -> text for tables and plots; <s> and </s> drawn as ⟨s⟩ and ⟨/s⟩, which plotly would
    otherwise read as a strike-through tag and lay out wrongly."""
    return lambda i: codec.tokenizer.id_to_token(i).replace("<", "⟨").replace(">", "⟩")


def _run(model, codec: Codec, text: str, width: int, group: str, layer: int, head: str):
    """Translate, then re-read the translation in one traced pass for the table and the pictures."""
    try:
        result = translate(model, codec, text, width)
    except DecodingError as e:
        raise gr.Error(f"{e}.") from e
    written = [*result.ids, codec.eos]
    probs, trace = traced(model, codec, text, result.ids)
    label = _label(codec)
    labels = {
        "source": [show(label(i)) for i in codec.source_ids(text)],
        "writes": [show(label(i)) for i in written],
        "reads": [show(label(i)) for i in [codec.bos, *result.ids]],
    }
    layer = min(int(layer), model.config.n_layer - 1)
    head_index = None if head == HEADS[0] else int(head.split()[1])
    if head_index is not None and head_index >= model.config.n_head:
        raise gr.Error(f"This model has {model.config.n_head} heads (0-{model.config.n_head - 1}); pick one of those.")
    figure = attention_figure(trace.attention(GROUPS[group]), GROUPS[group], layer, head_index, labels)
    tree = empty("Beam width 1 is greedy decoding: one path, no tree.") if result.beam is None else \
        beam_tree(result.beam, label, width)
    return codec.text(result.ids), step_rows(probs, written, label), figure, tree


def translate_text(task_name: str, source: str, width: int, group: str, layer: int, head: str):
    """Main endpoint: the shipped model of a task translates the source."""
    text, notice = _source(task_name, source)
    name = CHECKPOINTS[task_name]
    try:
        model, codec = store.model(name), Codec(store.tokenizer(name))
    except Exception as e:  # a missing or broken checkpoint says which folder it looked in
        raise gr.Error(f"The {task_name} model could not be loaded: {e}") from e
    output, rows, figure, tree = _run(model, codec, text, int(width), group, layer, head)
    return output, notice, rows, figure, tree


def train_live(task_name: str, preset: str, steps: int, seconds: float, source: str, group: str, layer: int,
               head: str, progress=gr.Progress()):
    """Train a fresh model live (a generator: the loss curve grows while it trains)."""
    task = get_task(task_name)
    if task.name not in TOY_TASKS:
        raise gr.Error(f"Live training offers {', '.join(TOY_TASKS)}; pig latin takes far longer than a lecture to learn.")
    text, _ = _source(task_name, source)
    steps = int(steps)
    model, codec = build_model(task, preset)
    try:
        codec.check(text, model.config.max_len)
    except DecodingError as e:
        raise gr.Error(f"{e}.") from e
    losses: list[tuple[int, float]] = []
    outcome: dict[str, Exception] = {}

    def job():
        # One torch thread while training: with two, a loaded 2-core CPU ran a step ~15x slower
        # (5.8 s vs 0.35 s measured), the threads mostly waiting for each other. The setting is
        # process-wide, so it is put back afterwards.
        threads = torch.get_num_threads()
        torch.set_num_threads(LIVE_THREADS)
        try:
            fit(model, codec, task, live_config(steps, float(seconds)), LIVE_BATCH,
                on_step=lambda step, loss: losses.append((step + 1, loss)), progress=False)
        except Exception as e:  # shown to the user below, not lost in a thread
            outcome["error"] = e
        finally:
            torch.set_num_threads(threads)

    try:
        thread = _live.start(job)
    except TrainingBusyError as e:
        raise gr.Error(str(e)) from e
    t0 = time.perf_counter()
    while thread.is_alive():
        thread.join(0.5)
        step = losses[-1][0] if losses else 0
        elapsed = time.perf_counter() - t0
        progress(min(1.0, max(step / steps, elapsed / seconds)), desc=f"step {step}/{steps}")
        status = f"Training… step {step}/{steps}, {elapsed:.0f} s of {seconds:.0f} s"
        yield status, loss_curve(losses), gr.skip(), gr.skip(), gr.skip()
    if "error" in outcome:
        raise gr.Error(f"Training stopped: {outcome['error']}")
    accuracy = exact_match(model, codec, examples(task, "test", LIVE_CHECK_SIZE))
    output, _, figure, _ = _run(model, codec, text, 1, group, layer, head)
    status = (f"Done: {losses[-1][0]} steps in {time.perf_counter() - t0:.1f} s; exact match on "
              f"{LIVE_CHECK_SIZE} held-out sources: **{accuracy:.1%}**.")
    yield status, loss_curve(losses), output, figure, (model, codec)


def translate_fresh(fresh, task_name: str, source: str, group: str, layer: int, head: str):
    """The model just trained live (fresh = (model, codec) from `train_live`) translates the source."""
    if fresh is None:
        raise gr.Error("Train a model first: press Train from scratch.")
    text, _ = _source(task_name, source)
    output, _, figure, _ = _run(*fresh, text, 1, group, layer, head)
    return output, figure


def live_busy() -> None:
    """Say "busy" at once (unqueued), before the request would wait in the training queue."""
    if _live.busy:
        raise gr.Error(BUSY)


def length_generalisation(n_per_length: int):
    """Accuracy by source length of the copy models with learned and with sinusoidal positions."""
    task = get_task("copy")
    curves = {}
    for name, checkpoint in POSITION_MODELS.items():
        try:
            model, codec = store.model(checkpoint), Codec(store.tokenizer(checkpoint))
        except Exception as e:
            raise gr.Error(f"The {name} copy model could not be loaded: {e}") from e
        curves[name] = accuracy_by_length(model, codec, task, LENGTHS, int(n_per_length))
    rows = [[length, *(round(c[length], 3) for c in curves.values())] for length in LENGTHS]
    return length_figure(curves, TOY_LENGTHS[1]), rows


def build() -> None:
    with gr.Tab("Translate", id="translate"):
        gr.Markdown(NOTE)
        with gr.Row():
            with gr.Column(scale=2):
                source = gr.Textbox(label="Source", value="3 1 4 1 5 9 2 6",
                                    info="Digits 0-9 for copy/reverse/sort (spaces optional); "
                                         "a sentence for pig latin.")
                task = gr.Radio(list(CHECKPOINTS), value="copy", label="Task")
                width = gr.Slider(1, 8, value=1, step=1, label="Beam width", info="1 = greedy decoding")
                button = gr.Button("Translate", variant="primary")
            with gr.Column(scale=1):
                group = gr.Radio(list(GROUPS), value="cross-attention", label="Attention to show")
                layer = gr.Slider(0, 2, value=0, step=1, label="Layer", info="clamped to the model's last layer")
                head = gr.Dropdown(HEADS, value=HEADS[0], label="Head")
        gr.Examples(
            [["3 1 4 1 5 9 2 6", "copy"], ["1 2 3 4 5 6 7 8 9", "reverse"], ["5 2 8 1 9 3 3", "sort"],
             ["She pet the dog.", "pig_latin"], ["Quiet, the school rhythm is an apple!", "pig_latin"]],
            inputs=[source, task], label="Examples: a diagonal, an anti-diagonal, a permutation, pig latin",
        )
        output = gr.Textbox(label="Output", interactive=False)
        notice = gr.Markdown()
        attention = gr.Plot(label="Attention")
        steps_table = gr.Dataframe(headers=["step", "token", "probability", "runners-up"],
                                   label="Decoding steps", interactive=False)
        tree = gr.Plot(label="Beam search tree")
        inputs = [task, source, width, group, layer, head]
        outputs = [output, notice, steps_table, attention, tree]
        button.click(translate_text, inputs, outputs, api_name="translate")
        source.submit(translate_text, inputs, outputs, api_name=False)

        with gr.Accordion("Train from scratch, live", open=False):
            gr.Markdown(LIVE_NOTE)
            with gr.Row():
                live_task = gr.Radio(list(TOY_TASKS), value="copy", label="Task to train")
                preset = gr.Dropdown(list(LIVE_PRESETS), value="small", label="Model size",
                                     info=", ".join(f"{p}: d_model {PRESETS[p][0]}, {PRESETS[p][2]} layers"
                                                    for p in LIVE_PRESETS))
            with gr.Row():
                live_steps = gr.Slider(50, 3000, value=1000, step=50, label="Steps")
                budget = gr.Slider(10, 180, value=60, step=5, label="Time budget (seconds)")
            with gr.Row():
                train_button = gr.Button("Train from scratch")
                again_button = gr.Button("Translate the source with the fresh model")
            live_status = gr.Markdown()
            curve = gr.Plot(label="Training loss")
            with gr.Row():
                live_output = gr.Textbox(label="Fresh model's output for the source above", interactive=False)
                live_attention = gr.Plot(label="Fresh model's attention")
            fresh_model = gr.State()
            train_button.click(live_busy, None, None, queue=False, api_visibility="private").success(
                train_live, [live_task, preset, live_steps, budget, source, group, layer, head],
                [live_status, curve, live_output, live_attention, fresh_model], api_name="translate_train")
            again_button.click(translate_fresh, [fresh_model, live_task, source, group, layer, head],
                               [live_output, live_attention], api_name="translate_fresh")

        with gr.Accordion("Length generalisation: train on ≤ 10 symbols, test on up to 20", open=False):
            gr.Markdown(LENGTH_NOTE)
            per_length = gr.Slider(20, 500, value=100, step=20, label="Test sources per length")
            length_button = gr.Button("Measure")
            length_plot = gr.Plot(label="Accuracy by length")
            length_table = gr.Dataframe(headers=["length", *POSITION_MODELS], label="Exact match", interactive=False)
            length_button.click(length_generalisation, per_length, [length_plot, length_table],
                                api_name="translate_lengths")
