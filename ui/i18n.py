"""Gradio's side of the two languages: component text, the reader's language in the browser, the switch.

Component text (labels, info, placeholders, buttons, Markdown, tab names, choices) is given as
`text(id, **params)`: a `gr.I18n` key that the browser translates, so a switch redraws every label at
once without asking the server. Gradio picks its locale once, at load, from the browser, and its
own strings ("Use via API", "Settings") come from its built-in zh-CN locale. `HEAD` then applies
the language of the link (`?lang=zh-CN`) or of the browser (any zh-* is Chinese) through the same
`changeLocale` that Gradio's Settings panel calls, and remembers it for the server (`LOAD_JS`).

Text the server builds (notices, errors, figures, table headers) takes the language as an input
like any other, from one session state that the load event, a link and the switch set.
"""

from __future__ import annotations

import hashlib
import json

import gradio as gr
from gradio.i18n import I18nData

from i18n import DEFAULT, LANGUAGES, NAMES, Message, catalogue, t

_texts: dict[str, tuple[str, dict]] = {}  # gr.I18n key -> (message id, parameters), every one the layout used


def text(key: str, **params) -> I18nData:
    """Message `key` as component text, translated in the browser. Parameters are filled in now (a
    label's limits are fixed when the app is built), so each distinct set gets a key of its own."""
    t(key, DEFAULT, **params)  # an unknown id or a missing parameter fails while the app is built
    digest = hashlib.sha1(json.dumps(params, sort_keys=True, default=str).encode()).hexdigest()[:8]
    derived = f"lab.{key}#{digest}" if params else f"lab.{key}"  # "lab.": Gradio's own keys ("common.*") stay apart
    _texts[derived] = (key, params)
    return I18nData(derived)


# Keys Gradio's status tracker asks for (its screen-reader announcements) that its own locales lack, so the
# page read the key itself ("common.complete"): Gradio key -> our message
GRADIO_KEYS = {"common.complete": "gradio.complete", "common.progress": "gradio.progress",
               "status.queue_position": "gradio.queue_position"}


def translations() -> gr.I18n:
    """Every component text the layout used, in every language, and GRADIO_KEYS: `launch(i18n=...)` sends it
    to the browser."""
    return gr.I18n(**{lang: {**{k: t(key, lang) for k, key in GRADIO_KEYS.items()},
                             **{k: t(key, lang, **params) for k, (key, params) in _texts.items()}}
                      for lang in LANGUAGES})


def translated(value, lang: str):
    """`value` with every component text in it (an I18nData, also inside lists and dicts) in language `lang`."""
    if isinstance(value, I18nData):
        key, params = _texts[value.key]
        return t(key, lang, **params)
    if isinstance(value, dict):
        return {k: translated(v, lang) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(translated(v, lang) for v in value)
    return value


def relabelled(block) -> list:
    """The blocks under `block` whose text the browser does not translate by itself, so the server sends it in
    the page's language (`relabel`): tab names (a tab not yet opened keeps the name it got before the page's
    language was applied) and the examples' tables (their headers and the choices they show are copies the
    browser never translates)."""
    found = []
    for child in getattr(block, "children", []):
        if (isinstance(child, gr.Tab) and isinstance(child.label, I18nData)) or isinstance(child, gr.Dataset):
            found.append(child)
        found.extend(relabelled(child))
    return found


def relabel(blocks: list, lang: str):
    """Updates that put the text of `relabelled` blocks in language `lang` (one block: its update alone, as
    Gradio takes a single output's value)."""
    updates = [gr.Tab(label=translated(b.label, lang)) if isinstance(b, gr.Tab) else
               gr.Dataset(headers=translated(b.headers, lang), component_props=translated(b.component_props, lang))
               for b in blocks]
    return updates[0] if len(updates) == 1 else updates


def switch() -> gr.Radio:
    """The visible language switch: each language named in its own words, its value the language tag."""
    return gr.Radio([(NAMES[lang], lang) for lang in LANGUAGES], value=DEFAULT, label=text("app.language"),
                    elem_id="lang", container=False, scale=1, min_width=240)


def language(lang: gr.State | None = None) -> gr.State:
    """A tab's language input: the page's (app.py passes it), or English for a tab built on its own."""
    return lang if lang is not None else gr.State(DEFAULT)


def choice(value: str) -> tuple:
    """A picker choice (shown text, value) for a value that may be a Message: shown in the reader's language,
    while the value (what links, the API and the handlers see) stays the same in every language. A checkpoint
    with a human name in the catalogue ("store.name.<folder>") is shown by it, its folder name after it."""
    if isinstance(value, Message) and value.key == "store.model_label" and \
            f"store.name.{value.params.get('name')}" in catalogue(DEFAULT):
        name = value.params["name"]
        return text("store.named_label", human=Message(f"store.name.{name}"), name=name), value
    shown = text(value.key, **value.params) if isinstance(value, Message) else value
    return shown, value


# The browser's side. The link's `lang`, else the browser's language, mapped like i18n.normalise.
_RESOLVE = """(() => {
  const norm = (tag) => /^zh([-_]|$)/i.test(tag || '') ? 'zh-CN' : 'en';
  const asked = new URLSearchParams(location.search).get('lang');
  return norm(asked || navigator.language);
})()"""

# Gradio's i18n store lives in its core module; importing the URL the page already loaded returns the
# same module instance, so its changeLocale is the one Gradio's components listen to.
_CORE = """(() => {
  const url = performance.getEntriesByType('resource').map((e) => e.name).find((n) => /\\/core-[^/]*\\.js$/.test(n));
  return url ? import(url) : Promise.resolve(null);
})()"""

HEAD = f"""
<script>
(() => {{
  window.labLang = {_RESOLVE};
  window.labCore = {_CORE};
  window.labCore.then((core) => core && core.changeLocale(window.labLang));
  document.documentElement.lang = window.labLang;
}})();
</script>
"""

# demo.load's input: the language the page chose (the server cannot see navigator.language).
LOAD_JS = f"(lang) => [window.labLang || {_RESOLVE}]"
