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

from i18n import render, t
from lab import masking as use, store
from lab.policy import notice, quoted
from ui import events
from ui.handlers import cached, Action, handler, model_changed, positions_slider
from ui.i18n import choice, language, text as _
from views import attention as attention_views
from views import masking as views
from lab.markdown import literal

# Julius Caesar is the validation play: text the shipped LM never trained on
FRIENDS = "Friends, Romans, countrymen, lend me your ears; I come to bury Caesar, not to praise him."


def effect_figures(run: use.MaskingRun, layer, head, position, notices: list[str], lang: str):
    """The attention, loss and top-5 figures of one run, at the chosen layer, head and position, and the position
    slider spanning the run's tokens."""
    layer, head, drawn, weights, predictions = run.focus(layer, head, position, notices)
    attention = attention_views.heatmap_grid(weights[None], run.labels, run.labels, [f"L{layer} H{head}"],
                                             [render(name, lang) for name in run.runs],
                                             t("masking.attention_title", lang, layer=layer, head=head), lang,
                                             tokens=True)
    return (attention, views.loss_figure(run.losses, run.labels, lang),
            views.top_predictions_figure(predictions, drawn, run.labels[drawn], lang),
            positions_slider(len(run.labels), position, drawn))


@cached
@handler
def masking(text: str, text_b: str, kind: str, w: float, dilation: float, global_text: str, causal: bool,
            layer: float, head: float, position: float, model: str = use.BY_LANGUAGE, lang: str = "en"):
    """Gallery of masks for the text, and a language model read with its causal mask vs the chosen one.

    Args:
        model: a language model ("smollm2-135m-instruct", "gemma-3-270m", "shakespeare-lm", ...); empty: the one
            the text's language routes to
    """
    run = use.masking_run(text, text_b, kind, w, dilation, global_text, causal, model)
    notices = [run.notice]
    gallery = views.mask_gallery(views.gallery_panels(run.gallery, run.labels, run.labels_b, lang), lang)
    figures = effect_figures(run, layer, head, position, notices, lang)
    return render(notice(*notices), lang), gallery, *figures


@cached
@handler
def cheating(prompt: str, n_new: float, lang: str = "en"):
    """Both cheating-demo models: their loss curves, greedy continuations, and honest loss on the prompt."""
    results, histories, cut = use.cheating(prompt, n_new)
    lines = [t("masking.cheat_line", lang, title=r.title, train=r.final_train_loss, honest=r.honest_loss,
               prompt=f'<span class="model-text">{literal(render(quoted(prompt or "", keep="last"), lang))}</span>',
               continuation=f'<span class="model-text">{literal(repr(r.continuation))}</span>')
             for r in results]
    cut = render(cut, lang)
    return "\n\n".join(lines + ([cut] if cut else [])), views.training_curves(histories, lang)


def picked(model: str, layer: float, head: float):
    """The layer and head sliders sized to a newly picked language model (the Shakespeare LM's by language)."""
    return model_changed(model or use.LM, layer, head)


def _lm_size() -> tuple[int, int]:
    """(n_layer, n_head) of the shipped LM, for the sliders; a missing checkpoint is reported on use."""
    try:
        config = store.config(use.LM)
    except Exception:  # noqa: BLE001 -- any unreadable checkpoint: the handler says what is wrong
        return 1, 1
    return config["n_layer"], config["n_head"]


def build(lang: gr.State | None = None) -> Action:
    lang = language(lang)
    n_layer, n_head = _lm_size()
    with gr.Tab(_("tab.masking"), id="masking"):
        with gr.Accordion(_("common.what"), open=False, elem_classes=["lecture-hide"]):
            gr.Markdown(_("masking.explainer"))
        with gr.Row(equal_height=True):
            text = gr.Textbox(FRIENDS, lines=1, max_lines=3, label=_("masking.text", max_tokens=use.MAX_TOKENS), scale=3,
                              elem_id="text")
            kind = gr.Dropdown([(_(f"masking.kind.{k}"), k) for k in use.EFFECT_KINDS], value="none",
                               label=_("masking.mask"), elem_id="mask", scale=1)
            model = gr.Dropdown([(_("masking.by_language"), use.BY_LANGUAGE), *map(choice, use.models_offered())],
                                value=use.BY_LANGUAGE, label=_("common.model"), elem_id="model", scale=1)
            run = gr.Button(_("masking.run"), variant="primary", elem_id="masking-run", scale=1)
        with gr.Row():
            # elem_ids keep the links' parameter names of the longer labels these boxes had
            text_b = gr.Textbox("To be, or not", label=_("masking.second_text"), elem_id="second_text_of_the_padding_batch")
            causal = gr.Checkbox(True, label=_("masking.causal"), elem_id="windows_look_back_only")
            w = gr.Slider(1, 16, value=3, step=1, label=_("masking.window"), elem_id="window_width_w")
            dilation = gr.Slider(1, 8, value=2, step=1, label=_("masking.dilation"), elem_id="dilation_d")
            global_text = gr.Textbox("0", label=_("masking.global"), elem_id="global_token_positions")
        with gr.Column(elem_classes=["lecture-hide"]):
            events.examples(
                [[FRIENDS, "none", 3, False], [FRIENDS, "sliding_window", 4, True],
                 ["To be, or not to be, that is the question", "dilated_window", 3, True],
                 ["床前明月光，疑是地上霜。举头望明月，低头思故乡。", "sliding_window", 4, True]],  # the poetry LM
                # the look-back setting is set but not shown: Gradio writes a checkbox's example as true/false
                # in every language
                [text, kind, w, causal], label=_("common.examples"), visible_columns=[0, 1, 2],
            )
        notice_box = gr.Markdown()
        gallery = gr.Plot(label=_("masking.gallery_label"), elem_id="masking-gallery", show_label=False)
        gr.Markdown(_("masking.effect"))
        with gr.Row():
            layer = gr.Slider(0, max(1, n_layer - 1), value=0, step=1, label=_("common.layer"), elem_id="layer")
            head = gr.Slider(0, max(1, n_head - 1), value=0, step=1, label=_("common.head"), elem_id="head")
            position = gr.Slider(0, use.MAX_TOKENS - 1, value=5, step=1, label=_("masking.position"),
                                 elem_id="position_for_the_top_5_guesses")
        attention = gr.Plot(label=_("masking.attention_label"), show_label=False, elem_id="masking-attention",
                            elem_classes=["token-grid"])
        with gr.Row():
            loss = gr.Plot(label=_("masking.loss_label"))
            top = gr.Plot(label=_("masking.top_label"))
        inputs = [text, text_b, kind, w, dilation, global_text, causal, layer, head, position, model, lang]
        outputs = [notice_box, gallery, attention, loss, top, position]
        events.on(run.click, masking, inputs, outputs, api_name="masking")
        # on change, not input: a link that names SmolLM2 left the sliders at the Shakespeare LM's 6 layers
        model.change(picked, [model, layer, head], [layer, head], queue=False, api_visibility="private",
                     show_progress="hidden")
        # a changed setting re-runs; the run itself is cached, so layer/head/position only re-slice it
        for control in (kind, causal):
            events.on(control.input, masking, inputs, outputs, api_name=False)
        for slider in (w, dilation, layer, head, position):
            events.on(slider.release, masking, inputs, outputs, api_name=False)

        with gr.Accordion(_("masking.cheat_box"), open=False) as cheat_box:
            gr.Markdown(_("masking.cheat_note"))
            with gr.Row():
                prompt = gr.Textbox("KING HENRY: Once more unto the breach", label=_("masking.prompt"), elem_id="prompt")
                n_new = gr.Slider(5, 60, value=30, step=1, label=_("common.new_tokens"), elem_id="new_tokens")
            cheat_button = gr.Button(_("masking.cheat_run"))
            events.examples([["KING HENRY: Once more unto the breach"], ["My lord, the queen"]], [prompt],
                        label=_("common.examples"))
            generations = gr.Markdown()
            curves = gr.Plot(label=_("masking.cheat_curves"))
        events.on(cheat_button.click, cheating, [prompt, n_new, lang], [generations, curves], api_name="cheating")
        events.on(cheat_box.expand, cheating, [prompt, n_new, lang], [generations, curves], api_name=False)
    return Action(masking, inputs, outputs, "masking")
