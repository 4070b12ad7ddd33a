"""Sentiment use case: a classifier's verdict on a text, and which tokens drove it.

Two classifiers can sit side by side: one trained from scratch and one pre-trained on a
large corpus then fine-tuned; `compare` runs one text through both.

A long text (a whole review: see `reads_by_sentences`) is read the way a person reads it,
sentence by sentence (`transformer_core.analysis.documents`): the verdict is the review's,
built from its sentences' verdicts, and the token evidence is one sentence's, by default
the one that weighs most in the verdict, or the one the person picks.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, replace
from urllib.parse import urlencode

import numpy as np

from i18n import Message
from transformer_core import EmptyTextError, explain_each
from transformer_core.analysis.documents import (LONG_TEXT_CHARS, MAX_SENTENCES, DocumentVerdict, read_document,
                                                 reads_by_sentences, split_sentences)

from . import models, store
from .batching import Batcher
from .cache import RunCache
from .policy import (InputError, check_readable, check_whole_characters, clamp, labelled, mostly_chinese, notice,
                     truncate)

# A whole review is longer than the app's 5,000 characters (IMDb's run to about 13,000): this tab reads up to
# 12,000, and at most MAX_SENTENCES sentences of them, so no text keeps a worker longer than ~2 s.
MAX_CHARS = 12_000
UNREADABLE = 0.5  # a classifier that knows fewer than half of a text's tokens gives no verdict

# picker label -> checkpoint; the ones not installed are not offered
CLASSIFIERS = {Message("sentiment.model.scratch"): "sentiment",
               Message("sentiment.model.pretrained"): "sentiment-pretrained",
               Message("sentiment.model.zh_pretrained"): "sentiment-zh-pretrained",
               Message("sentiment.model.zh_scratch"): "sentiment-zh"}
# Compare puts a pair side by side, from scratch and pre-trained: what pre-training on a large corpus adds.
# A Chinese text gets the Chinese twins (the English pair cannot read it).
COMPARED = {"en": ("sentiment", "sentiment-pretrained"), "zh": ("sentiment-zh", "sentiment-zh-pretrained")}


@dataclass(frozen=True)
class SentimentRun:
    """A verdict with its evidence: P(label), per-token scores, attention (n_layer, n_head, T, T)."""

    model: str
    probs: dict[str, float]
    labels: list[str]
    grad_x_input: np.ndarray
    rollout: np.ndarray
    attn: np.ndarray
    read_text: str  # the part of the text the model read (all of it unless cut); of a long text, the sentence
    notice: str
    document: DocumentVerdict | None = None  # a long text read by sentences: every sentence's verdict
    sentence: int | None = None  # then: the index (from 0) of the sentence the tokens, scores and attention are of

    @property
    def verdict(self) -> str:
        """The most probable class."""
        return max(self.probs, key=self.probs.get)


# A short review with a turn, written for the app (a lecture step and an example): read by sentences.
REVIEW = ("I went in expecting a quiet costume drama about a lighthouse keeper and his daughter. "
          "The first hour is slow, the dialogue is stiff, and I checked my watch more than once. "
          "Then the storm arrives, and the film comes alive. "
          "The last forty minutes are gripping, beautifully shot and genuinely moving. "
          "By the end I was in tears: one of the best films I have seen this year.")


def classifiers() -> dict[str, str]:
    """The installed classifiers: picker label -> checkpoint name."""
    return {label: name for label, name in CLASSIFIERS.items() if (store.model_dir() / name / "config.json").is_file()}


def compared(text: str | None = None) -> dict[str, str]:
    """The installed classifiers Compare shows for `text`, from scratch first: picker label -> checkpoint name.
    The Chinese pair for a mostly Chinese text when it is installed, else the English pair."""
    by_name = {name: label for label, name in classifiers().items()}
    pair = COMPARED["zh"] if mostly_chinese(text) and set(COMPARED["zh"]) & set(by_name) else COMPARED["en"]
    return {by_name[name]: name for name in pair if name in by_name}


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


_runs: RunCache[SentimentRun] = RunCache(size=128)


def classify(text: str | None, model: str | None = None, sentence: int | None = None) -> SentimentRun:
    """Classify `text` with the chosen classifier (label or checkpoint name; default: the first installed).

    A long text is read by sentences: `run.document` holds every sentence's verdict, `run.probs` the
    review's, and the tokens and scores are of sentence number `sentence` (from 1; default: the one that
    weighs most). A short text is read whole, as it always was, and `sentence` is ignored.
    """
    name = _checkpoint(model)
    text, cut = truncate(text, MAX_CHARS)
    if not text.strip():
        raise InputError(Message("sentiment.type_text"))
    text, simplified = models.read_as(name, text)
    cut = notice(cut, simplified)
    run = _runs.get(models.key(name, text, sentence), lambda: _compute(name, text, sentence))
    return run if not cut else replace(run, notice=notice(cut, run.notice))


def _compute(name: str, text: str, sentence: int | None) -> SentimentRun:
    model, tokenizer = models.load(name)
    # invisible characters only, or mostly words it never learned: say so in one line, give no verdict
    spans = tokenizer.tokens(text)
    check_readable(tokenizer, spans, max_unknown=UNREADABLE)
    check_whole_characters(text, spans, max_fragments=UNREADABLE)  # a byte-level English model on Chinese
    sentences = split_sentences(text)
    if not reads_by_sentences(text, sentences):
        return _explained(name, text)
    document = _documents.get(models.key(name, text), lambda: _read(model, tokenizer, text))
    last = len(document.sentences) - 1
    i = weightiest(document) if sentence in (None, "") else clamp(sentence, 1, last + 1, Message("sentiment.sentence_name")) - 1
    evidence = _explained(name, document.sentences[i].text, sentence=i)
    return replace(evidence, probs=document.probs, document=document, sentence=i,
                   notice=notice(*(Message(n.id, **n.params) for n in document.notices), evidence.notice))


_documents: RunCache[DocumentVerdict] = RunCache(size=32)  # a review's verdict, whichever sentence is shown


def _read(model, tokenizer, text: str) -> DocumentVerdict:
    try:
        return read_document(model, tokenizer, text)
    except EmptyTextError as e:  # a sentence of characters this tokenizer drops entirely
        raise InputError(Message("sentiment.review_unreadable", error=e)) from e


def weightiest(document: DocumentVerdict) -> int:
    """The sentence that weighs most in the review's verdict: the largest |log-odds| (the verdict weighs
    each sentence by how far its |log-odds| goes past sure, so that is the largest weight; under a plain
    mean, the largest pull too)."""
    return max(range(len(document.sentences)), key=lambda i: abs(document.sentences[i].log_odds))


LIMITS = dict(chars=LONG_TEXT_CHARS, sentences=MAX_SENTENCES, max_chars=MAX_CHARS)  # said in the tab


def _explained(name: str, text: str, sentence: int | None = None) -> SentimentRun:
    """Today's reading of a short text: one traced forward pass, gradient x input, attention rollout."""
    try:
        verdict = _batched_explain(models.key(name), text)  # shares a pass with texts asked at the same time
    except EmptyTextError as e:  # check_readable should have said it; never a traceback
        if sentence is not None:
            raise InputError(Message("sentiment.sentence_unreadable", i=sentence + 1)) from e
        raise InputError(Message("policy.invisible_only")) from e
    notices = []
    if verdict.truncated:
        read = len(verdict.tokens)
        notices.append(Message("sentiment.cut", n=read + verdict.truncated, read=read))
    if not _has_letters(text):
        notices.append(Message("sentiment.no_letters"))
    # a byte-level tokenizer (the Chinese BPE on a character it never saw, an emoji) splits a character
    # into bytes: label them "龘 (3 bytes)", as the Attention tab does, and say so, never raw escapes
    labels, split = labelled(text, verdict.tokens)
    if split:
        notices.append(split)
    return SentimentRun(name, verdict.probs, labels, verdict.grad_x_input.numpy(),
                        verdict.rollout.numpy(), verdict.attn.numpy(), text[: verdict.tokens[-1].end],
                        notice(*notices))


def _explain_together(key: tuple, texts: list[str]) -> list:
    """Each text's verdict from one padded pass of classifier `key[1]` (see lab/batching.py)."""
    return explain_each(*models.load(key[1]), texts)


_batched_explain = Batcher(_explain_together)


def attention_link(run: SentimentRun) -> str:
    """The query string that opens the Attention tab on this classifier and the text it read."""
    label = next((lab for lab, name in models.choices().items() if name == run.model), run.model)
    return "?" + urlencode({"tab": "attention", "model": label, "text": run.read_text})


def compare(text: str | None, sentence: int | None = None) -> list[tuple[str, SentimentRun]]:
    """[(picker label, run)]: the same text through each classifier of its Compare pair, in picker order
    (of a long text, every classifier shows sentence `sentence`, by default its own weightiest)."""
    return [(label, classify(text, name, sentence)) for label, name in compared(text).items()]
