"""Sentiment use case: a classifier's verdict on a text, and which tokens drove it.

Two classifiers can sit side by side: one trained from scratch and one pre-trained on a
large corpus then fine-tuned; `compare` runs one sentence through both.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, replace
from urllib.parse import urlencode

import numpy as np

from i18n import Message
from transformer_core import EmptyTextError, explain

from . import models, store
from .cache import ViewCache
from .policy import InputError, check_readable, check_whole_characters, notice, truncate

UNREADABLE = 0.5  # a classifier that knows fewer than half of a text's tokens gives no verdict

# picker label -> checkpoint; the ones not installed are not offered
CLASSIFIERS = {Message("sentiment.model.scratch"): "sentiment",
               Message("sentiment.model.pretrained"): "sentiment-pretrained",
               Message("sentiment.model.zh_pretrained"): "sentiment-zh-pretrained",
               Message("sentiment.model.zh_scratch"): "sentiment-zh"}
# Compare puts the English pair side by side: what pre-training on a large corpus adds
COMPARED = ("sentiment", "sentiment-pretrained")


@dataclass(frozen=True)
class SentimentRun:
    """A verdict with its evidence: P(label), per-token scores, attention (n_layer, n_head, T, T)."""

    model: str
    probs: dict[str, float]
    labels: list[str]
    grad_x_input: np.ndarray
    rollout: np.ndarray
    attn: np.ndarray
    read_text: str  # the part of the text the model read (all of it unless cut)
    notice: str


def classifiers() -> dict[str, str]:
    """The installed classifiers: picker label -> checkpoint name."""
    return {label: name for label, name in CLASSIFIERS.items() if (store.model_dir() / name / "config.json").is_file()}


def compared() -> dict[str, str]:
    """The installed classifiers Compare shows: picker label -> checkpoint name."""
    return {label: name for label, name in classifiers().items() if name in COMPARED}


def _has_letters(text: str) -> bool:
    return any(unicodedata.category(c)[0] in "LN" for c in text)


def _checkpoint(model: str | None) -> str:
    installed = classifiers()
    if model in (None, ""):
        if not installed:
            raise InputError(Message("sentiment.no_classifier", folder=store.model_dir()))
        return next(iter(installed.values()))
    if model in installed:
        return installed[model]
    if model in installed.values():
        return model
    raise InputError(Message("sentiment.unknown_classifier", model=repr(model), installed=", ".join(installed)))


_runs: ViewCache[SentimentRun] = ViewCache(size=128)


def classify(text: str | None, model: str | None = None) -> SentimentRun:
    """Classify `text` with the chosen classifier (label or checkpoint name; default: the first installed)."""
    name = _checkpoint(model)
    text, cut = truncate(text)
    if not text.strip():
        raise InputError(Message("sentiment.type_text"))
    text, simplified = models.read_as(name, text)
    cut = notice(cut, simplified)
    run = _runs.get(models.key(name, text), lambda: _compute(name, text))
    return run if not cut else replace(run, notice=notice(cut, run.notice))


def _compute(name: str, text: str) -> SentimentRun:
    model, tokenizer = models.load(name)
    # invisible characters only, or mostly words it never learned: say so in one line, give no verdict
    spans = tokenizer.tokens(text)
    check_readable(tokenizer, spans, max_unknown=UNREADABLE)
    check_whole_characters(text, spans, max_fragments=UNREADABLE)  # a byte-level English model on Chinese
    try:
        verdict = explain(model, tokenizer, text)
    except EmptyTextError as e:  # check_readable should have said it; never a traceback
        raise InputError(Message("policy.invisible_only")) from e
    notices = []
    if verdict.truncated:
        read = len(verdict.tokens)
        notices.append(Message("sentiment.cut", n=read + verdict.truncated, read=read))
    if not _has_letters(text):
        notices.append(Message("sentiment.no_letters"))
    return SentimentRun(name, verdict.probs, [s.text for s in verdict.tokens], verdict.grad_x_input.numpy(),
                        verdict.rollout.numpy(), verdict.attn.numpy(), text[: verdict.tokens[-1].end],
                        notice(*notices))


def attention_link(run: SentimentRun) -> str:
    """The query string that opens the Attention tab on this classifier and the text it read."""
    label = next((lab for lab, name in models.choices().items() if name == run.model), run.model)
    return "?" + urlencode({"tab": "attention", "model": label, "text": run.read_text})


def compare(text: str | None) -> list[SentimentRun]:
    """The same text through every compared classifier, in picker order."""
    return [classify(text, name) for name in compared().values()]
