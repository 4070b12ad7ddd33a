"""The Attention tab's "What does a head do?" section: find the head behind a link, switch heads off,
read the layers (logit lens), name the heads' roles.

Lesson: the grid above shows where each head looks; these four views ask what a head does.
A radio picks one view (its part opens and runs); each view has its own public endpoint.
Handlers are thin: lab/heads.py computes, views/heads.py draws, in the page's language (`lang`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable

import gradio as gr

from i18n import render, t
from lab import heads as use
from lab.policy import notice
from ui import events
from ui.handlers import cached, handler
from ui.i18n import text as _
from views import heads as figures

SECTIONS = ("find", "ablate", "lens", "roles")
CLOSED = "heads-closed"  # the find view while another (or none) shows: in the page, not on screen
CSS = ("#heads-toggles .wrap { display: grid; grid-template-columns: repeat(6, minmax(0, 1fr)); }\n"
       f"#click-to-find, #heads .{CLOSED} {{ display: none !important; }}\n")


@cached
@handler
def _ranking(label: str, text: str, group: str, query: str, key: str, lang: str = "en"):
    """find_head's answer, with the heads' names in ranked order (a plain list, which the cache keeps) and the
    top head's (layer, head)."""
    found = use.find_head(label, text, query, key, group)
    names = found.names
    bars = figures.ranking_bars([(n, w) for n, (_h, w) in zip(names, found.ranked)], lang)
    ranking = figures.ranking_map(found.weights, found.query_label, found.key_label, found.mean, lang)
    top = found.ranked[0][0]
    return render(found.summary, lang), ranking, bars, names, (top.layer, top.head)


def find_head(label: str, text: str, group: str, query: str, key: str, lang: str = "en"):
    """Which head links a query token to a key token: every head ranked by that attention weight, re-sliced
    from the Attention tab's cached run. Returns (what it found, layer x head map, sorted bars, the top head).

    Args:
        label: the model, as the picker names it, e.g. "sentiment-pretrained (classifier)"
        text: the text, e.g. "The animal didn't cross the street because it was too tired"
        group: "encoder", "decoder" or "cross" attention
        query: the query token: a word of the text ("it") or a position ("10"); several, separated by commas
            ("it, 它"), rank the heads by the mean over the links
        key: the key token: a word ("animal", several tokens summed when the word is cut) or a position; several
            with several queries ("animal, 动物")
    """
    note, ranking, bars, names, _ = _ranking(label, text, group, query, key, lang)
    return note, ranking, bars, gr.Dropdown(choices=names, value=names[0])


find_head.cache = _ranking.cache  # a cached answer skips Gradio's queue (see ui/handlers.cached)


@dataclass(frozen=True)
class Focus:
    """The head the Attention tab draws large above the section: its layer and head sliders, the query slider,
    its two figures (the head's heatmap, the query's row in every head), and `draw`, which re-slices the cached
    run into them: draw(label, text, group, layer, head, query, lang) -> (head figure, rows figure)."""

    draw: Callable
    layer: gr.Slider
    head: gr.Slider
    query: gr.Slider
    figures: tuple


def find_and_open(draw: Callable):
    """find_head for a person's click (the button, Enter in a picker, a heatmap cell), with its top head opened
    large in the same answer: the sliders at it and its figures drawn (Focus.draw). One round trip from the
    click to all of it drawn: find, then open in the browser, then draw cost two (0.4 s of a loaded machine's
    0.9 s click-to-drawn). Answered outside the queue when both parts are cached."""
    def run(label: str, text: str, group: str, query: str, key: str, query_row: float, lang: str = "en"):
        note, ranking, bars, names, (layer, head) = _ranking(label, text, group, query, key, lang)
        return (note, ranking, bars, gr.Dropdown(choices=names, value=names[0]), layer, head,
                *draw(label, text, group, layer, head, query_row, lang))
    run.cache = _ranking.cache  # Gradio's queue then asks for a cached answer first (see ui/handlers.cached)
    return run


# A click on a cell of a heatmap of the Attention tab (a head, the query rows, the layer averages, the grid when
# it is a heatmap, the rollout) asks which head links that query to that key: the cell's query and key fill
# the pickers as the axes name them ("10: it"), the find view opens, and the heads are ranked. The query-rows
# figure has a head per row: its query is the query slider's (clamped to the text, as the server draws it).
# gr.Plot has no click event: plotly's own is listened to on each figure, as it is drawn. Hover is untouched.
# A head's name is read with the core's own pattern (transformer_core.analysis.heads.HEAD_NAME).
_HEAD = f"new RegExp({json.dumps('^' + use.HEAD_NAME + '$')}, 'i')"
CLICK_TO_FIND = """(() => {
  if (window.clickToFind) return;  // one listener per page, however often the component mounts
  window.clickToFind = true;
  const HEAD = %s;
  const FIGURES = ['attention-head', 'attention-rows', 'attention-average', 'attention-grid', 'attention-rollout'];
  // an axis category: "3: soft", or a grid's "H1 3: soft" (its block first); plotly reads labels as HTML
  const position = (label) => /(?:^|\\s)(\\d+):/.exec(String(label ?? ''));
  const token = (label) => { const m = position(label); if (!m) return null;
    const plain = document.createElement('textarea'); plain.innerHTML = String(label).slice(m.index);
    return plain.value.trim(); };
  const fill = (id, value) => {
    const box = document.querySelector(`#${id} textarea, #${id} input`);
    box.value = value;
    box.dispatchEvent(new Event('input', {bubbles: true}));
  };
  const queryOfRows = () => {
    const slider = document.querySelector('#query_token input[type=number]');
    const head = document.querySelector('#attention-head .js-plotly-plot');
    const queries = head && head._fullData && head._fullData[0] ? head._fullData[0].y : [];
    const q = Math.max(0, Math.min(parseInt(slider.value, 10) || 0, queries.length - 1));
    return queries.length ? token(queries[q]) : String(q);
  };
  const find = (point) => {
    const heads = HEAD.test(String(point.y).trim());  // the query-rows figure: a row per head
    const query = heads ? queryOfRows() : token(point.y), key = token(point.x);
    if (query === null || key === null) return;
    fill('find-query', query);
    fill('find-key', key);
    const view = document.querySelector('#heads-section input[value="find"]');
    // the values reach Gradio's state first; an open find view ranks at once, a closed one opens and ranks
    requestAnimationFrame(() => view.checked ? document.querySelector('#find-button').click() : view.click());
  };
  const listen = () => FIGURES.forEach((id) => {
    const gd = document.querySelector(`#${id} .js-plotly-plot`);
    if (gd && gd.on && !gd.clickToFind) {
      gd.clickToFind = true;
      gd.on('plotly_click', (event) => event.points && event.points.length && find(event.points[0]));
    }
  });
""" % _HEAD + events.LISTEN_AS_DRAWN


# The layer and head sliders at the head picked from the ranking ("L5 H11"), set in the browser:
# a server round trip here cost a loaded machine a second of the click-to-drawn time.
# Only while the find section shows: the radio's change runs this chain for every section.
OPEN_HEAD = """(name, layer, head, section) => { const m = %s.exec(String(name || '').trim());
  return m && section === 'find' ? [parseInt(m[2]), parseInt(m[3])] : [layer, head]; }""" % _HEAD


def _switched_off(run: use.SwitchOffRun, lang: str) -> tuple:
    return (render(run.notice, lang), figures.downstream(run, lang), figures.switch_off_outcome(run, lang),
            figures.loss_change(run, lang))


def _importance_shown(run: use.ImportanceRun, lang: str) -> tuple:
    top = ", ".join(f"{name} ({d:+.2f})" for name, d in run.ranked[:3])
    summary = t("heads.matter_most", lang, heads=top, measure=t(f"heads.measure.{run.kind}", lang),
                baseline=run.baseline)
    return render(notice(run.notice, summary), lang), figures.importance_figure(run, lang)


@cached
@handler
def switch_off(label: str, text: str, heads: str, mode: str, query: str = "", key: str = "", lang: str = "en"):
    """Switch heads off and show what changed: what every head now does with a query and a key token (when
    named), a language model's next-token guesses and per-token loss, a classifier's verdict, a translator's output
    and log-probability. Returns (notice, query -> key weight change per head, before/after, loss change).

    Args:
        label: the model, as the picker names it
        text: the text (a translator's source)
        heads: the heads to switch off, e.g. "L5 H11, L4 H11" (translators: "cross L1 H0")
        mode: "zero" (the head's output is 0) or "mean" (its mean output over the text)
        query: optional, a query token as find_head takes it ("it"): with `key`, every head's weight from it to the
            key before and after
        key: optional, the key token ("animal")
    """
    return _switched_off(use.switch_off(label, text, heads, mode, query, key), lang)


@cached
@handler
def importance(label: str, text: str, mode: str, lang: str = "en"):
    """Importance map: every head switched off alone (batched), coloured by the damage to the model on this
    text. Returns (which heads matter most, the map).

    Args:
        label: the model, as the picker names it
        text: the text (a translator's source; its own translation is the target)
        mode: "zero" (a head switched off writes 0) or "mean" (its mean output over the text)
    """
    return _importance_shown(use.importance(label, text, mode), lang)


@cached
@handler
def logit_lens(label: str, text: str, lang: str = "en"):
    """Logit lens of a language model: the top next-token guess after each layer, and the rank of the final
    prediction through the layers. Returns (notice, table, rank lines).

    Args:
        label: a language model, as the picker names it, e.g. "shakespeare-lm (language model)"
        text: the text (at most 128 tokens)
    """
    run = use.lens(label, text)
    return render(run.notice, lang), figures.lens_table(run, lang), figures.rank_lines(run, lang)


@cached
@handler
def head_roles(label: str, lang: str = "en"):
    """Head roles: every head scored as previous-token, first-token, duplicate-token and induction head on a
    random sequence repeated twice, with the loss over it (the induction demo). Returns (summary, the top heads of
    each role, grid, curve).

    Args:
        label: the model, as the picker names it
    """
    run = use.roles(label)
    return (render(run.summary, lang), figures.roles_table(run, lang), figures.roles_grid(run, lang),
            figures.induction_curve(run, lang))


@cached
@handler
def _opened(label: str, text: str, heads: str, mode: str, query: str = "", key: str = "", lang: str = "en"):
    view = use.open_switch_off(label, text, heads, mode, query, key)
    return (*_importance_shown(view.importance, lang), view.heads, *_switched_off(view.run, lang), view.names)


def open_switch_off(label: str, text: str, heads: str, mode: str, query: str = "", key: str = "", lang: str = "en"):
    """The "switch heads off" view as it opens, from one call to the core: the importance map, the heads named
    (by default the head found for the query and key, else the one that matters most here) switched off, and the
    grid of toggles with them ticked."""
    *shown, names = _opened(label, text, heads, mode, query, key, lang)
    return (*shown, _toggles(names, shown[2]))


def _toggles(names: list[str], heads: str):
    ticked = [h.strip() for h in (heads or "").split(",")]
    return gr.CheckboxGroup(choices=names, value=[name for name in names if name in ticked])


def toggles_for(label: str, heads: str):
    """The switch-off grid for a model: one toggle per head ("L0 H0" ...; translators' with their group),
    the heads named in the text box ticked."""
    names = use.head_names(label)
    return gr.CheckboxGroup() if names is None else _toggles(names, heads)


def _when(section: str, fn, n_out: int):
    """Run `fn` only when the radio shows `section` (the radio's change runs every section's listener)."""
    def run(chosen, *values):
        if chosen != section:
            return tuple(gr.skip() for _ in range(n_out))
        return fn(*values)
    return run


def _with_no_heads(fn):
    """open_switch_off with no heads named: the view's default (the head found, or the one that matters most)."""
    def run(label: str, text: str, _heads: str, mode: str, query: str = "", key: str = "", lang: str = "en"):
        return fn(label, text, "", mode, query, key, lang)
    return run


def _named(fn, n_out: int):
    """find_head when a section opens or a model is picked: with no query or no key typed yet the view waits,
    with no error (a person who opens the section has done nothing wrong); the button still asks for both."""
    def run(label: str, text: str, group: str, query: str, key: str, lang: str = "en"):
        if not str(query or "").strip() or not str(key or "").strip():
            return tuple(gr.skip() for _ in range(n_out))
        return fn(label, text, group, query, key, lang)
    return run


def build(model, text, group, lang, focus: Focus):
    """The section, under the Attention tab's figures; `focus` is the head drawn large above it. Returns (the
    find event a link or lecture step runs, the "open a head" picker, the section radio)."""
    with gr.Column(elem_id="heads"):
        gr.HTML("", js_on_load=CLICK_TO_FIND, elem_id="click-to-find", container=False, padding=False)
        section = gr.Radio([(_(f"heads.section_{key}"), key) for key in SECTIONS], value=None,
                           elem_id="heads-section",
                           label=_("heads.section_label"))
        # in the page while closed (hidden by a class, not visible=False): a click on a heatmap cell fills its
        # pickers, then opens it
        with gr.Column(elem_classes=[CLOSED]) as find_box:
            gr.Markdown(_("heads.find_help"))
            with gr.Row(equal_height=True):
                query = gr.Textbox("", label=_("heads.query"), elem_id="find-query", scale=2)
                key = gr.Textbox("", label=_("heads.key"), elem_id="find-key", scale=2)
                find_button = gr.Button(_("heads.find_button"), variant="primary", scale=1,
                                        elem_id="find-button")
            gr.Markdown(_("heads.find_click"), elem_id="find-click")
            find_note = gr.Markdown(elem_id="find-note")
            with gr.Row():
                ranking = gr.Plot(show_label=False, elem_id="find-ranking")
                bars = gr.Plot(show_label=False, elem_id="find-bars")
            opened = gr.Dropdown([], value=None, label=_("heads.open_head"), elem_id="find-open")
        with gr.Column(visible=False) as ablate_box:
            gr.Markdown(_("heads.switch_off_help"))
            with gr.Row(equal_height=True):
                spec = gr.Textbox("", label=_("heads.spec"), elem_id="heads-off", scale=3)
                mode = gr.Radio([(_("heads.mode.zero"), "zero"), (_("heads.mode.mean"), "mean")], value="zero", label=_("heads.mode"),
                                elem_id="ablation-mode",
                                scale=1)
                ablate_button = gr.Button(_("heads.switch_off_button"), variant="primary", scale=1,
                                          elem_id="ablate-button")
                importance_button = gr.Button(_("heads.importance_button"), scale=1, elem_id="importance-button")
            ablate_note = gr.Markdown(elem_id="ablate-note")
            with gr.Row():
                downstream = gr.Plot(show_label=False, elem_id="ablate-downstream")
                outcome = gr.Plot(show_label=False, elem_id="ablate-outcome")
            losses = gr.Plot(show_label=False, elem_id="ablate-loss")
            toggles = gr.CheckboxGroup([], label=_("heads.toggles"), elem_id="heads-toggles")
            importance_note = gr.Markdown(elem_id="importance-note")
            importance_map = gr.Plot(show_label=False, elem_id="importance-map")
        with gr.Column(visible=False) as lens_box:
            gr.Markdown(_("heads.lens_help"))
            lens_button = gr.Button(_("heads.lens_button"), variant="primary", elem_id="lens-button")
            lens_note = gr.Markdown()
            lens_table = gr.Plot(show_label=False, elem_id="lens-table")
            rank_lines = gr.Plot(show_label=False, elem_id="lens-ranks")
        with gr.Column(visible=False) as roles_box:
            gr.Markdown(_("heads.roles_help"))
            roles_button = gr.Button(_("heads.roles_button"), variant="primary", elem_id="roles-button")
            roles_note = gr.Markdown(elem_id="roles-note")
            roles_ranked = gr.Plot(show_label=False, elem_id="roles-ranked")
            with gr.Row():
                roles_grid = gr.Plot(show_label=False, elem_id="roles-grid")
                induction = gr.Plot(show_label=False, elem_id="roles-induction")

    boxes = [find_box, ablate_box, lens_box, roles_box]
    shell = dict(queue=False, api_visibility="private")
    events.on(section.change, lambda s: [gr.Column(elem_classes=[] if s == k else [CLOSED]) if k == "find"
                                         else gr.Column(visible=s == k) for k in SECTIONS], section, boxes, **shell)

    find_in, find_out = [model, text, group, query, key, lang], [find_note, ranking, bars, opened]
    ablate_in, ablate_out = [model, text, spec, mode, query, key, lang], [ablate_note, downstream, outcome, losses]
    importance_in, importance_out = [model, text, mode, lang], [importance_note, importance_map]
    lens_in, lens_out = [model, text, lang], [lens_note, lens_table, rank_lines]
    roles_in, roles_out = [model, lang], [roles_note, roles_ranked, roles_grid, induction]
    # the public endpoint (API, MCP) ranks; a person's click also opens the top head above, in the same answer
    events.on([], find_head, find_in, find_out, api_name="find_head")
    events.on([find_button.click, query.submit, key.submit], find_and_open(focus.draw),
              [model, text, group, query, key, focus.query, lang],
              [*find_out, focus.layer, focus.head, *focus.figures], api_name=False,
              **events.queue_settings("find_head", "find-and-open"))
    # "ablate": the endpoint's name since links, MCP clients and notes first used it
    events.on(ablate_button.click, switch_off, ablate_in, ablate_out, api_name="ablate")
    events.on(importance_button.click, importance, importance_in, importance_out, api_name="importance")
    events.on(lens_button.click, logit_lens, lens_in, lens_out, api_name="logit_lens")
    events.on(roles_button.click, head_roles, roles_in, roles_out, api_name="head_roles")
    # a link or a lecture step sets the radio: the section it names runs with the inputs the link set
    private = dict(api_visibility="private")
    views = [("find", _named(find_head, len(find_out)), find_in, find_out),
             ("ablate", open_switch_off, ablate_in, [*importance_out, spec, *ablate_out, toggles]),
             ("lens", logit_lens, lens_in, lens_out), ("roles", head_roles, roles_in, roles_out)]
    picked = [events.on(section.change, _when(key, fn, len(outputs)), [section, *inputs], outputs, **private)
              for key, fn, inputs, outputs in views]
    # a person's new model runs the open view anew: its results were another model's ("全部 12 个头" stayed for
    # an 8-head model). Heads switched off in the old model may not exist in the new one: it opens as a view
    # does, with the head that matters most.
    for key, fn, inputs, outputs in views:
        anew = _with_no_heads(fn) if key == "ablate" else fn
        events.on(model.input, _when(key, anew, len(outputs)), [section, *inputs], outputs, **private)
    # the grid follows the model and what is typed in the text box; the view's opening sets both at once
    for changed in (model.change, spec.input):
        events.on(changed, toggles_for, [model, spec], toggles, **shell)
    events.on(toggles.input, lambda ticked: ", ".join(ticked), toggles, spec, **shell)
    return picked[0], opened, section
