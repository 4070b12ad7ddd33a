"""The Generate tab's use cases: a language model's next-token distribution, turned into text step by step.

`check` applies the input policy to a prompt and the sampling knobs; `generation` streams a
sampled or greedy text (one `Session` that grows token by token) and `beam` runs beam
search. A seeded request is deterministic, so its finished text is cached: a lecture hall
asking for the same seeded sample computes it once.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from i18n import Message
from transformer_core import (
    BeamResult,
    Sampler,
    SamplingConfig,
    SamplingError,
    StepRecord,
    beam_search_lm,
    next_token_logits,
)
from transformer_core.decoding.beam import MAX_WIDTH

from . import llms, models, reading, store
from .cache import RunCache
from .policy import InputError, clamp, fit_tokens, quoted, truncate

SHIPPED = Message("generate.model.shipped")
GPT2 = models.GPT2_LABEL  # the one GPT-2 label, as on the Attention tab
TANG = Message("generate.model.tang")
SMOLLM2 = Message("generate.model.smollm2")
GEMMA = Message("generate.model.gemma")
# the shipped language models' and the real LLMs' picker names; any other language model in the model folder is
# offered under its registry label (see `choices`)
MODELS = {SHIPPED: "shakespeare-lm", TANG: "tang-poems-char", SMOLLM2: llms.SMOLLM2.name, GEMMA: llms.GEMMA3.name,
          GPT2: store.GPT2}
# a language model without an end token gives every beam the same length, so no length penalty can change
# their ranking (it does for a model that ends its texts: the real LLMs)
NO_END_TOKEN = Message("generate.no_end_token")
# a poem of the Tang LM ends at a blank line (its training text separates poems so): the text stops there
STOP_AT = {"tang-poems-char": "\n\n"}
MODES = ("sample", "greedy", "beam")
MAX_NEW_TOKENS = 200
BEAM_MAX_NEW_TOKENS = 40  # every beam step is drawn; longer trees stop being readable
EMPTY_PROMPT = "\n"  # an empty prompt starts the text from a new line
# What one request may ask of a real LLM (~0.05-0.1 s of a core a token here): the prompt's last tokens it reads,
# and the seconds its generation may run before it stops with a notice. Their new tokens are MAX_NEW_TOKENS too.
LLM_PROMPT_TOKENS = 512
LLM_SECONDS = llms.LANE_SECONDS


def choices() -> dict[str, str]:
    """The Generate picker, from the one registry: the shipped language models by their names, then any other
    language model in the model folder, GPT-2 last: label -> checkpoint name."""
    found = models.choices(arch="DecoderLM")
    named = {label: name for label, name in MODELS.items() if name in found.values()}
    others = {label: name for label, name in found.items() if name not in named.values()}
    return {**{k: v for k, v in named.items() if v != store.GPT2}, **others, GPT2: store.GPT2}


def checkpoint(label: str) -> str | None:
    """The checkpoint name behind a Generate picker label or checkpoint name (None for neither)."""
    offered = choices()
    if label in offered.values():
        return label
    return offered.get(label, MODELS.get(label, models.ALIASES.get(label)))


def load(label: str) -> tuple[object, object, str]:
    """(model, tokenizer, notice) for a picker label; GPT-2 falls back to the shipped model offline."""
    name = checkpoint(label)
    if name is None:
        raise InputError(Message("generate.unknown_model", label=quoted(label), models=", ".join(choices())))
    try:
        model, tokenizer = models.load(name)
        return model, tokenizer, ""
    except InputError as e:
        if name != store.GPT2:
            raise
        model, tokenizer, _ = load(SHIPPED)
        # the store's reason as a message, so the page says it in its own language
        why = e.args[0] if e.args and isinstance(e.args[0], Message) else str(e).rstrip(".")
        return model, tokenizer, Message("generate.gpt2_fallback", error=why)


def stop_ids(name: str, tokenizer) -> tuple[int, ...]:
    """The ids of the tokens that end a text or a turn of checkpoint `name` (its config's "stop_tokens": a real
    LLM's <|im_end|>, <eos>); () for a model that never ends one."""
    try:
        tokens = store.config(name).get("stop_tokens") or ()
    except Exception:  # noqa: BLE001 -- GPT-2 offline, a folder gone: no end token known
        return ()
    return tuple(i for i in (tokenizer.token_to_id(t) for t in tokens) if i is not None)


def chat_template(name: str) -> str | None:
    """The chat template (Jinja) checkpoint `name` ships, None for a model that has none."""
    try:
        return store.config(name).get("chat_template")
    except Exception:  # noqa: BLE001
        return None


QUESTION = "\x00question\x00"  # stands for the person's text while the template is rendered


def chat_prompt(template: str, tokenizer, question: str) -> tuple[str, list[int], int]:
    """(the prompt the template writes around `question`, its ids, how many of them the template wrote).

    The template is rendered in Jinja's sandbox, as transformers renders it; its own text is read with its
    special tokens as control tokens (<|im_start|>), and the question as text, so a question that spells a
    control token stays text."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    rendered = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True).from_string(template).render(
        messages=[{"role": "user", "content": QUESTION}], add_generation_prompt=True)
    before, _, after = rendered.partition(QUESTION)
    around = tokenizer.encode_template(before), tokenizer.encode_template(after)
    asked = tokenizer.encode(question, add_special_tokens=False)
    return before + question + after, [*around[0], *asked, *around[1]], len(around[0]) + len(around[1])


@dataclass(frozen=True)
class Request:
    """Validated inputs: prompt ids, sampling config, limits, and what was changed to fit."""

    model: str
    prompt_text: str
    prompt_ids: tuple[int, ...]
    config: SamplingConfig
    mode: str
    max_new_tokens: int
    width: int
    length_penalty: float
    notices: tuple[str, ...]
    stops: tuple[int, ...] = ()  # the ids that end the text (a real LLM's end of turn)

    @property
    def key(self) -> tuple:
        """Everything that changes the result (the notices do not)."""
        return (*self.text_key, self.max_new_tokens, self.width, self.length_penalty)

    @property
    def text_key(self) -> tuple:
        """What decides the next token of a text: Step continues a text while these stay the same
        (more New tokens, or beam settings, do not change it)."""
        return (self.model, self.prompt_ids, self.config, self.mode)


def check(label: str, tokenizer, max_len: int, prompt, mode, temperature, top_k, top_p, min_p,
          repetition_penalty, max_new_tokens, seed, width=4, length_penalty=1.0, chat=False) -> Request:
    """Turn raw UI/API inputs into a Request, or raise InputError saying what to fix. With `chat`, a model that
    ships a chat template reads the prompt as a question inside it."""
    notices: list[str] = []
    if mode not in MODES:
        raise InputError(Message("generate.bad_mode", modes=", ".join(MODES), mode=quoted(mode)))
    name = checkpoint(label)
    if name in llms.LLMS:  # a real LLM reads the end of a long prompt: its prefill is its slowest step
        max_len = min(max_len, LLM_PROMPT_TOKENS + (max_new_tokens_limit(mode) if mode == "beam" else 0))
    text, cut = truncate(prompt, keep="last")  # the model continues from the end of the prompt
    text, simplified = models.read_as(name, text)
    notices.extend(n for n in (cut, simplified) if n)
    if not text:
        text = EMPTY_PROMPT
        notices.append(Message("generate.empty_prompt"))
    limit = max_new_tokens_limit(mode)
    max_new = clamp(max_new_tokens, 1, limit, Message("setting.new_tokens_beam" if mode == "beam" else "setting.new_tokens"),
                    notices)
    width = clamp(width, 1, MAX_WIDTH, Message("setting.beam_width"), notices)
    # beam search keeps every beam in the KV cache, so prompt + new tokens must fit the context
    room = max_len - max_new if mode == "beam" else max_len
    spans = tokenizer.tokens(text)
    tokens = fit_tokens(tokenizer, text, room, keep="last", spans=spans)
    # Shakespeare's LM given a Chinese poem continues in English: it says so, and names the LM that reads it
    notices.append(reading.unreadable(checkpoint(label), tokenizer, text, spans, choices()))
    ids = tokens.ids
    if tokens.notice:
        notices.append(Message("generate.prompt_cut", n=len(tokenizer.encode(text)), room=room, max_len=max_len))
        text = tokenizer.decode(ids)
    template = chat_template(name) if _checked(chat) else None
    if _checked(chat) and template is None:
        notices.append(Message("generate.no_chat_template"))
    elif template is not None:
        text, ids, n_template = chat_prompt(template, tokenizer, text)
        notices.append(Message("generate.chat", n_template=n_template, n_question=len(ids) - n_template))
    try:
        config = SamplingConfig(
            temperature=0.0 if mode == "greedy" else float(temperature),
            top_k=clamp(top_k or 0, 0, 10**6, Message("setting.top_k"), notices), top_p=float(top_p), min_p=float(min_p or 0.0),
            repetition_penalty=float(repetition_penalty or 1.0), seed=clamp(seed, 0, 2**32 - 1, Message("setting.seed"), notices),
        )
    except (SamplingError, TypeError, ValueError) as e:
        raise InputError(Message("generate.out_of_range", error=e)) from e
    try:
        length_penalty = float(length_penalty or 0.0)
    except (TypeError, ValueError):
        raise InputError(Message("generate.bad_length_penalty", value=quoted(length_penalty))) from None
    stops = stop_ids(name, tokenizer)
    if mode == "beam" and length_penalty != 1.0 and not stops:
        notices.append(NO_END_TOKEN)
    return Request(label, text, tuple(ids), config, mode, max_new, width, length_penalty,
                   tuple(n for n in notices if n), stops)


def max_new_tokens_limit(mode: str) -> int:
    return BEAM_MAX_NEW_TOKENS if mode == "beam" else MAX_NEW_TOKENS


def _checked(value) -> bool:
    """A checkbox's value from any client: True, or a string a link or API client may send ("1", "true")."""
    return value is True or (isinstance(value, str) and value.strip().lower() in ("1", "true", "yes", "on"))


@dataclass
class Session:
    """The text so far and each step's record: what Step continues and the step bars show."""

    key: tuple = ()
    prompt_text: str = ""
    ids: list[int] = field(default_factory=list)  # prompt + generated
    n_prompt: int = 0
    pieces: list[str] = field(default_factory=list)
    records: list[StepRecord] = field(default_factory=list)
    rng_state: object = None  # the sampler's generator, so Step continues the same random stream
    notice: str = ""  # what Step did that the person did not ask for (started again from the prompt)

    def record(self, step) -> tuple[int, StepRecord]:
        """(step clamped to the text's steps, that step's record); the session must have records."""
        step = clamp(step, 0, len(self.records) - 1, "Step")
        return step, self.records[step]

    @property
    def last_step(self) -> int:
        """The index of the latest step (0 before the first)."""
        return max(len(self.records) - 1, 0)

    def step_of_piece(self, index: int) -> int:
        """The step that wrote piece `index` of the text (the prompt is piece 0), within the text's steps."""
        return clamp(index - 1, 0, self.last_step, "Step")


def new_session(request: Request) -> Session:
    return Session(key=request.text_key, prompt_text=request.prompt_text, ids=list(request.prompt_ids),
                   n_prompt=len(request.prompt_ids))


def sample_steps(model, tokenizer, session: Session, config: SamplingConfig, n: int,
                 stop: str = "", stops: tuple[int, ...] = (), seconds: float | None = None) -> Iterator[Session]:
    """Advance `session` by n sampled tokens, yielding it after each one (KV cache reused within the call);
    with `stop`, the text ends early once the new text ends with it; with `stops`, once a token of them is
    chosen (an end of turn); with `seconds`, once that much time has passed (said in the session's notice)."""
    sampler = Sampler(config)
    sampler.step = len(session.records)
    if session.rng_state is not None:
        sampler.generator.set_state(session.rng_state)
    cache, started = None, time.monotonic()
    for _ in range(n):
        if seconds is not None and time.monotonic() - started > seconds:
            session.notice = Message("generate.time_limit", seconds=seconds, n=len(session.records))
            return
        logits, cache = next_token_logits(model, session.ids, cache)
        token, record = sampler(logits, session.ids)
        session.ids.append(token)
        session.pieces.append(tokenizer.decode([token]))
        session.records.append(record)
        session.rng_state = sampler.generator.get_state()
        yield session
        if token in stops or stop and "".join(session.pieces[-len(stop):]).endswith(stop):
            return


_texts: RunCache[Session] = RunCache(size=64)


def generation(model, tokenizer, request: Request) -> Iterator[Session]:
    """Stream a sampled or greedy text, one Session per new token; the finished one comes from the
    cache when this request ran before.

    Every request is seeded (the seed is part of the key), so equal requests give equal texts.
    Concurrent equal requests share one computation: the first streams it, the others get the end.
    """

    def produce() -> Iterator[Session]:
        name = checkpoint(request.model)
        steps = sample_steps(model, tokenizer, new_session(request), request.config, request.max_new_tokens,
                             STOP_AT.get(name, ""), request.stops, seconds(request))
        if name not in llms.LLMS:
            yield from steps
            return
        with llms.lane(name):  # a real LLM's text is written in its lane, at a low priority; a cached one is not
            yield from llms.behind(steps)

    # the cache keeps a copy: the streamed session is the caller's to extend (Step)
    yield from _texts.stream(models.key(checkpoint(request.model), request.key), produce, keep=copy.deepcopy)


def step(model, tokenizer, request: Request, session: Session | None) -> Session:
    """One more token: continue `session`, or start one (saying so) if the prompt, model or a sampling
    setting changed; more New tokens or other beam settings keep the text going."""
    if request.mode == "beam":
        raise InputError(Message("generate.step_beam"))
    if session is None or session.key != request.text_key or not session.ids:
        restarted = session is not None and bool(session.records)
        session = new_session(request)
        if restarted:
            session.notice = Message("generate.step_restarted")
    else:
        session = copy.deepcopy(session)
        session.notice = ""
    with llms.lane(checkpoint(request.model)):
        steps = sample_steps(model, tokenizer, session, request.config, 1, stops=request.stops)
        for session in (llms.behind(steps) if checkpoint(request.model) in llms.LLMS else steps):
            pass
    return session


def seconds(request: Request) -> float | None:
    """How long the request's generation may run: LLM_SECONDS for a real LLM, no bound for the small models."""
    return LLM_SECONDS if checkpoint(request.model) in llms.LLMS else None


@dataclass(frozen=True)
class BeamRun:
    """Beam search's result for a request, beside a text sampled with the same settings."""

    result: BeamResult
    sampled: Session
    session: Session  # the prompt alone: beam search keeps no sampling records, so the step bars stay empty


def run(model, tokenizer, request: Request) -> Iterator[Session | BeamRun]:
    """What the Generate button shows, as it comes: sample and greedy stream one Session per token;
    beam search yields the prompt alone (while it runs), then its BeamRun."""
    if request.mode != "beam":
        yield from generation(model, tokenizer, request)
        return
    yield new_session(request)
    yield beam_run(model, tokenizer, request)


def beam_run(model, tokenizer, request: Request) -> BeamRun:
    return BeamRun(beam(model, request), sampled(model, tokenizer, request), Session(prompt_text=request.prompt_text))


def beam(model, request: Request) -> BeamResult:
    """Beam search of the request's width and length penalty (a real LLM's in its lane)."""
    def search() -> BeamResult:
        return beam_search_lm(model, list(request.prompt_ids), request.width, request.max_new_tokens,
                              request.length_penalty, eos_id=request.stops or None)

    if checkpoint(request.model) not in llms.LLMS:
        return search()
    with llms.lane(checkpoint(request.model)):
        return llms.done_behind(search)


def sampled(model, tokenizer, request: Request) -> Session:
    """The finished text of a sampled/greedy request (through the cache), safe to extend."""
    session = None
    for session in generation(model, tokenizer, request):
        pass
    return copy.deepcopy(session)
