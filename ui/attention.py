"""Attention tab: every head of every layer of a shipped model, on the text you type.

Lesson: attention is a weighted average, and each head learns its own weights.
One traced forward pass gives all of them; the figures are cuts of that one
(n_layer, n_head, Tq, Tk) array. A language model can also be watched while it
generates: which earlier tokens each new token was chosen from.
"""

from __future__ import annotations

import gradio as gr

from lab import attention as use, store
from lab.policy import MAX_DRAWN_TOKENS, notice
from ui.common import cached, View, handler
from views import attention as figures
from views.kit import placeholder, plain

GROUP_CHOICES = [(name, group) for group, name in use.GROUP_NAMES.items()]
EXPLAINER = """
**What am I looking at?** Each small square is one attention head: row *i* is query token *i*,
column *j* is key token *j*, and the colour is how much of token *j*'s value vector token *i* takes
(every row sums to 1). Rows of the grid are layers, columns are heads. Below: one head large with its
tokens, the head average of each layer, one query token's row in every head ("what does token *i*
attend to?"), and **attention rollout** (Abnar & Zuidema, 2020): each layer's head average plus the
identity (the residual path), rows renormalised, multiplied through the layers — a rough summary of
which input tokens flow into each output. A language model cannot look ahead, so its matrices are
triangular; an encoder's are full; cross-attention shows which source token each target token reads.
"""


def checkpoints() -> dict[str, str]:
    """Picker label -> checkpoint name: the shipped checkpoints, then GPT-2."""
    return use.models_offered()


def _focus_figures(run: use.AttentionRun, layer, head, query, notices: list[str]):
    layer, head, weights = run.head(layer, head, notices)
    query, rows = run.query(query, notices)
    head_fig = figures.head_heatmap(weights, run.q_labels, run.k_labels, f"Layer {layer}, head {head}")
    rows_fig = figures.query_rows_heatmap(rows, run.k_labels, f"What does token {query} "
                                        f"({plain(repr(run.q_labels[query]))}) attend to, in every head?")
    return head_fig, rows_fig


@cached
@handler
def attention(label: str, text: str, group: str, layer: float, head: float, query: float):
    """Every attention head of a shipped model on a text: (notice, layer x head grid, selected head,
    head average per layer, one query's row in every head, attention rollout), as Plotly figures.

    Args:
        label: the model, as the picker names it, e.g. "shakespeare-lm (language model)"
        text: the text to read (at most 128 tokens are drawn)
        group: "encoder", "decoder" or "cross" attention (a model lacking it falls back, with a notice)
        layer: the layer of the selected head
        head: the head to draw large
        query: the query position whose row is drawn in every head
    """
    run = use.attention_run(label, text, group)
    n_layer, n_head, Tq, Tk = run.shape
    notices = [run.notice]
    grid = figures.layer_head_grid(run.attn, run.q_labels, run.k_labels,
                                 f"{n_layer} layers x {n_head} heads over {Tq} x {Tk} tokens")
    head_fig, rows_fig = _focus_figures(run, layer, head, query, notices)
    average = figures.layer_average_grid(run.attn, run.q_labels, run.k_labels)
    if run.rollout is not None:
        rollout = figures.rollout_heatmap(run.rollout, run.q_labels)
    else:
        rollout = placeholder("Rollout follows self-attention through one stack: "
                                       "choose encoder or decoder self-attention.")
    return notice(*notices), grid, head_fig, average, rows_fig, rollout


@cached
@handler
def attention_focus(label: str, text: str, group: str, layer: float, head: float, query: float):
    """Only the selected head and query figures, re-sliced from the (cached) run: the grid stays as it is."""
    return _focus_figures(use.attention_run(label, text, group), layer, head, query, [])


@cached
@handler
def attention_generate(label: str, text: str, n_new: float, layer: float, head: float, step: float):
    """Generate greedily and show each new token's attention row: one head's staircase, one step's rows."""
    gen = use.while_generating_run(label, text, n_new)
    notices = [gen.notice]
    layer, head = gen.head(layer, head, notices)
    step, chosen, rows, read = gen.step(step, notices)
    staircase = figures.generation_heatmap(gen.rows, gen.labels, gen.n_prompt, layer, head)
    step_fig = figures.query_rows_heatmap(rows, read, f"Step {step}: choosing {plain(repr(chosen))}, "
                                          "every layer and head")
    cut = notice(*notices)
    continuation = f"**Continuation:** {plain(repr(gen.continuation))}" + (f"  \n{cut}" if cut else "")
    return continuation, staircase, step_fig


def model_changed(label: str, layer: float, head: float):
    """New model: size the layer/head sliders to it and keep the chosen values where they still fit."""
    sizes = use.slider_sizes(label, layer, head)
    if sizes is None:  # an unreadable or unreachable model is reported when it is run
        return gr.Slider(), gr.Slider()
    (top_layer, layer), (top_head, head) = sizes
    return gr.Slider(maximum=max(1, top_layer), value=layer), gr.Slider(maximum=max(1, top_head), value=head)


def build() -> View | None:
    with gr.Tab("Attention", id="attention"):
        models = checkpoints()
        if not models:
            gr.Markdown(f"No trained model found in `{store.model_dir()}`: train or download one first.")
            return None
        labels = list(models)
        first = store.config(models[labels[0]])
        with gr.Row():
            model = gr.Dropdown(labels, value=labels[0], label="Model")
            group = gr.Dropdown(GROUP_CHOICES, value=use.GROUPS_OF[first["arch"]][0], label="Attention")
        with gr.Row(equal_height=True):
            text = gr.Textbox(use.example_text(models[labels[0]]), lines=1, max_lines=4, scale=5,
                              label=f"Text (up to {MAX_DRAWN_TOKENS} tokens are drawn)")
            run = gr.Button("Show attention", variant="primary", scale=1, elem_id="attention-run")
        with gr.Column(elem_classes=["lecture-hide"]):
            gr.Examples([[name, use.example_text(models[name]), use.GROUPS_OF[store.arch(models[name])][-1]]
                         for name in store.checkpoints()], [model, text, group])
            with gr.Accordion("What am I looking at?", open=False):
                gr.Markdown(EXPLAINER)
        notice_box = gr.Markdown()
        grid = gr.Plot(label="Every head of every layer", elem_id="attention-grid", show_label=False)
        with gr.Row():
            layer = gr.Slider(0, max(1, first["n_layer"] - 1), value=0, step=1, label="Layer")
            head = gr.Slider(0, max(1, first["n_head"] - 1), value=0, step=1, label="Head")
            query = gr.Slider(0, MAX_DRAWN_TOKENS - 1, value=8, step=1, label="Query token (position)")
        with gr.Row():
            head_fig = gr.Plot(label="Selected head", show_label=False)
            rows_fig = gr.Plot(label="One query token in every head", show_label=False)
        with gr.Row():
            average = gr.Plot(label="Head average per layer", show_label=False)
            rollout = gr.Plot(label="Attention rollout", show_label=False)
        with gr.Accordion("Attention while generating (language models)", open=False) as while_generating:
            gr.Markdown("The model continues your text greedily. Each line is one new token: the attention "
                        "of the position that chose it, over everything before it. Pick a step to see that "
                        "row in every layer and head.")
            with gr.Row():
                n_new = gr.Slider(1, use.MAX_NEW_TOKENS, value=12, step=1, label="New tokens")
                step = gr.Slider(0, use.MAX_NEW_TOKENS - 1, value=0, step=1, label="Step")
            go_button = gr.Button("Generate and show attention")
            continuation = gr.Markdown()
            staircase = gr.Plot(label="Selected head, step by step", show_label=False)
            step_fig = gr.Plot(label="One step in every layer and head", show_label=False)

        inputs = [model, text, group, layer, head, query]
        outputs = [notice_box, grid, head_fig, average, rows_fig, rollout]
        run.click(attention, inputs, outputs, api_name="attention")
        text.submit(attention, inputs, outputs, api_name=False)
        group.input(attention, inputs, outputs, api_name=False)
        for slider in (layer, head, query):
            slider.release(attention_focus, inputs, [head_fig, rows_fig], api_name=False)
        model.change(model_changed, [model, layer, head], [layer, head], api_name=False)
        generate_inputs = [model, text, n_new, layer, head, step]
        generate_outputs = [continuation, staircase, step_fig]
        go_button.click(attention_generate, generate_inputs, generate_outputs, api_name="attention_generate")
        step.release(attention_generate, generate_inputs, generate_outputs, api_name=False)
        # an accordion never opens on empty plots: opening it runs its view
        while_generating.expand(attention_generate, generate_inputs, generate_outputs, api_name=False)
    return View(attention, inputs, outputs, "attention")
