"""The one input policy every use case applies: how much text, which numbers, and what we tell the person.

Every tab reads text through `truncate` and tokens through `fit_tokens`, so the same model
takes the same input everywhere, and whatever is cut or clamped comes back as a notice to
show, never silently.
"""

from __future__ import annotations

import math
import reprlib
import unicodedata
from dataclasses import dataclass

from i18n import Joined, Message
from transformer_core.decoding.seq2seq import Codec, DecodingError
from transformer_core.tokenization import UNKNOWN, is_fragment, sanitize

MAX_CHARS = 5000  # longest text any tab takes; longer input is cut, with a visible notice
MAX_DRAWN_TOKENS = 128  # longest input drawn as attention: a 6 x 8 grid of 128 x 128 heatmaps


class InputError(ValueError):
    """Input a person can fix; the message says what was wrong and what to do (a Message: English as a
    string, in the reader's language on screen)."""


def notice(*parts: str) -> Joined:
    """Join notices into one line, dropping the empty ones (each part keeps its own translations)."""
    return Joined(parts)


# what a person does not see on its own: controls, format characters (zero-width spaces, the BOM, direction
# marks), combining marks with nothing to sit on, spaces and line breaks
INVISIBLE = frozenset({"Cc", "Cf", "Mn", "Me", "Zs", "Zl", "Zp"})


def visible(text: str) -> bool:
    """Whether `text` holds a character a person sees on its own: a letter, digit, punctuation, symbol or emoji.
    A SentencePiece tokenizer reads a zero-width space as a word start, so a model would give a verdict on it."""
    return any(unicodedata.category(c) not in INVISIBLE for c in text)


def truncate(text: str | None, limit: int = MAX_CHARS, keep: str = "first") -> tuple[str, str]:
    """(text cut to `limit` characters, a notice for the user or "" when nothing was cut).

    A prompt keeps its end (`keep="last"`): the model continues from where the person stopped.

    Lone surrogates (a browser can send them JSON-escaped) are repaired first: no
    tokenizer, link or log line can encode them.
    """
    raw = text or ""
    text = sanitize(raw)
    repaired = sum(a != b for a, b in zip(raw, text)) if text != raw else 0
    fixed = Message("policy.surrogates", n=repaired) if repaired else ""
    if len(text) <= limit:
        return text, fixed
    which, kept = ("last", text[-limit:]) if keep == "last" else ("first", text[:limit])
    return kept, notice(fixed, Message(f"policy.cut_chars_{which}", n=len(text), limit=limit))


CHARS_SHOWN = 12  # of the characters a model cannot read, listed in its refusal (a Chinese text has thousands)
QUOTED_CHARS = 80  # of a refused value, quoted back in its message: a 10 MB input must not come back whole
DIGITS_SHOWN = 4300  # Python writes no integer longer than this (sys.int_info.default_max_str_digits)


def quoted(value, keep: str = "first") -> str:
    """`value` as a message quotes it: a text in quotes, cut to its first (or, `keep="last"`, last) QUOTED_CHARS
    characters with "…" and its length; any other value written as Python does, cut alike. A refusal names
    what it refused, never all of it: a 2 MB text, a list of a million items, an integer of 5,000 digits."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > DIGITS_SHOWN * 3:
        return Message("policy.quoted_digits", n=int(value.bit_length() * math.log10(2)))
    shown = value if isinstance(value, str) else _written(value)
    if len(shown) <= QUOTED_CHARS:
        return repr(shown) if isinstance(value, str) else shown
    cut = shown[:QUOTED_CHARS] + "…" if keep == "first" else "…" + shown[-QUOTED_CHARS:]
    if isinstance(value, str):
        return Message("policy.quoted_text", text=repr(cut), n=len(value))
    if isinstance(value, (list, tuple, dict, set)):
        return Message("policy.quoted_items", text=cut, n=len(value))
    return cut


def _written(value) -> str:
    """`repr(value)` without writing out more than a few times QUOTED_CHARS of it (a list of a million items)."""
    writer = reprlib.Repr()
    writer.maxstring = writer.maxother = writer.maxlong = 2 * QUOTED_CHARS
    writer.maxlist = writer.maxtuple = writer.maxdict = writer.maxset = QUOTED_CHARS // 4
    try:
        return writer.repr(value)
    except ValueError:  # an integer inside it of over DIGITS_SHOWN digits
        return f"a {type(value).__name__} holding an integer of over {DIGITS_SHOWN:,} digits"


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
    except (TypeError, ValueError, OverflowError):  # OverflowError: an integer like 10**400
        raise InputError(Message("policy.not_whole", name=name, low=low, high=high, value=quoted(value))) from None
    if math.isnan(number):
        raise InputError(Message("policy.not_whole", name=name, low=low, high=high, value=quoted(value)))
    clamped = int(round(min(max(number, low), high)))  # infinities land on the ends too
    if notices is not None and number != clamped:
        notices.append(Message("policy.clamped", name=name, low=low, high=high, used=clamped))
    return clamped


def check_readable(tokenizer, spans, max_unknown: float = 1.0) -> None:
    """InputError in one line when the model cannot read the text: no token of it at all, or more of
    its tokens unknown than `max_unknown` allows (by default: every one). The tokens a tokenizer adds
    around the text ([CLS], [SEP]: empty spans) do not count, else an English-only classifier would
    give a confident verdict on `[CLS] [UNK] [UNK] [SEP]`."""
    read = [s for s in spans if s.start != s.end]
    if not read:
        raise InputError(Message("policy.invisible_only"))
    unknown = tokenizer.token_to_id(UNKNOWN)
    n_unknown = sum(s.id == unknown for s in read) if unknown is not None else 0
    if n_unknown == len(read):
        raise InputError(Message("policy.all_unknown", unknown=UNKNOWN))
    if n_unknown / len(read) > max_unknown:
        raise InputError(Message("policy.english_only", n_unknown=n_unknown, n=len(read), unknown=UNKNOWN))


def labelled(text: str, spans) -> tuple[list[str], str]:
    """(one label per token, a notice or ""): a byte fragment reads as the character it belongs to,
    "它 (3 bytes)", instead of a raw escape like \\xe5, and the notice says how many characters were split."""
    labels, split = [], set()
    for span in spans:
        if is_fragment(text, span):
            whole = text[span.start:span.end]
            labels.append(Message("policy.char_bytes", char=whole, n=len(whole.encode("utf-8"))))
            split.add(span.start)
        else:
            labels.append(span.text)
    return labels, Message("policy.split_chars", n=len(split)) if split else ""


def check_whole_characters(text: str, spans, max_fragments: float) -> None:
    """InputError in one line when more of the tokens than `max_fragments` are bytes of split letters:
    a byte-level model that learned English reads Chinese as raw bytes, and its verdict would be a guess.
    (Emoji are split too, but they are symbols, not a script the model never learned: they pass.)"""
    read = [s for s in spans if s.start != s.end]
    n_fragments = sum(is_fragment(text, s) and unicodedata.category(text[s.start])[0] == "L" for s in read)
    if read and n_fragments / len(read) > max_fragments:
        raise InputError(Message("policy.bytes_only", n_fragments=n_fragments, n=len(read)))


def mostly_chinese(text: str | None) -> bool:
    """Whether most of a text's letters are Chinese characters: such a text goes to the Chinese models
    (the English ones cannot read it), a mixed or Latin text to the English ones."""
    letters = [c for c in text or "" if c.isalpha()]
    return bool(letters) and sum("\u4e00" <= c <= "\u9fff" for c in letters) > len(letters) / 2


@dataclass(frozen=True)
class Tokens:
    """Text as a model reads it: ids, one label per token, what was cut, and which characters were split."""

    ids: list[int]
    labels: list[str]
    notice: str = ""
    split: str = ""  # a notice when a byte-level tokenizer split characters into bytes


def fit_tokens(tokenizer, text: str, limit: int, min_tokens: int = 1, keep: str = "first", spans=None) -> Tokens:
    """Tokenize `text` (unless its `spans` are given) and keep at most `limit` tokens (the first ones, or the
    last ones for a prompt).

    Fewer than `min_tokens` is an InputError. A tokenizer that cannot represent the text
    (every token unknown) says so in one line instead of drawing a row of [UNK]s.
    """
    spans = tokenizer.tokens(text) if spans is None else spans
    if len(spans) < min_tokens:
        if not spans:
            raise InputError(Message("policy.no_tokens"))
        raise InputError(Message("policy.too_few_tokens", n=len(spans), min=min_tokens))
    check_readable(tokenizer, spans)
    cut = ""
    if len(spans) > limit:
        cut = Message("policy.cut_tokens_first" if keep == "first" else "policy.cut_tokens_last", n=len(spans),
                      limit=limit)
        spans = spans[:limit] if keep == "first" else spans[-limit:]
    labels, split = labelled(text, spans)
    return Tokens([s.id for s in spans], labels, cut, split)


def prompt_tokens(tokenizer, text: str | None, limit: int, min_tokens: int = 1) -> Tokens:
    """A prompt as a language model reads it: its end kept, characters then tokens, one notice.

    The model continues from where the person stopped, so a long prompt loses its beginning
    (both cuts keep the end, and the notice says what was read).
    """
    text, cut = truncate(text, keep="last")
    tokens = fit_tokens(tokenizer, text, limit, min_tokens, keep="last")
    return Tokens(tokens.ids, tokens.labels, notice(cut, tokens.notice), tokens.split)


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
        raise InputError(Message("attention.type_source"))
    limit = min(MAX_DRAWN_TOKENS, max_len) - 1  # room for </s>
    if len(text) > limit:
        cut = notice(cut, Message("attention.source_cut", n=len(text), limit=limit))
        text = text[:limit]
    if unknown := sorted(set(text) - codec.alphabet):
        shown = " ".join(map(repr, unknown[:CHARS_SHOWN])) + (" …" if len(unknown) > CHARS_SHOWN else "")
        raise InputError(Message("policy.not_in_alphabet", chars=shown,
                                 alphabet=repr("".join(sorted(codec.alphabet)))))
    try:
        codec.check(text, max_len)
    except DecodingError as e:
        raise InputError(f"{str(e)[:1].upper()}{str(e)[1:]}.") from e
    return text, cut
