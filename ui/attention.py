"""Attention tab: every head of every layer of a shipped model, on the text you type.

Lesson: attention is a weighted average, and each head learns its own weights.
One traced forward pass gives all of them; the figures are cuts of that one
(n_layer, n_head, Tq, Tk) array. A language model can also be watched while it
generates: which earlier tokens each new token was chosen from.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import gradio as gr
import plotly.graph_objects as go
import torch

from transformer_core import CheckpointError
from transformer_core.analysis import attention_rollout, attention_while_generating
from transformer_core.hub import read_config
from transformer_core.seq2seq import Codec, DecodingError, translate, traced
from transformer_core.tasks import TASKS
from ui import store
from ui.common import truncate
from views import attention as views

MAX_TOKENS = 128  # longest input drawn: a 6 x 8 grid of 128 x 128 heatmaps is ~800k cells
MAX_NEW_TOKENS = 40
# which attention a model has: encoder self-attention sees both ways, decoder self-attention
# only the past, cross-attention reads the source from the target
GROUP_CHOICES = [("encoder self-attention", "encoder"), ("decoder masked self-attention", "decoder"),
                 ("cross-attention (target reads source)", "cross")]
GROUP_NAMES = {value: name for name, value in GROUP_CHOICES}
GROUPS = {"DecoderLM": ["decoder"], "EncoderClassifier": ["encoder"], "EncoderDecoder": ["encoder", "decoder", "cross"]}
KIND_NAMES = {"DecoderLM": "language model", "EncoderClassifier": "classifier", "EncoderDecoder": "translator"}
GPT2_LABEL = "gpt2 (GPT-2 small, downloaded from the Hugging Face Hub on first use)"
EXAMPLE_TEXT = {
    "DecoderLM": "ROMEO: But soft, what light through yonder window breaks? It is the east, and Juliet is the sun.",
    "EncoderClassifier": "The plot was thin, but the acting was wonderful and I was not bored for a minute.",
}
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


# ---------------------------------------------------------------- which models exist


def checkpoints() -> dict[str, str]:
    """Shipped checkpoints this tab can show: dropdown label -> folder name (missing ones are not offered).

    The cheating-demo pair belongs to the Masking tab and is left out here.
    """
    found = []
    for folder in Path(store.model_dir()).glob("*"):
        if not folder.is_dir() or folder.name.startswith("cheat-"):
            continue
        try:
            arch = read_config(folder)["arch"]
        except CheckpointError:
            continue  # a tokenizer folder, or a checkpoint still being written
        found.append((list(KIND_NAMES).index(arch), folder.name, f"{folder.name} ({KIND_NAMES[arch]})"))
    return {label: name for _, name, label in sorted(found)}  # language models first


def models() -> dict[str, str]:
    """What the model list offers: the shipped checkpoints, then GPT-2 (nothing is downloaded until it is used)."""
    return {**checkpoints(), GPT2_LABEL: store.GPT2_REPO}


def _arch(name: str) -> str:
    return "DecoderLM" if name == store.GPT2_REPO else read_config(store.model_dir() / name)["arch"]


def example_text(name: str) -> str:
    """A text the model can read: a translator gets its own task's example source."""
    arch = _arch(name)
    if arch != "EncoderDecoder":
        return EXAMPLE_TEXT[arch]
    return TASKS[next((t for t in TASKS if t.replace("_", "-") in name), "pig_latin")].example


def _model(label: str):
    names = models()
    if label not in names:
        raise gr.Error(f"No model {label!r} in {store.model_dir()}; pick one from the list.")
    name = names[label]
    try:
        if name == store.GPT2_REPO:
            return (name, *store.gpt2())
        return name, store.model(name), store.tokenizer(name)
    except CheckpointError as e:
        raise gr.Error(str(e)) from e


# ---------------------------------------------------------------- one traced pass


@dataclass
class Attention:
    """One group's weights for one text: attn (n_layer, n_head, Tq, Tk) and the axis labels."""

    attn: torch.Tensor
    q_labels: list[str]
    k_labels: list[str]
    notice: str
    group: str


def _cut_tokens(tokenizer, text: str, limit: int) -> tuple[list[int], list[str], str]:
    spans = tokenizer.tokens(text)
    if not spans:
        raise gr.Error("The text has no tokens: type a sentence.")
    notice = ""
    if len(spans) > limit:
        notice = f"Your text has {len(spans)} tokens; the first {limit} are shown."
    spans = spans[:limit]
    return [s.id for s in spans], [s.text for s in spans], notice


def _translator_attention(model, tokenizer, text: str, group: str) -> Attention:
    codec = Codec(tokenizer)
    limit = min(MAX_TOKENS, model.config.max_len) - 1  # room for </s>
    notice = ""
    if len(text) > limit:
        text, notice = text[:limit], f"Your source has {len(text)} characters; the first {limit} are used."
    try:
        codec.check(text, model.config.max_len)
        target = translate(model, codec, text).ids
    except DecodingError as e:
        raise gr.Error(str(e)) from e
    room = min(MAX_TOKENS, model.config.max_len) - 1  # the decoder reads <s> + the target
    if len(target) > room:
        notice = " ".join(x for x in (notice, f"The translation has {len(target)} tokens; the first {room} "
                                      "are shown.") if x)
        target = target[:room]
    _, trace = traced(model, codec, text, target)
    src = list(text) + ["</s>"]
    tgt = ["<s>"] + [tokenizer.decode([i]) for i in target]
    q, k = {"encoder": (src, src), "decoder": (tgt, tgt), "cross": (tgt, src)}[group]
    notice = " ".join(x for x in (notice, f"Translation: **{codec.text(target)}**") if x)
    return Attention(trace.attention(group)[:, 0], q, k, notice, group)


def run_attention(label: str, text: str, group: str) -> Attention:
    """Validate, run one traced forward pass of the chosen model, return the chosen group's weights."""
    text, notice = truncate(text)
    if not text.strip():
        raise gr.Error("Type some text first.")
    name, model, tokenizer = _model(label)
    arch = type(model).__name__
    if group not in GROUPS[arch]:
        shown = GROUPS[arch][0]
        notice = " ".join(x for x in (notice, f"This {KIND_NAMES[arch]} has no {views.plain(repr(group))} attention; "
                                      f"showing its {GROUP_NAMES[shown]}.") if x)
        group = shown
    if arch == "EncoderDecoder":
        result = _translator_attention(model, tokenizer, text, group)
    else:
        ids, labels, cut = _cut_tokens(tokenizer, text, min(MAX_TOKENS, model.config.max_len))
        device = next(model.parameters()).device
        _, trace = model.run_with_trace(torch.tensor([ids], device=device))
        result = Attention(trace.attention(group)[:, 0], labels, labels, cut, group)
    result.notice = " ".join(x for x in (notice, result.notice) if x)
    return result


def _clamp(value, n: int) -> int:
    return max(0, min(int(value or 0), n - 1))


def _focus_figures(a: Attention, layer: int, head: int, query: int) -> tuple[go.Figure, go.Figure]:
    n_layer, n_head, Tq, _ = a.attn.shape
    layer, head, query = _clamp(layer, n_layer), _clamp(head, n_head), _clamp(query, Tq)
    head_fig = views.head_heatmap(a.attn[layer, head], a.q_labels, a.k_labels, f"Layer {layer}, head {head}")
    rows_fig = views.query_rows_heatmap(a.attn[:, :, query], a.k_labels,
                                        f"What does token {query} ({views.plain(repr(a.q_labels[query]))}) attend to, "
                                        "in every head?")
    return head_fig, rows_fig


# ---------------------------------------------------------------- handlers


def attention(label: str, text: str, group: str, layer: float, head: float, query: float):
    """All figures for one text: grid, selected head, per-layer averages, one query's rows, rollout."""
    a = run_attention(label, text, group)
    n_layer, n_head, Tq, Tk = a.attn.shape
    grid = views.layer_head_grid(a.attn, a.q_labels, a.k_labels,
                                 f"{n_layer} layers x {n_head} heads over {Tq} x {Tk} tokens")
    head_fig, rows_fig = _focus_figures(a, layer, head, query)
    average = views.layer_average_grid(a.attn, a.q_labels, a.k_labels)
    if a.group != "cross":
        rollout = views.rollout_heatmap(attention_rollout(a.attn)[-1], a.q_labels)
    else:
        rollout = views.message_figure("Rollout follows self-attention through one stack: "
                                       "choose encoder or decoder self-attention.")
    notice = a.notice or f"Showing all {Tq} tokens."
    return notice, grid, head_fig, average, rows_fig, rollout


def attention_focus(label: str, text: str, group: str, layer: float, head: float, query: float):
    """Only the selected head and query figures (for the sliders: the grid stays as it is)."""
    return _focus_figures(run_attention(label, text, group), layer, head, query)


def attention_generate(label: str, text: str, n_new: float, layer: float, head: float, step: float):
    """Generate greedily and show each new token's attention row: one head's staircase, one step's rows."""
    text, notice = truncate(text)
    if not text.strip():
        raise gr.Error("Type a prompt first.")
    _, model, tokenizer = _model(label)
    if type(model).__name__ != "DecoderLM":
        raise gr.Error("Attention while generating needs a language model: pick one in the model list.")
    n_new = max(1, min(int(n_new or 1), MAX_NEW_TOKENS))
    ids, _, cut = _cut_tokens(tokenizer, text, min(MAX_TOKENS, model.config.max_len) - n_new)
    gen = attention_while_generating(model, ids, n_new)
    labels = [tokenizer.decode([i]) for i in gen.ids]
    n_layer, n_head = gen.rows[0].shape[:2]
    layer, head, step = _clamp(layer, n_layer), _clamp(head, n_head), _clamp(step, len(gen.rows))
    staircase = views.generation_heatmap(gen.rows, labels, gen.n_prompt, layer, head)
    chosen = labels[gen.n_prompt + step]
    step_fig = views.query_rows_heatmap(gen.rows[step], labels[: gen.rows[step].shape[-1]],
                                        f"Step {step}: choosing {views.plain(repr(chosen))}, every layer and head")
    notice = " ".join(x for x in (notice, cut) if x)
    continuation = (f"**Continuation:** {views.plain(repr(tokenizer.decode(gen.generated)))}"
                    + (f"  \n{notice}" if notice else ""))
    return continuation, staircase, step_fig


def _model_changed(label: str):
    """New model: size the layer/head sliders to it (GPT-2 is loaded to read its size)."""
    names = models()
    if label not in names:
        return gr.Slider(), gr.Slider()
    if names[label] == store.GPT2_REPO:
        try:
            config = vars(store.gpt2()[0].config)
        except CheckpointError:
            return gr.Slider(), gr.Slider()  # the button will say why
    else:
        config = read_config(store.model_dir() / names[label])
    return gr.Slider(maximum=config["n_layer"] - 1), gr.Slider(maximum=config["n_head"] - 1)


# ---------------------------------------------------------------- layout


def build() -> None:
    with gr.Tab("Attention", id="attention"):
        shipped = checkpoints()
        if not shipped:
            gr.Markdown(f"No trained model found in `{store.model_dir()}`: train or download one first.")
            return
        labels = list(shipped)
        first = read_config(store.model_dir() / shipped[labels[0]])
        with gr.Row():
            model = gr.Dropdown([*labels, GPT2_LABEL], value=labels[0], label="Model")
            group = gr.Radio(GROUP_CHOICES, value=GROUPS[first["arch"]][0], label="Attention",
                             info="a language model has only masked self-attention, a classifier only encoder "
                                  "self-attention, a translator all three")
        text = gr.Textbox(example_text(shipped[labels[0]]), label=f"Text (up to {MAX_TOKENS} tokens are drawn)", lines=2)
        run = gr.Button("Show attention", variant="primary")
        gr.Examples([[lab, example_text(shipped[lab]), GROUPS[_arch(shipped[lab])][-1]] for lab in labels],
                    [model, text, group])
        with gr.Accordion("What am I looking at?", open=False):
            gr.Markdown(EXPLAINER)
        notice = gr.Markdown()
        grid = gr.Plot(label="Every head of every layer")
        with gr.Row():
            layer = gr.Slider(0, first["n_layer"] - 1, value=0, step=1, label="Layer")
            head = gr.Slider(0, first["n_head"] - 1, value=0, step=1, label="Head")
            query = gr.Slider(0, MAX_TOKENS - 1, value=8, step=1, label="Query token (position)")
        with gr.Row():
            head_fig = gr.Plot(label="Selected head")
            rows_fig = gr.Plot(label="One query token in every head")
        with gr.Row():
            average = gr.Plot(label="Head average per layer")
            rollout = gr.Plot(label="Attention rollout")
        with gr.Accordion("Attention while generating (language models)", open=False):
            gr.Markdown("The model continues your text greedily. Each line is one new token: the attention "
                        "of the position that chose it, over everything before it. Pick a step to see that "
                        "row in every layer and head.")
            with gr.Row():
                n_new = gr.Slider(1, MAX_NEW_TOKENS, value=12, step=1, label="New tokens")
                step = gr.Slider(0, MAX_NEW_TOKENS - 1, value=0, step=1, label="Step")
            go_button = gr.Button("Generate and show attention")
            continuation = gr.Markdown()
            staircase = gr.Plot(label="Selected head, step by step")
            step_fig = gr.Plot(label="One step in every layer and head")

        inputs = [model, text, group, layer, head, query]
        outputs = [notice, grid, head_fig, average, rows_fig, rollout]
        run.click(attention, inputs, outputs, api_name="attention")
        text.submit(attention, inputs, outputs, api_name=False)
        group.input(attention, inputs, outputs, api_name=False)
        for slider in (layer, head, query):
            slider.release(attention_focus, inputs, [head_fig, rows_fig], api_name=False)
        model.change(_model_changed, model, [layer, head], api_name=False)
        go_button.click(attention_generate, [model, text, n_new, layer, head, step],
                        [continuation, staircase, step_fig], api_name="attention_generate")
        step.release(attention_generate, [model, text, n_new, layer, head, step],
                     [continuation, staircase, step_fig], api_name=False)
