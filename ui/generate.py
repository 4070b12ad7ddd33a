"""The Generate tab: a language model's next-token distribution, and every knob that turns it into text.

Lesson: a language model only ever gives a probability for each possible next token.
Temperature reshapes that distribution, top-k / top-p / min-p cut its tail, a seeded
draw picks one token, and the loop repeats. Greedy decoding always takes the top
token; beam search keeps several partial texts alive and prunes the rest. Each step
here can be opened to see the distribution before and after every cut.
"""

from __future__ import annotations

import time
from typing import NamedTuple

import gradio as gr

from i18n import catalogue, render, t
from lab import generate as use, store
from lab.generate import (BEAM_MAX_NEW_TOKENS, GEMMA, MAX_NEW_TOKENS, MAX_WIDTH, MODELS, MODES, SHIPPED, SMOLLM2, TANG,
                          Session)
from ui import events
from ui.handlers import cached, Action, handler
from ui.i18n import choice, language, text as _
from views import generate as figures
from views.kit import placeholder

# A streamed text is sent at most this often (the first token at once, the whole text at the end): each update
# costs the server's event loop, which every visitor's request goes through, and a real LLM writes tokens faster
# than a reader needs them drawn; ten updates a second still read as streaming
STREAM_EVERY_S = 0.1
CONTRAST_TEMPERATURES = (0.2, 0.8, 1.5)
CONTRAST_NEW_TOKENS = 60

EXAMPLES = [
    # prompt, mode, temperature, top-k, top-p, min-p, repetition penalty, new tokens, seed, beam width
    ["ROMEO:\n", "sample", 0.8, 0, 1.0, 0.0, 1.0, 80, 0, 4],
    ["ROMEO:\n", "sample", 1.5, 0, 1.0, 0.0, 1.0, 80, 0, 4],
    ["ROMEO:\n", "sample", 1.5, 40, 0.9, 0.0, 1.0, 80, 0, 4],
    ["To be, or not to be,", "greedy", 0.0, 0, 1.0, 0.0, 1.0, 60, 0, 4],
    ["To be, or not to be,", "greedy", 0.0, 0, 1.0, 0.0, 1.5, 60, 0, 4],
    ["KING HENRY:\nNow, lords,", "beam", 1.0, 0, 1.0, 0.0, 1.0, 20, 0, 4],
]
# the poetry LM's prompt format: a blank line, a poem's first line, a line break (its context is 64 characters)
POEM_EXAMPLES = [
    ["\n\n床前明月光，疑是地上霜。\n", "sample", 0.8, 0, 1.0, 0.0, 1.0, 40, 0, 4],
    ["\n\n春眠不觉晓，处处闻啼鸟。\n", "sample", 0.8, 0, 1.0, 0.0, 1.0, 40, 0, 4],
    ["\n\n白日依山尽，黄河入海流。\n", "sample", 0.8, 40, 0.9, 0.0, 1.0, 40, 0, 4],
    ["\n\n国破山河在，城春草木深。\n", "greedy", 0.0, 0, 1.0, 0.0, 1.3, 40, 0, 4],
]
# the real LLMs as the lecture's steps show them (ui/links: llm_answers, llm_poem): SmolLM2 answers in its chat
# template; Gemma, a base model, continues Li Bai's line (sampled: greedy repeats itself).
# Model, prompt, the chat box, then the settings up to the seed
LLM_EXAMPLES = [
    [SMOLLM2, "What is the capital of France?", True, "greedy", 1.0, 0, 1.0, 0.0, 1.0, 12, 0],
    [SMOLLM2, "Write a short poem about the sea.", True, "sample", 0.7, 0, 0.9, 0.0, 1.1, 40, 0],
    [GEMMA, "床前明月光，", False, "sample", 0.8, 40, 0.95, 0.0, 1.0, 24, 1],
]
# The prompt each model starts from. A person who picks another model while the prompt is still one of these gets
# the new model's: the Shakespeare LM's "ROMEO:" left for Gemma on a Chinese page read as the lesson's prompt.
START_PROMPTS = {SHIPPED: "ROMEO:\n", TANG: POEM_EXAMPLES[0][0], SMOLLM2: "The capital of France is",
                 GEMMA: "床前明月光，"}
# Generated pieces sit flush, so "temp"+"est" reads as "tempest", and a newline breaks the line after its ↵.
# (The whitespace Gradio leaves between token spans is given no width. Gradio lays tokens out as a
# wrapping flexbox, whose items are blocks that no newline can break: the field becomes a plain block.)
CSS = """
.flowing-text .textfield { display: block !important; }
.flowing-text .token-container, .flowing-text .token { display: inline !important; font-size: 0 !important;
  margin: 0 !important; padding: 0 !important; }
.flowing-text .token .text { font-size: var(--text-lg); background-color: inherit; line-height: 1.9;
  white-space: pre-wrap; }
"""



def _label(tokenizer):
    return lambda token: tokenizer.decode([token])


def _highlighted(session: Session):
    return figures.highlighted_tokens(session.prompt_text, session.pieces, [r.chosen_prob for r in session.records])


def _inspect(session: Session, tokenizer, step: int, lang: str):
    if not session.records:
        return placeholder(t("generate.inspect_empty", lang))
    _, record = session.record(step)
    stages = figures.STAGES if record.probs["penalty"] != record.probs["raw"] \
        else tuple(s for s in figures.STAGES if s != "penalty")
    return figures.stage_bars(record, _label(tokenizer), stages, lang)


def _slider(session: Session):
    last = session.last_step
    return gr.Slider(minimum=0, maximum=max(last, 1), value=last, step=1, interactive=bool(session.records))


def _outputs(notices, session: Session, tokenizer, lang: str, streaming: bool = False, info: str = "", tree=None,
             compare=None):
    """The tab's outputs in order: notice, text, step slider, bars, tree, comparison text, session."""
    return (
        "\n\n".join([*(t("common.warning", lang, text=render(n, lang)) for n in notices), *([info] if info else [])]),
        _highlighted(session),
        gr.skip() if streaming else _slider(session),
        gr.skip() if streaming else _inspect(session, tokenizer, session.last_step, lang),
        tree if tree is not None else gr.skip(),
        compare if compare is not None else gr.skip(),
        session,
    )


def _request(model_label, *settings, chat=False):
    model, tokenizer, loaded = use.load(model_label)
    request = use.check(model_label, tokenizer, model.config.max_len, *settings, chat=chat)
    return model, tokenizer, request, [n for n in (loaded, *request.notices) if n]


@cached
@handler
def generate(model_label, prompt, mode, temperature, top_k, top_p, min_p, repetition_penalty, max_new_tokens,
             seed, width, length_penalty, chat=False, lang="en"):
    """A language model continues a prompt: streamed token by token (sample, greedy) with each step's
    candidates, or beam search with its tree.

    Args:
        model_label: "Shakespeare LM (shipped)", "Tang poems, character LM (shipped)", a real LLM
            ("smollm2-135m-instruct", "gemma-3-270m") or GPT-2 (needs the Hugging Face Hub)
        prompt: the text to continue
        mode: "sample", "greedy" or "beam"
        temperature: 0 = greedy; below 1 sharper, above 1 flatter
        top_k: keep the k likeliest tokens (0 = off)
        top_p: keep the fewest tokens whose probabilities add up to p (1 = off)
        min_p: keep tokens at least min_p times as likely as the favourite (0 = off)
        repetition_penalty: lower tokens already in the text (1 = off)
        max_new_tokens: how many tokens to add (1-200; 1-40 for beam search)
        seed: the random seed: the same seed gives the same text
        width: beam width (beam search)
        length_penalty: beam search's length penalty
        chat: wrap the prompt in the model's chat template (SmolLM2); other models read it as it is
    """
    model, tokenizer, request, notices = _request(model_label, prompt, mode, temperature, top_k, top_p, min_p,
                                                  repetition_penalty, max_new_tokens, seed, width, length_penalty,
                                                  chat=chat)
    last, sent = None, float("-inf")
    for last in use.run(model, tokenizer, request):
        if isinstance(last, use.BeamRun):
            yield _beam(last, tokenizer, request, notices, lang)
        elif time.monotonic() - sent >= STREAM_EVERY_S:
            sent = time.monotonic()
            waiting = t("generate.running_beam", lang) if request.mode == "beam" else ""
            yield _outputs(notices, last, tokenizer, lang, streaming=True, info=waiting)
    if isinstance(last, Session):
        yield _outputs([*notices, last.notice] if last.notice else notices, last, tokenizer, lang)


def _beam(beam: use.BeamRun, tokenizer, request: use.Request, notices: list[str], lang: str):
    """Beam search's best text in the main output, its tree, and a text sampled with the current settings."""
    label, result = _label(tokenizer), beam.result
    info = t("generate.beam_info", lang, width=request.width, logprob=result.best.logprob)
    out = _outputs(notices, beam.session, tokenizer, lang, info=info,
                   tree=figures.beam_tree(result, label, request.width, lang), compare=_highlighted(beam.sampled))
    return (out[0], figures.beam_highlights(request.prompt_text, result, label), *out[2:])


@cached
@handler
def beam_view(model_label, prompt, mode, temperature, top_k, top_p, min_p, repetition_penalty, max_new_tokens,
              seed, width, length_penalty, chat=False, lang="en"):
    """The beam tree and a sampled text for the current settings (run when the beam accordion opens)."""
    model, tokenizer, request, _ = _request(model_label, prompt, "beam", temperature, top_k, top_p, min_p,
                                            repetition_penalty, max_new_tokens, seed, width, length_penalty,
                                            chat=chat)
    return _beam(use.beam_run(model, tokenizer, request), tokenizer, request, [], lang)[4:6]


@handler
def step(session: Session | None, model_label, prompt, mode, temperature, top_k, top_p, min_p, repetition_penalty,
         max_new_tokens, seed, width, length_penalty, chat=False, lang="en"):
    """One more token: continue the current text, or start one if the prompt or a setting changed."""
    model, tokenizer, request, notices = _request(model_label, prompt, mode, temperature, top_k, top_p, min_p,
                                                  repetition_penalty, max_new_tokens, seed, width, length_penalty,
                                                  chat=chat)
    session = use.step(model, tokenizer, request, session)
    return _outputs([*notices, session.notice] if session.notice else notices, session, tokenizer, lang)


@handler
def inspect(session: Session | None, model_label, step_index, lang="en"):
    """The candidate bars of one step of the current text."""
    if session is None:
        return placeholder(t("generate.inspect_empty", lang))
    _, tokenizer, _ = use.load(session.key[0] if session.key else model_label)  # the model that wrote the text
    return _inspect(session, tokenizer, step_index or 0, lang)


def select_token(session: Session | None, model_label, lang, evt: gr.SelectData):
    """Clicking a generated token shows its step (the prompt is segment 0)."""
    if session is None or not session.records or not isinstance(evt.index, int) or evt.index < 1:
        return gr.skip(), gr.skip()
    step_index = session.step_of_piece(evt.index)
    return gr.Slider(value=step_index), inspect(session, model_label, step_index, lang)


@cached
@handler
def contrast(model_label, prompt, seed, lang="en"):
    """The same prompt and seed at temperatures 0.2 / 0.8 / 1.5, no other cuts."""
    texts, loaded = [], ""
    for temperature in CONTRAST_TEMPERATURES:
        model, tokenizer, request, notices = _request(model_label, prompt, "sample", temperature, 0, 1.0, 0.0, 1.0,
                                                      CONTRAST_NEW_TOKENS, seed)
        loaded = "\n\n".join(render(n, lang) for n in notices)
        texts.append(_highlighted(use.sampled(model, tokenizer, request)))
    return (loaded, *texts)


# ---------------------------------------------------------------- layout


class Settings(NamedTuple):
    """The decoding settings' components, in the order the handlers take them."""

    mode: gr.Radio
    temperature: gr.Slider
    top_k: gr.Slider
    top_p: gr.Slider
    min_p: gr.Slider
    repetition_penalty: gr.Slider
    max_new_tokens: gr.Slider
    seed: gr.Number
    width: gr.Slider
    length_penalty: gr.Slider


def _beam_settings_shown(mode: str) -> gr.Row:
    return gr.Row(visible=mode == "beam")


def _settings() -> Settings:
    """The decoding settings, laid out as the lesson reads them: mode and temperature first, the cuts folded."""
    mode = gr.Radio([(_(f"generate.mode.{m}"), m) for m in MODES], value="sample",
                    label=_("generate.decoding"), elem_id="decoding")
    temperature = gr.Slider(0, 2, value=0.8, step=0.05, label=_("generate.temperature"),
                            info=_("generate.temperature_info"), elem_id="temperature")
    with gr.Row():
        max_new_tokens = gr.Slider(1, MAX_NEW_TOKENS, value=80, step=1, label=_("common.new_tokens"),
                                   info=_("generate.new_tokens_info", beam_max=BEAM_MAX_NEW_TOKENS),
                                   elem_id="new_tokens")
        seed = gr.Number(0, precision=0, label=_("generate.seed"), elem_id="seed")
    with gr.Accordion(_("generate.cut_tail"), open=False):
        top_k = gr.Slider(0, 200, value=0, step=1, label=_("generate.top_k"), info=_("generate.off_0"),
                          elem_id="top_k")
        top_p = gr.Slider(0.05, 1, value=1.0, step=0.01, label=_("generate.top_p"), info=_("generate.off_1"),
                          elem_id="top_p")
        min_p = gr.Slider(0, 0.5, value=0.0, step=0.01, label=_("generate.min_p"), info=_("generate.off_0"),
                          elem_id="min_p")
        repetition_penalty = gr.Slider(1, 2, value=1.0, step=0.05, label=_("generate.repetition_penalty"),
                                       info=_("generate.off_1"), elem_id="repetition_penalty")
    # beam search's own settings, shown only under it: beside sampling they looked like settings of sampling
    with gr.Row(visible=False, elem_id="beam-settings") as beam_settings:
        width = gr.Slider(1, MAX_WIDTH, value=4, step=1, label=_("generate.beam_width"), elem_id="beam_width")
        length_penalty = gr.Slider(0, 2, value=1.0, step=0.1, label=_("generate.length_penalty"),
                                   info=_("generate.length_penalty_info"))
    mode.change(_beam_settings_shown, mode, beam_settings, queue=False, api_visibility="private",
                show_progress="hidden")
    return Settings(mode, temperature, top_k, top_p, min_p, repetition_penalty, max_new_tokens, seed, width,
                    length_penalty)


def _flowing_text(label) -> gr.HighlightedText:
    return gr.HighlightedText(label=label, show_legend=False, show_inline_category=False, elem_classes=["flowing-text"])


def picked(model_label):
    """A newly picked model: its run buttons (a real LLM's queue apart from the small models') and the chat box
    (for a model with a chat template)."""
    llm = use.checkpoint(model_label) in use.llms.LLMS
    chats = use.chat_template(use.checkpoint(model_label) or "") is not None or model_label == SMOLLM2
    return (gr.Button(visible=not llm), gr.Button(visible=llm), gr.Button(visible=not llm), gr.Button(visible=llm),
            gr.Checkbox(visible=chats))


def _about(name: str | None, lang: str | None) -> str:
    """What a model is, in one line of the catalogue ("generate.about.<checkpoint>"), with its real sizes; for the
    layout (`lang` None), as component text the browser translates."""
    key, sizes = f"generate.about.{name}", {}
    if name == store.GPT2 or name is None:
        key = "generate.about.gpt2"
    else:
        if name not in store.checkpoints().values():  # a folder gone: said when the model runs
            return ""
        why = store.unavailable().get(name)
        if why:  # a real LLM not made yet: how to make it
            return render(why, lang or "en")
        config = store.config(name)
        sizes = dict(n_layer=config.get("n_layer"), n_head=config.get("n_head"), d_model=config.get("d_model"))
        key, sizes = (key, sizes) if key in catalogue("en") else ("generate.about.other", {**sizes, "name": name})
    return _(key, **sizes) if lang is None else t(key, lang, **sizes)


def about(model_label, lang: str = "en", shown: str = ""):
    """The line under the picker: what the picked model is and what it learned from. GPT-2 that cannot be read
    here (offline) is not left picked while the shipped model writes: the picker goes back to it, and the line
    (`shown`, the line as it stands) and a warning say why."""
    name = use.checkpoint(model_label)
    if name == store.GPT2:
        _, _, fallback = use.load(model_label)
        if fallback:
            why = render(fallback, lang)
            gr.Warning(why)  # the line sits below the settings on a phone; the picker's jump back needs its reason
            return gr.Radio(value=SHIPPED), f"{why} {_about(use.MODELS[SHIPPED], lang)}"
    line = _about(name, lang)
    # the picker's jump back fires `change` again: the reason said before the line stays
    if isinstance(shown, str) and shown.endswith(" " + line):
        return gr.skip(), gr.skip()
    return gr.skip(), line


# Enter in the prompt presses whichever Generate button shows (the small models' or the real LLMs')
PRESS_RUN = "() => { document.querySelector('#generate-run:not(.hidden), #generate-run-llm:not(.hidden)')?.click(); }"


def start_prompt(model_label, prompt: str):
    """A model picked by the person: its own start prompt where the prompt is still another model's (a typed
    prompt, or an example's, is kept). Wired to the picker's `input`, which a link or an example does not fire."""
    if prompt in START_PROMPTS.values() and model_label in START_PROMPTS:
        return START_PROMPTS[model_label]
    return gr.skip()


def _examples(model_label, prompt, settings: Settings, chat) -> gr.Examples:
    """The example prompts of each model, with the settings that show it best (all but the length penalty); the
    real LLMs' examples are returned."""
    filled = [model_label, prompt, *settings[:-1]]
    with gr.Column(elem_classes=["lecture-hide"]):
        events.examples([[SHIPPED, *example] for example in EXAMPLES], filled, label=_("generate.examples"))
        events.examples([[TANG, *example] for example in POEM_EXAMPLES], filled, label=_("generate.examples_poems"))
        # the chat box's column is not shown: Gradio writes its values "true"/"false" in English on every page, and
        # the table's title says which examples chat
        llm_filled = [model_label, prompt, chat, *settings[:-2]]
        return events.examples(LLM_EXAMPLES, llm_filled, label=_("generate.examples_llms"),
                               visible_columns=[i for i in range(len(llm_filled)) if i != 2])


def build(lang: gr.State | None = None) -> Action:
    lang = language(lang)
    with gr.Tab(_("tab.generate"), id="generate"):
        with gr.Column(elem_classes=["lecture-hide"]):
            gr.Markdown(_("generate.heading"))
            with gr.Accordion(_("common.what"), open=False):
                gr.Markdown(_("generate.explainer"))
        session = gr.State(None)
        with gr.Row():
            with gr.Column(scale=2):
                model_label = gr.Radio([choice(m) for m in MODELS], value=SHIPPED, label=_("common.model"), elem_id="model")
                prompt = gr.Textbox(START_PROMPTS[SHIPPED], lines=2, label=_("generate.prompt"),
                                    placeholder=_("generate.prompt_placeholder"), elem_id="text")
                chat = gr.Checkbox(False, label=_("generate.chat_box"), elem_id="chat", visible=False)
                with gr.Row():  # the main buttons first: on a projector they must be on the first screen
                    # a real LLM's buttons run in a queue of their own (ui/events: "llm"), shown when one is picked
                    run = gr.Button(_("generate.run"), variant="primary", elem_id="generate-run")
                    run_llm = gr.Button(_("generate.run"), variant="primary", elem_id="generate-run-llm",
                                        visible=False)
                    one = gr.Button(_("generate.one_more"))
                    one_llm = gr.Button(_("generate.one_more"), visible=False)
                settings = _settings()
            with gr.Column(scale=3):
                # beside the text it writes, not under the picker: the Generate button stays on a projector's
                # first screen
                model_about = gr.Markdown(_about(use.MODELS[SHIPPED], None), elem_id="generate-model-about")
                notice = gr.Markdown()
                text = gr.HighlightedText(label=_("generate.text"),
                                          show_legend=False, show_inline_category=False, elem_id="generated-text",
                                          elem_classes=["flowing-text"])
                step_slider = gr.Slider(0, 1, value=0, step=1, label=_("generate.step_slider"), interactive=False,
                                        elem_id="step_to_inspect")
                bars = gr.Plot(label=_("generate.bars"), elem_id="generate-stages")
        with gr.Accordion(_("generate.beam_box"), open=False) as beam_box:
            tree = gr.Plot(label=_("generate.tree"))
            compare = _flowing_text(_("generate.sampled"))
        with gr.Accordion(_("generate.contrast_box"), open=False) as contrast_box:
            contrast_run = gr.Button(_("generate.contrast_run"))
            contrast_notice = gr.Markdown()
            with gr.Row():
                temperatures = [_flowing_text(f"T = {temp}") for temp in CONTRAST_TEMPERATURES]

        inputs = [model_label, prompt, *settings, chat, lang]
        outputs = [notice, text, step_slider, bars, tree, compare, session]
        llm_examples = _examples(model_label, prompt, settings, chat)
        model_label.input(start_prompt, [model_label, prompt], prompt, queue=False, api_visibility="private",
                          show_progress="hidden")
        # an example loaded gives each of its inputs its build-time settings again (gradio/helpers.py,
        # Examples.load_example: `update(**input_component_props[i])`), the chat box's `visible=False` among them:
        # the picked model's buttons and chat box are set again after it
        for changed in (model_label.change, llm_examples.load_input_event.then):
            changed(picked, model_label, [run, run_llm, one, one_llm, chat], queue=False, api_visibility="private",
                    show_progress="hidden")
        model_label.change(about, [model_label, lang, model_about], [model_label, model_about],
                           api_visibility="private", show_progress="hidden")
        events.on(run.click, generate, inputs, outputs, api_name="generate")
        events.on(run_llm.click, generate, inputs, outputs, api_name="generate_llm")
        prompt.submit(None, js=PRESS_RUN)
        events.on(one.click, step, [session, *inputs], outputs, api_name="generate_step")
        events.on(one_llm.click, step, [session, *inputs], outputs, api_name="generate_llm_step")
        events.on(step_slider.input, inspect, [session, model_label, step_slider, lang], bars,
                  api_name="generate_inspect")
        events.on(text.select, select_token, [session, model_label, lang], [step_slider, bars], api_name=False)
        contrast_in, contrast_out = [model_label, prompt, settings.seed, lang], [contrast_notice, *temperatures]
        events.on(contrast_run.click, contrast, contrast_in, contrast_out, api_name="generate_temperatures")
        # no accordion opens on empty plots: opening one runs its view with the current settings
        events.on(beam_box.expand, beam_view, inputs, [tree, compare], api_name=False)
        events.on(contrast_box.expand, contrast, contrast_in, contrast_out, api_name=False)
    return Action(generate, inputs, outputs, "generate")
