"""Transformer Lab: type text and see inside a transformer.

Start with `python app.py` (127.0.0.1:7860). Hugging Face Spaces set
GRADIO_SERVER_NAME / GRADIO_SERVER_PORT, which are honoured. Every tab is a module in
`ui/` listed in TABS, wiring its events through ui/events.py (what each gets from the server: queue
group, GPU, MCP); this file assembles them and adds what the whole app shares: links to a view
(`?tab=...&text=...`) and lecture mode.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
from pathlib import Path

import gradio as gr

import i18n as catalogue
from lab import cache, store
from transformer_core import DeviceError, default_device
from ui import about, admission, agents, attention, concepts, events, forward, generate, masking, questions, sentiment
from ui import sessions, tokens, translate
from ui.links import LECTURE_PRESETS, Links, REDRAW_LINKED, SCROLL_TO_STEP, next_step, previous_step, redraw_id
from ui import i18n
from ui.i18n import text as _
from ui.wire import app_kwargs

TABS = [tokens, attention, masking, generate, sentiment, translate, forward, questions, concepts, about]

# Beyond this, new requests are told the queue is full instead of piling up. No one group fills it: each holds at
# most ui/admission.GROUP_JOBS, a session and a client address a few of those (see ui/admission.py).
QUEUE_MAX_SIZE = 1024
# A waiting student's place in the queue, sent once a second. Gradio's default ("auto") sends it to every
# waiting client each time any job starts: 100 students asking for attention at once meant 3,683 such
# messages (now 167) through the one Python thread, a fifth of the app's CPU (2.37 -> 1.84 s; p95 2.02 -> 1.54 s).
STATUS_UPDATE_S = 1

# Lecture mode: bigger type everywhere, readable from the back row. (Plots need no filter: their
# colour scale keeps low weights visible, see views/attention.py.)
CSS = """
body.lecture-mode { --text-xxs: 14px; --text-xs: 16px; --text-sm: 18px; --text-md: 22px; --text-lg: 26px;
  --text-xl: 30px; --text-xxl: 36px; --body-text-size: 22px; --input-text-size: 22px;
  --block-label-text-size: 18px; --block-title-text-size: 20px; --button-large-text-size: 22px;
  --button-small-text-size: 18px; --section-header-text-size: 22px; --block-info-text-size: 18px; }
body.lecture-mode .gradio-container { font-size: 22px; }
body.lecture-mode .js-plotly-plot .xtick text, body.lecture-mode .js-plotly-plot .ytick text { font-weight: 600; }
#lecture-step { min-width: 22em; }
body.lecture-mode .lecture-hide { display: none !important; }
#lang { flex-grow: 0; align-self: center; }
/* a picker's text stops short of its arrow, not under it */
input[role=combobox] { padding-right: var(--size-6); text-overflow: ellipsis; }
/* A phone (issue 48): the title on one line above the language switch, and every control of a row on a line of
   its own, so no label is squeezed to one character a line beside a slider's number box */
@media (max-width: 640px) {
  #app-header { flex-wrap: wrap; }
  #app-header > .block { flex: 1 1 100% !important; min-width: 100% !important; }
  #app-header h1 { white-space: nowrap; }
  .row > .form > .block, .row > .block { flex: 1 1 100% !important; min-width: 100% !important; }
  /* a figure's title fits the phone's width (it is centred on the figure, so it stays centred) */
  .js-plotly-plot .gtitle { font-size: 13px !important; }
  /* plotly's toolbar (a tap shows it) in a strip of its own above the figure, below the plot's label if it shows
     one, in one row of narrower buttons: over the figure it covered the title */
  .block > .js-plotly-plot { margin-top: 28px; }
  .block:has(> [data-testid=block-label]) > .js-plotly-plot { margin-top: 64px; }
  .js-plotly-plot .modebar-container { top: -28px !important; }
  .js-plotly-plot .modebar-group { padding-left: 4px !important; }
  .js-plotly-plot .modebar-btn { padding: 3px 2px !important; }
}
""" + "".join(getattr(tab, "CSS", "") for tab in TABS)

# Plotly's camera button downloads a PNG; beside it go two more buttons, for every plot of
# every tab: the same figure as SVG (through plotly's own exporter) and the numbers drawn
# (each trace's x, y, z and hover labels) as JSON -- for an attention heatmap, the weights.
HEAD = """
<script>
(() => {
  const icon = (label) => `<svg viewBox="0 0 28 16" height="1em" width="1.75em" class="icon">
    <text x="0" y="13" font-size="12" font-family="monospace" font-weight="bold" fill="currentColor">${label}</text></svg>`;
  const plain = (v) => ArrayBuffer.isView(v) ? Array.from(v) : Array.isArray(v) ? v.map(plain) : v;
  const save = (name, text, type) => {
    const a = document.createElement('a');
    a.href = URL.createObjectURL(new Blob([text], {type}));
    a.download = name;
    a.click();
    setTimeout(() => URL.revokeObjectURL(a.href), 1000);
  };
  const zh = () => window.labLang === 'zh-CN';
  const addButtons = (modebar) => {
    if (modebar.querySelector('.lab-svg')) return;
    // plotly's camera button, titled in the page's language (plotly's zh-CN locale, below)
    const camera = modebar.querySelector('[data-title^="Download plot"], [data-title^="下载图表"]');
    const gd = modebar.closest('.js-plotly-plot');
    if (!camera || !gd) return;
    // PNGs at twice the screen resolution, so a figure stays sharp on a slide
    camera.addEventListener('click', () => {
      gd._context.toImageButtonOptions = {filename: 'transformer-lab', scale: 2, ...gd._context.toImageButtonOptions};
    }, true);
    const svg = camera.cloneNode(false);
    svg.classList.add('lab-svg');
    svg.setAttribute('data-title', zh() ? '下载图表为SVG格式' : 'Download plot as SVG');  // worded as plotly's own
    svg.innerHTML = icon('SVG');
    svg.addEventListener('click', () => {
      const saved = gd._context.toImageButtonOptions;
      gd._context.toImageButtonOptions = {...saved, format: 'svg'};
      camera.click();
      gd._context.toImageButtonOptions = saved;
    });
    const data = camera.cloneNode(false);
    data.setAttribute('data-title', zh() ? '下载图中的数值（JSON）' : 'Download the numbers (JSON)');
    data.innerHTML = icon('{}');
    data.addEventListener('click', () => {
      const title = gd.layout.title && (gd.layout.title.text || gd.layout.title);
      // _fullData holds the arrays decoded (plotly.py may send them base64-packed in `data`)
      const traces = gd.data.map((t, i) => {
        const full = gd._fullData.find((f) => f.index === i) || t;
        return Object.fromEntries(['type', 'name', 'x', 'y', 'z', 'customdata', 'text']
          .filter((key) => t[key] !== undefined).map((key) => [key, plain(full[key] ?? t[key])]));
      });
      save('transformer-lab-data.json', JSON.stringify({title: title || '', traces}), 'application/json');
    });
    camera.after(svg, data);
  };
  // Gradio titles a toast with its kind in English ("Error") in every locale (gr.Error's title is not shown):
  // the title in the page's language
  const TITLES = TOAST_TITLES;
  const retitle = (title) => {
    const kind = Object.keys(TITLES.en).find((k) => title.classList.contains(k));
    const node = Array.from(title.childNodes).find((n) => n.nodeType === Node.TEXT_NODE && n.data.trim());
    const word = kind && (TITLES[window.labLang] || TITLES.en)[kind];
    if (node && word && node.data.trim() !== word) node.data = word + ' ';
  };
  let pending = false;
  new MutationObserver(() => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      document.querySelectorAll('.modebar').forEach(addButtons);
      document.querySelectorAll('.toast-title').forEach(retitle);
    });
  }).observe(document.documentElement, {childList: true, subtree: true});
})();
</script>
<script>
// Gradio's Plot draws every new figure twice: the plot on the page redraws itself with it, then, in the same
// update, a {#key} block throws that plot away and draws the figure again in a fresh one. Drawing into a plot a
// moment later (a microtask, after the update) skips the plot thrown away: at 128 tokens, 0.13-0.25 s of the
// 0.4 s the Attention tab's click spent drawing. The plot thrown away is purged, which Gradio leaves undone:
// its window 'resize' listener kept it, and its figure, alive (1.3 MB a click on the Attention tab).
// Where the {#key} block has already taken the old plot off the page when Gradio redraws it (the Forward pass
// tab's three figures), that plot is purged at once: drawing it cost 0.1 s of a stage's 0.3 s. A fresh plot
// not on the page yet (never drawn) goes straight through.
(() => {
  const deferReact = (Plotly) => {
    if (!Plotly || typeof Plotly.react !== 'function' || Plotly.react.deferred) return;
    const react = Plotly.react;
    const deferred = function (gd, ...rest) {
      if (!(gd instanceof Element)) return react.call(this, gd, ...rest);
      if (!gd.isConnected) {
        if (!gd._fullLayout) return react.call(this, gd, ...rest);
        Plotly.purge(gd);  // drawn before, and thrown away
        return Promise.resolve(gd);
      }
      return new Promise((resolve, reject) => queueMicrotask(() => {
        if (!gd.isConnected) { Plotly.purge(gd); resolve(gd); return; }  // thrown away in the same update
        try { Promise.resolve(react.call(this, gd, ...rest)).then(resolve, reject); } catch (e) { reject(e); }
      }));
    };
    deferred.deferred = true;
    Plotly.react = deferred;
  };
  // Plotly's own strings (the toolbar's hover titles) in the page's language: its zh-CN locale, registered
  // once, and named in the config of every plot drawn while the page is Chinese (a switch redraws the view)
  const localise = (Plotly) => {
    if (!Plotly || typeof Plotly.register !== 'function' || Plotly.localised) return;
    Plotly.register(PLOTLY_ZH_CN);
    for (const name of ['newPlot', 'react']) {
      const draw = Plotly[name];
      Plotly[name] = function (gd, data, layout, config, ...rest) {
        if (data && !Array.isArray(data) && typeof data === 'object')  // react(gd, {data, layout, config})
          return draw.call(this, gd, {...data, config: {...data.config, locale: window.labLang || 'en'}}, layout, config, ...rest);
        return draw.call(this, gd, data, layout, {...config, locale: window.labLang || 'en'}, ...rest);
      };
      Object.assign(Plotly[name], draw);
    }
    Plotly.localised = true;
  };
  // Gradio loads plotly.js on demand and sets window.Plotly once it has: patch it as it is set
  if (window.Plotly) { localise(window.Plotly); deferReact(window.Plotly); return; }
  let plotly;
  Object.defineProperty(window, 'Plotly', {configurable: true, enumerable: true, get: () => plotly,
    set: (value) => { plotly = value; localise(value); deferReact(value); }});
})();
</script>
"""

# plotly.js's own zh-CN locale (MIT, from the plotly.js-locales package), as a JavaScript object
PLOTLY_ZH_CN = (Path(__file__).parent / "ui" / "plotly" / "zh-cn.js").read_text(encoding="utf-8").split(
    "module.exports =", 1)[1].strip().rstrip(";")
HEAD = HEAD.replace("PLOTLY_ZH_CN", PLOTLY_ZH_CN)
# a toast's title by its kind, in each language
TOAST_TITLES = {lang: {kind: catalogue.t(f"common.{kind}_title", lang)
                       for kind in ("error", "warning", "info", "success")} for lang in catalogue.LANGUAGES}
HEAD = HEAD.replace("TOAST_TITLES", json.dumps(TOAST_TITLES, ensure_ascii=False))

TOGGLE_LECTURE = "(on) => { document.body.classList.toggle('lecture-mode', on); }"
FULL_LINK = "(query) => query ? location.origin + location.pathname + query : ''"

THEME = gr.themes.Soft(
    primary_hue="indigo",
    # system fonts only: the default theme would fetch web fonts, which fails offline
    font=["ui-sans-serif", "system-ui", "Noto Sans CJK SC", "Noto Sans SC", "Microsoft YaHei", "sans-serif"],
    font_mono=["ui-monospace", "monospace"],
)


def build_app() -> gr.Blocks:
    sessions.make_sessions_lazy()  # a visitor's session costs microseconds, not 15 ms (see ui/sessions.py)
    # no telemetry: a lecture hall may be offline, and the app must not wait on the network
    with gr.Blocks(title="Transformer Lab", analytics_enabled=False) as demo:
        with gr.Row(elem_classes=["lecture-hide"], equal_height=True, elem_id="app-header"):
            gr.Markdown(_("app.intro"))
            switch = i18n.switch()
        lang = gr.State(i18n.DEFAULT)  # the page's language, for every text the server builds
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
        # what a link asked for out of range, and what was used (ui/links.link_notice); hidden for a plain visit
        link_notice = gr.Markdown(visible=False, elem_id="link-notice")
        with gr.Tabs() as tabs:
            actions = [tab.build(lang) for tab in TABS]

        tab_items = [t for t in tabs.children if isinstance(t, gr.Tab)]
        for t in tab_items:
            t.elem_id = t.elem_id or f"tab-{t.id}"  # lets links and presets find the tab's button
        links = Links(demo, tab_items)
        current_tab = gr.State(str(tab_items[0].id) if tab_items else "")
        # the tab a link or lecture step just opened ("" when none), read by the browser to draw its view
        linked = gr.Textbox("", visible="hidden", elem_id="linked-tab")
        # The app's own events below are instant and need no model: unqueued, private, no GPU. Their progress
        # shows on one hidden box: Gradio refreshes, at every event's start and end, the status of every
        # component an event ever showed progress on, and opening a link alone sets ~80 components.
        shell = dict(queue=False, api_visibility="private", show_progress="hidden", show_progress_on=linked)
        to_view = [tabs, current_tab, *links.components]

        tabs.select(links.selected, None, current_tab, **shell)
        relabelled = i18n.relabelled(demo)
        opened = [demo.load(links.open_link, switch, [*to_view, link_notice, controls, preset, lecture, linked, switch,
                                                      lang],
                            js=i18n.LOAD_JS, **shell)]
        opened[0].then(lambda new: i18n.relabel(relabelled, new), lang, relabelled, **shell)
        names = [t for t in tab_items if t in relabelled]
        lecture.change(None, lecture, None, js=TOGGLE_LECTURE, **shell)
        opened.append(preset.input(links.open_preset, preset, [*to_view, link_notice, linked], **shell))
        for button, step in ((back, previous_step), (forward, next_step)):
            opened.append(button.click(step, preset, preset, **shell).then(
                links.open_preset, preset, [*to_view, link_notice, linked], **shell))
        for event in opened[1:]:  # a lecture step brings its part of the page into view
            event.then(None, preset, None, js=SCROLL_TO_STEP, **shell)
        # The view a link or lecture step opens runs on the server right after its inputs are set: the browser
        # presses that tab's hidden redraw button (below). One event for that tab: an event per tab, each
        # skipping all but one, cost the page a second of status updates, since Gradio refreshes every
        # component any event ever touched whenever an event starts or ends.
        for event in opened:
            event.then(None, linked, None, js=REDRAW_LINKED, **shell)
        # The switch: labels change in the browser at once, and the view on screen is drawn again in the new
        # language, from the runs already cached (inputs, tab and scroll position stay): the browser presses
        # the shown tab's redraw button. Meanwhile the server keeps the language for later events and sends
        # the tab names, which the browser cannot translate.
        switch.input(None, switch, switch, js=i18n.SWITCH_JS, **shell).then(
            lambda new: (new, *i18n.relabel(names, new)), switch, [lang, *names], **shell)
        def in_page_language(components: list) -> list:  # the switch holds the new language at once
            return [switch if c is lang else c for c in components]

        for tab_item, action in zip(tab_items, actions):
            # pressed by the browser only (links, lecture steps, the switch)
            redraw = gr.Button(visible="hidden", elem_id=redraw_id(str(tab_item.id)))
            if action is not None:
                drawn = redraw.click(events.on_gpu(action.fn), in_page_language(action.inputs), action.outputs,
                                     api_visibility="private",
                                     **events.queue_settings(action.api_name, f"opened-{action.api_name}"))
                events.clear_on_failure(drawn, action.outputs)
                if tab_item is tab_items[0]:  # the first tab's view shows at once, in the page's language
                    opened[0].then(action.fn, action.inputs, action.outputs, api_visibility="private")
                for fn, inputs, outputs in action.also:  # on load (the first tab shows at once), and on a redraw
                    opened[0].then(fn, inputs, outputs, api_visibility="private")
                    redraw.click(fn, in_page_language(inputs), outputs, api_visibility="private")
            # a tab's examples tables are put in the page's language when it is shown: on a switch only the shown
            # tab's (after its view was asked for), so the page updates a few tables, not every tab's
            tables = [b for b in i18n.relabelled(tab_item) if isinstance(b, gr.Dataset)]
            if tables:
                redraw.click(functools.partial(i18n.relabel, tables), switch, tables, **shell)
                tab_item.select(functools.partial(i18n.relabel, tables), lang, tables, **shell)
        make_link.click(links.link_box, [current_tab, lang, *links.components], link_box, **shell).then(
            None, link_box, link_box, js=FULL_LINK, **shell)
    events.check_declared(demo)  # a public endpoint wired around events.on would escape ENDPOINTS
    agents.offer_tools(demo)  # the API page and the MCP tools: each view's data, not its page
    agents.brief_mcp_refusals()
    events.speak_page_language(demo, lang)  # an input's refusal in the page's language
    return demo


def serve_queue(demo: gr.Blocks) -> gr.Blocks:
    """`demo` with its queue, and at the queue's door the caps Gradio lacks (ui/admission.py)."""
    demo.queue(max_size=QUEUE_MAX_SIZE, status_update_rate=STATUS_UPDATE_S)
    admission.Admission(demo._queue, events.admits, events.seconds_until_free, events.session_jobs)
    sessions.sweep_forever(demo)  # state only for open pages, briefly for the rest (ui/sessions.py)
    return demo


def hub_model_dir(repo_id: str) -> Path:
    """Download a Hub model repo holding one checkpoint folder per model (like assets/)."""
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(repo_id, allow_patterns=["*/config.json", "*/model.safetensors",
                                                               "*/tokenizer.json", "*/README.md"]))
    except Exception as e:  # offline, unknown repo, no access: all mean "cannot get it"
        raise SystemExit(
            f"Could not download checkpoints from the Hugging Face Hub repo {repo_id!r} "
            f"({type(e).__name__}). Check the name and your network, or start without --hub-repo "
            "to use the checkpoints shipped in assets/."
        ) from e


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"))
    # string defaults from the environment go through `type` too: a bad value is a usage error, not a traceback
    parser.add_argument("--port", type=int, default=os.environ.get("GRADIO_SERVER_PORT", "7860"))
    parser.add_argument("--share", action="store_true", help="create a public gradio.live link")
    parser.add_argument("--threads", type=int, default=os.environ.get("TRANSFORMER_LAB_THREADS",
                                                                      str(store.SERVING_THREADS)),
                        help="CPU threads per model call (default 1: requests run side by side, a core each)")
    parser.add_argument("--cache-mb", type=int, default=os.environ.get("TRANSFORMER_LAB_CACHE_MB",
                                                                       str(cache.BUDGET_BYTES // 2**20)),
                        help="MiB that all cached runs together may hold (default 1024: fits a free CPU Space)")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--model-dir", default=None, help="folder of checkpoints (default: assets/)")
    source.add_argument("--hub-repo", default=None, help="Hub model repo with one checkpoint folder per model")
    return parser.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    try:
        default_device()  # a bad TRANSFORMER_CORE_DEVICE is reported now, not at the first click
    except DeviceError as e:
        sys.exit(f"error: {e}")
    if args.threads < 1:
        sys.exit(f"--threads {args.threads}: must be at least 1")
    store.set_threads(args.threads)
    if args.cache_mb < 0:
        sys.exit(f"--cache-mb {args.cache_mb}: cannot be negative")
    cache.set_budget(args.cache_mb * 2**20)
    if args.model_dir:
        if not Path(args.model_dir).is_dir():
            sys.exit(f"--model-dir {args.model_dir}: no such folder")
        store.set_model_dir(args.model_dir)
    if args.hub_repo:
        store.set_model_dir(hub_model_dir(args.hub_repo))
    store.warm()  # every shipped model loads now (the large ones beside the first pages), not at a student's click
    # mcp_server: every public endpoint (tokenize, attention, generate, classify, translate, ...: the data twins
    # of ui/agents.py) is also a tool an agent can call, at /gradio_api/mcp/ (schema at /gradio_api/mcp/schema)
    demo = build_app()  # first the layout: it registers every component text that i18n.translations() sends
    # run_history off: Gradio's history page kept every run's outputs in the browser's storage (300 kB an
    # Attention click) and rewrote it all at each click, so a click drawn in 0.35 s took 0.8 s by the 15th.
    # The app's links and lecture steps already bring a view back.
    serve_queue(demo).launch(
        server_name=args.host, server_port=args.port, share=args.share, theme=THEME, css=CSS, head=HEAD + i18n.HEAD,
        i18n=i18n.translations(), mcp_server=True, app_kwargs=app_kwargs(), run_history=False,
        max_threads=events.threads_needed(demo), state_session_capacity=sessions.CAPACITY)


if __name__ == "__main__":
    main()
