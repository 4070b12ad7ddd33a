"""The reading path: what a person typed -> the text a checkpoint reads -> ids and token labels.

Every tab, the heads section, the API and MCP read a text through here, in this order:
1. `models.resolve`: picker label or name -> checkpoint, from the one registry (lab/models.py),
   whose config.json says which languages it reads;
2. `prepare`: the input policy (at most MAX_CHARS characters, surrogates repaired), applied once,
   then `models.read_as` (traditional -> simplified for a model that learned simplified characters);
3. `read`: ids and labels, cut to the model's positions, and whether the model can read the text:
   `unreadable` counts the tokens outside its languages, and says so in one line;
4. the traced run: each use case runs its model once on the Reading and keeps the run in its RunCache,
   so a slider re-slices it (an encoder-decoder's run is lab/translate.py's `translated`, shared by the
   Attention, Translate and heads views).
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from i18n import Joined, Message
from transformer_core.tokenization import UNKNOWN

from . import models
from .policy import MAX_CHARS, InputError, check_readable, fit_tokens, notice, truncate, visible

UNREADABLE = 0.5  # a model that cannot read more than half of a text's word tokens "cannot read this text"


@dataclass(frozen=True)
class Reading:
    """A text as checkpoint `name` reads it: the text after the policy, its ids and one label per token."""

    name: str
    text: str
    ids: list[int]
    labels: list[str]
    notice: str


def prepare(name: str, text: str | None, empty: str, limit: int = MAX_CHARS, keep: str = "first") -> tuple[str, str]:
    """(the text checkpoint `name` reads, notices): cut to `limit` characters and converted for its script;
    InputError(`empty`) when nothing but space is left, and one that says so when nothing visible is."""
    text, cut = truncate(text, limit, keep)
    if not text.strip():
        raise InputError(empty)
    if not visible(text):
        raise InputError(Message("policy.invisible_only"))
    text, simplified = models.read_as(name, text)
    return text, notice(cut, simplified)


def read(name: str, tokenizer, text: str, limit: int, min_tokens: int = 1, keep: str = "first",
         offered: dict[str, str] | None = None) -> Reading:
    """A prepared text's ids and labels, at most `limit` tokens, tokenized once; a text the model cannot
    read (see `unreadable`) is said in the notice, which proposes the models of `offered` (the tab's picker,
    label -> name) that can, and one it cannot represent at all is an InputError."""
    spans = tokenizer.tokens(text)
    tokens = fit_tokens(tokenizer, text, limit, min_tokens, keep, spans=spans)
    said = unreadable(name, tokenizer, text, spans, offered)
    return Reading(name, text, tokens.ids, tokens.labels, notice(said, tokens.notice, tokens.split))


def language(c: str) -> str | None:
    """The language a letter is written in, as configs declare them: "zh" for a Chinese character, "en" for
    a Latin letter, "other" for any other letter; None for what is not a letter (digits, punctuation, emoji)."""
    if not c.isalpha():
        return None
    if "\u4e00" <= c <= "\u9fff" or "\u3400" <= c <= "\u4dbf" or "\uf900" <= c <= "\ufaff" or c >= "\U00020000":
        return "zh"
    return "en" if unicodedata.name(c, "").startswith("LATIN") else "other"


def foreign(name: str, tokenizer, text: str, spans) -> tuple[int, int]:
    """(word tokens checkpoint `name` cannot read, word tokens), in its own tokens. A word token holds a letter;
    it cannot be read when it is unknown ([UNK]) or holds a letter of a language its config does not declare:
    Latin in a Chinese model, a Chinese character an English WordPiece happens to know, bytes of a Chinese
    character in a byte-level English model. Spaces, digits, punctuation and emoji count for neither."""
    languages = models.checkpoint(name).languages
    unknown = tokenizer.token_to_id(UNKNOWN)
    n = n_foreign = 0
    for span in spans:
        letters = [language(c) for c in text[span.start:span.end] if c.isalpha()]
        if not letters:
            continue
        n += 1
        n_foreign += (unknown is not None and span.id == unknown) or any(lang not in languages for lang in letters)
    return n_foreign, n


def languages_name(languages) -> Message:
    """ "English", "Chinese", "English and Chinese" in the reader's language."""
    return Message(f"reading.languages.{'_'.join(languages)}")


def unreadable(name: str, tokenizer, text: str, spans, offered: dict[str, str] | None = None) -> str:
    """One line when checkpoint `name` cannot read some of the text (its verdict or continuation would be a
    guess), else "": more than UNREADABLE of the word tokens "cannot read this text", and the models of
    `offered` (label -> name) that read the text's language; fewer "reads partly"."""
    n_foreign, n = foreign(name, tokenizer, text, spans)
    if not n_foreign:
        return ""
    said = dict(model=name, n_foreign=n_foreign, n=n, languages=languages_name(models.checkpoint(name).languages))
    if n_foreign / n <= UNREADABLE:
        return Message("reading.partly", **said)
    language = models.language_of(text)
    readers = [label for label, other in (offered or {}).items()
               if other != name and models.checkpoint(other).reads(language)]
    return notice(Message("reading.cannot_read", **said),
                  Message("reading.try", language=languages_name([language]), models=Joined(readers, ", "))
                  if readers else "")


def check(name: str, tokenizer, text: str, spans, offered: dict[str, str]) -> str:
    """InputError in one line when checkpoint `name` cannot read the text, proposing the models of `offered`
    that can: a verdict on it would be a guess. A text it reads in part gets a notice to show beside the
    verdict ("" when it reads all of it)."""
    check_readable(tokenizer, spans)  # not one token it knows: "cannot represent" says more
    said = unreadable(name, tokenizer, text, spans, offered)
    if isinstance(said, Joined):
        raise InputError(said)
    return said
