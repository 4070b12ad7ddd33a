"""The one input policy every use case applies: how much text, which numbers, and what we tell the person.

Every tab reads text through `truncate` and tokens through `fit_tokens`, so the same model
takes the same input everywhere, and whatever is cut or clamped comes back as a notice to
show, never silently.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from transformer_core.decoding.seq2seq import Codec, DecodingError
from transformer_core.tokenization import UNKNOWN, sanitize

MAX_CHARS = 5000  # longest text any tab takes; longer input is cut, with a visible notice
MAX_DRAWN_TOKENS = 128  # longest input drawn as attention: a 6 x 8 grid of 128 x 128 heatmaps


class InputError(ValueError):
    """Input a person can fix; the message says what was wrong and what to do."""


def notice(*parts: str) -> str:
    """Join notices into one line, dropping the empty ones."""
    return " ".join(p for p in parts if p)


def truncate(text: str | None, limit: int = MAX_CHARS, keep: str = "first") -> tuple[str, str]:
    """(text cut to `limit` characters, a notice for the user or "" when nothing was cut).

    A prompt keeps its end (`keep="last"`): the model continues from where the person stopped.

    Lone surrogates (a browser can send them JSON-escaped) are repaired first: no
    tokenizer, link or log line can encode them.
    """
    raw = text or ""
    text = sanitize(raw)
    repaired = sum(a != b for a, b in zip(raw, text)) if text != raw else 0
    fixed = (f"Your text had {repaired} lone surrogate(s) (half of a UTF-16 pair, which no text can encode); "
             "each is read as �.") if repaired else ""
    if len(text) <= limit:
        return text, fixed
    which, kept = ("last", text[-limit:]) if keep == "last" else ("first", text[:limit])
    return kept, notice(fixed, f"Your text has {len(text):,} characters; only the {which} {limit:,} are used.")


def clamp(value, low: int, high: int, name: str, notices: list[str] | None = None) -> int:
    """A whole number from a slider or an API client, moved into [low, high].

    Not a number at all is an InputError; out of range is clamped, with a notice appended
    to `notices` when a list is given (a slider left on head 5 by a 4-head model, say).
    """
    if value is None or value == "":
        if notices is not None:
            notices.append(f"{name} was empty; used {low}.")
        return low
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: an integer like 10**400
        raise InputError(f"{name} must be a whole number from {low} to {high}, not {value!r}.") from None
    if math.isnan(number):
        raise InputError(f"{name} must be a whole number from {low} to {high}, not {value!r}.")
    clamped = int(round(min(max(number, low), high)))  # infinities land on the ends too
    if notices is not None and number != clamped:
        notices.append(f"{name} can be {low} to {high}; used {clamped}.")
    return clamped


def check_readable(tokenizer, spans, max_unknown: float = 1.0) -> None:
    """InputError in one line when the model cannot read the text: no token of it at all, or more of
    its tokens unknown than `max_unknown` allows (by default: every one). The tokens a tokenizer adds
    around the text ([CLS], [SEP]: empty spans) do not count, else an English-only classifier would
    give a confident verdict on `[CLS] [UNK] [UNK] [SEP]`."""
    read = [s for s in spans if s.start != s.end]
    if not read:
        raise InputError("The model reads no token of this text (it is only invisible or combining characters); "
                         "type a sentence.")
    unknown = tokenizer.token_to_id(UNKNOWN)
    n_unknown = sum(s.id == unknown for s in read) if unknown is not None else 0
    if n_unknown == len(read):
        raise InputError("This model's tokenizer cannot represent any of this text (every token would be "
                         f"{UNKNOWN}); type text in the model's alphabet.")
    if n_unknown / len(read) > max_unknown:
        raise InputError(f"This model cannot read this text: {n_unknown} of its {len(read)} tokens would be "
                         f"{UNKNOWN} (it learned an English vocabulary); type English text.")


@dataclass(frozen=True)
class Tokens:
    """Text as a model reads it: ids, one label per token, and what was cut."""

    ids: list[int]
    labels: list[str]
    notice: str = ""


def fit_tokens(tokenizer, text: str, limit: int, min_tokens: int = 1, keep: str = "first") -> Tokens:
    """Tokenize `text` and keep at most `limit` tokens (the first ones, or the last ones for a prompt).

    Fewer than `min_tokens` is an InputError. A tokenizer that cannot represent the text
    (every token unknown) says so in one line instead of drawing a row of [UNK]s.
    """
    spans = tokenizer.tokens(text)
    if len(spans) < min_tokens:
        if not spans:
            raise InputError("The text has no tokens: type a sentence.")
        raise InputError(f"The text has {len(spans)} token(s); type at least {min_tokens}.")
    check_readable(tokenizer, spans)
    cut = ""
    if len(spans) > limit:
        which = "first" if keep == "first" else "last"
        cut = f"Your text has {len(spans)} tokens; the {which} {limit} are used."
        spans = spans[:limit] if keep == "first" else spans[-limit:]
    return Tokens([s.id for s in spans], [s.text for s in spans], cut)


def prompt_tokens(tokenizer, text: str | None, limit: int, min_tokens: int = 1) -> Tokens:
    """A prompt as a language model reads it: its end kept, characters then tokens, one notice.

    The model continues from where the person stopped, so a long prompt loses its beginning
    (both cuts keep the end, and the notice says what was read).
    """
    text, cut = truncate(text, keep="last")
    tokens = fit_tokens(tokenizer, text, limit, min_tokens, keep="last")
    return Tokens(tokens.ids, tokens.labels, notice(cut, tokens.notice))


def source_text(codec: Codec, max_len: int, text: str | None) -> tuple[str, str]:
    """A translator's source as it reads it, and a notice of what was changed.

    Whitespace is dropped for a model whose alphabet has no space ("3 1 4" reads as "314");
    a source longer than the model's positions is cut; characters it has never seen are an InputError.
    """
    text, cut = truncate(text)
    text = text.strip()
    if " " not in codec.alphabet:
        text = "".join(text.split())
    if not text:
        raise InputError("Type a source first: digits for copy/reverse/sort, a sentence for pig latin.")
    limit = min(MAX_DRAWN_TOKENS, max_len) - 1  # room for </s>
    if len(text) > limit:
        cut = notice(cut, f"Your source has {len(text)} characters; this model reads at most {limit}, "
                          f"so the first {limit} are used.")
        text = text[:limit]
    try:
        codec.check(text, max_len)
    except DecodingError as e:
        raise InputError(f"{str(e)[:1].upper()}{str(e)[1:]}.") from e
    return text, cut
