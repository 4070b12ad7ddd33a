"""The "Inside an LLM" tab: what changed since GPT-2, as five experiments on the real LLMs' weights, and the
information flow to a token (which earlier tokens, heads and feed-forward blocks wrote its stream).

Each experiment runs when its button is pressed (they read 135M- and 268M-parameter models: the tab opening runs
none); the flow is the tab's view, which a link or a lecture step opens.
"""

from __future__ import annotations

import gradio as gr
import numpy as np

from i18n import render, t
from lab import inside as use
from lab.policy import notice
from ui import events
from ui.handlers import Action, cached, handler
from ui.i18n import choice, language, text as _
from views import inside as views
from views.kit import plain

DEFAULT_TEXT = "The capital of France is"
FLOW_TEXT = "The animal didn't cross the street because it was too tired. The animal"
SHARED_TEXT = "The cat sat on the mat because it was tired, and then the cat slept."


def _said(note: str, lang: str) -> str:
    return render(note, lang) if note else ""


@cached
@handler
def rotary(text: str, offset: float, lang: str = "en"):
    """Read the text 1-1000 positions later: SmolLM2's attention weights (rotary positions) stay, the Shakespeare
    LM's (learned positions) change."""
    run = use.rotary(text, offset)
    kinds = {use.SMOLLM2: "rotary", use.LEARNED_LM: "learned"}
    most = {name: float(change.max()) for name, change in run.change.items()}
    sentence = t("inside.rotary_sentence", lang, offset=run.offset, rotary=most[use.SMOLLM2],
                 learned=most[use.LEARNED_LM])
    return views.rotary_figure(run.change, run.offset, kinds, lang), "\n\n".join(filter(None, [sentence, _said(run.notice, lang)]))


@cached
@handler
def kv_cache(text: str, layer: float, lang: str = "en"):
    """The KV cache's bytes a token with and without grouped-query attention, and the query heads that share one
    key/value head, side by side."""
    kv = use.kv_cache()
    heads = {use.SMOLLM2: (3, 9), use.GEMMA3: (1, 4)}
    shared = use.shared_heads(text, layer)
    sentence = t("inside.kv_sentence", lang, **{f"{k}_{i}": v[i] / 1024 for k, v in
                                                 (("smol", kv.get(use.SMOLLM2, (0, 0))),
                                                  ("gemma", kv.get(use.GEMMA3, (0, 0)))) for i in (0, 1)})
    return (views.kv_figure(kv, heads, lang), views.shared_heads_figure(shared, lang),
            "\n\n".join(filter(None, [sentence, _said(shared.notice, lang)])))


@cached
@handler
def sink(model: str, text: str, lang: str = "en"):
    """The first token's share of attention in every layer, and the next-token distribution without it."""
    run = use.sink(model, text)
    return views.sink_figure(run, lang), "\n\n".join(filter(None, [views.sink_sentence(run, lang), _said(run.notice, lang)]))


@cached
@handler
def norms(model: str, text: str, lang: str = "en"):
    """RMSNorm against LayerNorm on the model's own residual stream, layer by layer."""
    run = use.norms(model, text)
    sentence = t("inside.norms_sentence", lang, mean=float(run.mean_over_rms.max()), cosine=float(run.cosine.min()),
                 median=float(np.median(run.cosine)))
    return views.norms_figure(run, lang), "\n\n".join(filter(None, [sentence, _said(run.notice, lang)]))


@cached
@handler
def reach(lang: str = "en"):
    """How far back Gemma 3's sliding-window and global layers look from the end of a 600-token text."""
    run = use.reach()
    local = [run.farthest[i] for i in run.local_layers]
    glob = [run.farthest[i] for i in range(len(run.farthest)) if i not in run.local_layers]
    sentence = t("inside.reach_sentence", lang, window=run.window, local=float(max(local)), far=float(max(glob)),
                 n=run.n_tokens)
    return views.reach_figure(run, lang), sentence


@cached(depends=use.llms_waiting)  # the LLM's own flow once it is made, not the stand-in's kept
@handler
def flow(model: str, text: str, token: float, threshold: float, lang: str = "en"):
    """The information flow into one token: the routes (token, layer, head, feed-forward) that wrote its last
    residual stream, each at least `threshold` of its sum, and its heads to pick."""
    run = use.flow(model, text)
    notices: list[str] = []
    token, threshold, routes, heads = use.flow_routes(run, token, threshold, notices)
    guess = plain(repr(use.predicted(run, token)))
    picks = [(t("inside.head_choice", lang, layer=layer, head=head, push=push, guess=guess), f"{layer},{head}")
             for layer, head, push in heads[:20]]
    top = picks[0][1] if picks else None
    return (_said(notice(run.notice, *notices), lang), views.flow_figure(run, routes, token, threshold, lang),
            gr.Dropdown(choices=picks, value=top), flow_head(model, text, token, top, lang))


@handler
def flow_head(model: str, text: str, token: float, head: str | None, lang: str = "en"):
    """What one head (written "layer,head") writes at the token, read through the unembedding."""
    if not head:
        return views.no_head(lang)
    try:
        layer, number = (int(part) for part in str(head).split(",", 1))
    except ValueError:
        raise gr.Error(t("inside.bad_head", lang)) from None
    run = use.flow(model, text)
    layer, number, token, promoted, suppressed = use.flow_head(run, layer, number, token)
    return views.head_bars(layer, number, run.labels[token], promoted, suppressed, lang)


def _experiment(key: str):
    """An accordion with the experiment's one-paragraph lesson."""
    accordion = gr.Accordion(_(f"inside.{key}.title"), open=False)
    with accordion:
        gr.Markdown(_(f"inside.{key}.intro"))
    return accordion


def build(lang: gr.State | None = None) -> Action:
    lang = language(lang)
    with gr.Tab(_("tab.inside"), id="inside"):
        gr.Markdown(_("inside.intro"))
        with gr.Accordion(_("inside.flow.title"), open=True, elem_id="inside-flow"):
            gr.Markdown(_("inside.flow.intro"))
            offered = use.decoders()
            first = use.SMOLLM2 if use.SMOLLM2 in offered.values() else next(iter(offered.values()), None)
            with gr.Row():
                model = gr.Dropdown([(choice(label)[0], name) for label, name in offered.items()], value=first,
                                    label=_("common.model"), elem_id="model", scale=2)
                text = gr.Textbox(FLOW_TEXT, label=_("inside.flow.text", n=use.FLOW_MAX_TOKENS), elem_id="text",
                                  scale=4)
                run = gr.Button(_("inside.flow.run"), variant="primary", elem_id="inside-flow-run", scale=1)
            with gr.Row():
                # its end means the last token (lab/inside.LAST) of a text of any length; the title numbers it
                token = gr.Slider(0, use.LAST, value=use.LAST, step=1, label=_("inside.setting.token"),
                                  info=_("inside.setting.token_info"), elem_id="token")
                threshold = gr.Slider(0.005, 0.5, value=0.05, step=0.005, label=_("inside.threshold"),
                                      elem_id="threshold")
            flow_notice = gr.Markdown()
            with gr.Row():
                graph = gr.Plot(show_label=False, elem_id="inside-flow-graph", scale=3)
                with gr.Column(scale=2):
                    head = gr.Dropdown([], label=_("inside.head_pick"), elem_id="flow_head", allow_custom_value=True)
                    bars = gr.Plot(show_label=False, elem_id="inside-head-bars")
        flow_inputs, flow_outputs = [model, text, token, threshold, lang], [flow_notice, graph, head, bars]
        events.on(run.click, flow, flow_inputs, flow_outputs, api_name="inside_flow")
        for slider in (token, threshold):
            events.on(slider.release, flow, flow_inputs, flow_outputs, api_name=False)
        events.on(head.input, flow_head, [model, text, token, head, lang], [bars], api_name="inside_flow_head")

        gr.Markdown(_("inside.since_gpt2"))
        with _experiment("rotary"):
            with gr.Row():
                rot_text = gr.Textbox(DEFAULT_TEXT, label=_("inside.text"), scale=3)
                offset = gr.Slider(1, use.MAX_SHIFT, value=100, step=1, label=_("inside.setting.offset"), scale=2)
                rot_run = gr.Button(_("inside.run"), variant="primary", scale=1)
            rot_plot, rot_said = gr.Plot(show_label=False), gr.Markdown()
        events.on(rot_run.click, rotary, [rot_text, offset, lang], [rot_plot, rot_said], api_name="inside_rotary")
        with _experiment("kv"):
            with gr.Row():
                kv_text = gr.Textbox(SHARED_TEXT, label=_("inside.text"), scale=3)
                kv_layer = gr.Slider(0, 29, value=3, step=1, label=_("common.layer"), scale=2)
                kv_run = gr.Button(_("inside.run"), variant="primary", scale=1)
            with gr.Row():
                kv_plot, shared_plot = gr.Plot(show_label=False), gr.Plot(show_label=False, elem_classes=["token-grid"])
            kv_said = gr.Markdown()
        events.on(kv_run.click, kv_cache, [kv_text, kv_layer, lang], [kv_plot, shared_plot, kv_said],
                  api_name="inside_kv")
        llms_only = [(choice(label)[0], name) for label, name in offered.items() if name in (use.SMOLLM2, use.GEMMA3)]
        for key, fn, api in (("sink", sink, "inside_sink"), ("norms", norms, "inside_norms")):
            with _experiment(key):
                with gr.Row():
                    picked = gr.Dropdown(llms_only, value=use.SMOLLM2 if llms_only else None, label=_("common.model"),
                                         scale=2)
                    said_text = gr.Textbox(DEFAULT_TEXT, label=_("inside.text"), scale=3)
                    button = gr.Button(_("inside.run"), variant="primary", scale=1)
                plot, said = gr.Plot(show_label=False), gr.Markdown()
            events.on(button.click, fn, [picked, said_text, lang], [plot, said], api_name=api)
        with _experiment("reach"):
            reach_run = gr.Button(_("inside.run"), variant="primary")
            reach_plot, reach_said = gr.Plot(show_label=False), gr.Markdown()
        events.on(reach_run.click, reach, [lang], [reach_plot, reach_said], api_name="inside_reach")
    return Action(flow, flow_inputs, flow_outputs, "inside_flow")
