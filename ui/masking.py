"""Masking tab: the masks as matrices, what they do to a trained model, and a model that cheats.

Lesson: a mask decides which keys each query may read. A language model is
trained with a causal mask; let it look ahead and its predictions fall apart.
Windowed masks (how long-sequence transformers cut the quadratic cost) keep the
nearby tokens, so for local dependencies they change little. And a model trained
*without* the causal mask learns to copy the next token from its input: its
training loss collapses, but it cannot generate.
"""

from __future__ import annotations

import json

import gradio as gr
import torch

from transformer_core import CheckpointError, MaskError, build_mask, padding_mask
from transformer_core.analysis import greedy_with_mask, mean_loss, token_losses, top_predictions
from transformer_core.hub import read_config
from ui import store
from ui.common import truncate
from views import attention as attention_views
from views import masks as views

LM = "shakespeare-lm"
CHEATERS = {"trained with the causal mask": ("cheat-causal", "causal"),
            "trained with no mask": ("cheat-nomask", "none")}
# Julius Caesar is the validation play: text the shipped LM never trained on
FRIENDS = "Friends, Romans, countrymen, lend me your ears; I come to bury Caesar, not to praise him."
MAX_TOKENS = 64  # masks are drawn cell by cell: 64 x 64 still shows every cell
EFFECT_KINDS = ["none", "causal", "sliding_window", "dilated_window", "global_window"]
EXPLAINER = """
**What am I looking at?** Each matrix is a mask: row *i* is a query token, column *j* a key token;
blue means "may attend", grey "hidden". **none** lets every token see every other (an encoder);
**causal** lets a token see only itself and the past (a language model: the future is the answer);
**padding** hides the filler tokens that make two texts of different length fit one batch;
**sliding window** keeps only keys within *w* positions; **dilated** windows skip every *d*-th
position to reach further at the same cost; **global tokens** see and are seen by everyone, on top
of a window. Below, the shipped language model reads your text once with its causal mask and once
with the mask you pick: compare the attention of one head, the loss on every token, and the top
guesses for the next token.
"""


def _tokens(tokenizer, text: str, min_tokens: int = 1) -> tuple[list[int], list[str], str]:
    text, notice = truncate(text)
    spans = tokenizer.tokens(text)
    if len(spans) < min_tokens:
        raise gr.Error(f"The text has {len(spans)} token(s); type at least {min_tokens}.")
    if len(spans) > MAX_TOKENS:
        notice = " ".join(x for x in (notice, f"Your text has {len(spans)} tokens; the first {MAX_TOKENS} are used.")
                          if x)
        spans = spans[:MAX_TOKENS]
    return [s.id for s in spans], [s.text for s in spans], notice


def _global_tokens(text: str) -> list[int]:
    try:
        return [int(g) for g in (text or "").replace(",", " ").split()]
    except ValueError:
        raise gr.Error(f"Global tokens must be positions like '0, 5'; got {text!r}.") from None


def _check_window(w: int, n: int) -> None:
    if w < 1:
        raise gr.Error(f"The window width must be at least 1 (got {w}).")
    if w >= n:
        raise gr.Error(f"A window of width {w} covers the whole text ({n} tokens) and hides nothing: "
                       f"choose a width below {n}, or a longer text.")


def _mask(kind: str, n: int, w: int, dilation: int, global_tokens: list[int], causal: bool):
    """The Mask object the model will apply (MaskError becomes a message)."""
    if kind in ("sliding_window", "dilated_window", "global_window"):
        _check_window(w, n)
    try:
        return build_mask(kind, n, w=w, dilation=dilation, global_tokens=global_tokens, causal=causal)
    except MaskError as e:
        raise gr.Error(str(e)) from e


def gallery_masks(n: int, lengths: list[int], w: int, dilation: int, global_tokens: list[int]):
    """(title, Mask) for every panel of the gallery, built by the same functions the model uses."""
    masks = [
        ("none (bidirectional)", build_mask("none", n)),
        ("causal", build_mask("causal", n)),
        ("padding", padding_mask(lengths, n)),
        (f"sliding window w={w}", _mask("sliding_window", n, w, dilation, global_tokens, False)),
        (f"causal sliding window w={w}", _mask("sliding_window", n, w, dilation, global_tokens, True)),
        (f"dilated window w={w}, d={dilation}", _mask("dilated_window", n, w, dilation, global_tokens, False)),
        (f"global {global_tokens} + window w={w}", _mask("global_window", n, w, dilation, global_tokens, False)),
    ]
    return masks


def describe(mask) -> str:
    """A mask's kind and parameters in words, e.g. "sliding window w=3, causal"."""
    params = [("causal" if value else "both ways") if key == "causal" else f"{key}={value}"
              for key, value in mask.params.items()]
    return " ".join([mask.kind.replace("_", " "), ", ".join(params)]).strip()


def gallery_panels(masks, labels: list[str], labels_b: list[str]) -> list[views.MaskPanel]:
    panels = []
    for title, mask in masks:
        if mask.allowed.dim() == 3:  # padding: one matrix per text of the batch
            padded_b = labels_b + ["[pad]"] * (len(labels) - len(labels_b))
            panels.append(views.MaskPanel(f"{title}: text 1", mask.allowed[0].numpy(), labels, labels))
            panels.append(views.MaskPanel(f"{title}: text 2", mask.allowed[1].numpy(), padded_b, padded_b))
        else:
            panels.append(views.MaskPanel(title, mask.allowed.numpy(), labels, labels))
    return panels


def _language_model(name: str):
    try:
        return store.model(name), store.tokenizer(name)
    except CheckpointError as e:
        raise gr.Error(f"{e}. The Masking tab needs this checkpoint.") from e


@torch.no_grad()
def masking(text: str, text_b: str, kind: str, w: float, dilation: float, global_text: str, causal: bool,
            layer: float, head: float, position: float):
    """Gallery of masks for the text, and the shipped LM read with its causal mask vs the chosen one."""
    model, tokenizer = _language_model(LM)
    ids, labels, notice = _tokens(tokenizer, text, min_tokens=2)
    n = len(ids)
    w, dilation = int(w or 0), int(dilation or 0)  # 0 (or a missing value) is refused with a message
    global_tokens = _global_tokens(global_text)
    ids_b, labels_b, _ = _tokens(tokenizer, text_b or "", min_tokens=1)
    ids_b, labels_b = ids_b[:n], labels_b[:n]
    gallery = views.mask_gallery(gallery_panels(gallery_masks(n, [n, len(ids_b)], w, dilation, global_tokens),
                                         labels, labels_b))

    chosen = _mask(kind, n, w, dilation, global_tokens, causal)
    device = next(model.parameters()).device
    idx = torch.tensor([ids], device=device)
    runs = {"causal (as trained)": model.run_with_trace(idx), describe(chosen): model.run_with_trace(idx, mask=chosen)}
    n_layer, n_head = model.config.n_layer, model.config.n_head
    layer, head = min(max(int(layer or 0), 0), n_layer - 1), min(max(int(head or 0), 0), n_head - 1)
    position = min(max(int(position or 0), 0), n - 1)
    attn = torch.stack([trace.attention("decoder")[layer, 0, head] for _, trace in runs.values()])[None]
    attention = attention_views.heatmap_grid(attn, labels, labels, [f"L{layer} H{head}"], list(runs),
                                             f"Layer {layer}, head {head} under each mask")
    target = idx[0].cpu()
    losses = {name: token_losses(logits[0].cpu(), target).numpy() for name, (logits, _) in runs.items()}
    predictions = {}
    for name, (logits, _) in runs.items():
        probs, top = top_predictions(logits[0, position].cpu(), 5)
        predictions[name] = (probs.numpy(), [tokenizer.decode([i]) for i in top.tolist()])
    return (notice or f"All {n} tokens are used.", gallery, attention, views.loss_figure(losses, labels),
            views.top_predictions_figure(predictions, f"{position}:{labels[position]}"))


def _history(name: str) -> list[dict]:
    path = store.model_dir() / name / "history.json"
    if not path.is_file():
        raise gr.Error(f"No training history at {path}; the cheating demo needs both cheat-* checkpoints.")
    return json.loads(path.read_text(encoding="utf-8"))


@torch.no_grad()
def cheating(prompt: str, n_new: float):
    """Both cheating-demo models: their loss curves, greedy continuations, and honest loss on the prompt."""
    histories, lines = {}, []
    for title, (name, mask_kind) in CHEATERS.items():
        model, tokenizer = _language_model(name)
        ids, _, notice = _tokens(tokenizer, prompt, min_tokens=2)
        histories[title] = _history(name)
        continuation = tokenizer.decode(greedy_with_mask(model, ids, max(1, min(int(n_new or 1), 60)), mask_kind))
        honest = mean_loss(model, ids)  # causal mask: no peeking (the tiny models read 16 tokens at most)
        lines.append(f"**{title}** (final training loss {histories[title][-1]['train_loss']:.2f}; loss on your "
                     f"text without peeking {honest:.2f} nats/token)  \n{attention_views.plain(repr(prompt))} → "
                     f"**{attention_views.plain(repr(continuation))}**")
    return "\n\n".join(lines + ([notice] if notice else [])), views.training_curves(histories)


def _lm_size() -> tuple[int, int]:
    """(n_layer, n_head) of the shipped LM, for the sliders; a missing checkpoint is reported on use."""
    try:
        config = read_config(store.model_dir() / LM)
    except CheckpointError:
        return 1, 1
    return config["n_layer"], config["n_head"]


def build() -> None:
    n_layer, n_head = _lm_size()
    with gr.Tab("Masking", id="masking"):
        with gr.Accordion("What am I looking at?", open=False):
            gr.Markdown(EXPLAINER)
        with gr.Row():
            text = gr.Textbox(FRIENDS, lines=2,
                              label=f"Text (up to {MAX_TOKENS} tokens)")
            text_b = gr.Textbox("To be, or not", label="Second text of the padding batch")
        with gr.Row():
            w = gr.Slider(1, 16, value=3, step=1, label="Window width w")
            dilation = gr.Slider(1, 8, value=2, step=1, label="Dilation d")
            global_text = gr.Textbox("0", label="Global token positions")
        with gr.Row():
            kind = gr.Dropdown(EFFECT_KINDS, value="none", label="Mask to try on the trained model", elem_id="mask")
            causal = gr.Checkbox(True, label="Windows look back only (causal)")
        with gr.Row():
            layer = gr.Slider(0, max(1, n_layer - 1), value=0, step=1, label="Layer")
            head = gr.Slider(0, max(1, n_head - 1), value=0, step=1, label="Head")
            position = gr.Slider(0, MAX_TOKENS - 1, value=5, step=1, label="Position for the top-5 guesses")
        run = gr.Button("Show masks", variant="primary")
        gr.Examples(
            [[FRIENDS, "none", 3, False], [FRIENDS, "sliding_window", 4, True],
             ["To be, or not to be, that is the question", "dilated_window", 3, True]],
            [text, kind, w, causal],
        )
        notice = gr.Markdown()
        gallery = gr.Plot(label="Mask gallery")
        gr.Markdown("### Effect on a trained model")
        attention = gr.Plot(label="One head, causal vs chosen mask")
        with gr.Row():
            loss = gr.Plot(label="Per-token loss")
            top = gr.Plot(label="Top-5 next tokens")
        inputs = [text, text_b, kind, w, dilation, global_text, causal, layer, head, position]
        outputs = [notice, gallery, attention, loss, top]
        run.click(masking, inputs, outputs, api_name="masking")
        for control in (kind, causal):
            control.input(masking, inputs, outputs, api_name=False)
        for slider in (w, dilation, layer, head, position):
            slider.release(masking, inputs, outputs, api_name=False)

        gr.Markdown("### The cheating demo\nTwo tiny language models, same size, data and steps; one was "
                    "trained without the causal mask, so it could read each answer in its input.")
        with gr.Row():
            prompt = gr.Textbox("KING HENRY: Once more unto the breach", label="Prompt")
            n_new = gr.Slider(5, 60, value=30, step=1, label="New tokens")
        cheat_button = gr.Button("Compare the two models")
        gr.Examples([["KING HENRY: Once more unto the breach"], ["My lord, the queen"]], [prompt])
        generations = gr.Markdown()
        curves = gr.Plot(label="Training loss of both models")
        cheat_button.click(cheating, [prompt, n_new], [generations, curves], api_name="cheating")
