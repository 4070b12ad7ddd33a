"""The Generate tab: a language model's next-token distribution, and every knob that turns it into text.

Lesson: a language model only ever gives a probability for each possible next token.
Temperature reshapes that distribution, top-k / top-p / min-p cut its tail, a seeded
draw picks one token, and the loop repeats. Greedy decoding always takes the top
token; beam search keeps several partial texts alive and prunes the rest. Each step
here can be opened to see the distribution before and after every cut.
"""

from __future__ import annotations

import gradio as gr

from lab import generate as use
from lab.generate import BEAM_MAX_NEW_TOKENS, MAX_NEW_TOKENS, MAX_WIDTH, MODELS, MODES, SHIPPED, Session
from ui.common import cached, View, handler
from views import generate as figures
from views.kit import placeholder

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

WHAT = """
**What am I looking at?** The model reads your prompt and gives every token of its vocabulary a
probability of coming next. **Temperature** divides the scores before the softmax: below 1 the
favourite gets even more likely, above 1 the long tail catches up, 0 always takes the favourite
(greedy). **Top-k** keeps the k likeliest tokens, **top-p** the fewest whose probabilities add up to p,
**min-p** those at least min-p times as likely as the favourite; **repetition penalty** lowers every
token that is already in the text. Then one token is drawn (the **seed** makes the draw repeatable),
appended, and the loop runs again.

In the output, the darker a token, the more probable it was when it was picked. Click a token (or
move the step slider) to see that step's top candidates after each stage: grey bars were cut by
that stage, the orange one was chosen. **Beam search** keeps the `width` likeliest partial texts at
every step; its tree shows every extension it considered, the pruned ones in grey and the winner
in orange, next to a sampled text for the same prompt.
"""


def _label(tokenizer):
    return lambda token: tokenizer.decode([token])


def _highlighted(session: Session):
    return figures.highlighted_tokens(session.prompt_text, session.pieces, [r.chosen_prob for r in session.records])


def _inspect(session: Session, tokenizer, step: int):
    if not session.records:
        return placeholder("Generate (sample or greedy) to see each step's candidates here.")
    _, record = session.record(step)
    stages = figures.STAGES if record.probs["penalty"] != record.probs["raw"] \
        else tuple(s for s in figures.STAGES if s != "penalty")
    return figures.stage_bars(record, _label(tokenizer), stages)


def _slider(session: Session):
    last = max(len(session.records) - 1, 0)
    return gr.Slider(minimum=0, maximum=max(last, 1), value=last, step=1, interactive=bool(session.records))


def _outputs(notices, session: Session, tokenizer, streaming: bool = False, info: str = "", tree=None,
             compare=None):
    """The tab's outputs in order: notice, text, step slider, bars, tree, comparison text, session."""
    return (
        "\n\n".join([*(f"⚠️ {n}" for n in notices), *([info] if info else [])]),
        _highlighted(session),
        gr.skip() if streaming else _slider(session),
        gr.skip() if streaming else _inspect(session, tokenizer, len(session.records) - 1),
        tree if tree is not None else gr.skip(),
        compare if compare is not None else gr.skip(),
        session,
    )


def _request(model_label, *settings):
    model, tokenizer, loaded = use.load(model_label)
    request = use.check(model_label, tokenizer, model.config.max_len, *settings)
    return model, tokenizer, request, [n for n in (loaded, *request.notices) if n]


@cached
@handler
def generate(model_label, prompt, mode, temperature, top_k, top_p, min_p, repetition_penalty, max_new_tokens,
             seed, width, length_penalty):
    """A language model continues a prompt: streamed token by token (sample, greedy) with each step's
    candidates, or beam search with its tree.

    Args:
        model_label: "Shakespeare LM (shipped)" or GPT-2 (needs the Hugging Face Hub)
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
    """
    model, tokenizer, request, notices = _request(model_label, prompt, mode, temperature, top_k, top_p, min_p,
                                                  repetition_penalty, max_new_tokens, seed, width, length_penalty)
    last = None
    for last in use.run(model, tokenizer, request):
        if isinstance(last, use.BeamRun):
            yield _beam(last, tokenizer, request, notices)
        else:
            waiting = "Running beam search…" if request.mode == "beam" else ""
            yield _outputs(notices, last, tokenizer, streaming=True, info=waiting)
    if isinstance(last, Session):
        yield _outputs(notices, last, tokenizer)


def _beam(beam: use.BeamRun, tokenizer, request: use.Request, notices: list[str]):
    """Beam search's best text in the main output, its tree, and a text sampled with the current settings."""
    label, result = _label(tokenizer), beam.result
    info = (f"Beam search (width {request.width}) kept the text below, cumulative log-probability "
            f"{result.best.logprob:.2f}. Below its tree: a text sampled with the current settings.")
    out = _outputs(notices, beam.session, tokenizer, info=info, tree=figures.beam_tree(result, label, request.width),
                   compare=_highlighted(beam.sampled))
    return (out[0], figures.beam_highlights(request.prompt_text, result, label), *out[2:])


@cached
@handler
def beam_view(model_label, prompt, mode, temperature, top_k, top_p, min_p, repetition_penalty, max_new_tokens,
              seed, width, length_penalty):
    """The beam tree and a sampled text for the current settings (run when the beam accordion opens)."""
    model, tokenizer, request, _ = _request(model_label, prompt, "beam", temperature, top_k, top_p, min_p,
                                            repetition_penalty, max_new_tokens, seed, width, length_penalty)
    return _beam(use.beam_run(model, tokenizer, request), tokenizer, request, [])[4:6]


@handler
def step(session: Session | None, model_label, prompt, mode, temperature, top_k, top_p, min_p, repetition_penalty,
         max_new_tokens, seed, width, length_penalty):
    """One more token: continue the current text, or start one if the prompt or a setting changed."""
    model, tokenizer, request, notices = _request(model_label, prompt, mode, temperature, top_k, top_p, min_p,
                                                  repetition_penalty, max_new_tokens, seed, width, length_penalty)
    session = use.step(model, tokenizer, request, session)
    return _outputs([*notices, session.notice] if session.notice else notices, session, tokenizer)


@handler
def inspect(session: Session | None, model_label, step_index):
    """The candidate bars of one step of the current text."""
    if session is None:
        return placeholder("Generate (sample or greedy) to see each step's candidates here.")
    _, tokenizer, _ = use.load(session.key[0] if session.key else model_label)  # the model that wrote the text
    return _inspect(session, tokenizer, step_index or 0)


def select_token(session: Session | None, model_label, evt: gr.SelectData):
    """Clicking a generated token shows its step (the prompt is segment 0)."""
    if session is None or not session.records or not isinstance(evt.index, int) or evt.index < 1:
        return gr.skip(), gr.skip()
    step_index = min(evt.index - 1, len(session.records) - 1)
    return gr.Slider(value=step_index), inspect(session, model_label, step_index)


@cached
@handler
def contrast(model_label, prompt, seed):
    """The same prompt and seed at temperatures 0.2 / 0.8 / 1.5, no other cuts."""
    texts, loaded = [], ""
    for temperature in CONTRAST_TEMPERATURES:
        model, tokenizer, request, notices = _request(model_label, prompt, "sample", temperature, 0, 1.0, 0.0, 1.0,
                                                      CONTRAST_NEW_TOKENS, seed)
        loaded = "\n\n".join(notices)
        texts.append(_highlighted(use.sampled(model, tokenizer, request)))
    return (loaded, *texts)


# ---------------------------------------------------------------- layout


def build() -> View:
    with gr.Tab("Generate", id="generate"):
        with gr.Column(elem_classes=["lecture-hide"]):
            gr.Markdown("### Generate: how a language model picks the next token")
            with gr.Accordion("What am I looking at?", open=False):
                gr.Markdown(WHAT)
        session = gr.State(None)
        with gr.Row():
            with gr.Column(scale=2):
                model_label = gr.Radio(list(MODELS), value=SHIPPED, label="Model")
                prompt = gr.Textbox("ROMEO:\n", lines=2, label="Prompt", placeholder="Empty: start from a new line")
                with gr.Row():  # the main buttons first: on a projector they must be on the first screen
                    run = gr.Button("Generate", variant="primary", elem_id="generate-run")
                    one = gr.Button("Step: one more token")
                mode = gr.Radio(list(MODES), value="sample", label="Decoding")
                temperature = gr.Slider(0, 2, value=0.8, step=0.05, label="Temperature",
                                        info="0 = greedy; below 1 sharper, above 1 flatter")
                with gr.Row():
                    max_new_tokens = gr.Slider(1, MAX_NEW_TOKENS, value=80, step=1, label="New tokens",
                                               info=f"beam search: at most {BEAM_MAX_NEW_TOKENS}")
                    seed = gr.Number(0, precision=0, label="Seed")
                with gr.Accordion("Cut the tail: top-k, top-p, min-p, repetition penalty", open=False):
                    top_k = gr.Slider(0, 200, value=0, step=1, label="Top-k", info="0 = off")
                    top_p = gr.Slider(0.05, 1, value=1.0, step=0.01, label="Top-p", info="1 = off")
                    min_p = gr.Slider(0, 0.5, value=0.0, step=0.01, label="Min-p", info="0 = off")
                    repetition_penalty = gr.Slider(1, 2, value=1.0, step=0.05, label="Repetition penalty",
                                                   info="1 = off")
                with gr.Row():
                    width = gr.Slider(1, MAX_WIDTH, value=4, step=1, label="Beam width")
                    length_penalty = gr.Slider(0, 2, value=1.0, step=0.1, label="Length penalty",
                                               info="No effect here: these models never end a text, "
                                                    "so all beams have one length")
            with gr.Column(scale=3):
                notice = gr.Markdown()
                text = gr.HighlightedText(label="Text (darker = more probable when picked; click a token)",
                                          show_legend=False, show_inline_category=False, elem_id="generated-text",
                                          elem_classes=["flowing-text"])
                step_slider = gr.Slider(0, 1, value=0, step=1, label="Step to inspect", interactive=False)
                bars = gr.Plot(label="Top candidates through each stage")
        with gr.Accordion("Beam search vs sampling", open=False) as beam_box:
            tree = gr.Plot(label="Beam tree (hover a node for its log-probabilities)")
            compare = gr.HighlightedText(label="Sampled text: same prompt, current settings and seed",
                                         show_legend=False, show_inline_category=False, elem_classes=["flowing-text"])
        with gr.Accordion("Temperature 0.2 / 0.8 / 1.5, same prompt and seed", open=False) as contrast_box:
            contrast_run = gr.Button("Compare temperatures")
            contrast_notice = gr.Markdown()
            with gr.Row():
                cold, warm, hot = (gr.HighlightedText(label=f"T = {t}", show_legend=False, show_inline_category=False,
                                                      elem_classes=["flowing-text"])
                                   for t in CONTRAST_TEMPERATURES)

        inputs = [model_label, prompt, mode, temperature, top_k, top_p, min_p, repetition_penalty, max_new_tokens,
                  seed, width, length_penalty]
        outputs = [notice, text, step_slider, bars, tree, compare, session]
        with gr.Column(elem_classes=["lecture-hide"]):
            gr.Examples(
                [[SHIPPED, *example] for example in EXAMPLES],
                [model_label, prompt, mode, temperature, top_k, top_p, min_p, repetition_penalty, max_new_tokens,
                 seed, width],
                label="Examples: the same prompt cooler and hotter, cut by top-k/top-p, greedy with and without a "
                      "repetition penalty, and beam search",
            )
        run.click(generate, inputs, outputs, api_name="generate")
        prompt.submit(generate, inputs, outputs, api_name=False)
        one.click(step, [session, *inputs], outputs, api_name="generate_step")
        step_slider.input(inspect, [session, model_label, step_slider], bars, api_name="generate_inspect")
        text.select(select_token, [session, model_label], [step_slider, bars], api_name=False)
        contrast_run.click(contrast, [model_label, prompt, seed], [contrast_notice, cold, warm, hot],
                           api_name="generate_temperatures")
        # no accordion opens on empty plots: opening one runs its view with the current settings
        beam_box.expand(beam_view, inputs, [tree, compare], api_name=False)
        contrast_box.expand(contrast, [model_label, prompt, seed], [contrast_notice, cold, warm, hot], api_name=False)
    return View(generate, inputs, outputs, "generate")
