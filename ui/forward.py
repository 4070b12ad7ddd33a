"""Forward pass tab: one shipped model's forward pass on your text, stage by stage, with the real numbers.

Its own tab, not a section of Concepts: the walk has its own model and text, is the spine a lecture
follows (from a link or a lecture step), and re-slices one cached run per click; Concepts' sections are
small experiments on toy inputs, and every one of them runs whenever that tab opens.
Layout only: `lab.forward` runs the model once per text, `views.forward` draws a stage of it.
"""

from __future__ import annotations

import gradio as gr

from i18n import render, t
from lab import forward as use
from lab import models, store
from lab.policy import MAX_DRAWN_TOKENS, notice
from ui import events
from ui.handlers import Action, cached, handler, positions_slider
from ui.i18n import choice, language, text as _
from views import forward as views
from views.kit import placeholder

DEFAULT_TEXT = "The cat sat on the mat because it was tired."


# The layer slider is read by a layer's stages only (3-13), the head slider by attention's (4-8): elsewhere each fades
# and takes no drag, so nobody moves one at the embedding and waits for a change that cannot come. The page's style
# reads the stage from the diagram's lit box (views/forward.diagram), drawn with every stage: no event, no round trip.
def _lit(stages) -> str:
    return ", ".join(f'#forward-diagram rect.lit[data-stage="{stage}"]' for stage in sorted(stages))


CSS = ("#forward-layer, #forward-head { opacity: .45; pointer-events: none; }\n"
       f"body:has({_lit(use.LAYER_STAGES)}) #forward-layer, body:has({_lit(use.HEAD_STAGES)}) #forward-head "
       "{ opacity: 1; pointer-events: auto; }\n")
EXAMPLES = {"shakespeare-lm": DEFAULT_TEXT, "tang-poems-char": "床前明月光，疑是地上霜。",
            "sentiment": "A moving, beautifully acted film.", "translate-reverse": "123456789"}


def _drawn(run, piece, stack: str, cross: bool, lang: str):
    """(what the stage does, the architecture with it lit, its matrix, the followed token's row)."""
    says = views.sentence(run, piece, lang)
    points = views.points_text(piece)  # none for the ids: the tokenizer's, not the model's
    where = t("forward.points", lang, points=points, output=views.shape_text(piece)) if points else \
        t("forward.output", lang, output=views.shape_text(piece))
    shown = "  \n".join(part for part in (render(notice(run.notice, piece.notice), lang),
                                          t("forward.heading", lang, stage=views.stage_title(piece.stage, lang),
                                            says=says), where if piece.applies else "") if part)
    diagram = views.diagram(run, piece.stage, stack or "", piece.layer, piece.head, bool(cross), lang)
    if not piece.applies:
        return shown, diagram, placeholder(says), placeholder(says)
    return shown, diagram, views.heatmap(piece, lang), views.row(piece, lang, run)


@cached
@handler
def forward_stage(model: str, text: str, stage: str, layer: float, head: float, stack: str, cross: bool,
                  follow: float, lang: str = "en"):
    """One stage of a shipped model's forward pass on a text: (what it does, the architecture with the stage
    lit, the stage's matrix as a heatmap, the followed token's row), as Markdown, SVG (in HTML) and Plotly figures,
    and the follow slider spanning the stack's tokens.

    Args:
        model: the model, as the picker names it, or its checkpoint name (e.g. "shakespeare-lm")
        text: the text it reads (a translator's source); at most 128 tokens
        stage: one of the stages ("ids", "embed", "norm", "qkv", ... "loss") or its number: 1-19, and a modern
            decoder's 4a (rotation), 10a (norm after attention), 11a (gate and up), 12a (norm after the FFN)
        layer: the layer of stages 3-13
        head: the head of stages 4-8 (a query head; grouped-query models name the key/value head it reads)
        stack: "encoder" or "decoder" (a translator's two stacks; ignored by the other models)
        cross: the decoder's cross-attention instead of its self-attention (translators)
        follow: the position of the token whose row is drawn
    """
    run = use.walk(model, text)
    piece = use.stage_slice(run, stage, layer, head, stack, cross, follow)
    return (*_drawn(run, piece, stack, cross, lang), _follow_slider(run, piece, stack, follow))


def _stepper(by: int):
    @cached
    @handler
    def forward_step(model: str, text: str, stage: str, layer: float, head: float, stack: str, cross: bool,
                     follow: float, lang: str = "en"):
        """The walk's next (or previous) step, in the order the model computes it: its stage, stack and
        cross-attention switch, and the step drawn (one round trip for the button)."""
        run = use.walk(model, text)
        stage, stack, cross = use.step(run, stage, stack, cross, by)
        piece = use.stage_slice(run, stage, layer, head, stack, cross, follow)
        return (stage, stack, cross, *_drawn(run, piece, stack, cross, lang),
                _follow_slider(run, piece, stack, follow))
    return forward_step


def _follow_slider(run, piece, stack: str, follow):
    """The follow slider spanning the tokens of the stack drawn (a translator's source and written target differ),
    at the position the slice followed, in the stage's own answer: an event of its own after each walk cost the
    click a second round trip."""
    return positions_slider(len(run.labels(stack)), follow, piece.position)


def controls(model: str, stage: str):
    """A newly picked model's controls: the stages it has, its layer and head sliders' ranges, and the
    encoder/decoder switches only for a translator (a decoder-only model has one stack). Values are left as the
    page has them (a link sets them with the model, and this answer may come after): only a stage the model
    has not is moved, to its first."""
    stages = use.model_stages(model)
    if stages is None:  # an unreadable model is reported when it is run
        return gr.Dropdown(), gr.Slider(), gr.Slider(), gr.Column()
    name = models.resolve(model)
    config = store.config(name)
    translator = models.checkpoint(name).kind.role == "translator"
    picked = [(_(f"forward.stage.{s}"), s) for s in stages]
    stage_box = gr.Dropdown(choices=picked) if stage in stages else gr.Dropdown(choices=picked, value=stages[0])
    return (stage_box, gr.Slider(maximum=max(1, config["n_layer"] - 1)), gr.Slider(maximum=max(1, config["n_head"] - 1)),
            gr.Column(visible=translator))


# gr.Plot has no click event: plotly's own is listened to on the heatmap, as it is drawn. A click on a row
# leaves the row's index on a hidden button and presses it; its event sets the slider and redraws the stage.
CLICK_TO_FOLLOW = """(() => {
  const listen = () => {
    const gd = document.querySelector('#forward-heatmap .js-plotly-plot');
    if (!gd || !gd.on || gd.clickToFollow) return;
    gd.clickToFollow = true;
    gd.on('plotly_click', (event) => {
      const point = event.points && event.points[0];
      if (!point) return;
      // a heatmap's point index is [row, column]; its row categories are "i:token"
      const row = Array.isArray(point.pointIndex) ? point.pointIndex[0] : parseInt(String(point.y), 10);
      const button = document.querySelector('#forward-follow-row');
      if (!button || !Number.isFinite(row)) return;
      button.dataset.row = String(row);
      button.click();
    });
  };
""" + events.LISTEN_AS_DRAWN
# the row the click left on the button, for the follow slider (the slider's own value if there is none)
CLICKED_ROW = """(follow) => { const row = parseInt(document.querySelector('#forward-follow-row').dataset.row, 10);
  return Number.isFinite(row) ? row : follow; }"""


def build(lang: gr.State | None = None) -> Action | None:
    lang = language(lang)
    with gr.Tab(_("forward.tab"), id="forward") as forward_tab:
        offered = use.models_offered()
        if not offered:
            gr.Markdown(_("common.no_model", folder=store.model_dir()))
            return None
        labels = list(offered)
        first = store.config(offered[labels[0]])
        gr.Markdown(_("forward.intro"), elem_classes=["lecture-hide"])
        with gr.Row(equal_height=True):
            model = gr.Dropdown([choice(label) for label in labels], value=labels[0], label=_("forward.model"),
                                elem_id="forward-model", scale=2)
            text = gr.Textbox(EXAMPLES.get(offered[labels[0]], DEFAULT_TEXT), lines=1, max_lines=4,
                              label=_("forward.text"), elem_id="forward-text", scale=4)
            run = gr.Button(_("forward.run"), variant="primary", scale=1, elem_id="forward-run")
        with gr.Column(elem_classes=["lecture-hide"]):
            with gr.Accordion(_("common.examples"), open=False, elem_id="forward-examples"):  # folded: results first
                events.examples([[name, example] for name, example in
                                 ((n, EXAMPLES[offered[n]]) for n in labels if offered[n] in EXAMPLES)],
                                [model, text], label=_("common.examples"))
        with gr.Row(equal_height=True):
            back = gr.Button(_("forward.previous"), size="sm", elem_id="forward-back", scale=1)
            # every stage a link or the API may name; a picked model narrows the list to its own (`controls`)
            stage = gr.Dropdown([(_(f"forward.stage.{s}"), s) for s in use.ORDER], value="ids",
                                label=_("forward.stage"), elem_id="forward-stage", scale=3)
            ahead = gr.Button(_("forward.next"), size="sm", elem_id="forward-next", scale=1)
        with gr.Row():
            layer = gr.Slider(0, max(1, first["n_layer"] - 1), value=0, step=1, label=_("forward.layer"),
                              elem_id="forward-layer")
            head = gr.Slider(0, max(1, first["n_head"] - 1), value=0, step=1, label=_("forward.head"),
                             elem_id="forward-head")
            follow = gr.Slider(0, MAX_DRAWN_TOKENS - 1, value=0, step=1, label=_("forward.follow"),
                               info=_("forward.follow_click"), elem_id="forward-follow")
            translator = models.checkpoint(offered[labels[0]]).kind.role == "translator"
            # a translator's two switches, one above the other: five controls side by side squeezed the follow
            # slider's label into a column of four characters on a Chinese projector page. A walk starts where
            # the model starts, a translator's at its encoder (the other models have one stack and ignore this)
            with gr.Column(visible=translator, min_width=240) as switches:
                stack = gr.Radio([(_("forward.column.encoder"), "encoder"), (_("forward.column.decoder"), "decoder")],
                                 value="encoder", label=_("forward.stack"), elem_id="forward-stack")
                cross = gr.Checkbox(False, label=_("forward.cross_label"), elem_id="forward-cross")
        clicked = gr.Button("", visible="hidden", elem_id="forward-follow-row")
        gr.HTML("", js_on_load=CLICK_TO_FOLLOW, elem_id="forward-click-to-follow", container=False, padding=False)
        said = gr.Markdown(elem_id="forward-says")
        with gr.Row():
            with gr.Column(scale=2):
                diagram = gr.HTML(elem_id="forward-diagram", padding=False)
            with gr.Column(scale=3):
                matrix = gr.Plot(show_label=False, elem_id="forward-heatmap")
                row = gr.Plot(show_label=False, elem_id="forward-row")
        inputs = [model, text, stage, layer, head, stack, cross, follow, lang]
        outputs = [said, diagram, matrix, row, follow]
        events.on(run.click, forward_stage, inputs, outputs, api_name="forward_stage")
        events.on(text.submit, forward_stage, inputs, outputs, api_name=False)
        for control in (stage, stack, cross):
            events.on(control.input, forward_stage, inputs, outputs, api_name=False, reslice=True)
        for slider in (layer, head, follow):
            events.on(slider.release, forward_stage, inputs, outputs, api_name=False, reslice=True)
        shell = dict(queue=False, api_visibility="private", show_progress="hidden")
        # the next step is the model's (a translator's encoder, then its decoder, then its cross-attention):
        # found and drawn in one round trip
        for button, by in ((back, -1), (ahead, +1)):
            events.on(button.click, _stepper(by), inputs, [stage, stack, cross, *outputs], api_visibility="private",
                      reslice=True)
        followed = clicked.click(None, follow, follow, js=CLICKED_ROW, **shell)  # a row clicked on the heatmap
        events.on(followed.then, forward_stage, inputs, outputs, api_visibility="private", reslice=True)
        # the stage list narrows to the model's own stages when a model is picked, and when the tab opens (it is
        # built with every stage a link or the API may name)
        for opened in (model.change, forward_tab.select):
            events.on(opened, controls, [model, stage], [stage, layer, head, switches], api_name=False)
    return Action(forward_stage, inputs, outputs, "forward_stage")
