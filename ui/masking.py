"""Masking tab: the masks as matrices, what they do to a trained model, and a model that cheats.

Lesson: a mask decides which keys each query may read. A language model is
trained with a causal mask; let it look ahead and its predictions fall apart.
Windowed masks (how long-sequence transformers cut the quadratic cost) keep the
nearby tokens, so for local dependencies they change little. And a model trained
*without* the causal mask learns to copy the next token from its input: its
training loss collapses, but it cannot generate.
"""

from __future__ import annotations

import gradio as gr

from lab import masking as use, store
from lab.policy import notice
from ui.common import cached, View, handler
from views import attention as attention_views
from views import masking as views
from views.kit import plain
from lab.markdown import literal

# Julius Caesar is the validation play: text the shipped LM never trained on
FRIENDS = "Friends, Romans, countrymen, lend me your ears; I come to bury Caesar, not to praise him."
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


def effect_figures(run: use.MaskingRun, layer, head, position, notices: list[str]):
    """The attention, loss and top-5 figures of one run, at the chosen layer, head and position."""
    layer, head, position, weights, predictions = run.focus(layer, head, position, notices)
    attention = attention_views.heatmap_grid(weights[None], run.labels, run.labels, [f"L{layer} H{head}"], run.runs,
                                             f"Layer {layer}, head {head} under each mask")
    return (attention, views.loss_figure(run.losses, run.labels),
            views.top_predictions_figure(predictions, f"{position}:{run.labels[position]}"))


@cached
@handler
def masking(text: str, text_b: str, kind: str, w: float, dilation: float, global_text: str, causal: bool,
            layer: float, head: float, position: float):
    """Gallery of masks for the text, and the shipped LM read with its causal mask vs the chosen one."""
    run = use.masking_run(text, text_b, kind, w, dilation, global_text, causal)
    notices = [run.notice]
    gallery = views.mask_gallery(views.gallery_panels(run.gallery, run.labels, run.labels_b))
    figures = effect_figures(run, layer, head, position, notices)
    return notice(*notices), gallery, *figures


@cached
@handler
def cheating(prompt: str, n_new: float):
    """Both cheating-demo models: their loss curves, greedy continuations, and honest loss on the prompt."""
    results, histories, cut = use.cheating(prompt, n_new)
    lines = [f"**{r.title}** (final training loss {r.final_train_loss:.2f}; loss on your text without peeking "
             f"{r.honest_loss:.2f} nats/token)  \n{literal(repr(prompt))} → **{literal(repr(r.continuation))}**"
             for r in results]
    return "\n\n".join(lines + ([cut] if cut else [])), views.training_curves(histories)


def _lm_size() -> tuple[int, int]:
    """(n_layer, n_head) of the shipped LM, for the sliders; a missing checkpoint is reported on use."""
    try:
        config = store.config(use.LM)
    except Exception:  # noqa: BLE001 -- any unreadable checkpoint: the handler says what is wrong
        return 1, 1
    return config["n_layer"], config["n_head"]


def build() -> View:
    n_layer, n_head = _lm_size()
    with gr.Tab("Masking", id="masking"):
        with gr.Accordion("What am I looking at?", open=False, elem_classes=["lecture-hide"]):
            gr.Markdown(EXPLAINER)
        with gr.Row(equal_height=True):
            text = gr.Textbox(FRIENDS, lines=1, max_lines=3, label=f"Text (up to {use.MAX_TOKENS} tokens)", scale=3)
            kind = gr.Dropdown(use.EFFECT_KINDS, value="none", label="Mask to try", elem_id="mask",
                               scale=1)
            run = gr.Button("Show masks", variant="primary", elem_id="masking-run", scale=1)
        with gr.Row():
            # elem_ids keep the links' parameter names of the longer labels these boxes had
            text_b = gr.Textbox("To be, or not", label="Padding: 2nd text", elem_id="second_text_of_the_padding_batch")
            causal = gr.Checkbox(True, label="Windows look back only (causal)")
            w = gr.Slider(1, 16, value=3, step=1, label="Window width w")
            dilation = gr.Slider(1, 8, value=2, step=1, label="Dilation d")
            global_text = gr.Textbox("0", label="Global tokens", elem_id="global_token_positions")
        with gr.Column(elem_classes=["lecture-hide"]):
            gr.Examples(
                [[FRIENDS, "none", 3, False], [FRIENDS, "sliding_window", 4, True],
                 ["To be, or not to be, that is the question", "dilated_window", 3, True]],
                [text, kind, w, causal],
            )
        notice_box = gr.Markdown()
        gallery = gr.Plot(label="Mask gallery", elem_id="masking-gallery", show_label=False)
        gr.Markdown("### Effect on a trained model")
        with gr.Row():
            layer = gr.Slider(0, max(1, n_layer - 1), value=0, step=1, label="Layer")
            head = gr.Slider(0, max(1, n_head - 1), value=0, step=1, label="Head")
            position = gr.Slider(0, use.MAX_TOKENS - 1, value=5, step=1, label="Position for the top-5 guesses")
        attention = gr.Plot(label="One head, causal vs chosen mask", show_label=False)
        with gr.Row():
            loss = gr.Plot(label="Per-token loss")
            top = gr.Plot(label="Top-5 next tokens")
        inputs = [text, text_b, kind, w, dilation, global_text, causal, layer, head, position]
        outputs = [notice_box, gallery, attention, loss, top]
        run.click(masking, inputs, outputs, api_name="masking")
        # a changed setting re-runs; the run itself is cached, so layer/head/position only re-slice it
        for control in (kind, causal):
            control.input(masking, inputs, outputs, api_name=False)
        for slider in (w, dilation, layer, head, position):
            slider.release(masking, inputs, outputs, api_name=False)

        with gr.Accordion("The cheating demo: a model trained without the causal mask", open=False) as cheat_box:
            gr.Markdown("Two tiny language models, same size, data and steps; one was trained without the causal "
                        "mask, so it could read each answer in its input.")
            with gr.Row():
                prompt = gr.Textbox("KING HENRY: Once more unto the breach", label="Prompt")
                n_new = gr.Slider(5, 60, value=30, step=1, label="New tokens")
            cheat_button = gr.Button("Compare the two models")
            gr.Examples([["KING HENRY: Once more unto the breach"], ["My lord, the queen"]], [prompt])
            generations = gr.Markdown()
            curves = gr.Plot(label="Training loss of both models")
        cheat_button.click(cheating, [prompt, n_new], [generations, curves], api_name="cheating")
        cheat_box.expand(cheating, [prompt, n_new], [generations, curves], api_name=False)
    return View(masking, inputs, outputs, "masking")
