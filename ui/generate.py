"""The Generate tab: a language model's next-token distribution, and every knob that turns it into text.

Lesson: a language model only ever gives a probability for each possible next token.
Temperature reshapes that distribution, top-k / top-p / min-p cut its tail, a seeded
draw picks one token, and the loop repeats. Greedy decoding always takes the top
token; beam search keeps several partial texts alive and prunes the rest. Each step
here can be opened to see the distribution before and after every cut.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import gradio as gr

from transformer_core import (
    CheckpointError,
    Sampler,
    SamplingConfig,
    SamplingError,
    StepRecord,
    beam_search_lm,
    next_token_logits,
)
from transformer_core.beam import MAX_WIDTH
from transformer_core.tokenization import TextTokenizer
from ui import store
from ui.common import truncate
from views import sampling as views

SHIPPED = "Shakespeare LM (shipped)"
GPT2 = "GPT-2 (downloads from the Hugging Face Hub)"
MODELS = {SHIPPED: "shakespeare-lm", GPT2: store.GPT2_REPO}
MODES = ("sample", "greedy", "beam")
MAX_NEW_TOKENS = 200
BEAM_MAX_NEW_TOKENS = 40  # every beam step is drawn; longer trees stop being readable
CONTRAST_TEMPERATURES = (0.2, 0.8, 1.5)
CONTRAST_NEW_TOKENS = 60
EMPTY_PROMPT = "\n"  # an empty prompt starts the text from a new line

EXAMPLES = [
    # prompt, mode, temperature, top-k, top-p, min-p, repetition penalty, new tokens, seed, beam width
    ["ROMEO:\n", "sample", 0.8, 0, 1.0, 0.0, 1.0, 80, 0, 4],
    ["ROMEO:\n", "sample", 1.5, 0, 1.0, 0.0, 1.0, 80, 0, 4],
    ["ROMEO:\n", "sample", 1.5, 40, 0.9, 0.0, 1.0, 80, 0, 4],
    ["To be, or not to be,", "greedy", 0.0, 0, 1.0, 0.0, 1.0, 60, 0, 4],
    ["To be, or not to be,", "greedy", 0.0, 0, 1.0, 0.0, 1.5, 60, 0, 4],
    ["KING HENRY:\nNow, lords,", "beam", 1.0, 0, 1.0, 0.0, 1.0, 20, 0, 4],
]

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


# ---------------------------------------------------------------- models


def load(label: str) -> tuple[object, TextTokenizer, str]:
    """(model, tokenizer, notice) for a picker label; GPT-2 falls back to the shipped model offline."""
    if label == GPT2:
        try:
            model, tokenizer = store.gpt2()
            return model, tokenizer, ""
        except CheckpointError as e:  # offline and not cached, or unreadable: say so, keep working
            model, tokenizer, _ = load(SHIPPED)
            return model, tokenizer, f"{e} Using the shipped Shakespeare model."
    if label not in MODELS:
        raise gr.Error(f"Unknown model {label!r}; pick one of: {', '.join(MODELS)}.")
    try:
        return store.model(MODELS[label]), store.tokenizer(MODELS[label]), ""
    except CheckpointError as e:
        raise gr.Error(f"The shipped language model could not be loaded: {e}") from e


# ---------------------------------------------------------------- input checks


@dataclass
class Request:
    """Validated inputs: prompt ids, sampling config, limits, and what was changed to fit."""

    prompt_text: str
    prompt_ids: list[int]
    config: SamplingConfig
    mode: str
    max_new_tokens: int
    width: int
    length_penalty: float
    notices: list[str]


def _clamp(value, low: int, high: int, name: str, notices: list[str]) -> int:
    try:
        number = int(round(float(value if value is not None else low)))
    except (TypeError, ValueError, OverflowError) as e:
        raise gr.Error(f"{name} must be a whole number between {low} and {high}, not {value!r}.") from e
    clamped = min(max(number, low), high)
    if clamped != number:
        notices.append(f"{name} can be {low} to {high}; used {clamped}.")
    return clamped


def check(tokenizer, max_len: int, prompt, mode, temperature, top_k, top_p, min_p, repetition_penalty,
          max_new_tokens, seed, width=4, length_penalty=1.0) -> Request:
    """Turn raw UI/API inputs into a Request, or raise gr.Error saying what to fix."""
    notices: list[str] = []
    if mode not in MODES:
        raise gr.Error(f"Decoding must be one of {', '.join(MODES)}, not {mode!r}.")
    text, cut = truncate(prompt)
    if cut:
        notices.append(cut)
    if not text:
        text = EMPTY_PROMPT
        notices.append("The prompt is empty, so the text starts from a new line.")
    limit = BEAM_MAX_NEW_TOKENS if mode == "beam" else MAX_NEW_TOKENS
    max_new = _clamp(max_new_tokens, 1, limit, "New tokens" + (" (beam search)" if mode == "beam" else ""), notices)
    width = _clamp(width, 1, MAX_WIDTH, "Beam width", notices)
    ids = tokenizer.encode(text)
    # beam search keeps every beam in the KV cache, so prompt + new tokens must fit the context
    room = max_len - max_new if mode == "beam" else max_len
    if len(ids) > room:
        notices.append(f"The prompt is {len(ids)} tokens; the model reads at most {room} here "
                       f"(context {max_len}), so only its last {room} tokens are used.")
        ids = ids[-room:]
        text = tokenizer.decode(ids)
    try:
        config = SamplingConfig(
            temperature=0.0 if mode == "greedy" else float(temperature),
            top_k=int(top_k or 0), top_p=float(top_p), min_p=float(min_p or 0.0),
            repetition_penalty=float(repetition_penalty or 1.0), seed=_clamp(seed, 0, 2**32 - 1, "Seed", notices),
        )
    except (SamplingError, TypeError, ValueError) as e:
        raise gr.Error(f"{e}. Move the slider back into its range.") from e
    return Request(text, ids, config, mode, max_new, width, float(length_penalty or 0.0), notices)


# ---------------------------------------------------------------- a generation session


@dataclass
class Session:
    """What the tab remembers between clicks: the text so far and each step's record."""

    key: tuple = ()
    prompt_text: str = ""
    ids: list[int] = field(default_factory=list)  # prompt + generated
    n_prompt: int = 0
    pieces: list[str] = field(default_factory=list)
    records: list[StepRecord] = field(default_factory=list)
    rng_state: object = None  # the sampler's generator, so Step continues the same random stream

    def highlighted(self):
        return views.highlighted_tokens(self.prompt_text, self.pieces, [r.chosen_prob for r in self.records])


def _token_label(tokenizer):
    return lambda token: tokenizer.decode([token])


def _sample_steps(model, tokenizer, session: Session, config: SamplingConfig, n: int):
    """Advance `session` by n sampled tokens, yielding after each one (KV cache reused within the call)."""
    sampler = Sampler(config)
    sampler.step = len(session.records)
    if session.rng_state is not None:
        sampler.generator.set_state(session.rng_state)
    cache = None
    for _ in range(n):
        logits, cache = next_token_logits(model, session.ids, cache)
        token, record = sampler(logits, session.ids)
        session.ids.append(token)
        session.pieces.append(tokenizer.decode([token]))
        session.records.append(record)
        session.rng_state = sampler.generator.get_state()
        yield


def _inspect(session: Session, tokenizer, step: int):
    if not session.records:
        return views.empty("Generate (sample or greedy) to see each step's candidates here.")
    step = min(max(int(step), 0), len(session.records) - 1)
    stages = views.STAGES if session.records[step].probs["penalty"] != session.records[step].probs["raw"] \
        else tuple(s for s in views.STAGES if s != "penalty")
    return views.stage_bars(session.records[step], _token_label(tokenizer), stages)


def _slider(session: Session):
    last = max(len(session.records) - 1, 0)
    return gr.Slider(minimum=0, maximum=max(last, 1), value=last, step=1, interactive=bool(session.records))


def _outputs(notices: list[str], session: Session, tokenizer, streaming: bool = False, info: str = "",
             tree=None, compare=None):
    """The tab's outputs in order: notice, text, step slider, bars, tree, comparison text, session."""
    return (
        "\n\n".join([*(f"⚠️ {n}" for n in notices), *([info] if info else [])]),
        session.highlighted(),
        gr.skip() if streaming else _slider(session),
        gr.skip() if streaming else _inspect(session, tokenizer, len(session.records) - 1),
        tree if tree is not None else gr.skip(),
        compare if compare is not None else gr.skip(),
        session,
    )


def generate(model_label, prompt, mode, temperature, top_k, top_p, min_p, repetition_penalty, max_new_tokens,
             seed, width, length_penalty):
    """Main endpoint: stream a sampled/greedy text token by token, or run beam search and draw its tree."""
    model, tokenizer, loaded = load(model_label)
    request = check(tokenizer, model.config.max_len, prompt, mode, temperature, top_k, top_p, min_p,
                    repetition_penalty, max_new_tokens, seed, width, length_penalty)
    notices = [n for n in (loaded, *request.notices) if n]
    session = Session(key=_key(model_label, request), prompt_text=request.prompt_text, ids=list(request.prompt_ids),
                      n_prompt=len(request.prompt_ids))
    if mode == "beam":
        yield _outputs(notices, session, tokenizer, streaming=True, info="Running beam search…")
        yield _beam(model, tokenizer, request, notices)
        return
    for _ in _sample_steps(model, tokenizer, session, request.config, request.max_new_tokens):
        yield _outputs(notices, session, tokenizer, streaming=True)
    yield _outputs(notices, session, tokenizer)


def _beam(model, tokenizer, request: Request, notices: list[str]):
    """Beam search's best text in the main output, its tree, and a text sampled with the current settings."""
    result = beam_search_lm(model, request.prompt_ids, request.width, request.max_new_tokens,
                            request.length_penalty)
    label = _token_label(tokenizer)
    sampled = Session(prompt_text=request.prompt_text, ids=list(request.prompt_ids))
    for _ in _sample_steps(model, tokenizer, sampled, request.config, request.max_new_tokens):
        pass
    beams = Session(prompt_text=request.prompt_text)  # no sampling records: the step bars stay empty
    info = (f"Beam search (width {request.width}) kept the text below, cumulative log-probability "
            f"{result.best.logprob:.2f}. Below its tree: a text sampled with the current settings.")
    out = _outputs(notices, beams, tokenizer, info=info, tree=views.beam_tree(result, label, request.width),
                   compare=sampled.highlighted())
    return (out[0], views.beam_highlights(request.prompt_text, result, label), *out[2:])


def _key(model_label: str, request: Request) -> tuple:
    """What must match for Step to continue the current text rather than start a new one."""
    return model_label, request.prompt_text, request.mode, request.config


def step(session: Session | None, model_label, prompt, mode, temperature, top_k, top_p, min_p, repetition_penalty,
         max_new_tokens, seed, width, length_penalty):
    """One more token: continue the current text, or start one if the prompt or a setting changed."""
    if mode == "beam":
        raise gr.Error("Step works with sample and greedy decoding; beam search runs all its steps at once.")
    model, tokenizer, loaded = load(model_label)
    request = check(tokenizer, model.config.max_len, prompt, mode, temperature, top_k, top_p, min_p,
                    repetition_penalty, max_new_tokens, seed, width, length_penalty)
    notices = [n for n in (loaded, *request.notices) if n]
    key = _key(model_label, request)
    if session is None or session.key != key or not session.ids:
        session = Session(key=key, prompt_text=request.prompt_text, ids=list(request.prompt_ids),
                          n_prompt=len(request.prompt_ids))
    for _ in _sample_steps(model, tokenizer, session, request.config, 1):
        pass
    return _outputs(notices, session, tokenizer)


def inspect(session: Session | None, model_label, step_index):
    """The candidate bars of one step of the current text."""
    if session is None:
        return views.empty("Generate (sample or greedy) to see each step's candidates here.")
    _, tokenizer, _ = load(session.key[0] if session.key else model_label)  # the model that wrote the text
    return _inspect(session, tokenizer, step_index or 0)


def select_token(session: Session | None, model_label, evt: gr.SelectData):
    """Clicking a generated token shows its step (the prompt is segment 0)."""
    if session is None or not session.records or not isinstance(evt.index, int) or evt.index < 1:
        return gr.skip(), gr.skip()
    step_index = min(evt.index - 1, len(session.records) - 1)
    return gr.Slider(value=step_index), inspect(session, model_label, step_index)


def contrast(model_label, prompt, seed):
    """The same prompt and seed at temperatures 0.2 / 0.8 / 1.5, no other cuts."""
    model, tokenizer, loaded = load(model_label)
    texts = []
    for temperature in CONTRAST_TEMPERATURES:
        request = check(tokenizer, model.config.max_len, prompt, "sample", temperature, 0, 1.0, 0.0, 1.0,
                        CONTRAST_NEW_TOKENS, seed)
        session = Session(prompt_text=request.prompt_text, ids=list(request.prompt_ids))
        for _ in _sample_steps(model, tokenizer, session, request.config, request.max_new_tokens):
            pass
        texts.append(session.highlighted())
    return (loaded, *texts)


# ---------------------------------------------------------------- layout


def build() -> None:
    with gr.Tab("Generate", id="generate"):
        gr.Markdown("### Generate: how a language model picks the next token")
        with gr.Accordion("What am I looking at?", open=False):
            gr.Markdown(WHAT)
        session = gr.State(None)
        with gr.Row():
            with gr.Column(scale=2):
                model_label = gr.Radio(list(MODELS), value=SHIPPED, label="Model")
                prompt = gr.Textbox("ROMEO:\n", lines=3, label="Prompt", placeholder="Empty: start from a new line")
                mode = gr.Radio(list(MODES), value="sample", label="Decoding")
                temperature = gr.Slider(0, 2, value=0.8, step=0.05, label="Temperature",
                                        info="0 = greedy; below 1 sharper, above 1 flatter")
                top_k = gr.Slider(0, 200, value=0, step=1, label="Top-k", info="0 = off")
                top_p = gr.Slider(0.05, 1, value=1.0, step=0.01, label="Top-p", info="1 = off")
                min_p = gr.Slider(0, 0.5, value=0.0, step=0.01, label="Min-p", info="0 = off")
                repetition_penalty = gr.Slider(1, 2, value=1.0, step=0.05, label="Repetition penalty", info="1 = off")
                max_new_tokens = gr.Slider(1, MAX_NEW_TOKENS, value=80, step=1, label="New tokens",
                                           info=f"beam search: at most {BEAM_MAX_NEW_TOKENS}")
                seed = gr.Number(0, precision=0, label="Seed")
                with gr.Row():
                    width = gr.Slider(1, MAX_WIDTH, value=4, step=1, label="Beam width")
                    length_penalty = gr.Slider(0, 2, value=1.0, step=0.1, label="Length penalty")
                with gr.Row():
                    run = gr.Button("Generate", variant="primary")
                    one = gr.Button("Step: one more token")
            with gr.Column(scale=3):
                notice = gr.Markdown()
                text = gr.HighlightedText(label="Text (darker = more probable when picked; click a token)",
                                          show_legend=False, show_inline_category=False)
                step_slider = gr.Slider(0, 1, value=0, step=1, label="Step to inspect", interactive=False)
                bars = gr.Plot(label="Top candidates through each stage")
        with gr.Accordion("Beam search vs sampling", open=True):
            tree = gr.Plot(label="Beam tree (hover a node for its log-probabilities)")
            compare = gr.HighlightedText(label="Sampled text: same prompt, current settings and seed",
                                         show_legend=False, show_inline_category=False)
        with gr.Accordion("Temperature 0.2 / 0.8 / 1.5, same prompt and seed", open=False):
            contrast_run = gr.Button("Compare temperatures")
            contrast_notice = gr.Markdown()
            with gr.Row():
                cold, warm, hot = (gr.HighlightedText(label=f"T = {t}", show_legend=False, show_inline_category=False)
                                   for t in CONTRAST_TEMPERATURES)

        inputs = [model_label, prompt, mode, temperature, top_k, top_p, min_p, repetition_penalty, max_new_tokens,
                  seed, width, length_penalty]
        outputs = [notice, text, step_slider, bars, tree, compare, session]
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
