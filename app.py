"""Transformer Lab: type text and see inside a transformer.

`python app.py` serves it at 127.0.0.1:7860 (options: cli.py). Every tab is a module in `ui/` listed in TABS,
wiring its events through ui/events.py (what each gets from the server: queue group, GPU, MCP); this file
assembles them and adds what the whole app shares: the language switch, links to a view (`?tab=...&text=...`)
and lecture mode, whose views the browser draws by pressing a tab's hidden redraw button.
"""

from __future__ import annotations

import functools
import gc
import inspect
import json
from dataclasses import dataclass
from pathlib import Path

import gradio as gr

import cli
import i18n as catalogue
from lab import llms, store
from ui import about, admission, agents, attention, concepts, events, forward, generate, gradio_patches, masking
from ui import handlers, inside, questions
from ui import sentiment, sessions, tokens, translate
from ui.links import LECTURE_PRESETS, RESULTS, Links, REDRAW_LINKED, SCROLL_TO_STEP, SWITCH_JS, next_step, previous_step
from ui.links import redraw_id, relang_id
from ui import i18n
from ui.i18n import text as _
from ui.wire import app_kwargs

TABS = [tokens, attention, masking, generate, inside, sentiment, translate, forward, questions, concepts, about]

# Beyond this, new requests are told the queue is full instead of piling up. No one group fills it: each holds at
# most ui/admission.GROUP_JOBS, a session and a client address a few of those (see ui/admission.py).
QUEUE_MAX_SIZE = 1024
# A waiting student's place in the queue, sent once a second: Gradio's default ("auto") sends it to every waiting
# client each time any job starts, so a lecture hall asking at once spent a fifth of the app's one Python thread
# telling each other their places.
STATUS_UPDATE_S = 1

HERE = Path(__file__).parent
PAGE_SCRIPT = HERE / "ui" / "page.js"
CSS = (HERE / "ui" / "page.css").read_text(encoding="utf-8") + "".join(getattr(tab, "CSS", "") for tab in TABS)

# The page's scripts, read once: the app's own (ui/page.js) and the Tokens tab's (ui/tokens.js), then what it
# changes in Gradio's page (ui/gradio_patches.js), after the data they read: a toast's title by its kind in each
# language, the page script's own words, the words of a wait's status, and plotly.js's own zh-CN locale (MIT, from
# the plotly.js-locales package), waiting in window.PlotlyLocales for plotly.js to load
TOAST_TITLES = {lang: {kind: catalogue.t(f"common.{kind}_title", lang)
                       for kind in ("error", "warning", "info", "success")} for lang in catalogue.LANGUAGES}
PAGE_WORDS = {lang: {key: catalogue.t(f"app.{key}", lang) for key in ("export_svg", "export_json")}
              for lang in catalogue.LANGUAGES}  # ui/page.js's buttons on every plot's toolbar
STATUS_WORDS = {lang: {"processing": catalogue.t("common.status_processing", lang),
                       "queue": catalogue.t("common.status_queue", lang, position="{position}", size="{size}")}
                for lang in catalogue.LANGUAGES}  # the page fills in the place and the queue's length
PLOTLY_ZH_CN = (HERE / "ui" / "plotly" / "zh-cn.js").read_text(encoding="utf-8").split(
    "module.exports =", 1)[1].strip().rstrip(";")
HEAD = "".join([
    f"<script>window.labToastTitles = {json.dumps(TOAST_TITLES, ensure_ascii=False)};\n"
    f"window.labStatusWords = {json.dumps(STATUS_WORDS, ensure_ascii=False)};\n"
    f"window.labPageWords = {json.dumps(PAGE_WORDS, ensure_ascii=False)};\n"
    f"window.PlotlyLocales = [{PLOTLY_ZH_CN}];\nwindow.labResults = {json.dumps(RESULTS)};</script>\n",
    *(f"<script>\n{path.read_text(encoding='utf-8')}</script>\n"
      for path in (PAGE_SCRIPT, tokens.PAGE_SCRIPT, gradio_patches.PAGE_SCRIPT)),
])

TOGGLE_LECTURE = "(on) => { document.body.classList.toggle('lecture-mode', on); }"
FULL_LINK = "(query) => query ? location.origin + location.pathname + query : ''"

THEME = gr.themes.Soft(
    primary_hue="indigo",
    # system fonts only: the default theme would fetch web fonts, which fails offline
    font=["ui-sans-serif", "system-ui", "Noto Sans CJK SC", "Noto Sans SC", "Microsoft YaHei", "sans-serif"],
    font_mono=["ui-monospace", "monospace"],
)


@dataclass
class Shell:
    """What the whole app shares around the tabs: the language, the lecture controls and the link's notice."""

    switch: gr.Radio
    lang: gr.State  # the page's language, for every text the server builds
    controls: gr.Accordion
    lecture: gr.Checkbox
    preset: gr.Dropdown
    back: gr.Button
    forward: gr.Button
    make_link: gr.Button
    link_box: gr.Textbox
    link_notice: gr.Markdown  # what a link asked for that was moved into range or not used; hidden for a plain visit


def build_app() -> gr.Blocks:
    gradio_patches.pass_skips()  # a skipped output costs nothing (a streamed token skips four)
    gradio_patches.make_sessions_lazy()  # a visitor's session renders no block configs until asked
    gradio_patches.no_matplotlib()  # each call stops searching the disk for a plotting library it does not use
    llms.yield_to(lambda: handlers.running() > llms.generating())  # a real LLM's next token waits for the others
    # no telemetry: a lecture hall may be offline, and the app must not wait on the network
    with gr.Blocks(title="Transformer Lab", analytics_enabled=False) as demo:
        shell = _shell()
        with gr.Tabs() as tabs:
            actions = [tab.build(shell.lang) for tab in TABS]
        tab_items = [t for t in tabs.children if isinstance(t, gr.Tab)]
        for t in tab_items:
            t.elem_id = t.elem_id or f"tab-{t.id}"  # lets links and presets find the tab's button
        _wire(demo, shell, tabs, tab_items, actions)
    events.check_declared(demo)  # a public endpoint wired around events.on would escape ENDPOINTS
    events.show_progress_once(demo)
    gradio_patches.speak_page_language(demo, shell.lang)  # an input's refusal in the page's language
    agents.offer_tools(demo)  # the API page and the MCP tools: each view's data, not its page
    agents.brief_mcp_refusals()
    return demo


def _shell() -> Shell:
    with gr.Row(elem_classes=["lecture-hide"], equal_height=True, elem_id="app-header"):
        gr.Markdown(_("app.intro"))
        switch = i18n.switch()
    lang = gr.State(i18n.DEFAULT)
    with gr.Accordion(_("app.lecture_controls"), open=False, elem_id="lecture-controls") as controls:
        with gr.Row(equal_height=True):
            lecture = gr.Checkbox(label=_("app.lecture_mode"), value=False, elem_id="lecture-mode", scale=2)
            preset = gr.Dropdown([(_(f"lecture.{step}"), step) for step in LECTURE_PRESETS], value=None,
                                 elem_id="lecture-step", scale=4, show_label=False, container=False, info=None)
            back = gr.Button(_("app.previous_step"), size="sm", elem_id="lecture-back", scale=1)
            forward = gr.Button(_("app.next_step"), size="sm", elem_id="lecture-next", scale=1)
            make_link = gr.Button(_("app.make_link"), size="sm", elem_id="make-link", scale=1)
        link_box = gr.Textbox(show_label=False, container=False, buttons=["copy"], interactive=False,
                              elem_id="view-link", visible=False)
    link_notice = gr.Markdown(visible=False, elem_id="link-notice")
    return Shell(switch, lang, controls, lecture, preset, back, forward, make_link, link_box, link_notice)


def _wire(demo: gr.Blocks, shell: Shell, tabs: gr.Tabs, tab_items: list, actions: list) -> None:
    """The app's own events: links, lecture steps and the switch set the inputs, then the browser presses the
    shown tab's redraw button, which runs that tab's view."""
    links = Links(demo, tab_items)
    current_tab = gr.State(str(tab_items[0].id) if tab_items else "")
    # the tab a link or lecture step just opened ("" when none), read by the browser to draw its view
    linked = gr.Textbox("", visible="hidden", elem_id="linked-tab")
    # The app's own events are instant and need no model: unqueued, private, no GPU, no progress shown (opening a
    # link alone sets ~80 components: events.show_progress_once)
    instant = dict(queue=False, api_visibility="private", show_progress="hidden")
    to_view = [tabs, current_tab, *links.components]
    switch, lang = shell.switch, shell.lang

    tabs.select(links.selected, None, current_tab, **instant)
    relabelled = i18n.relabelled(demo)
    opened = [demo.load(links.open_link, switch, [*to_view, shell.link_notice, shell.controls, shell.preset,
                                                  shell.lecture, linked, switch, lang],
                        js=i18n.LOAD_JS, **instant)]
    opened[0].then(lambda new: i18n.relabel(relabelled, new), lang, relabelled, **instant)
    names = [t for t in tab_items if t in relabelled]
    shell.lecture.change(None, shell.lecture, None, js=TOGGLE_LECTURE, **instant)
    opened.append(shell.preset.input(links.open_preset, shell.preset, [*to_view, shell.link_notice, linked],
                                     **instant))
    for button, step in ((shell.back, previous_step), (shell.forward, next_step)):
        opened.append(button.click(step, shell.preset, shell.preset, **instant).then(
            links.open_preset, shell.preset, [*to_view, shell.link_notice, linked], **instant))
    for event in opened[1:]:  # a lecture step brings its part of the page into view
        event.then(None, shell.preset, None, js=SCROLL_TO_STEP, **instant)
    # One event draws the view a link or lecture step opens, for that tab only: an event per tab, each skipping
    # all but one, cost the page a second of Gradio's status updates (see `instant`).
    for event in opened:
        event.then(None, linked, None, js=REDRAW_LINKED, **instant)
    # The switch: labels change in the browser at once, and the view on screen is drawn again in the new
    # language from the runs already cached (inputs, tab and scroll position stay). Meanwhile the server keeps
    # the language for later events and sends the tab names, which the browser cannot translate.
    switch.input(None, switch, switch, js=SWITCH_JS, **instant).then(
        lambda new: (new, *i18n.relabel(names, new)), switch, [lang, *names], **instant)

    def in_page_language(components: list) -> list:  # the switch holds the new language at once
        return [switch if c is lang else c for c in components]

    for tab_item, action in zip(tab_items, actions):
        # pressed by the browser only (links, lecture steps, the switch)
        redraw = gr.Button(visible="hidden", elem_id=redraw_id(str(tab_item.id)))
        pressed = [redraw]
        if action is not None:
            drawn = redraw.click(events.on_gpu(action.fn), in_page_language(action.inputs), action.outputs,
                                 api_visibility="private",
                                 **events.queue_settings(action.api_name, f"opened-{action.api_name}"))
            events.clear_on_failure(drawn, action.outputs)
            for fn, inputs, outputs in action.also:
                redraw.click(fn, in_page_language(inputs), outputs, api_visibility="private")
            light = events.ENDPOINTS.get(action.api_name, events.DEFAULT).group is None  # not an LLM's, not training
            if light and not any(inspect.isgeneratorfunction(fn) for fn, _, _ in ((action.fn, 0, 0), *action.also)):
                # the switch redraws the view on screen from the runs it was drawn from: outside the queue
                relang = gr.Button(visible="hidden", elem_id=relang_id(str(tab_item.id)))
                for fn, inputs, outputs in ((action.fn, action.inputs, action.outputs), *action.also):
                    events.on(relang.click, fn, in_page_language(inputs), outputs, api_visibility="private",
                              reslice=True)
                pressed.append(relang)
        # a tab's examples tables are put in the page's language when it is shown: on a switch only the shown
        # tab's (after its view was asked for), so the page updates a few tables, not every tab's
        tables = [b for b in i18n.relabelled(tab_item) if isinstance(b, gr.Dataset)]
        if tables:
            for button in pressed:
                button.click(functools.partial(i18n.relabel, tables), switch, tables, **instant)
            tab_item.select(functools.partial(i18n.relabel, tables), lang, tables, **instant)
    shell.make_link.click(links.link_box, [current_tab, lang, *links.components], shell.link_box, **instant).then(
        None, shell.link_box, shell.link_box, js=FULL_LINK, **instant)


def serve_queue(demo: gr.Blocks) -> gr.Blocks:
    """`demo` with its queue, and at the queue's door the caps Gradio lacks (ui/admission.py)."""
    demo.queue(max_size=QUEUE_MAX_SIZE, status_update_rate=STATUS_UPDATE_S)
    admission.Admission(demo._queue, events.admits, events.seconds_until_free, events.session_jobs)
    sessions.sweep_forever(demo)  # state only for open pages, briefly for the rest (ui/sessions.py)
    return demo


def main(argv=None) -> None:
    """`python app.py [options]`: the command line (cli.py) sets the store and cache, then the app serves."""
    args = cli.configure(argv)
    store.warm(sessions.quiet_for)  # every shipped model loads now (the large ones whenever the server is quiet)
    demo = build_app()  # first the layout: it registers every component text that i18n.translations() sends
    # What start-up built (imports, layout: some 400,000 objects) lives as long as the server; frozen, it is no
    # longer walked by every full collection, each a pause of every request in flight (a lecture hall's slowest).
    # Collected first, so that start-up's own garbage is not kept for good.
    gc.collect()
    gc.freeze()
    # mcp_server: every public endpoint is also a tool an agent can call, at /gradio_api/mcp/. run_history off:
    # Gradio's history page rewrote every run's outputs in the browser's storage at each click, so clicks grew
    # slower the longer a page was used; the app's links and lecture steps already bring a view back.
    serve_queue(demo).launch(
        server_name=args.host, server_port=args.port, share=args.share, theme=THEME, css=CSS, head=HEAD + i18n.HEAD,
        i18n=i18n.translations(), mcp_server=True, app_kwargs=app_kwargs(), run_history=False,
        allowed_paths=[str(terms)] if (terms := about.terms_file()) else None,
        max_threads=events.threads_needed(demo), state_session_capacity=sessions.CAPACITY)


if __name__ == "__main__":
    main()
