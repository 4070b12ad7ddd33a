"""Sentiment use case: a classifier's verdict on a text, and which tokens drove it.

Two classifiers can sit side by side: one trained from scratch and one pre-trained on a
large corpus then fine-tuned; `compare` runs one text through both.

A long text (a whole review: more than LONG_TEXT_TOKENS of the classifier's own tokens, and more
than one sentence) is read the way a person reads it, sentence by sentence
(`transformer_core.analysis.documents`): the verdict is the review's, built from its sentences'
verdicts, and the token evidence is one sentence's, by default the one that weighs most in the
verdict, or the one the person picks. The text is split once, here, and the split handed on.

With no classifier chosen (the tab's "by the text's language", an API call without one), the text
picks it: the reader of its language that measured best on that language's test set (the registry's
TEST_ACCURACY, from the model cards), whose card also gives its score on everyday sentences
(benchmarks/everyday.py); the tab names the reader under its verdict. A classifier chosen by hand is kept, and when it cannot read the text it says so
and proposes the ones that can: a person who picks the English model for a Chinese review is usually
showing that it cannot read it. A pre-trained encoder shipped for its heads (`multilingual-e5`, its
classifier head untrained) is not offered here.

Each request tokenizes a text once (a long one: whole, to measure it, then each sentence once) and runs one
forward and backward pass for a short text; a long one gets one pass over its sentences (once per review: cached)
and one with the backward pass for the sentence shown.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, replace
from urllib.parse import urlencode

import numpy as np

from i18n import Message
from transformer_core import EmptyTextError, explain_each
from transformer_core.analysis.documents import MAX_SENTENCES, DocumentVerdict, read_document, split_sentences

from . import models, reading, store
from .cache import Batcher, RunCache
from .policy import InputError, clamp, labelled, notice

# A whole review is longer than the app's 5,000 characters (IMDb's run to about 13,000): this tab reads up to
# 12,000, and at most MAX_SENTENCES sentences of them, so no text keeps a worker longer than ~2 s.
MAX_CHARS = 12_000
# A text is long when it has more of the classifier's own tokens than the sentences it was trained on, which are
# under about 60 (the English snippets are at most 257 characters); a 300-character Chinese review is ~200 tokens,
# more than the Chinese classifiers' 128 positions, and is read by sentences instead of being cut.
LONG_TEXT_TOKENS = 64
# The shipped classifiers' picker names, first in the picker and in this order (from scratch, then pre-trained, of
# each language: Compare's pairs); any other classifier in the model folder follows under its folder's name.
NAMED = {"sentiment": Message("sentiment.model.scratch"), "sentiment-pretrained": Message("sentiment.model.pretrained"),
         "sentiment-zh": Message("sentiment.model.zh_scratch"),
         "sentiment-zh-pretrained": Message("sentiment.model.zh_pretrained"),
         "sentiment-multilingual": Message("sentiment.model.multilingual"),
         "sentiment-everyday": Message("sentiment.model.everyday"),
         "sentiment-crosslingual": Message("sentiment.model.crosslingual")}
# Compare puts a pair side by side, each pair a lesson in the text's language. English: from scratch and
# pre-trained, what pre-training on a large corpus adds. Chinese: one pre-trained multilingual encoder with a
# head that saw Chinese and English labels (the Chinese default, so the pair's first verdict is the one the tab
# gave), and one that saw English labels only: does pre-training carry a head across languages? A language whose
# pair is not installed gets the first two installed readers, picker order.
COMPARED = {"en": ("sentiment", "sentiment-pretrained"), "zh": ("sentiment-everyday", "sentiment-crosslingual")}
COMPARED_COLUMNS = 2


@dataclass(frozen=True)
class SentimentRun:
    """Checkpoint `name`'s verdict with its evidence: P(class), the tokens' labels, per-token scores, attention
    (n_layer, n_head, T, T).

    shares: each token's share of the explained text's log-odds (`log_odds` = `base` + their sum); of a long
    text, the explained text is the sentence shown, whose own log-odds they add up to."""

    name: str
    probs: dict[str, float]
    labels: list[str]
    shares: np.ndarray
    rollout: np.ndarray
    attn: np.ndarray
    read_text: str  # the part of the text the model read (all of it unless cut); of a long text, the sentence
    notice: str
    log_odds: float
    base: float
    document: DocumentVerdict | None = None  # a long text read by sentences: every sentence's verdict
    sentence: int | None = None  # then: the index (from 0) of the sentence the tokens, scores and attention are of

    @property
    def verdict(self) -> str:
        """The most probable class."""
        return max(self.probs, key=self.probs.get)

    @property
    def number(self) -> int | None:
        """The shown sentence's number as the page, the API (`sentence=`) and links say it: from 1."""
        return None if self.sentence is None else self.sentence + 1


# A short review with a turn, written for the app (a lecture step and an example): read by sentences.
REVIEW = ("I went in expecting a quiet costume drama about a lighthouse keeper and his daughter. "
          "The first hour is slow, the dialogue is stiff, and I checked my watch more than once. "
          "Then the storm arrives, and the film comes alive. "
          "The last forty minutes are gripping, beautifully shot and genuinely moving. "
          "By the end I was in tears: one of the best films I have seen this year.")


# The same review in Chinese (the tab's Chinese example): read by sentences too.
REVIEW_ZH = ("我本来以为这是一部讲灯塔看守人和他女儿的平淡古装片。前一个小时节奏很慢，对白生硬，我看了好几次表。"
             "后来暴风雨来了，整部电影一下子活了过来。最后四十分钟扣人心弦，画面很美，也真的很感人。"
             "看到结尾我哭了：这是我今年看过最好的电影之一。")


def classifiers() -> dict[str, str]:
    """The installed classifiers, from the one registry: picker label -> checkpoint name (a pre-trained encoder
    whose head was never trained is left out: its verdicts mean nothing)."""
    found = [c.name for c in models.registry() if c.arch == "EncoderClassifier" and not c.encoder]
    order = [*(name for name in NAMED if name in found), *(name for name in found if name not in NAMED)]
    return {NAMED.get(name, models.checkpoint(name).label): name for name in order}


def compared(text: str | None = None) -> dict[str, str]:
    """The installed classifiers Compare shows for `text`: picker label -> checkpoint name, in the pair's order.
    The language's pair (COMPARED) when installed, else the first two installed readers of the text's language,
    else the English ones (which then say they cannot read the text)."""
    installed = {name: label for label, name in classifiers().items()}
    language = models.language_of(text)
    readers = [name for name in installed if models.checkpoint(name).reads(language)] \
        or [name for name in installed if models.checkpoint(name).reads("en")]
    pair = COMPARED.get(language)
    if pair is None or any(name not in installed for name in pair):
        pair = readers[:COMPARED_COLUMNS]
    return {installed[name]: name for name in pair}


def compare_lesson(text: str | None) -> str:
    """Which lesson Compare's pair for `text` teaches: the text's language when its pair (COMPARED) is installed,
    else "other" (the first two installed readers, no lesson of their own)."""
    language = models.language_of(text)
    pair = COMPARED.get(language)
    return language if pair and tuple(compared(text).values()) == pair else "other"


def _has_letters(text: str) -> bool:
    return any(unicodedata.category(c)[0] in "LN" for c in text)


def _checkpoint(model: str | None, text: str) -> str:
    """The classifier's checkpoint name: a chosen label or name, or with none chosen the installed reader of the
    text's language that measured best on its test set (models.route; the first installed when none reads it,
    which then says it cannot read the text)."""
    installed = classifiers()
    if model in (None, ""):
        if not installed:
            raise InputError(Message("sentiment.no_classifier", folder=store.model_dir()))
        return models.route("EncoderClassifier", text, among=list(installed.values())) or next(iter(installed.values()))
    if model in installed:
        return installed[model]
    if model in installed.values():
        return model
    raise InputError(Message("sentiment.unknown_classifier", model=repr(model), installed=", ".join(installed)))


def label_of(name: str) -> str:
    """A classifier's picker label (a Message for the shipped ones), by its checkpoint name."""
    return next((label for label, n in classifiers().items() if n == name), name)


_runs: RunCache[SentimentRun] = RunCache(size=128)


def classify(text: str | None, model: str | None = None, sentence: int | None = None) -> SentimentRun:
    """Classify `text` with the chosen classifier (label or checkpoint name; default: the installed reader of the
    text's language that measured best on its test set).

    A long text is read by sentences: `run.document` holds every sentence's verdict, `run.probs` the
    review's, and the tokens and scores are of sentence number `sentence` (from 1, as `run.number`;
    default: the one that weighs most). A short text is read whole, as it always was, and `sentence` is ignored.
    """
    name = _checkpoint(model, (text or "")[:MAX_CHARS])
    text, cut = reading.prepare(name, text, Message("sentiment.type_text"), MAX_CHARS)
    run = _runs.get(models.key(name, text, sentence), lambda: _compute(name, text, sentence))
    return run if not cut else replace(run, notice=notice(cut, run.notice))


def _compute(name: str, text: str, sentence: int | None) -> SentimentRun:
    net, tokenizer = models.load(name)
    # invisible characters only, or mostly words it never learned: say so in one line, give no verdict
    spans = tokenizer.tokens(text)
    partly = reading.check(name, tokenizer, text, spans, classifiers())
    sentences = split_sentences(text)
    if len(spans) <= LONG_TEXT_TOKENS or len(sentences.spans) < 2:
        run = _explained(name, text, spans)
        return replace(run, notice=notice(partly, run.notice))
    document, tokens = _documents.get(models.key(name, text), lambda: _read(net, tokenizer, text, sentences))
    last = len(document.sentences) - 1
    i = weightiest(document) if sentence in (None, "") else clamp(sentence, 1, last + 1, Message("sentiment.sentence_name")) - 1
    evidence = _explained(name, document.sentences[i].text, tokens[i], sentence=i)
    return replace(evidence, probs=document.probs, document=document, sentence=i,
                   notice=notice(partly, *(Message(n.id, **n.params) for n in document.notices), evidence.notice))


# a review's verdict, whichever sentence is shown, with each sentence's tokens (its explanation reads them)
_documents: RunCache[tuple[DocumentVerdict, list]] = RunCache(size=32)


def _read(net, tokenizer, text: str, sentences) -> tuple[DocumentVerdict, list]:
    tokens = [tokenizer.tokens(text[a:b]) for a, b in sentences.spans]  # each sentence tokenized once
    try:
        document = read_document(net, tokenizer, text, sentences=sentences,
                                 ids=[[s.id for s in spans] for spans in tokens])
    except EmptyTextError as e:  # a sentence of characters this tokenizer drops entirely
        raise InputError(Message("sentiment.review_unreadable", error=e)) from e
    return document, tokens


def weightiest(document: DocumentVerdict) -> int:
    """The sentence that weighs most in the review's verdict: the largest |log-odds| (the verdict weighs
    each sentence by how far its |log-odds| goes past sure, so that is the largest weight; under a plain
    mean, the largest pull too)."""
    return max(range(len(document.sentences)), key=lambda i: abs(document.sentences[i].log_odds))


LIMITS = dict(tokens=LONG_TEXT_TOKENS, sentences=MAX_SENTENCES, max_chars=MAX_CHARS)  # said in the tab


def _explained(name: str, text: str, spans: list, sentence: int | None = None) -> SentimentRun:
    """Today's reading of a short text (its `spans`, tokenized already): one traced forward and backward pass,
    each token's share of the verdict, attention rollout."""
    try:
        verdict = _batched_explain(name, (text, spans))  # shares a pass with texts asked at the same time
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
    return SentimentRun(name, verdict.probs, labels, verdict.shares.numpy(),
                        verdict.rollout.numpy(), verdict.attn.numpy(), text[: verdict.tokens[-1].end],
                        notice(*notices), verdict.log_odds, verdict.base)


def _explain_together(name: str, read: list[tuple[str, list]]) -> list:
    """Each (text, its tokens)'s verdict from one padded pass of classifier `name` (see lab/cache.Batcher)."""
    return explain_each(*models.load(name), [text for text, _ in read], [spans for _, spans in read])


_batched_explain = Batcher(_explain_together)


def attention_link(run: SentimentRun) -> str:
    """The query string that opens the Attention tab on this classifier and the text it read."""
    label = next((lab for lab, name in models.choices().items() if name == run.name), run.name)
    return "?" + urlencode({"tab": "attention", "model": label, "text": run.read_text})


def compare(text: str | None, sentence: int | None = None) -> list[tuple[str, SentimentRun]]:
    """[(picker label, run)]: the same text through each classifier of its Compare pair, in picker order
    (of a long text, every classifier shows sentence `sentence`, by default its own weightiest)."""
    return [(label, classify(text, name, sentence)) for label, name in compared(text).items()]
