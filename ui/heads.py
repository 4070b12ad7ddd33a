"""The Attention tab's "What does a head do?" section: find the head behind a link, switch heads off,
read the layers (logit lens), name the heads' roles.

Lesson: the grid above shows where each head looks; these four views ask what a head does.
A radio picks one view (its part opens and runs); each view has its own public endpoint.
Handlers are thin: lab/heads.py computes, views/heads.py draws, in the page's language (`lang`).
"""

from __future__ import annotations

import gradio as gr

from i18n import render, t
from lab import heads as use
from lab.policy import notice
from ui import events
from ui.common import cached, handler
from ui.i18n import text as _
from views import heads as figures

SECTIONS = ("find", "ablate", "lens", "roles")
CSS = "#heads-toggles .wrap { display: grid; grid-template-columns: repeat(6, minmax(0, 1fr)); }"


def _ranked_names(found: use.FoundHeads) -> list[str]:
    return [f"L{h.layer} H{h.head}" for h, _ in found.ranked]


@cached
@handler
def find_head(label: str, text: str, group: str, query: str, key: str, lang: str = "en"):
    """Which head links a query token to a key token: every head ranked by that attention weight, re-sliced
    from the Attention tab's cached run. Returns (what it found, layer x head map, sorted bars, the top head).

    Args:
        label: the model, as the picker names it, e.g. "sentiment-pretrained (classifier)"
        text: the text, e.g. "The animal didn't cross the street because it was too tired"
        group: "encoder", "decoder" or "cross" attention
        query: the query token: a word of the text ("it") or a position ("10")
        key: the key token: a word ("animal", several tokens summed when the word is cut) or a position
    """
    found = use.find_head(label, text, query, key, group)
    names = _ranked_names(found)
    key_text = "".join(found.run.k_labels[k] for k in found.keys)
    bars = figures.ranking_bars([(n, w) for n, (_h, w) in zip(names, found.ranked)], lang)
    ranking = figures.ranking_map(found.weights, found.run.q_labels[found.query], key_text, found.mean, lang)
    return render(found.summary, lang), ranking, bars, gr.Dropdown(choices=names, value=names[0])


# The layer and head sliders at the head picked from the ranking ("L5 H11"), set in the browser:
# a server round trip here cost a loaded machine a second of the click-to-drawn time.
# Only while the find section shows: the radio's change runs this chain for every section.
OPEN_HEAD = """(name, layer, head, section) => { const m = /L(\\d+)\\s*H(\\d+)/.exec(name || '');
  return m && section === 'find' ? [parseInt(m[1]), parseInt(m[2])] : [layer, head]; }"""


@cached
@handler
def ablate(label: str, text: str, heads: str, mode: str, lang: str = "en"):
    """Switch heads off and show what changed: a language model's next-token guesses and per-token loss, a
    classifier's verdict, a translator's output and log-probability. Returns (notice, before/after, loss change).

    Args:
        label: the model, as the picker names it
        text: the text (a translator's source)
        heads: the heads to switch off, e.g. "L5 H11, L4 H11" (translators: "cross L1 H0")
        mode: "zero" (the head's output is 0) or "mean" (its mean output over the text)
    """
    run = use.ablation(label, text, heads, mode)
    return render(run.notice, lang), figures.ablation_outcome(run, lang), figures.loss_change(run, lang)


@cached
@handler
def importance(label: str, text: str, mode: str, lang: str = "en"):
    """Importance map: every head switched off alone (batched), coloured by the damage to the model on this
    text. Returns (which heads matter most, the map).

    Args:
        label: the model, as the picker names it
        text: the text (a translator's source; its own translation is the target)
        mode: "zero" or "mean" ablation
    """
    run = use.importance(label, text, mode)
    top = ", ".join(f"{name} ({d:+.2f})" for name, d in run.ranked[:3])
    summary = t("heads.matter_most", lang, heads=top, measure=run.measure, baseline=run.baseline)
    return render(notice(run.notice, summary), lang), figures.importance_figure(run, lang)


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
    random sequence repeated twice, with the loss over it (the induction demo). Returns (summary, grid, curve).

    Args:
        label: the model, as the picker names it
    """
    run = use.roles(label)
    return render(run.summary, lang), figures.roles_grid(run, lang), figures.induction_curve(run, lang)


def switch_off(label: str, text: str, heads: str, mode: str, lang: str = "en"):
    """The "switch heads off" view as it opens: the importance map, and the heads named (by default the
    one that matters most here, read from the map) switched off."""
    note, importance_map = importance(label, text, mode, lang)
    if not (heads or "").strip():
        heads = use.importance(label, text, mode).ranked[0][0]
    return (note, importance_map, heads, *ablate(label, text, heads, mode, lang))


def toggles_for(label: str, heads: str):
    """The switch-off grid for a model: one toggle per head ("L0 H0" ...; translators' with their group),
    the heads named in the text box ticked."""
    names = use.head_names(label)
    if names is None:
        return gr.CheckboxGroup()
    ticked = [h.strip() for h in (heads or "").split(",")]
    return gr.CheckboxGroup(choices=names, value=[name for name in names if name in ticked])


def _when(section: str, fn, n_out: int):
    """Run `fn` only when the radio shows `section` (the radio's change runs every section's listener)."""
    def run(chosen, *values):
        if chosen != section:
            return tuple(gr.skip() for _ in range(n_out))
        return fn(*values)
    return run


def build(model, text, group, lang):
    """The section, under the Attention tab's figures. Returns (the find events, the "open a head" picker,
    the section radio)."""
    with gr.Column(elem_id="heads"):
        section = gr.Radio([(_(f"heads.section_{key}"), key) for key in SECTIONS], value=None,
                           elem_id="heads-section",
                           label=_("heads.section_label"))
        with gr.Column(visible=False) as find_box:
            gr.Markdown(_("heads.find_help"))
            with gr.Row(equal_height=True):
                query = gr.Textbox("", label=_("heads.query"), elem_id="find-query", scale=2)
                key = gr.Textbox("", label=_("heads.key"), elem_id="find-key", scale=2)
                find_button = gr.Button(_("heads.find_button"), variant="primary", scale=1,
                                        elem_id="find-button")
            find_note = gr.Markdown(elem_id="find-note")
            with gr.Row():
                ranking = gr.Plot(show_label=False, elem_id="find-ranking")
                bars = gr.Plot(show_label=False, elem_id="find-bars")
            opened = gr.Dropdown([], value=None, label=_("heads.open_head"), elem_id="find-open")
        with gr.Column(visible=False) as ablate_box:
            gr.Markdown(_("heads.ablate_help"))
            with gr.Row(equal_height=True):
                spec = gr.Textbox("", label=_("heads.spec"), elem_id="heads-off", scale=3)
                mode = gr.Radio([(_("heads.mode.zero"), "zero"), (_("heads.mode.mean"), "mean")], value="zero", label=_("heads.mode"),
                                elem_id="ablation-mode",
                                scale=1)
                ablate_button = gr.Button(_("heads.ablate_button"), variant="primary", scale=1,
                                          elem_id="ablate-button")
                importance_button = gr.Button(_("heads.importance_button"), scale=1, elem_id="importance-button")
            ablate_note = gr.Markdown()
            with gr.Row():
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
            with gr.Row():
                roles_grid = gr.Plot(show_label=False, elem_id="roles-grid")
                induction = gr.Plot(show_label=False, elem_id="roles-induction")

    boxes = [find_box, ablate_box, lens_box, roles_box]
    shell = dict(queue=False, api_visibility="private")
    events.on(section.change, lambda s: [gr.Column(visible=s == k) for k in SECTIONS], section, boxes, **shell)

    find_in, find_out = [model, text, group, query, key, lang], [find_note, ranking, bars, opened]
    ablate_in, ablate_out = [model, text, spec, mode, lang], [ablate_note, outcome, losses]
    importance_in, importance_out = [model, text, mode, lang], [importance_note, importance_map]
    lens_in, lens_out = [model, text, lang], [lens_note, lens_table, rank_lines]
    roles_in, roles_out = [model, lang], [roles_note, roles_grid, induction]
    found = events.on(find_button.click, find_head, find_in, find_out, api_name="find_head")
    events.on(ablate_button.click, ablate, ablate_in, ablate_out, api_name="ablate")
    events.on(importance_button.click, importance, importance_in, importance_out, api_name="importance")
    events.on(lens_button.click, logit_lens, lens_in, lens_out, api_name="logit_lens")
    events.on(roles_button.click, head_roles, roles_in, roles_out, api_name="head_roles")
    for trigger in (query.submit, key.submit):
        events.on(trigger, find_head, find_in, find_out, api_name=False)
    # a link or a lecture step sets the radio: the section it names runs with the inputs the link set
    private = dict(api_visibility="private")
    picked = [events.on(section.change, _when("find", find_head, 4), [section, *find_in], find_out, **private),
              events.on(section.change, _when("ablate", switch_off, 6), [section, *ablate_in],
                        [*importance_out, spec, *ablate_out], **private),
              events.on(section.change, _when("lens", logit_lens, 3), [section, *lens_in], lens_out, **private),
              events.on(section.change, _when("roles", head_roles, 3), [section, *roles_in], roles_out, **private)]
    # the grid follows the model and the text box (set by a link, the map's top head, typing or ticking)
    for changed in (model.change, spec.change):
        events.on(changed, toggles_for, [model, spec], toggles, **shell)
    events.on(toggles.input, lambda ticked: ", ".join(ticked), toggles, spec, **shell)
    return [found, picked[0]], opened, section
