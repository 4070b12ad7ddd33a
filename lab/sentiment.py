"""Sentiment use case: a classifier's verdict on a text, and which tokens drove it.

Two classifiers can sit side by side: one trained from scratch and one pre-trained on a
large corpus then fine-tuned; `compare` runs one sentence through both.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, replace
from urllib.parse import urlencode

import numpy as np

from transformer_core import EmptyTextError, explain_each

from . import models, store
from .batching import Batcher
from .cache import ViewCache
from .policy import InputError, check_readable, notice, truncate

UNREADABLE = 0.5  # a classifier that knows fewer than half of a text's tokens gives no verdict

# picker label -> checkpoint; the ones not installed are not offered
CLASSIFIERS = {"trained from scratch (5.8M)": "sentiment",
               "pre-trained + fine-tuned (22.6M)": "sentiment-pretrained"}


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


def _has_letters(text: str) -> bool:
    return any(unicodedata.category(c)[0] in "LN" for c in text)


def _checkpoint(model: str | None) -> str:
    installed = classifiers()
    if model in (None, ""):
        if not installed:
            raise InputError(f"No sentiment classifier in {store.model_dir()}.")
        return next(iter(installed.values()))
    if model in installed:
        return installed[model]
    if model in installed.values():
        return model
    raise InputError(f"No classifier {model!r}; pick one of: {', '.join(installed)}.")


_runs: ViewCache[SentimentRun] = ViewCache(size=128)


def classify(text: str | None, model: str | None = None) -> SentimentRun:
    """Classify `text` with the chosen classifier (label or checkpoint name; default: the first installed)."""
    name = _checkpoint(model)
    text, cut = truncate(text)
    if not text.strip():
        raise InputError("Type a sentence to classify, or click one of the examples.")
    run = _runs.get(models.key(name, text), lambda: _compute(name, text))
    return run if not cut else replace(run, notice=notice(cut, run.notice))


def _compute(name: str, text: str) -> SentimentRun:
    model, tokenizer = models.load(name)
    # invisible characters only, or mostly words it never learned: say so in one line, give no verdict
    check_readable(tokenizer, tokenizer.tokens(text), max_unknown=UNREADABLE)
    try:
        verdict = _explained(models.key(name), text)  # shares a pass with texts asked at the same time
    except EmptyTextError as e:  # check_readable should have said it; never a traceback
        raise InputError(f"The model reads no token of this text ({e}); type a sentence.") from e
    notices = []
    if verdict.truncated:
        read = len(verdict.tokens)
        notices.append(f"The text has {read + verdict.truncated} tokens; the model reads at most {read}, "
                       f"so only the first {read} were classified.")
    if not _has_letters(text):
        notices.append("The text has no letters or digits: the model saw only punctuation, symbols or emoji, "
                       "which its training sentences rarely contain, so treat the verdict as a guess.")
    return SentimentRun(name, verdict.probs, [s.text for s in verdict.tokens], verdict.grad_x_input.numpy(),
                        verdict.rollout.numpy(), verdict.attn.numpy(), text[: verdict.tokens[-1].end],
                        notice(*notices))


def _explain_together(key: tuple, texts: list[str]) -> list:
    """Each text's verdict from one padded pass of classifier `key[1]` (see lab/batching.py)."""
    return explain_each(*models.load(key[1]), texts)


_explained = Batcher(_explain_together)


def attention_link(run: SentimentRun) -> str:
    """The query string that opens the Attention tab on this classifier and the text it read."""
    label = next((lab for lab, name in models.choices().items() if name == run.model), run.model)
    return "?" + urlencode({"tab": "attention", "model": label, "text": run.read_text})


def compare(text: str | None) -> list[SentimentRun]:
    """The same text through every installed classifier, in picker order."""
    return [classify(text, name) for name in classifiers().values()]
