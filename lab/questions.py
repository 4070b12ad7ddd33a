"""Predict, then reveal: the lecturer asks the hall, every student commits to a guess, then the model answers.

A lecturer opens a question and gets a short code (students type it, or follow a link holding it) and a
secret only the lecturer's page keeps. Each student answers on their own page (a choice, a token, or a
number) and may change the answer until the reveal. The lecturer's page sees only how many answered; the
reveal shows the hall's histogram beside the model's real answer, which `QUESTIONS` computes from our
shipped checkpoints. Students never see the others' answers before the reveal and cannot reveal.

Everything lives in memory, bounded (`MAX_OPEN` questions, `MAX_ANSWERS` answers of at most
`MAX_ANSWER_CHARS` characters each, `MAX_CHANGES` changes per student) and vanishes when the question is
closed or has been open `OPEN_FOR_S` seconds (a lecturer who left). One lock guards the hall: an answer is
a dictionary write, cheap enough to run outside the app's queues.
"""

from __future__ import annotations

import hmac
import math
import secrets
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from i18n import Message

from .policy import InputError

MAX_OPEN = 64  # questions open at once on one server (a hall has one; a department a few)
MAX_ANSWERS = 1000  # students answering one question
MAX_ANSWER_CHARS = 40  # a number or a choice is short; longer is refused, not stored
MAX_CHANGES = 20  # a student may change their mind; a script sending 10,000 answers may not churn the hall
OPEN_FOR_S = 2 * 60 * 60  # a question its lecturer left open closes itself after a lecture's length
CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O or 1/I to misread from a projector
CODE_LENGTH = 5
MAX_BINS = 12  # a number question's histogram: the most common values, the rest together
OTHER_VALUES = "others"  # the label of that rest (views names it in the reader's language)


class QuestionError(InputError):
    """A request about a question that cannot be granted; the message says why (a Message)."""


@dataclass(frozen=True)
class Question:
    """One question for the hall. `kind`: "choice" (pick one of `choices`), "token" (click one of
    `choices`, a text's tokens) or "number". `answer` computes the model's real answer: the index of
    the right choice, or the number."""

    id: str
    chapter: str  # the seeds' chapter it belongs to (tokens, attention, masks, sampling, ...)
    kind: str
    answer: Callable[[], float | int]
    choices: Callable[[], list[str]] = lambda: []
    params: dict = field(default_factory=dict)  # fills the question's text: questions.<id> in the catalogue

    @property
    def prompt(self) -> Message:
        return Message(f"questions.q.{self.id}", **self.params)


# --- the model's real answers -----------------------------------------------------------------

LM = "shakespeare-lm"
ATTENTION_TEXT = "The cat sat on the mat because it was tired."
NEXT_PROMPT = "ROMEO:"
REVIEW = "A moving, beautifully acted film."
REVERSE_SOURCE = "1 2 3 4"


def _lm_config() -> dict:
    from . import store
    return store.config(LM)


def _token_count(text: str) -> int:
    from . import store
    return len(store.tokenizer(LM).encode(text))


def _attention_choices() -> list[str]:
    """The tokens up to "it" (the keys its causal row can attend to), numbered: "at" is there twice."""
    from .attention import attention_run
    labels = attention_run(LM, ATTENTION_TEXT).k_labels
    it = next(i for i, label in enumerate(labels) if label.strip() == "it")
    return [f"{i}:{_visible(label)}" for i, label in enumerate(labels[: it + 1])]


def _most_attended() -> int:
    from .attention import attention_run
    run = attention_run(LM, ATTENTION_TEXT)
    query = len(_attention_choices()) - 1
    return int(run.attn[-1, 0, 0, query].argmax())  # last layer, head 0, the query "it"


def _visible(token: str) -> str:
    """A token as a choice a student can read: a space or a line break drawn, not blank."""
    return token.replace(" ", "␣").replace("\n", "↵")


def _next_choices() -> list[str]:
    return [_visible(label) for label, _ in _next_candidates()]


def _next_candidates() -> list[tuple[str, float]]:
    """The LM's four likeliest next tokens after NEXT_PROMPT, in alphabetical order (the order gives nothing away)."""
    import torch

    from transformer_core import device_of
    from . import store
    model, tokenizer = store.load(LM)
    ids = tokenizer.encode(NEXT_PROMPT)
    with torch.no_grad():
        probs = model(torch.tensor([ids], device=device_of(model)))[0, -1].softmax(-1)
    top = probs.topk(4)
    return sorted((tokenizer.decode([int(i)]), float(p)) for p, i in zip(top.values, top.indices))


def _next_answer() -> int:
    candidates = _next_candidates()
    return max(range(len(candidates)), key=lambda i: candidates[i][1])


def _review_positive() -> int:
    from .sentiment import classify
    run = classify(REVIEW)
    return 0 if run.verdict == "positive" else 1  # choices: yes, no


def _reverse_choices() -> list[str]:
    return ["4 3 2 1", "1 2 3 4", "4 3 2", "1 2 3 4 4"]


def _reverse_answer() -> int:
    from .translate import translation
    out = " ".join(translation("reverse", REVERSE_SOURCE).output.replace(" ", ""))
    choices = _reverse_choices()
    return choices.index(out) if out in choices else 0


def _q_shape_choices() -> list[str]:
    c = _lm_config()
    return [f"(T=9, d_head={c['d_model'] // c['n_head']})", f"(T=9, d_model={c['d_model']})",
            f"(d_model={c['d_model']}, d_model={c['d_model']})", "(T=9, T=9)"]


def _yes_no() -> list[Message]:
    return [Message("questions.yes"), Message("questions.no")]


# the real LLMs (lab/llms.py): a question about one that is not made yet is refused with the command that makes it
SMOLLM2, GEMMA3 = "smollm2-135m-instruct", "gemma-3-270m"
PARIS_PROMPT = "The capital of France is"
SINK_SHARES = (0.05, 0.25, 0.5, 0.75)  # the choices of the attention-sink question


def _llm(name: str):
    from . import models
    return models.load(name)


def _paris_layer() -> int:
    """The first layer (0: the embedding) at which the logit lens of SmolLM2 puts " Paris" on top after the prompt."""
    import torch

    from transformer_core import device_of, logit_lens
    model, tokenizer = _llm(SMOLLM2)
    ids = tokenizer.encode(PARIS_PROMPT)
    _, run = model.run_with_trace(torch.tensor([ids], device=device_of(model)))
    top = logit_lens(model, run).top_ids[:, -1].tolist()
    paris = tokenizer.encode(" Paris")[0]
    return next((layer for layer, token in enumerate(top) if token == paris), len(top) - 1)


def _sink_answer() -> int:
    from transformer_core.analysis.modern import first_token_share
    import torch

    from transformer_core import device_of
    model, tokenizer = _llm(SMOLLM2)
    _, run = model.run_with_trace(torch.tensor([tokenizer.encode(PARIS_PROMPT)], device=device_of(model)))
    share = float(first_token_share(run.attention("decoder")[:, 0]).mean())
    return min(range(len(SINK_SHARES)), key=lambda i: abs(SINK_SHARES[i] - share))


def _sink_choices() -> list[str]:
    return [f"{share:.0%}" for share in SINK_SHARES]


def _capital_choices() -> list[str]:
    return ["Paris", "Lyon", "France", "London"]


def _capital_answer() -> int:
    from .generate import chat_prompt, chat_template
    from transformer_core import generate as greedy
    model, tokenizer = _llm(SMOLLM2)
    _, ids, _ = chat_prompt(chat_template(SMOLLM2), tokenizer, "What is the capital of France?")
    said = tokenizer.decode(greedy(model, ids, 12))
    return next((i for i, city in enumerate(_capital_choices()) if city in said), 0)


QUESTIONS: dict[str, Question] = {q.id: q for q in (
    Question("token_count", "tokens", "number", lambda: _token_count("To be, or not to be"),
             params={"text": "To be, or not to be"}),
    Question("it_attends", "attention", "token", _most_attended, _attention_choices,
             params={"text": ATTENTION_TEXT}),
    Question("causal_sees", "masks", "number", lambda: 5, params={"position": 5}),
    Question("next_token", "sampling", "choice", _next_answer, _next_choices, params={"prompt": NEXT_PROMPT}),
    Question("review_positive", "classifier", "choice", _review_positive, _yes_no, params={"text": REVIEW}),
    Question("reverse_output", "translator", "choice", _reverse_answer, _reverse_choices,
             params={"text": REVERSE_SOURCE}),
    Question("q_shape", "forward", "choice", lambda: 0, _q_shape_choices),
    Question("logit_count", "forward", "number", lambda: _lm_config()["vocab_size"]),
    Question("norm_count", "forward", "number", lambda: 2 * _lm_config()["n_layer"] + 1),
    Question("llm_capital", "llm", "choice", _capital_answer, _capital_choices),
    Question("paris_layer", "llm", "number", _paris_layer, params={"prompt": PARIS_PROMPT}),
    Question("kv_heads", "llm", "number", lambda: _llm(SMOLLM2)[0].config.n_kv_head),
    Question("sink_share", "llm", "choice", _sink_answer, _sink_choices, params={"prompt": PARIS_PROMPT}),
    Question("local_window", "llm", "number", lambda: _llm(GEMMA3)[0].config.sliding_window),
)}


def question(question_id: str) -> Question:
    if question_id not in QUESTIONS:
        raise QuestionError(Message("questions.unknown", name=repr(question_id)[:60]))
    return QUESTIONS[question_id]


# --- the hall ------------------------------------------------------------------------------------

@dataclass
class _Open:
    question: Question
    secret: str
    opened: float
    choices: list[str]
    answers: dict[str, float | int] = field(default_factory=dict)  # student -> answer
    changes: Counter = field(default_factory=Counter)
    revealed: bool = False


@dataclass(frozen=True)
class Opened:
    """What the lecturer's page keeps: the code to show the hall and the secret to show nobody."""

    code: str
    secret: str
    question: Question
    choices: list[str]


@dataclass(frozen=True)
class Result:
    """The reveal: how many gave each answer (label -> count, in the choices' order), the model's answer."""

    question: Question
    choices: list[str]
    histogram: dict[str, int]
    real: str
    n: int


@dataclass(frozen=True)
class Seen:
    """What one student's page shows: the question, their own answer, and the result once revealed."""

    code: str
    question: Question
    choices: list[str]
    own: str | None
    result: Result | None


class Hall:
    """Every open question of the server, guarded by one lock. `clock` is injectable for the expiry tests."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._lock = threading.Lock()
        self._open: dict[str, _Open] = {}

    def _expire(self) -> None:
        now = self._clock()
        for code in [c for c, q in self._open.items() if now - q.opened > OPEN_FOR_S]:
            del self._open[code]

    def _get(self, code: str | None) -> _Open:
        key = (code or "").strip().upper()[:CODE_LENGTH + 1]
        found = self._open.get(key)
        if found is None:
            raise QuestionError(Message("questions.no_code", code=repr((code or "")[:20])))
        return found

    def _lecturer(self, code: str | None, secret: str | None) -> _Open:
        found = self._get(code)
        if not hmac.compare_digest(found.secret.encode(), (secret or "").encode()):
            raise QuestionError(Message("questions.not_lecturer"))
        return found

    def open(self, question_id: str) -> Opened:
        asked = question(question_id)
        choices = list(asked.choices())  # computed outside the lock: may run a model (Messages stay Messages)
        with self._lock:
            self._expire()
            if len(self._open) >= MAX_OPEN:
                raise QuestionError(Message("questions.too_many_open", n=MAX_OPEN))
            code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
            while code in self._open:
                code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
            secret = secrets.token_urlsafe(16)
            self._open[code] = _Open(asked, secret, self._clock(), choices)
        return Opened(code, secret, asked, choices)

    def answer(self, code: str | None, student: str, value) -> str:
        """Record (or change) `student`'s answer; returns the answer as stored, shown back to them."""
        with self._lock:
            self._expire()
            found = self._get(code)
            if found.revealed:
                raise QuestionError(Message("questions.after_reveal"))
            parsed = _parse(found, value)
            if student not in found.answers and len(found.answers) >= MAX_ANSWERS:
                raise QuestionError(Message("questions.full", n=MAX_ANSWERS))
            if student in found.answers and found.answers[student] != parsed:
                if found.changes[student] >= MAX_CHANGES:
                    raise QuestionError(Message("questions.too_many_changes", n=MAX_CHANGES))
                found.changes[student] += 1
            found.answers[student] = parsed
            return _label(found, parsed)

    def count(self, code: str | None, secret: str | None) -> int:
        with self._lock:
            self._expire()
            return len(self._lecturer(code, secret).answers)

    def reveal(self, code: str | None, secret: str | None) -> Result:
        with self._lock:
            self._expire()
            found = self._lecturer(code, secret)
            found.revealed = True
            answers = list(found.answers.values())
        return _result(found, answers)

    def seen_by(self, code: str | None, student: str) -> Seen:
        with self._lock:
            self._expire()
            found = self._get(code)
            own = found.answers.get(student)
            revealed, answers = found.revealed, list(found.answers.values())
        result = _result(found, answers) if revealed else None
        return Seen(code.strip().upper(), found.question, found.choices,
                    None if own is None else _label(found, own), result)

    def close(self, code: str | None, secret: str | None) -> None:
        with self._lock:
            found = self._lecturer(code, secret)
            del self._open[next(c for c, q in self._open.items() if q is found)]

    def __len__(self) -> int:
        with self._lock:
            return len(self._open)


def _parse(found: _Open, value) -> float | int:
    """A student's answer as stored: a choice's index, or a finite number. Anything else is a QuestionError."""
    text = str(value if value is not None else "").strip()
    if len(text) > MAX_ANSWER_CHARS:
        raise QuestionError(Message("questions.too_long", n=MAX_ANSWER_CHARS))
    if found.question.kind == "number":
        try:
            number = float(text.replace(",", ""))
        except ValueError:
            raise QuestionError(Message("questions.not_a_number", text=repr(text))) from None
        if not math.isfinite(number):
            raise QuestionError(Message("questions.not_a_number", text=repr(text)))
        return int(number) if number.is_integer() else round(number, 6)
    if text in found.choices:
        return found.choices.index(text)
    try:
        index = int(text)
    except ValueError:
        index = -1
    if not 0 <= index < len(found.choices):
        raise QuestionError(Message("questions.not_a_choice", text=repr(text)))
    return index


def _label(found: _Open, stored: float | int) -> str:
    if found.question.kind == "number":
        return f"{stored:g}"
    return f"{stored}: {found.choices[int(stored)]}"


def _result(found: _Open, answers: list) -> Result:
    real = found.question.answer()
    if found.question.kind == "number":
        counts = Counter(f"{a:g}" for a in answers)
        top = dict(counts.most_common(MAX_BINS))
        # the model's answer keeps its own place on the axis, given by nobody or by too few for the top bins
        top.setdefault(f"{real:g}", counts[f"{real:g}"])
        others = sum(counts.values()) - sum(top.values())
        histogram = {**dict(sorted(top.items(), key=lambda kv: float(kv[0]))),
                     **({OTHER_VALUES: others} if others else {})}
        return Result(found.question, [], histogram, f"{real:g}", len(answers))
    counts = Counter(answers)
    histogram = {_label(found, i): counts.get(i, 0) for i in range(len(found.choices))}
    return Result(found.question, found.choices, histogram, _label(found, int(real)), len(answers))


HALL = Hall()  # the server's one hall: every page of the app asks and answers here
