"""A view of the app as a handful of query parameters, so a lecturer can post a link to it.

`?tab=attention&text=The+cat+sat&layer=2` opens the Attention tab with that text and
layer 2 and runs it. The same dicts are the lecture presets: stepping through a lecture
is opening one saved link after another.

Every link parameter is declared in LINK_KEYS: its name, and the input it sets, named by the
public API (an endpoint and the position of its argument, which never change) or, for an input
only the page's own events read, by its `elem_id`. Never by label: labels are translated, and
a link posted in an English lecture must open the same view in the Chinese app.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from urllib.parse import urlencode

import gradio as gr

from i18n import DEFAULT, normalise, render, t
from lab import generate, models, store
from lab.markdown import literal
from lab.policy import InputError, quoted, truncate
from lab.sentiment import REVIEW
from ui.i18n import translated

SETTABLE = (gr.Textbox, gr.Slider, gr.Number, gr.Dropdown, gr.Radio, gr.Checkbox)
TRUE_WORDS = {"1", "true", "yes", "on"}
JSON_SAFE = float(2**53)  # the largest whole number a browser's JSON reads exactly

# A lecture, step by step: each preset is the link a lecturer would otherwise post.
# Keys a tab does not have are ignored (and "focus" is the step's part of the page, see
# SCROLL_TO_STEP), so a preset never breaks a lecture. Seeds are
# fixed so the same slide shows the same sample in every run. A step is named by an id; the
# picker shows its name in the reader's language ("lecture.<id>" in the catalogue), and a step
# keeps the language it is shown in.
# the real LLMs as the Attention and Generate pickers name them (lab/models, lab/generate)
_SMOLLM2, _SMOLLM2_WRITES = "SmolLM2-135M-Instruct (real LLM)", "SmolLM2-135M-Instruct (real LLM, chats in English)"
_GEMMA_WRITES = "Gemma 3 270M (real LLM, continues English and Chinese)"
LECTURE_PRESETS: dict[str, dict[str, str]] = {
    "tokens": {"tab": "tokens", "text": "To be, or not to be: that is the question."},
    "attention": {"tab": "attention", "model": "shakespeare-lm (language model)", "attention": "decoder",
                  "text": "The cat sat on the mat because it was tired.", "layer": "1", "head": "0"},
    "causal": {"tab": "masking", "text": "To be, or not to be, that is the question", "mask": "causal"},
    # every step names its model: stepping back from the poem must not leave the Tang LM on an English prompt
    "temperature": {"tab": "generate", "model": "Shakespeare LM (shipped)", "text": "ROMEO:", "decoding": "sample",
                    "temperature": "0.3", "top_k": "0", "top_p": "1.0", "min_p": "0.0", "repetition_penalty": "1.0",
                    "seed": "0"},
    "classifier": {"tab": "sentiment", "text": "A moving, beautifully acted film.",
                   "classifier": "sentiment", "compare": "0"},
    "pretraining": {"tab": "sentiment", "text": "Not bad at all, I enjoyed every minute.", "compare": "1",
                    "focus": "#sentiment-compare"},
    # the pre-trained classifier hears the review turn; the from-scratch one stays negative (Compare shows both)
    "whole_review": {"tab": "sentiment", "text": REVIEW, "compare": "0", "classifier": "sentiment-pretrained",
                     "focus": "#sentiment-review"},
    "encoder_decoder": {"tab": "translate", "text": "1 2 3 4 5 6 7 8 9", "task": "reverse"},
    # the head is the ranking's top one, found when the step opens, not an index written here; the steps
    # after it set layer and head to 0: the encoder's head 11 does not exist in the 6-head language model
    "find_head": {"tab": "attention", "model": "sentiment-pretrained (classifier)",
                  "text": "The animal didn't cross the street because it was too tired", "attention": "encoder",
                  "heads_view": "find", "find_query": "it", "find_key": "animal", "focus": "#heads"},
    # the step before's model, sentence and link: the head it found is switched off (the view's default when a
    # query and a key are named), and the page shows what the later heads then do with "it" and "animal"
    "switch_off": {"tab": "attention", "model": "sentiment-pretrained (classifier)",
                   "text": "The animal didn't cross the street because it was too tired", "attention": "encoder",
                   "heads_view": "ablate", "find_query": "it", "find_key": "animal", "heads_off": "",
                   "focus": "#heads"},
    "logit_lens": {"tab": "attention", "model": "shakespeare-lm (language model)", "layer": "0", "head": "0",
                   "text": "ROMEO: But soft, what light through yonder window breaks?", "heads_view": "lens",
                   "focus": "#heads"},
    # copying needs a model that copies: SmolLM2 has induction heads (~0.9) and its loss falls on the repeat; where
    # its checkpoint is not made, the shipped language model (which does not copy, and the page says so)
    "copying": {"tab": "attention", "model": (_SMOLLM2, "shakespeare-lm (language model)"),
                "layer": "0", "head": "0", "heads_view": "roles", "focus": "#heads"},
    # the classic first demo of a Chinese classroom: a character-level model writes a Tang poem after Li Bai's first
    # line (every sampling setting given, so the step shows the same poem whatever the steps before left)
    # (the first line alone, with no blank line above it: the page drew that line as two ↵ above the poem; seed 4
    # gives three lines more, then the blank line that ends a poem)
    "poem": {"tab": "generate", "model": "Tang poems, character LM (shipped)", "text": "床前明月光，疑是地上霜。\n",
             "decoding": "sample", "temperature": "0.8", "top_k": "0", "top_p": "1.0", "min_p": "0.0",
             "repetition_penalty": "1.0", "new_tokens": "40", "seed": "4"},
    # the forward pass, followed through one token ("it", position 9): the lecturer steps through the stages
    "follow_token": {"tab": "forward", "model": "shakespeare-lm (language model)", "stage": "embed",
                     "text": "The cat sat on the mat because it was tired.", "layer": "0", "head": "0", "follow": "9",
                     "stack": "decoder", "cross": "false", "focus": "#forward-stage"},
    # the translator's decoder loop: each row reads what was written so far and writes one token more
    "decoder_loop": {"tab": "forward", "model": "translate-reverse (translator)", "text": "123456789", "stage": "next",
                     "layer": "0", "head": "0", "follow": "0", "stack": "decoder", "cross": "false",
                     "focus": "#forward-stage"},
    # Alammar's sentence in English and in Chinese side by side, read by one pre-trained multilingual encoder: 它 is
    # merged into the piece 因为它 (Find-head says so), and the head that links it to 动物 links "it" to "animal" too
    # (the step opens at the button: with the section's heading above it, the ranking fell below a projector)
    "two_languages": {"tab": "attention", "model": "multilingual-e5 (pre-trained multilingual encoder)",
                      "attention": "encoder", "layer": "0", "head": "0",
                      "text": "The animal didn't cross the street because it was too tired. 这只动物没有过马路，因为它太累了。",
                      "heads_view": "find", "find_query": "it, 它", "find_key": "animal, 动物", "focus": "#find-button"},
    # The real LLMs (each step falls back to a shipped model where the LLM is not made, and the page says why).
    # SmolLM2 answers the chat question greedily ("The capital of France is Paris."); the step view shows each
    # token's distribution
    "llm_answers": {"tab": "generate", "model": (_SMOLLM2_WRITES, "Shakespeare LM (shipped)"),
                    "text": "What is the capital of France?", "chat": "true", "decoding": "greedy",
                    "temperature": "1.0", "top_k": "0", "top_p": "1.0", "min_p": "0.0", "repetition_penalty": "1.0",
                    "new_tokens": "12", "seed": "0"},
    # the lens on the same fact: the layer from which " Paris" stays the top guess
    "paris_lens": {"tab": "attention", "model": (_SMOLLM2, "shakespeare-lm (language model)"), "layer": "0",
                   "head": "0", "text": "The capital of France is", "heads_view": "lens", "focus": "#heads"},
    # a base model continues Li Bai's line in Chinese; sampled with a fixed seed (greedy repeats itself)
    "llm_poem": {"tab": "generate", "model": (_GEMMA_WRITES, "Tang poems, character LM (shipped)"),
                 "text": "床前明月光，", "chat": "false", "decoding": "sample", "temperature": "0.8", "top_k": "40",
                 "top_p": "0.95", "min_p": "0.0", "repetition_penalty": "1.0", "new_tokens": "24", "seed": "1"},
}


# What a click shows, by the button's elem_id: the page keeps it in sight (ui/page.js, window.labResults). A result
# below the first screen made a click seem to do nothing (a projector's 720 px, a phone's 844 px).
RESULTS = {"attention-run": "#attention-grid", "masking-run": "#masking-gallery", "generate-run": "#generated-text",
           "generate-run-llm": "#generated-text", "translate-run": "#translate-attention",
           "forward-run": "#forward-says", "forward-next": "#forward-heatmap", "forward-back": "#forward-heatmap",
           "find-button": "#find-note", "ablate-button": "#ablate-note", "importance-button": "#importance-note",
           "lens-button": "#lens-table", "roles-button": "#roles-note", "question-join": "#question-prompt",
           "question-send": "#question-status", "question-open": "#question-link"}
# What a lecture step shows: its tab's main figure, or the step's own (the part of the tab it is about)
TAB_RESULTS = {"tokens": "#tokens-chips", "attention": "#attention-grid", "masking": "#masking-gallery",
               "generate": "#generated-text", "sentiment": "#sentiment-tokens", "translate": "#translate-attention",
               "forward": "#forward-heatmap"}
STEP_RESULTS = {"pretraining": "#sentiment-compare .js-plotly-plot", "whole_review": "#sentiment-running",
                "find_head": "#find-ranking", "two_languages": "#find-ranking", "switch_off": "#ablate-downstream",
                "logit_lens": "#lens-table", "copying": "#roles-note", "paris_lens": "#lens-table"}


def step_result(name: str) -> str | None:
    """The selector of what lecture step `name` shows."""
    return STEP_RESULTS.get(name) or TAB_RESULTS.get(LECTURE_PRESETS[name]["tab"])


def usable(params: dict) -> dict[str, str]:
    """A step's parameters as a link's: a model named as choices in order (a real LLM, then a shipped model) is the
    first this app can read."""
    model = params.get("model")
    if not isinstance(model, tuple):
        return params
    return {**params, "model": next((m for m in model if _readable(m)), model[-1])}


def with_group(params: dict[str, str]) -> dict[str, str]:
    """A link to the Attention tab that names a model and no attention group, with the model's first group, as
    picking the model gives it (ui/attention.group_for): the default group, a decoder's, began an encoder's every
    answer with a notice that it has none."""
    if params.get("tab") != "attention" or "model" not in params or "attention" in params:
        return params
    name = _named(params["model"])
    return {**params, "attention": models.checkpoint(name).kind.groups[0]} if name else params


def _named(raw: str) -> str | None:
    """The checkpoint a link's model names, by a picker label or by its name in any case; None for none."""
    try:
        return models.resolve(raw)
    except InputError:
        wanted = raw.strip().casefold()
        return next((name for name in store.checkpoints().values() if name.casefold() == wanted), None)


def _readable(label: str) -> bool:
    try:
        name = generate.checkpoint(label) or models.resolve(label)
    except InputError:
        return False
    return name in store.checkpoints().values() and name not in store.unavailable()


# The part of the page a step is about, scrolled to the top of the screen ("focus"; other steps show the top).
# It may still be opening when the step starts (an accordion), or hidden until its first result (a review's
# sentences, seconds on a busy machine): the scroll is repeated while it takes its height, for up to 20 s.
SCROLL_TO_STEP = """(name) => { const focus = (%s)[name], result = (%s)[name];
  // a newer step ends this one's re-scrolling: stepping back from a step with a focus must not scroll to it later
  const step = window.labScrollStep = (window.labScrollStep || 0) + 1;
  const go = () => { const el = focus && document.querySelector(focus);
                     el ? el.scrollIntoView({block: 'start'}) : window.scrollTo(0, 0); };
  // then what the step shows, once drawn, brought on screen if it is not (ui/page.js): a phone's screen or a
  // long Chinese label had left it below the first screen
  const bring = () => window.labBring && window.labBring(result && document.querySelector(result));
  go();
  // it ends once the result is drawn, in sight and has stood still for a round, or after a minute (as a click's
  // result is followed, ui/page.js): in CI a slow answer drawn after the 20 s this waited before left the logit
  // lens table 87 px on a phone's screen; it says so in window.labStepSettled (the browser tests wait on it)
  let scrolled = 0, last = null; const until = Date.now() + 60000;
  const again = () => { if (window.labScrollStep !== step) return;
                        const el = document.querySelector(focus || result), tall = el && el.offsetHeight > 0;
                        if (tall) { if (focus) go(); bring(); scrolled += 1; }
                        const shown = result && document.querySelector(result);
                        const running = window.labBusy && window.labBusy(shown);
                        const placed = !shown || !window.labPlaced || window.labPlaced(shown);
                        const at = shown ? Math.round(shown.getBoundingClientRect().top) : null;
                        const moved = at !== last; last = at;
                        if ((scrolled < 2 || running || moved || !placed) && Date.now() < until) {
                          setTimeout(again, tall ? 600 : 250);
                        } else window.labStepSettled = step; };
  setTimeout(again, 300);
  // and whenever the page's height changes later, within the minute, until the person scrolls or steps on: an
  // answer that comes late (one computed outside the queue shows no spinner) grows what is above the result
  let moving = false; const stop = () => { moving = true; };
  ['wheel', 'touchmove', 'keydown'].forEach((kind) => addEventListener(kind, stop, {once: true, passive: true}));
  const follow = new ResizeObserver(() => {
    if (window.labScrollStep !== step || moving || Date.now() > until) { follow.disconnect(); return; }
    if (document.querySelector(focus || result)) { if (focus) go(); bring(); } });
  follow.observe(document.body); }"""
SCROLL_TO_STEP = SCROLL_TO_STEP % (
    json.dumps({name: preset["focus"] for name, preset in LECTURE_PRESETS.items() if "focus" in preset}),
    json.dumps({name: step_result(name) for name in LECTURE_PRESETS}))


def redraw_id(tab_id: str) -> str:
    """The elem_id of a tab's hidden redraw button: pressed in the browser, it draws the tab's view (app.py)."""
    return f"redraw-{tab_id}"


# After a link or lecture step has set its inputs: draw the view of the tab it opened (none for a plain visit).
REDRAW_LINKED = "(tab) => { const redraw = tab && document.getElementById('%s' + tab); if (redraw) redraw.click(); }" % (
    redraw_id(""))


def relang_id(tab_id: str) -> str:
    """The elem_id of a tab's hidden button for the language switch: its view drawn again outside the queue."""
    return f"relang-{tab_id}"


# The language switch: the shown tab's view is asked for again at once, through its switch button (a tab whose view
# streams has none: its redraw button), in the new language (plotly's toolbar too, ui/page.js); the tab's panel is
# "tab-<id>"; the labels change in the browser meanwhile.
SWITCH_JS = f"""async (lang) => {{
  window.labLang = lang;
  document.documentElement.lang = lang;  // what the page's CSS reads (a tab's examples in its language)
  if (window.labPlotLocale) window.labPlotLocale();
  const tab = document.querySelector('[role=tab][aria-selected=true]');
  const id = tab && tab.getAttribute('aria-controls').replace(/^tab-/, '');
  const button = (prefix) => document.getElementById(prefix + id);
  const redraw = id && (button('{relang_id("")}') || button('{redraw_id("")}'));
  if (redraw) redraw.click();
  const core = await window.labCore;
  if (core) core.changeLocale(lang);
  return lang;
}}"""


# tab -> {link parameter: (endpoint, argument position) | "#elem_id"}, in the order a link lists them.
# Names only ever get added: links in the README, in slides and in students' notes use them.
Where = tuple[str, int] | str
LINK_KEYS: dict[str, dict[str, Where]] = {
    "tokens": {"text": ("tokenize", 0), "replay_k": ("replay_merges", 1), "scratch_text": ("bpe_from_scratch", 0),
               "scratch_step": ("bpe_step", 1)},
    "attention": {"model": ("attention", 0), "attention": ("attention", 2), "text": ("attention", 1),
                  "layer": ("attention", 3), "head": ("attention", 4), "query_token": ("attention", 5),
                  "new_tokens": ("attention_generate", 2), "step": ("attention_generate", 5),
                  "heads_view": "#heads-section", "find_query": ("find_head", 3), "find_key": ("find_head", 4),
                  "heads_off": ("ablate", 2), "ablation": ("ablate", 3)},
    "inside": {"model": ("inside_flow", 0), "text": ("inside_flow", 1), "token": ("inside_flow", 2),
               "threshold": ("inside_flow", 3), "flow_head": ("inside_flow_head", 3)},
    "masking": {"text": ("masking", 0), "mask": ("masking", 2), "second_text_of_the_padding_batch": ("masking", 1),
                "windows_look_back_only": ("masking", 6), "window_width_w": ("masking", 3),
                "dilation_d": ("masking", 4), "global_token_positions": ("masking", 5), "layer": ("masking", 7),
                "head": ("masking", 8), "position_for_the_top_5_guesses": ("masking", 9), "model": ("masking", 10),
                "prompt": ("cheating", 0), "new_tokens": ("cheating", 1)},
    "generate": {"model": ("generate", 0), "text": ("generate", 1), "decoding": ("generate", 2),
                 "temperature": ("generate", 3), "new_tokens": ("generate", 8), "seed": ("generate", 9),
                 "top_k": ("generate", 4), "top_p": ("generate", 5), "min_p": ("generate", 6),
                 "repetition_penalty": ("generate", 7), "beam_width": ("generate", 10),
                 "length_penalty": ("generate", 11), "chat": ("generate", 12),
                 "step_to_inspect": ("generate_inspect", 2)},
    "sentiment": {"text": ("classify", 0), "classifier": "#sentiment-classifier", "compare": "#compare",
                  "colour_tokens_by": ("classify", 1)},  # a review's sentence is picked on the page, not linked
    "translate": {"text": ("translate", 1), "task": ("translate", 0), "attention": ("translate", 3),
                  "layer": ("translate", 4), "head": ("translate", 5), "beam_width": ("translate", 2),
                  "task_to_train": ("translate_train", 0), "model": ("translate_train", 1),
                  "steps": ("translate_train", 2), "time_budget": ("translate_train", 3),
                  "test_sources_per_length": ("translate_lengths", 0)},
    "concepts": {"text": ("concepts_weighted_average", 0), "use_projections_w_q_w_k_w_v": ("concepts_weighted_average", 1),
                 "divide_scores_by_d": ("concepts_weighted_average", 5), "w_q": ("concepts_weighted_average", 2),
                 "w_k": ("concepts_weighted_average", 3), "w_v": ("concepts_weighted_average", 4),
                 "d": ("concepts_scaling", 0), "number_of_keys": ("concepts_scaling", 1), "seed": ("concepts_scaling", 2),
                 "sentence": ("concepts_order", 0), "shuffle_seed": ("concepts_order", 1),
                 "positions": ("concepts_positions", 0), "d_model": ("concepts_positions", 1),
                 "source_ids": ("concepts_trace", 0), "target_ids": ("concepts_trace", 1),
                 "label_smoothing": ("concepts_trace", 2), "model_seed": ("concepts_trace", 3),
                 "follow_batch_row": ("concepts_trace", 4), "follow_target_position": ("concepts_trace", 5)},
    "forward": {"model": ("forward_stage", 0), "text": ("forward_stage", 1), "stage": ("forward_stage", 2),
                "layer": ("forward_stage", 3), "head": ("forward_stage", 4), "stack": ("forward_stage", 5),
                "cross": ("forward_stage", 6), "follow": ("forward_stage", 7)},
    "questions": {"code": ("question_join", 0)},
}


@dataclass
class TabInputs:
    """One tab's settable inputs, by query-parameter name, in the order LINK_KEYS lists them."""

    tab_id: str
    components: dict[str, object] = field(default_factory=dict)


def _walk(block):
    for child in getattr(block, "children", []):
        yield child
        yield from _walk(child)


def _find(demo: gr.Blocks, tab: gr.Tab, where: Where):
    """The component `where` names inside `tab`, or None (a tab still being built may lack it)."""
    inside = {id(c) for c in _walk(tab)}
    if isinstance(where, str):
        found = [c for c in _walk(tab) if c.elem_id == where.removeprefix("#")]
    else:
        endpoint, position = where
        found = [fn.inputs[position] for fn in demo.fns.values()
                 if fn.api_name == endpoint and position < len(fn.inputs) and id(fn.inputs[position]) in inside]
    return found[0] if found and isinstance(found[0], SETTABLE) else None


def link_tabs(demo: gr.Blocks, tabs: list[gr.Tab], keys: dict[str, dict[str, Where]] | None = None) -> list[TabInputs]:
    """Each tab's link parameters, found where `keys` (LINK_KEYS) says."""
    keys = LINK_KEYS if keys is None else keys
    linked = []
    for tab in tabs:
        components = {}
        for key, where in keys.get(str(tab.id), {}).items():
            if (component := _find(demo, tab, where)) is not None:
                components[key] = component
        linked.append(TabInputs(str(tab.id), components))
    return linked


@dataclass(frozen=True)
class Clamped:
    """A link's number moved into its input's range: shown as a slider's value out of range is ("policy.clamped")."""

    component: object
    low: float
    high: float
    used: float


@dataclass(frozen=True)
class Refused:
    """A link's value its input cannot take (a model or choice it does not offer, a number that is not one): the
    input keeps its own value, and the link's notice says so ("policy.link_refused")."""

    component: object
    raw: str


def coerce(component, raw: str, clamped: list[Clamped] | None = None):
    """The value `raw` (a query-string text) means for `component`, or None if it fits nowhere; a number moved
    into the component's range is appended to `clamped` when a list is given. A picker's choice is named by its
    value or its label, and a model picker's also by the checkpoint's name ("smollm2-135m-instruct"): the name
    the Inside tab's picker, the API and the model cards use."""
    if isinstance(component, gr.Textbox):
        return truncate(raw)[0]
    if isinstance(component, gr.Checkbox):
        return raw.strip().lower() in TRUE_WORDS
    if isinstance(component, (gr.Slider, gr.Number)):
        try:
            asked = float(raw)
        except ValueError:
            return None
        if not math.isfinite(asked):
            return None
        # a link's number stays one JSON can carry (seed=1e30 was an int too large for the encoder)
        low, high = getattr(component, "minimum", None), getattr(component, "maximum", None)
        low, high = -JSON_SAFE if low is None else low, JSON_SAFE if high is None else high
        # float(): a bound is often an int, and int has no is_integer() before Python 3.12 (the Space runs 3.11)
        value = float(min(max(asked, low, -JSON_SAFE), high, JSON_SAFE))
        whole = float(getattr(component, "step", 1) or 1).is_integer() or getattr(component, "precision", None) == 0
        value = int(value) if value.is_integer() and whole else value
        if clamped is not None and value != asked:
            clamped.append(Clamped(component, low, high, value))
        return value
    if isinstance(component, (gr.Dropdown, gr.Radio)):
        if getattr(component, "multiselect", False):
            return None
        for label, value in component.choices:
            if raw in (str(value), str(label)):
                return value
        name = _named(raw)
        return next((value for _, value in component.choices if name and _checkpoint_name(value) == name), None)
    return None


def _checkpoint_name(choice) -> str:
    """The checkpoint a model picker's choice names, "" for a choice that names none (an attention group)."""
    try:
        return generate.checkpoint(str(choice)) or models.resolve(str(choice))
    except InputError:
        return ""


def apply(params: dict[str, str], linked: list[TabInputs],
          noted: list[Clamped | Refused] | None = None) -> tuple[str | None, dict[int, object]]:
    """(the tab to select, {id(component): new value}) for query parameters `params`; when a list `noted` is
    given, each number moved into its input's range and each value an input cannot take is appended to it.

    Unknown tabs and unknown keys are ignored, and a value an input cannot take leaves the input as it is: a
    mistyped link opens the app as usual instead of failing, and its notice says what was not used.
    """
    tab = next((t for t in linked if t.tab_id == params.get("tab")), None)
    if tab is None:
        return None, {}
    values = {}
    for key, raw in params.items():
        component = tab.components.get(key) if key != "tab" else None
        if component is None:
            continue
        if (value := coerce(component, raw, noted)) is not None:
            values[id(component)] = value
        elif noted is not None:
            noted.append(Refused(component, raw))
    return tab.tab_id, values


def link_notice(noted: list[Clamped | Refused], lang: str) -> gr.Markdown:
    """The link's notice line (app.py, above the tabs), in language `lang`: for each number moved into its
    input's range, the notice a slider's value out of range gets, and for each value an input cannot take, that
    it was not used, naming the input by its label (the value quoted briefly, as Markdown that shows it as typed);
    hidden when there is nothing to say."""
    said = " ".join(_said(note, lang) for note in noted)
    return gr.Markdown(f"🔗 {said}" if said else "", visible=bool(said))


def _said(note: Clamped | Refused, lang: str) -> str:
    name = translated(note.component.label, lang)
    if isinstance(note, Refused):
        return t("policy.link_refused", lang, name=name, value=literal(render(quoted(note.raw), lang)))
    return t("policy.clamped", lang, name=name, low=_shown(note.low), high=_shown(note.high), used=note.used)


def _shown(bound: float):
    """A bound as a slider shows it: 11, not 11.0."""
    return int(bound) if float(bound).is_integer() else bound


def all_components(linked: list[TabInputs]) -> list:
    """Every linked component once, tab by tab: the outputs of the state-setting events."""
    return [c for tab in linked for c in tab.components.values()]


def step_preset(name: str | None, step: int) -> str:
    """The lecture step `step` places after `name` (the first step when none is chosen yet)."""
    names = list(LECTURE_PRESETS)
    if name not in names:
        return names[0]
    return names[min(max(names.index(name) + step, 0), len(names) - 1)]


def previous_step(name: str | None) -> str:
    return step_preset(name, -1)


def next_step(name: str | None) -> str:
    return step_preset(name, +1)


class Links:
    """The event handlers behind links and presets, for the tabs of one app.

    Their outputs are always [tabs, current tab id, *every linked input].
    """

    def __init__(self, demo: gr.Blocks, tabs: list[gr.Tab], keys: dict[str, dict[str, Where]] | None = None):
        self.tabs = link_tabs(demo, tabs, keys)
        self.components = all_components(self.tabs)
        self.tab_ids = {str(tab.label): str(tab.id) for tab in tabs}
        self.tab_order = [str(tab.id) for tab in tabs]

    def view(self, params: dict[str, str], noted: list[Clamped | Refused] | None = None) -> list:
        """Updates that open the view `params` describes (nothing changes for an unknown tab)."""
        tab_id, values = apply(params, self.tabs, noted)
        if tab_id is None:
            return [gr.skip()] * (2 + len(self.components))
        return [gr.Tabs(selected=tab_id), tab_id] + [values.get(id(c), gr.skip()) for c in self.components]

    def opened(self, params: dict[str, str]) -> str:
        """The tab whose view must now run: the one `params` opens, or "" for none."""
        return apply(params, self.tabs)[0] or ""

    def open_link(self, lang: str | None, request: gr.Request) -> list:
        """On page load: the view in the URL's query parameters; the link's notice (what it asked for out of
        range, and what was used); with `lecture=1`, the lecture controls open (Next step in sight), lecture mode
        on, and, when the link names no view, the lecture's first step chosen and shown; the tab to run (a plain
        visit runs the first), and the page's language (the link's `lang`, else the browser's, `lang` as the page
        reports it) for the switch and the text the server builds.

        Returned as [*view, link notice, lecture controls, lecture step, lecture mode, tab to run, switch,
        language]."""
        params = dict(request.query_params) if request else {}
        lecture = params.get("lecture", "").strip().lower() in TRUE_WORDS
        lang = normalise(params.get("lang") or lang)
        first = next(iter(LECTURE_PRESETS))
        starts = lecture and self.opened(params) == ""
        if starts:
            params = usable(LECTURE_PRESETS[first])
        noted: list[Clamped | Refused] = []
        view = self.view(with_group(params), noted)
        notice = link_notice(noted, lang) if noted else gr.skip()  # a page opens with it hidden
        # a plain visit draws the tab it shows, the first: through its redraw button like any other, not by a chain
        # of its own on load (a link to the first tab then drew it twice)
        return [*view, notice, gr.Accordion(open=True) if lecture else gr.skip(), first if starts else gr.skip(),
                True if lecture else gr.skip(), self.opened(params) or self.tab_order[0], lang, lang]

    def open_preset(self, name: str | None) -> list:
        """A lecture step: its view's inputs, no link notice (a step's numbers fit), and the tab to run."""
        params = usable(LECTURE_PRESETS.get(name or "", {}))
        return [*self.view(params), link_notice([], DEFAULT), self.opened(params)]

    def selected(self, event: gr.SelectData) -> str:
        """The id of the tab a person just clicked, by its place (its label is in the reader's language)."""
        if isinstance(event.index, int) and 0 <= event.index < len(self.tab_order):
            return self.tab_order[event.index]
        return self.tab_ids.get(str(event.value), "")

    def link_box(self, tab_id: str, lang: str, *values):
        """The link box, shown, holding the query string of the current view."""
        return gr.Textbox(value=self.link(tab_id, *values, lang=lang), visible=True)

    def link(self, tab_id: str, *values, lang: str | None = None) -> str:
        """The query string ("?tab=...&...&lang=...") that reopens tab `tab_id` with the current input values,
        in language `lang` (left out when None).

        `values` are the current values of `self.components`, in order.
        """
        current = dict(zip([id(c) for c in self.components], values))
        tab = next((t for t in self.tabs if t.tab_id == tab_id), None)
        params = {"tab": tab_id}
        for key, c in (tab.components.items() if tab else []):
            value = current.get(id(c))
            if value in (None, "", c.value) or isinstance(value, (list, dict)):
                continue  # defaults stay out of the link, which keeps it short
            if isinstance(c, gr.Dropdown) and (name := _checkpoint_name(value)):
                value = name  # a model by its checkpoint's name: shorter than its label, and a label may change
            params[key] = str(value).lower() if isinstance(value, bool) else str(value)
        if lang:
            params["lang"] = normalise(lang)
        return "?" + urlencode(params)
