"""The one input policy every use case applies: how much text, which numbers, and what we tell the person.

Every tab reads text through `truncate` and tokens through `fit_tokens`, so the same model
takes the same input everywhere, and whatever is cut or clamped comes back as a notice to
show, never silently.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from i18n import Joined, Message
from transformer_core.tokenization import UNKNOWN, sanitize

MAX_CHARS = 5000  # longest text any tab takes; longer input is cut, with a visible notice
MAX_DRAWN_TOKENS = 128  # longest input drawn as attention: a 6 x 8 grid of 128 x 128 heatmaps


class InputError(ValueError):
    """Input a person can fix; the message says what was wrong and what to do (a Message: English as a
    string, in the reader's language on screen)."""


def notice(*parts: str) -> Joined:
    """Join notices into one line, dropping the empty ones (each part keeps its own translations)."""
    return Joined(parts)


def truncate(text: str | None, limit: int = MAX_CHARS) -> tuple[str, str]:
    """(text cut to `limit` characters, a notice for the user or "" when nothing was cut).

    Lone surrogates (a browser can send them JSON-escaped) are repaired first: no
    tokenizer, link or log line can encode them.
    """
    raw = text or ""
    text = sanitize(raw)
    repaired = sum(a != b for a, b in zip(raw, text)) if text != raw else 0
    fixed = Message("policy.surrogates", n=repaired) if repaired else ""
    if len(text) <= limit:
        return text, fixed
    return text[:limit], notice(fixed, Message("policy.cut_chars", n=len(text), limit=limit))


def clamp(value, low: int, high: int, name: str, notices: list[str] | None = None) -> int:
    """A whole number from a slider or an API client, moved into [low, high].

    Not a number at all is an InputError; out of range is clamped, with a notice appended
    to `notices` when a list is given (a slider left on head 5 by a 4-head model, say).
    """
    if value is None or value == "":
        if notices is not None:
            notices.append(Message("policy.empty_value", name=name, low=low))
        return low
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InputError(Message("policy.not_whole", name=name, low=low, high=high, value=repr(value))) from None
    if math.isnan(number):
        raise InputError(Message("policy.not_whole", name=name, low=low, high=high, value=repr(value)))
    clamped = int(round(min(max(number, low), high)))  # infinities land on the ends too
    if notices is not None and number != clamped:
        notices.append(Message("policy.clamped", name=name, low=low, high=high, used=clamped))
    return clamped


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
            raise InputError(Message("policy.no_tokens"))
        raise InputError(Message("policy.too_few_tokens", n=len(spans), min=min_tokens))
    unknown = tokenizer.token_to_id(UNKNOWN)
    if unknown is not None and all(s.id == unknown for s in spans):
        raise InputError(Message("policy.all_unknown"))
    cut = ""
    if len(spans) > limit:
        cut = Message("policy.cut_tokens_first" if keep == "first" else "policy.cut_tokens_last", n=len(spans),
                      limit=limit)
        spans = spans[:limit] if keep == "first" else spans[-limit:]
    return Tokens([s.id for s in spans], [s.text for s in spans], cut)
