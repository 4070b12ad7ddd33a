"""Tokenization use cases: a text under every shipped tokenizer, a real BPE's merges replayed, BPE from scratch."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from i18n import Joined, Message
from transformer_core.tokenization import UNKNOWN, BpeTraining, TextTokenizer, TokenizerError, TokenSpan, train_bpe_steps

from . import llms, models, store
from .policy import MAX_CHARS, InputError, clamp, mostly_chinese, truncate

# the real BPEs whose merges the replay slider walks through: the Shakespeare BPE, and for a mostly Chinese
# text the BPE learned on Chinese (the English one would only glue bytes it never saw in Chinese)
REPLAY_MODEL = "shakespeare-bpe"
REPLAY_MODEL_ZH = "chinese-bpe"
SCRATCH_MAX_CHARS = 2000  # BPE from scratch is pure Python, merge by merge: keep its text tiny
SCRATCH_MAX_MERGES = 500
UNREADABLE = 0.5  # a tokenizer that knows fewer than half of a text's tokens is not drawn chip by chip


@dataclass(frozen=True)
class Tokenized:
    """One tokenizer's view of a text: its spans, or one line saying why it cannot represent the text."""

    label: str
    spans: list[TokenSpan]
    problem: str = ""
    text: str = ""  # the text as its models read it (a model of simplified Chinese reads traditional converted)


def shipped_tokenizers() -> tuple[list[tuple[str, TextTokenizer, str]], list[str]]:
    """([(label, tokenizer, the first of its models' names)] for every `<model dir>/*/tokenizer.json`; [problems]).

    Tokenizers that are not byte-level (characters, WordPiece) come first, then the Shakespeare BPE,
    then the other BPEs by name, then the real LLMs' (`<LLM dir>/*/tokenizer.json`).
    Models that ship the very same tokenizer file appear once, labelled with all their names.
    A file that cannot be read is reported as a problem instead of hiding the others.
    The files are read again only when the model folder changes, not on every request.
    """
    signature = store.folder_signature()
    if _shipped.get("signature") != signature:
        _shipped.update(signature=signature, found=_read_shipped())
    return _shipped["found"]


_shipped: dict = {}  # the last listing, with the model folder signature it was read at


def _read_shipped() -> tuple[list[tuple[str, TextTokenizer, str]], list[str]]:
    names_by_file: dict[str, list[str]] = {}
    for path in sorted(Path(store.model_dir()).glob("*/tokenizer.json")):
        names_by_file.setdefault(path.read_text(encoding="utf-8", errors="replace"), []).append(path.parent.name)
    # the real LLMs' tokenizers, those made, after ours (each its own: Gemma's file alone is 33 MB, never compared)
    real = [[name] for name in store.llm_names() if (store.folder(name) / "tokenizer.json").is_file()]
    found, problems = [], []
    for names in [*names_by_file.values(), *real]:
        try:
            tokenizer = store.tokenizer(names[0])
        except TokenizerError as error:
            problems.append(Message("tokens.skipped", names=", ".join(names), error=error))
            continue
        shown = ", ".join(llms.LLMS[n].title if n in llms.LLMS else n for n in names)
        label = Message("tokens.panel_label", names=shown, kind=Message(f"tokens.kind.{tokenizer.kind}"),
                        vocab=tokenizer.vocab_size)
        # the text is read as the tokenizer's models read it: converted to simplified when one learned that script
        reader = next((n for n in names if models.checkpoint(n).script), names[0])
        found.append(((names in real, tokenizer.is_byte_level, REPLAY_MODEL not in names), label, tokenizer, reader))
    return [(label, tokenizer, reader) for _, label, tokenizer, reader in sorted(found, key=lambda item: item[0])], \
        problems


def page_tokenizers() -> list[tuple[Message, dict]]:
    """(label, table) of the shown tokenizers a page can run as a person types, in the order they are shown:
    byte-level BPEs (`TextTokenizer.merge_ids`) and character tokenizers (`character_ids`, with the vocabulary
    size the unreadable notice names) whose models read a text as typed (a page has no converter to simplified
    characters). The real LLMs' are not among them: SmolLM2's splits digits first, Gemma's is not byte-level."""
    found = []
    for label, tokenizer, reader in shipped_tokenizers()[0]:
        if models.reads_as_typed(reader) and (table := tokenizer.merge_ids() or tokenizer.character_ids()):
            found.append((label, {**table, "vocab": tokenizer.vocab_size}))
    return found


def tokenize(text: str | None) -> tuple[str, list[Tokenized], str]:
    """(the text as read, one Tokenized per shipped tokenizer, notices) for the Tokens tab."""
    text, notice = truncate(text, MAX_CHARS)
    if not text:
        return "", [], notice
    tokenizers, problems = shipped_tokenizers()
    if not tokenizers:
        raise InputError(Message("tokens.no_tokenizer", folder=store.model_dir()))
    views, converted = [], []
    for label, tokenizer, reader in tokenizers:
        read, simplified = models.read_as(reader, text)
        if simplified:
            converted.append(Message("tokens.read_as", label=label, notice=simplified))
        spans = tokenizer.tokens(read)
        unknown = tokenizer.token_to_id(UNKNOWN)
        n_unknown = sum(s.id == unknown for s in spans) if unknown is not None else 0
        problem = ""
        if spans and n_unknown / len(spans) > UNREADABLE:
            problem = Message("tokens.cannot_represent", n_unknown=n_unknown, n=len(spans), unknown=UNKNOWN,
                              vocab=tokenizer.vocab_size)
        views.append(Tokenized(label, spans, problem, read))
    return text, views, Joined([notice, *converted, *problems], "\n\n")


# the seeds' sentence in both languages: what the same meaning costs each tokenizer
SEED_PAIR = ("The animal didn't cross the street because it was too tired.", "这只动物没有过马路，因为它太累了。")


def cost_pair() -> tuple[tuple[str, str], list[tuple[str, list[TokenSpan], list[TokenSpan]]]]:
    """(the English and Chinese sentences, [(tokenizer label, English spans, Chinese spans)]) for every shipped
    tokenizer that can represent both (a character vocabulary of one language cannot read the other)."""
    english, chinese = SEED_PAIR
    rows = []
    for label, tokenizer, _ in shipped_tokenizers()[0]:
        en, zh = tokenizer.tokens(english), tokenizer.tokens(chinese)
        unknown = tokenizer.token_to_id(UNKNOWN)
        if not any(s.id == unknown for s in en + zh):
            rows.append((label, en, zh))
    return SEED_PAIR, rows


def replay_model(text: str | None) -> str:
    """The BPE a text's merge replay walks through: the Chinese one for a mostly Chinese text, when installed."""
    if mostly_chinese(text) and (store.model_dir() / REPLAY_MODEL_ZH / "tokenizer.json").is_file():
        return REPLAY_MODEL_ZH
    return REPLAY_MODEL


def replay_tokenizer(name: str = REPLAY_MODEL) -> TextTokenizer:
    try:
        return store.tokenizer(name)
    except TokenizerError as error:
        raise InputError(Message("tokens.replay_needs_bpe", name=name, error=error)) from error


def replay_merges() -> int:
    """The replay slider's end: the most merges of the installed replay BPEs (0 when none is installed)."""
    counts = []
    for name in (REPLAY_MODEL, REPLAY_MODEL_ZH):
        try:
            counts.append(len(store.tokenizer(name).merges))
        except TokenizerError:
            continue
    return max(counts, default=0)


def replay(text: str | None, k) -> tuple[str, int, list[TokenSpan], tuple[str, str] | None, str]:
    """(text, k clamped, spans after the first k merges of the text's replay BPE, the k-th merge or None,
    that BPE's name)."""
    text, _ = truncate(text, MAX_CHARS)
    name = replay_model(text)
    bpe = replay_tokenizer(name)
    k = clamp(k, 0, len(bpe.merges), "Merges")
    if not text:
        return "", k, [], None, name
    return text, k, bpe.tokens_after_merges(text, k), bpe.merges[k - 1] if k else None, name


def merge_text(piece: str, name: str = REPLAY_MODEL) -> str:
    """A merge-list entry (spelled in the byte alphabet, "Ġ" for a space) as the text it stands for (bytes of
    a split character as escapes)."""
    return replay_tokenizer(name).merge_piece_text(piece)


def scratch_merges(training: BpeTraining, k) -> int:
    """How many of a from-scratch training's merges to apply: k moved into [0, merges learned]."""
    return clamp(k, 0, len(training.steps), "Merges")


@functools.lru_cache(maxsize=16)
def _scratch(text: str) -> BpeTraining:
    return train_bpe_steps(text, SCRATCH_MAX_MERGES, min_count=1)


def scratch(text: str | None) -> tuple[str, BpeTraining | None, str]:
    """(text, BPE trained from scratch on it merge by merge, truncation notice); None for no text."""
    text, notice = truncate(text, SCRATCH_MAX_CHARS)
    return text, (_scratch(text) if text else None), notice
