"""Attention tab: every head of every layer of a shipped model, on the text you type.

Lesson: attention is a weighted average, and each head learns its own weights.
One traced forward pass gives all of them; the figures are cuts of that one
(n_layer, n_head, Tq, Tk) array. A language model can also be watched while it
generates: which earlier tokens each new token was chosen from.
"""

from __future__ import annotations

import gradio as gr

from i18n import render, t
from lab import attention as use, models as registry, store, tokens
from lab.policy import MAX_DRAWN_TOKENS, InputError, notice
from ui import heads as heads_section
from ui import events
from ui.handlers import cached, Action, handler, model_changed, positions_slider
from ui.i18n import choice, language, text as _
from views import attention as views
from views.kit import plain


CSS = heads_section.CSS
# The seed sentences of the texts our students read (Alammar's notes, as the Tokens tab's cost table has them, and
# Prince's chapter 12), in English and Chinese: examples for a pre-trained encoder that reads both languages.
SEEDS = [*tokens.SEED_PAIR, "The restaurant refused to serve me a ham sandwich because it only cooks vegetarian food.",
         "这家餐厅拒绝为我提供火腿三明治，因为它只做素食。"]


def checkpoints() -> dict[str, str]:
    """Picker label -> checkpoint name: the shipped checkpoints, then GPT-2."""
    return use.models_offered()


def examples(offered: dict[str, str]) -> list[list[str]]:
    """[picker label, text, attention group] per example: a text each model reads, and the seed sentences for a
    pre-trained encoder shipped for its heads (it reads both languages)."""
    rows = []
    for label, name in offered.items():
        group = registry.checkpoint(name).kind.groups[-1]
        texts = SEEDS if registry.checkpoint(name).encoder else [use.example_text(name)]
        rows += [[label, text, group] for text in texts]
    return rows


@cached
@handler
def attention(model: str, text: str, group: str, layer: float, head: float, query: float, lang: str = "en"):
    """Every attention head of a shipped model on a text: (notice, layer x head grid, selected head,
    head average per layer, one query's row in every head, attention rollout), as Plotly figures, and the
    query slider spanning the text's queries (in the same answer: an event of its own after the run cost each
    click its round trip while the figures drew).

    Args:
        model: the model, as the picker names it or by its checkpoint name, e.g. "shakespeare-lm (language model)"
        text: the text to read (at most 128 tokens are drawn)
        group: "encoder", "decoder" or "cross" attention (a model lacking it falls back, with a notice)
        layer: the layer of the selected head
        head: the head to draw large
        query: the query position whose row is drawn in every head
    """
    run = use.attention_run(model, text, group)
    notices = [run.notice]
    layer, head, drawn = run.focus(layer, head, query, notices)
    return (render(notice(*notices), lang), *views.figures(run, layer, head, drawn, lang),
            positions_slider(run.attn.shape[2], query, drawn))


@cached
@handler
def attention_focus(model: str, text: str, group: str, layer: float, head: float, query: float, lang: str = "en"):
    """Only the selected head and query figures, re-sliced from the (cached) run: the grid stays as it is."""
    run = use.attention_run(model, text, group)
    return views.focus_figures(run, *run.focus(layer, head, query), lang)


@cached
@handler
def attention_generate(model: str, text: str, n_new: float, layer: float, head: float, step: float,
                       lang: str = "en"):
    """Generate greedily and show each new token's attention row: one head's staircase, one step's rows, and the
    step slider spanning the tokens generated."""
    gen = use.while_generating_run(model, text, n_new)
    notices = [gen.notice]
    layer, head = gen.head(layer, head, notices)
    drawn, chosen, rows, read = gen.step(step, notices)
    staircase = views.generation_heatmap(gen.rows, gen.labels, gen.n_prompt, layer, head, lang)
    step_fig = views.query_rows_heatmap(rows, read, t("attention.step_title", lang, step=drawn,
                                                        token=plain(repr(chosen))), lang)
    cut = render(notice(*notices), lang)
    continuation = t("attention.continuation", lang, text=f'<span class="model-text">{plain(repr(gen.continuation))}</span>')
    return (continuation + (f"  \n{cut}" if cut else ""), staircase, step_fig,
            positions_slider(len(gen.rows), step, drawn))


def group_for(model: str, group: str):
    """A picked model's attention: the one shown stays when the model has it, else the model's first (an encoder
    has no masked decoder self-attention, and every answer then began with a notice saying so)."""
    try:
        groups = registry.checkpoint(registry.resolve(model)).kind.groups
    except (InputError, AttributeError):
        return gr.skip()
    return gr.skip() if group in groups else groups[0]


def build(lang: gr.State | None = None) -> Action | None:
    lang = language(lang)
    with gr.Tab(_("tab.attention"), id="attention"):
        models = checkpoints()
        if not models:
            gr.Markdown(_("common.no_model", folder=store.model_dir()))
            return None
        labels = list(models)
        first = store.config(models[labels[0]])
        with gr.Row():
            model = gr.Dropdown([choice(label) for label in labels], value=labels[0], label=_("common.model"),
                                elem_id="model")
            group = gr.Dropdown([(_(f"attention.group.{g}"), g) for g in use.GROUP_NAMES],
                                value=store.KINDS[first["arch"]].groups[0], label=_("common.attention"), elem_id="attention")
        with gr.Row(equal_height=True):
            text = gr.Textbox(use.example_text(models[labels[0]]), lines=1, max_lines=4, scale=5,
                              label=_("attention.text", max_tokens=MAX_DRAWN_TOKENS), elem_id="text")
            run = gr.Button(_("attention.run"), variant="primary", scale=1, elem_id="attention-run")
        with gr.Column(elem_classes=["lecture-hide"]):
            # folded: its 15 rows pushed the figures 1,200 px down, below a projector's first screen
            with gr.Accordion(_("common.examples"), open=False, elem_id="attention-examples"):
                events.examples(examples({label: name for label, name in models.items() if name != store.GPT2}),
                                [model, text, group], label=_("common.examples"))
            with gr.Accordion(_("common.what"), open=False):
                gr.Markdown(_("attention.explainer"))
        notice_box = gr.Markdown()
        grid = gr.Plot(label=_("attention.grid_label"), elem_id="attention-grid", show_label=False)
        with gr.Row():
            layer = gr.Slider(0, max(1, first["n_layer"] - 1), value=0, step=1, label=_("common.layer"), elem_id="layer")
            head = gr.Slider(0, max(1, first["n_head"] - 1), value=0, step=1, label=_("common.head"), elem_id="head")
            query = gr.Slider(0, MAX_DRAWN_TOKENS - 1, value=8, step=1, label=_("attention.query"), elem_id="query_token")
        with gr.Row():
            head_fig = gr.Plot(label=_("attention.head_label"), show_label=False, elem_id="attention-head")
            rows_fig = gr.Plot(label=_("attention.rows_label"), show_label=False, elem_id="attention-rows")
        with gr.Row():
            average = gr.Plot(label=_("attention.average_label"), show_label=False, elem_id="attention-average")
            rollout = gr.Plot(label=_("attention.rollout_label"), show_label=False, elem_id="attention-rollout")
        with gr.Accordion(_("attention.while_generating"), open=False) as while_generating:
            gr.Markdown(_("attention.while_generating_note"))
            with gr.Row():
                n_new = gr.Slider(1, use.MAX_NEW_TOKENS, value=12, step=1, label=_("common.new_tokens"),
                                  elem_id="new_tokens")
                step = gr.Slider(0, use.MAX_NEW_TOKENS - 1, value=0, step=1, label=_("common.step"), elem_id="step")
            go_button = gr.Button(_("attention.generate_run"))
            continuation = gr.Markdown()
            staircase = gr.Plot(label=_("attention.staircase_label"), show_label=False)
            step_fig = gr.Plot(label=_("attention.step_label"), show_label=False)
        focus = heads_section.Focus(attention_focus, layer, head, query, (head_fig, rows_fig))
        found, opened, section = heads_section.build(model, text, group, lang, focus)

        inputs = [model, text, group, layer, head, query, lang]
        outputs = [notice_box, grid, head_fig, average, rows_fig, rollout, query]
        events.on(run.click, attention, inputs, outputs, api_name="attention")
        events.on(text.submit, attention, inputs, outputs, api_name=False)
        events.on(group.input, attention, inputs, outputs, api_name=False)
        for slider in (layer, head, query):
            events.on(slider.release, attention_focus, inputs, [head_fig, rows_fig], api_name=False, reslice=True)
        events.on(model.change, model_changed, [model, layer, head], [layer, head], api_name=False)
        events.on(model.input, group_for, [model, group], group, queue=False, api_visibility="private")
        generate_inputs = [model, text, n_new, layer, head, step, lang]
        generate_outputs = [continuation, staircase, step_fig, step]
        events.on(go_button.click, attention_generate, generate_inputs, generate_outputs,
                  api_name="attention_generate")
        events.on(step.release, attention_generate, generate_inputs, generate_outputs, api_name=False)
        # an accordion never opens on empty plots: opening it runs its view
        events.on(while_generating.expand, attention_generate, generate_inputs, generate_outputs, api_name=False)
        # the ranking's top head (or the one picked from it) opens large above (a click's find opens it itself)
        shell = dict(queue=False, api_visibility="private")
        for event in [found.then, opened.input]:
            shown = event(None, [opened, layer, head, section], [layer, head], js=heads_section.OPEN_HEAD, **shell)
            events.on(shown.then, attention_focus, inputs, [head_fig, rows_fig], api_visibility="private",
                      reslice=True)
    return Action(attention, inputs, outputs, "attention")
